//! zookeeper-client's `MultiWriter`, `CheckWriter` and their results and errors
//! (`src/client/mod.rs`), over the model client's `multi`.

use super::error::{Error, Result, from_api, from_client, text};
use super::{Client, CreateOptions, Stat};
use models::zk::{WriteOp, ZkClientError};
use sim::history::zk::{ZkError, ZkResponse};
use std::future::Future;

/// Individual result for one operation in [MultiWriter] (zookeeper-client's
/// `MultiWriteResult`).
#[non_exhaustive]
#[derive(Debug, PartialEq, Eq)]
pub enum MultiWriteResult {
    /// Response for [MultiWriter::add_check_version].
    Check,
    /// Response for [MultiWriter::add_delete].
    Delete,
    /// Response for [MultiWriter::add_create].
    Create {
        /// Path of created znode.
        path: String,
        /// Stat for newly created node: always [Stat::is_invalid] here (the model's multi
        /// answers a create with its path only), as the real one may be (ZOOKEEPER-4026).
        stat: Stat,
    },
    /// Response for [MultiWriter::add_set_data].
    SetData {
        /// Updated stat.
        stat: Stat,
    },
}

impl MultiWriteResult {
    /// The variant's name, for errors (zookeeper-client's `MultiWriteResult::kind`).
    fn kind(&self) -> &'static str {
        match self {
            MultiWriteResult::Check => "MultiWriteResult::Check",
            MultiWriteResult::Create { .. } => "MultiWriteResult::Create",
            MultiWriteResult::Delete => "MultiWriteResult::Delete",
            MultiWriteResult::SetData { .. } => "MultiWriteResult::SetData",
        }
    }

    /// The created path and stat (zookeeper-client's `into_create`).
    pub(crate) fn into_create(self) -> Result<(String, Stat)> {
        match self {
            MultiWriteResult::Create { path, stat } => Ok((path, stat)),
            _ => Err(self.unexpected("MultiWriteResult::Create")),
        }
    }

    /// The updated stat (zookeeper-client's `into_set_data`).
    pub(crate) fn into_set_data(self) -> Result<Stat> {
        match self {
            MultiWriteResult::SetData { stat } => Ok(stat),
            _ => Err(self.unexpected("MultiWriteResult::SetData")),
        }
    }

    /// zookeeper-client's `into_delete`.
    pub(crate) fn into_delete(self) -> Result<()> {
        match self {
            MultiWriteResult::Delete => Ok(()),
            _ => Err(self.unexpected("MultiWriteResult::Delete")),
        }
    }

    fn unexpected(&self, expected: &str) -> Error {
        Error::UnexpectedError(format!("expect {expected}, got {}", self.kind()))
    }

    fn from_model(response: ZkResponse) -> Result<Self> {
        Ok(match response {
            ZkResponse::Checked => MultiWriteResult::Check,
            ZkResponse::Deleted => MultiWriteResult::Delete,
            ZkResponse::Created { path } => MultiWriteResult::Create {
                path,
                stat: Stat::new_invalid(),
            },
            ZkResponse::CreatedWithStat { path, stat } => MultiWriteResult::Create {
                path,
                stat: Stat::from_model(&stat),
            },
            ZkResponse::Stat { stat } => MultiWriteResult::SetData {
                stat: Stat::from_model(&stat),
            },
            other => {
                return Err(Error::UnexpectedError(format!(
                    "unexpected multi result {other:?}"
                )));
            }
        })
    }
}

/// Error for [MultiWriter::commit] (zookeeper-client's `MultiWriteError`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiWriteError {
    /// The request failed as a whole.
    RequestFailed {
        /// Why.
        source: Error,
    },
    /// The operation at `index` failed; nothing was committed.
    OperationFailed {
        /// Which operation.
        index: usize,
        /// Why.
        source: Error,
    },
}

impl std::fmt::Display for MultiWriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::RequestFailed { source } => write!(f, "{source}"),
            Self::OperationFailed { index, source } => {
                write!(f, "operation at index {index} failed: {source}")
            }
        }
    }
}

impl std::error::Error for MultiWriteError {}

impl From<Error> for MultiWriteError {
    fn from(source: Error) -> Self {
        Self::RequestFailed { source }
    }
}

impl From<MultiWriteError> for Error {
    fn from(err: MultiWriteError) -> Self {
        match err {
            MultiWriteError::RequestFailed { source } => source,
            MultiWriteError::OperationFailed { source, .. } => source,
        }
    }
}

/// Error for [CheckWriter::commit] (zookeeper-client's `CheckWriteError`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckWriteError {
    /// The request failed as a whole.
    RequestFailed {
        /// Why.
        source: Error,
    },
    /// The path check failed.
    CheckFailed {
        /// Why.
        source: Error,
    },
    /// The operation at `index` (after the check) failed.
    OperationFailed {
        /// Which operation.
        index: usize,
        /// Why.
        source: Error,
    },
}

impl std::fmt::Display for CheckWriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::RequestFailed { source } => write!(f, "request failed: {source}"),
            Self::CheckFailed { source } => write!(f, "path check failed: {source}"),
            Self::OperationFailed { index, source } => {
                write!(f, "operation at index {index} failed: {source}")
            }
        }
    }
}

impl std::error::Error for CheckWriteError {}

impl From<Error> for CheckWriteError {
    fn from(source: Error) -> Self {
        Self::RequestFailed { source }
    }
}

impl From<MultiWriteError> for CheckWriteError {
    fn from(err: MultiWriteError) -> Self {
        match err {
            MultiWriteError::RequestFailed { source } => CheckWriteError::RequestFailed { source },
            MultiWriteError::OperationFailed { index: 0, source } => {
                CheckWriteError::CheckFailed { source }
            }
            MultiWriteError::OperationFailed { index, source } => {
                CheckWriteError::OperationFailed {
                    index: index - 1,
                    source,
                }
            }
        }
    }
}

impl From<CheckWriteError> for Error {
    fn from(err: CheckWriteError) -> Self {
        match err {
            CheckWriteError::RequestFailed { source } => source,
            CheckWriteError::CheckFailed {
                source: Error::NoNode | Error::BadVersion,
            } => Error::RuntimeInconsistent,
            CheckWriteError::CheckFailed { source } => source,
            CheckWriteError::OperationFailed { source, .. } => source,
        }
    }
}

/// MultiWriter commits write and condition check operations in one request to achieve
/// transaction like semantics (zookeeper-client's `MultiWriter`). Paths are checked by
/// the model at commit, not when added.
pub struct MultiWriter<'a> {
    client: &'a Client,
    ops: Vec<WriteOp>,
}

impl<'a> MultiWriter<'a> {
    /// Adds operation to check version for node with given path (-1: any version).
    pub fn add_check_version(&mut self, path: &str, version: i32) -> Result<()> {
        let version = (version != -1).then_some(version);
        self.ops.push(WriteOp::Check {
            path: path.into(),
            version,
        });
        Ok(())
    }

    /// Adds operation to create node with given path and data.
    pub fn add_create(
        &mut self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> Result<()> {
        self.ops.push(WriteOp::Create {
            path: path.into(),
            data: text(data)?,
            mode: options.mode.to_model(),
            acl: options.acls.to_model(),
        });
        Ok(())
    }

    /// Adds operation to set data for node with given path.
    pub fn add_set_data(
        &mut self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<()> {
        self.ops.push(WriteOp::SetData {
            path: path.into(),
            data: text(data)?,
            version: expected_version,
        });
        Ok(())
    }

    /// Adds operation to delete node with given path.
    pub fn add_delete(&mut self, path: &str, expected_version: Option<i32>) -> Result<()> {
        if path == "/" {
            return Err(Error::BadArguments(&"can not delete root node"));
        }
        self.ops.push(WriteOp::Delete {
            path: path.into(),
            version: expected_version,
        });
        Ok(())
    }

    /// Commits multiple operations in one request to write transactionally.
    ///
    /// Failure of individual operation will fail whole request and commit no effect in
    /// server.
    pub fn commit(
        &mut self,
    ) -> impl Future<Output = std::result::Result<Vec<MultiWriteResult>, MultiWriteError>>
    + Send
    + 'a
    + use<'a> {
        let ops = std::mem::take(&mut self.ops);
        let session = self.client.session.clone();
        async move {
            if ops.is_empty() {
                return Ok(Vec::new());
            }
            let results = session.multi(ops).await.map_err(|error| match error {
                ZkClientError::Api(ZkError::MultiFailed { index, error }) => {
                    MultiWriteError::OperationFailed {
                        index,
                        source: from_api(&error),
                    }
                }
                other => MultiWriteError::RequestFailed {
                    source: from_client(other),
                },
            })?;
            results
                .into_iter()
                .map(MultiWriteResult::from_model)
                .collect::<Result<Vec<_>>>()
                .map_err(MultiWriteError::from)
        }
    }

    /// Clears collected operations.
    pub fn abort(&mut self) {
        self.ops.clear();
    }
}

/// Similar to [MultiWriter] except for [CheckWriter::commit] (zookeeper-client's
/// `CheckWriter`).
pub struct CheckWriter<'a> {
    writer: MultiWriter<'a>,
}

impl<'a> CheckWriter<'a> {
    /// Same as [MultiWriter::add_check_version].
    pub fn add_check_version(&mut self, path: &str, version: i32) -> Result<()> {
        self.writer.add_check_version(path, version)
    }

    /// Same as [MultiWriter::add_create].
    pub fn add_create(
        &mut self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> Result<()> {
        self.writer.add_create(path, data, options)
    }

    /// Same as [MultiWriter::add_set_data].
    pub fn add_set_data(
        &mut self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<()> {
        self.writer.add_set_data(path, data, expected_version)
    }

    /// Same as [MultiWriter::add_delete].
    pub fn add_delete(&mut self, path: &str, expected_version: Option<i32>) -> Result<()> {
        self.writer.add_delete(path, expected_version)
    }

    /// Similar to [MultiWriter::commit] except independent path check error.
    pub fn commit(
        mut self,
    ) -> impl Future<Output = std::result::Result<Vec<MultiWriteResult>, CheckWriteError>>
    + Send
    + 'a
    + use<'a> {
        let commit = self.writer.commit();
        async move {
            let mut results = commit.await?;
            if results.is_empty() {
                return Err(CheckWriteError::RequestFailed {
                    source: Error::UnexpectedError("expect path check, got none".to_string()),
                });
            }
            match results.remove(0) {
                MultiWriteResult::Check => Ok(results),
                other => Err(CheckWriteError::RequestFailed {
                    source: other.unexpected("MultiWriteResult::Check"),
                }),
            }
        }
    }
}

impl Client {
    /// Creates a [MultiWriter].
    pub fn new_multi_writer(&self) -> MultiWriter<'_> {
        MultiWriter {
            client: self,
            ops: Vec::new(),
        }
    }

    /// Creates a [CheckWriter], which is similar to [MultiWriter] but additional path check
    /// when [CheckWriter::commit].
    pub fn new_check_writer(&self, path: &str, version: Option<i32>) -> Result<CheckWriter<'_>> {
        Ok(self.check_writer_on(path, version))
    }

    /// [Self::new_check_writer], which cannot fail here: paths are checked at commit.
    pub(crate) fn check_writer_on(&self, path: &str, version: Option<i32>) -> CheckWriter<'_> {
        let mut writer = self.new_multi_writer();
        writer.ops.push(WriteOp::Check {
            path: path.into(),
            version,
        });
        CheckWriter { writer }
    }
}
