//! zookeeper-client's `MultiReader` and `MultiReadResult` (`src/client/mod.rs`), over the
//! model client's `multi_read` (ZooKeeper 3.6+'s `multiRead`).

use super::error::{Error, Result, from_api, from_client};
use super::lock::{TrailingSlash, validate_path};
use super::{Client, Stat};
use models::zk::MultiReadOp;
use sim::history::zk::ZkResponse;
use std::future::Future;

/// Individual result for one operation in [MultiReader] (zookeeper-client's
/// `MultiReadResult`).
#[non_exhaustive]
#[derive(Debug)]
pub enum MultiReadResult {
    /// Response for [`MultiReader::add_get_data`].
    Data {
        /// The node's data.
        data: Vec<u8>,
        /// The node's stat.
        stat: Stat,
    },
    /// Response for [`MultiReader::add_get_children`].
    Children {
        /// The node's children (names, in the server's order; no stat, as ZooKeeper's
        /// `GetChildrenResult`).
        children: Vec<String>,
    },
    /// Response for individual error.
    Error {
        /// Why this read failed (the others still answered).
        err: Error,
    },
}

impl MultiReadResult {
    fn from_model(result: std::result::Result<ZkResponse, sim::history::zk::ZkError>) -> Self {
        match result {
            Ok(ZkResponse::Data { data, stat }) => MultiReadResult::Data {
                data: data.into_bytes(),
                stat: Stat::from_model(&stat),
            },
            Ok(ZkResponse::ChildNames { children }) => MultiReadResult::Children { children },
            Ok(other) => MultiReadResult::Error {
                err: Error::UnexpectedError(format!("unexpected multi read result {other:?}")),
            },
            Err(error) => MultiReadResult::Error {
                err: from_api(&error),
            },
        }
    }
}

/// MultiReader commits multiple read operations in one request to achieve snapshot like
/// semantics (zookeeper-client's `MultiReader`). Paths are checked when added, as the real
/// one checks them.
pub struct MultiReader<'a> {
    client: &'a Client,
    ops: Vec<MultiReadOp>,
}

impl<'a> MultiReader<'a> {
    /// Adds operation to get stat and data for node with given path.
    ///
    /// See [Client::get_data] for more details.
    pub fn add_get_data(&mut self, path: &str) -> Result<()> {
        validate_path(path, TrailingSlash::Refused)?;
        self.ops.push(MultiReadOp::GetData { path: path.into() });
        Ok(())
    }

    /// Adds operation to get stat and children for node with given path.
    ///
    /// See [Client::get_children] for more details.
    pub fn add_get_children(&mut self, path: &str) -> Result<()> {
        validate_path(path, TrailingSlash::Refused)?;
        self.ops
            .push(MultiReadOp::GetChildren { path: path.into() });
        Ok(())
    }

    /// Commits multiple operations in one request to reach consistent read.
    ///
    /// # Notable behaviors
    /// Individual errors(e.g. [Error::NoNode]) are reported individually through
    /// [MultiReadResult::Error].
    pub fn commit(
        &mut self,
    ) -> impl Future<Output = Result<Vec<MultiReadResult>>> + Send + 'a + use<'a> {
        let ops = std::mem::take(&mut self.ops);
        let session = self.client.session.clone();
        async move {
            // As the real one: nothing collected, nothing sent.
            if ops.is_empty() {
                return Ok(Vec::new());
            }
            let results = session.multi_read(ops).await.map_err(from_client)?;
            Ok(results
                .into_iter()
                .map(MultiReadResult::from_model)
                .collect())
        }
    }

    /// Clears collected operations.
    pub fn abort(&mut self) {
        self.ops.clear();
    }
}

impl Client {
    /// Creates a [MultiReader].
    pub fn new_multi_reader(&self) -> MultiReader<'_> {
        MultiReader {
            client: self,
            ops: Vec::new(),
        }
    }
}
