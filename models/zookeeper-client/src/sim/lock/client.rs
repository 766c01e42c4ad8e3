//! zookeeper-client 0.11.2's `LockClient` and `OwnedLockClient` (`src/client/mod.rs`):
//! writes that apply only while the lock node exists, each one [`CheckWriter`] whose check
//! is on the lock path, so a write through a lost lock (its node deleted, or gone with its
//! session) fails with [`Error::RuntimeInconsistent`] and changes nothing.

use super::super::{CheckWriteError, CheckWriter, Error, MultiWriteResult, Result};
use super::super::{Client, CreateOptions, CreateSequence, Stat, parse_sequence};
use std::{borrow::Cow, future::Future, mem::ManuallyDrop};

/// Guard client writes by owned ZooKeeper lock path which will be deleted in background when
/// dropped (zookeeper-client's `LockClient`).
#[derive(Debug)]
pub struct LockClient<'a> {
    client: &'a Client,
    lock: Cow<'a, str>,
}

/// The one write after the check (zookeeper-client's `LockClient::resolve_one_write`); a
/// failed check is `RuntimeInconsistent` through `From<CheckWriteError> for Error`.
async fn resolve_one_write(
    future: impl Future<Output = std::result::Result<Vec<MultiWriteResult>, CheckWriteError>>,
) -> Result<MultiWriteResult> {
    let results = future.await?;
    results
        .into_iter()
        .next()
        .ok_or_else(|| Error::UnexpectedError("expect one write result, got none".to_string()))
}

impl<'a> LockClient<'a> {
    pub(super) fn new(client: &'a Client, lock: String) -> Self {
        LockClient {
            client,
            lock: Cow::from(lock),
        }
    }

    /// Underlying client.
    pub fn client(&self) -> &'a Client {
        self.client
    }

    /// Lock path.
    ///
    /// Caller can watch this path to detect external lock path deletion. See also
    /// [ZOOKEEPER-91](https://issues.apache.org/jira/browse/ZOOKEEPER-91).
    pub fn lock_path(&self) -> &str {
        &self.lock
    }

    /// Similar to [Client::create] except [Error::RuntimeInconsistent] if lock lost.
    ///
    /// # BUG
    /// [Stat] will be [Stat::is_invalid] due to bugs in ZooKeeper version before 3.7.2, 3.8.2
    /// and 3.9.0 (ZOOKEEPER-4026); here always, as the model's multi answers a create with
    /// its path alone.
    pub fn create(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> impl Future<Output = Result<(Stat, CreateSequence)>> + Send + 'a + use<'a> {
        let mut writer = self.new_check_writer();
        let added = writer.add_create(path, data, options);
        let write = writer.commit();
        let path_len = path.len();
        async move {
            added?;
            let result = resolve_one_write(write).await?;
            let (created_path, stat) = result.into_create()?;
            let sequence = if created_path.len() <= path_len {
                CreateSequence(-1)
            } else {
                parse_sequence(&created_path, &created_path[..path_len])?
            };
            Ok((stat, sequence))
        }
    }

    /// Similar to [Client::set_data] except [Error::RuntimeInconsistent] if lock lost.
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'a + use<'a> {
        let mut writer = self.new_check_writer();
        let added = writer.add_set_data(path, data, expected_version);
        let write = writer.commit();
        async move {
            added?;
            resolve_one_write(write).await?.into_set_data()
        }
    }

    /// Similar to [Client::delete] except [Error::RuntimeInconsistent] if lock lost.
    pub fn delete(
        &self,
        path: &str,
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + 'a + use<'a> {
        let mut writer = self.new_check_writer();
        let added = writer.add_delete(path, expected_version);
        let write = writer.commit();
        async move {
            added?;
            resolve_one_write(write).await?.into_delete()
        }
    }

    /// Similar to [Client::new_check_writer] with this lock path.
    pub fn new_check_writer(&self) -> CheckWriter<'a> {
        self.client.check_writer_on(&self.lock, None)
    }

    /// Converts to [OwnedLockClient].
    pub fn into_owned(self) -> OwnedLockClient {
        let client = self.client.clone();
        // Not dropped: the owned client deletes the lock node when it is dropped.
        let mut this = ManuallyDrop::new(self);
        let lock = std::mem::take(this.lock.to_mut());
        OwnedLockClient { client, lock }
    }
}

/// Deletes lock path in background.
impl Drop for LockClient<'_> {
    fn drop(&mut self) {
        let path = std::mem::take(self.lock.to_mut());
        self.client.clone().delete_background(path);
    }
}

/// Owned version of [LockClient] (zookeeper-client's `OwnedLockClient`). As the real one,
/// every clone deletes the lock node when it is dropped.
#[derive(Clone, Debug)]
pub struct OwnedLockClient {
    // The real one holds a `ManuallyDrop<Client>` to move it out in `drop`; a clone does
    // the same here without `unsafe`.
    client: Client,
    lock: String,
}

impl OwnedLockClient {
    /// A borrowed [LockClient] that is never dropped (dropping it would delete the node).
    fn lock_client(&self) -> ManuallyDrop<LockClient<'_>> {
        ManuallyDrop::new(LockClient {
            client: &self.client,
            lock: Cow::from(&self.lock),
        })
    }

    /// Underlying client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Same as [LockClient::lock_path].
    pub fn lock_path(&self) -> &str {
        &self.lock
    }

    /// Same as [LockClient::create].
    pub fn create<'a: 'f, 'b: 'f, 'f>(
        &'a self,
        path: &'b str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> impl Future<Output = Result<(Stat, CreateSequence)>> + Send + 'f + use<'f> {
        self.lock_client().create(path, data, options)
    }

    /// Same as [LockClient::set_data].
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + '_ + use<'_> {
        self.lock_client().set_data(path, data, expected_version)
    }

    /// Same as [LockClient::delete].
    pub fn delete(
        &self,
        path: &str,
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + '_ + use<'_> {
        self.lock_client().delete(path, expected_version)
    }

    /// Same as [LockClient::new_check_writer].
    pub fn new_check_writer(&self) -> CheckWriter<'_> {
        self.client.check_writer_on(&self.lock, None)
    }
}

/// Deletes lock path in background.
impl Drop for OwnedLockClient {
    fn drop(&mut self) {
        let path = std::mem::take(&mut self.lock);
        self.client.clone().delete_background(path);
    }
}
