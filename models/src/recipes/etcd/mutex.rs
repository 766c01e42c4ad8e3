//! etcd's mutex, as in `go.etcd.io/etcd/client/v3/concurrency` (and the seeds' gocorex
//! lock): [`EtcdMutex::lock`] puts `prefix/<lease id>` under the session's lease (if absent)
//! in a transaction that also reads the key; the key with the lowest create revision holds;
//! every other waiter waits for the deletion of every key with a lower create revision
//! (watching the latest of them, one at a time; [`super::keys`]), **then checks that
//! its own key still exists** — its lease may have expired while it waited — before
//! returning. The fencing token is the key's create revision.

use crate::etcd::EtcdClient;
use crate::recipes::etcd::held::{EtcdKey, EtcdMutexGuard};
use crate::recipes::etcd::keys::{
    normalized_prefix, own_key, put_if_absent, read_key, wait_for_deletes,
};
use crate::recipes::etcd::session::EtcdSession;
use crate::recipes::shared::bugs::{RecipeBug, RecipeBugs};
use crate::recipes::shared::error::RecipeError;
use crate::recipes::shared::recorder::LockRecorder;
use sim::{
    NodeContext,
    history::{
        kv::KvOperation,
        recipe::{LockMode, LockStep},
    },
};
use std::time::Duration;

/// A mutex under `prefix`, through one session. Its requests go through the caller's
/// client, one per client process for its whole life (as with etcd's `clientv3.Client`):
/// the client numbers its watches, and a process's watches must not share numbers.
pub struct EtcdMutex {
    bugs: RecipeBugs,
    prefix: String,
    key: String,
    context: NodeContext,
    recorder: LockRecorder,
    lease: u64,
}

impl EtcdMutex {
    /// The mutex at `prefix` for `session`, used by the client process `process` on
    /// `context`'s node.
    pub fn new(context: &NodeContext, process: u32, session: &EtcdSession, prefix: &str) -> Self {
        let prefix = normalized_prefix(prefix);
        Self {
            bugs: RecipeBugs::default(),
            key: own_key(&prefix, session.lease()),
            prefix: prefix.clone(),
            context: context.clone(),
            recorder: LockRecorder::new(context, process, prefix.trim_end_matches('/')),
            lease: session.lease(),
        }
    }

    /// With the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.bugs = bugs;
        self
    }

    /// Waits for the mutex, for at most `patience`. On giving up it deletes its key, leaving
    /// the queue. Like etcd's `Mutex.Lock`, it does not watch the session while it waits:
    /// the post-wait check is what catches a lease that expired meanwhile.
    pub async fn lock(
        &mut self,
        client: &mut EtcdClient,
        session: &EtcdSession,
        patience: Duration,
    ) -> Result<EtcdMutexGuard, RecipeError> {
        self.recorder.record(LockStep::Requested {
            mode: LockMode::Exclusive,
        });
        let clock = self.context.clock().clone();
        let result = if session.is_done() {
            Err(RecipeError::SessionEnded)
        } else {
            clock
                .timeout(patience, self.try_lock(client))
                .await
                .unwrap_or(Err(RecipeError::TimedOut))
        };
        match result {
            Ok(token) => {
                self.recorder.record(LockStep::Acquired {
                    token,
                    mode: LockMode::Exclusive,
                });
                Ok(EtcdMutexGuard::new(
                    token,
                    &self.recorder,
                    self.context.sim().now(),
                    self.bugs,
                    EtcdKey {
                        key: self.key.clone(),
                    },
                ))
            }
            Err(error) => {
                self.recorder.gave_up(&error);
                // Leave the queue: a waiter that gave up must not block the others until
                // its lease expires.
                let _ = client.delete(&self.key).await;
                Err(error)
            }
        }
    }

    /// The locking steps; the token on success.
    async fn try_lock(&self, client: &mut EtcdClient) -> Result<u64, RecipeError> {
        let mine = put_if_absent(client, &self.context, &self.key, "", self.lease)
            .await
            .map_err(|_| RecipeError::SessionEnded)?;
        let my_revision = mine.create_revision;
        wait_for_deletes(client, &self.context, &self.prefix, my_revision, |key| {
            self.recorder.woken(key)
        })
        .await;
        if self.bugs.has(RecipeBug::EtcdMutexNoPostwaitCheck) {
            return Ok(my_revision);
        }
        // The post-wait check: the lease may have expired while we waited, deleting our key;
        // whoever came after us may hold the lock now.
        match read_key(client, &self.context, &self.key).await {
            Some(kv) if kv.create_revision == my_revision => Ok(my_revision),
            _ => Err(RecipeError::SessionEnded),
        }
    }

    /// Releases the mutex: the holder stops believing it holds it (recorded first), then
    /// deletes its key (retried until the store answers, or the session is over).
    pub async fn unlock(
        &mut self,
        client: &mut EtcdClient,
        guard: EtcdMutexGuard,
        session: &EtcdSession,
    ) {
        let delete = KvOperation::Delete {
            key: guard.hold.key.clone(),
            range_end: None,
        };
        guard.let_go(client, &self.context, session, delete).await;
    }
}
