//! etcd-client's lock client (0.21.1 `src/rpc/lock.rs`), as the etcd server answers it: its
//! v3lock service (`server/etcdserver/api/v3lock/lock.go`) runs `concurrency.Mutex.Lock`
//! (`client/v3/concurrency/mutex.go`) under the caller's lease, through a session made
//! `WithLease(lease)`, and `Unlock` deletes the key. This client runs the same steps
//! ([`super::concurrency`]), each a model call under its own process, in the same order.
//!
//! The `Lock` followed is v3.5.33's, which reads its own key after the wait and fails with
//! `mutex: session is expired` if it is gone (etcd-io/etcd#11408, fixed by #11456 in v3.5);
//! v3.4.23's (our conformance server's) returns the lock without that read.

use super::concurrency::{
    self, SESSION_EXPIRED, created_at, delete_key, first_create, get, own_key, put, read,
    session_lease, txn, wait_deletes,
};
use super::error::{Result, concurrency_error};
use super::{error::text, responses::ResponseHeader};
use models::etcd::{EtcdClient, GetOptions};

/// etcd-client's `LockClient`: one sequential process in the history.
pub struct LockClient {
    client: EtcdClient,
    maker: super::ClientMaker,
}

/// A clone is a handle of its own: a process of its own in the history, as clones of
/// etcd-client's may call concurrently.
impl Clone for LockClient {
    fn clone(&self) -> Self {
        Self::new(self.maker.clone())
    }
}

impl LockClient {
    /// The history process this handle's calls are recorded as
    /// ([`super::coordsim::history_process`]).
    pub(in crate::sim) fn history_process(&self) -> u32 {
        self.client.process()
    }

    pub(super) fn new(maker: super::ClientMaker) -> Self {
        Self {
            client: maker.make(),
            maker,
        }
    }

    /// Acquires a distributed shared lock on a given named lock. On success, it will return
    /// a unique key that exists so long as the lock is held by the caller. The lock is held
    /// until Unlock is called on the key or the lease associate with the owner expires
    /// (etcd-client's `LockClient::lock`; etcd's `Mutex.Lock`). Without a lease in the
    /// options, etcd's session grants one of 60 s and orphans it: the lock then holds for
    /// a minute at most, as here.
    pub async fn lock(
        &mut self,
        name: impl Into<Vec<u8>>,
        options: Option<LockOptions>,
    ) -> Result<LockResponse> {
        let prefix = format!("{}/", text(name.into(), "name")?);
        let client = &mut self.client;
        let lease = session_lease(client, options.unwrap_or_default().lease).await?;
        let key = own_key(&prefix, lease);
        // tryAcquire: put self in line if absent, and read the holder in the same txn.
        let acquired = txn(
            client,
            vec![created_at(&key, 0)],
            vec![put(&key, "", lease), get(&prefix, first_create())],
            vec![get(&key, GetOptions::new()), get(&prefix, first_create())],
        )
        .await?;
        let my_rev = match acquired.succeeded {
            true => acquired.revision,
            false => {
                let mine = acquired.read(0).first();
                mine.ok_or_else(|| concurrency::missing("the locker's key"))?
                    .create_revision
            }
        };
        let owner = acquired.read(1).first().map(|kv| kv.create_revision);
        if owner.is_none() || owner == Some(my_rev) {
            return Ok(locked(acquired.revision, key));
        }
        if let Err(error) = wait_deletes(client, &prefix, my_rev - 1, None).await {
            let _ = delete_key(client, &key).await;
            return Err(error);
        }
        // v3.5: make sure the session is not expired, and the owner key still exists.
        let (revision, kvs) = match read(client, &key, GetOptions::new()).await {
            Ok(read) => read,
            Err(error) => {
                let _ = delete_key(client, &key).await;
                return Err(error);
            }
        };
        if kvs.is_empty() {
            return Err(concurrency_error(SESSION_EXPIRED));
        }
        Ok(locked(revision, key))
    }

    /// Takes a key returned by Lock and releases the hold on lock (etcd-client's
    /// `LockClient::unlock`; etcd's v3lock `Unlock`: a delete of the key).
    pub async fn unlock(&mut self, key: impl Into<Vec<u8>>) -> Result<UnlockResponse> {
        let key = text(key.into(), "key")?;
        let revision = delete_key(&mut self.client, &key).await?;
        Ok(UnlockResponse {
            header: ResponseHeader::at(revision),
        })
    }
}

fn locked(revision: u64, key: String) -> LockResponse {
    LockResponse {
        header: ResponseHeader::at(revision),
        key: key.into_bytes(),
    }
}

/// Options for `Lock` operation (etcd-client's `LockOptions`).
#[derive(Debug, Default, Clone)]
pub struct LockOptions {
    lease: i64,
}

impl LockOptions {
    /// Creates a `LockOptions`.
    pub const fn new() -> Self {
        Self { lease: 0 }
    }

    /// `lease` is the ID of the lease that will be attached to ownership of the lock. If
    /// the lease expires or is revoked and currently holds the lock, the lock is
    /// automatically released. Calls to Lock with the same lease will be treated as a
    /// single acquisition; locking twice with the same lease is a no-op.
    pub const fn with_lease(mut self, lease: i64) -> Self {
        self.lease = lease;
        self
    }
}

/// Response for `Lock` operation (etcd-client's `LockResponse`).
#[derive(Debug, Clone)]
pub struct LockResponse {
    header: ResponseHeader,
    key: Vec<u8>,
}

impl LockResponse {
    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// A key that will exist on etcd for the duration that the Lock caller owns the lock.
    pub fn key(&self) -> &[u8] {
        &self.key
    }
}

/// Response for `Unlock` operation (etcd-client's `UnlockResponse`).
#[derive(Debug, Clone)]
pub struct UnlockResponse {
    header: ResponseHeader,
}

impl UnlockResponse {
    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
}
