//! etcd's mutex, as in `go.etcd.io/etcd/client/v3/concurrency` (and the seeds' gocorex
//! lock): [`EtcdMutex::lock`] puts `prefix/<lease id>` under the session's lease (if absent)
//! in a transaction that also reads the key; the key with the lowest create revision holds;
//! every other waiter waits for the deletion of every key with a lower create revision
//! (watching the latest of them, one at a time; [`super::line`]), **then checks that
//! its own key still exists** — its lease may have expired while it waited — before
//! returning. The fencing token is the key's create revision.

use crate::etcd::EtcdClient;
use crate::recipes::etcd::held::EtcdMutexGuard;
use crate::recipes::etcd::line::KeyLine;
use crate::recipes::etcd::session::EtcdSession;
use crate::recipes::shared::bugs::{RecipeBug, RecipeBugs};
use crate::recipes::shared::error::RecipeError;
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
    line: KeyLine<LockStep>,
}

impl EtcdMutex {
    /// The mutex at `prefix` for `session`, used by the client process `process` on
    /// `context`'s node.
    pub fn new(context: &NodeContext, process: u32, session: &EtcdSession, prefix: &str) -> Self {
        Self {
            line: KeyLine::new(context, process, session, prefix),
        }
    }

    /// With the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.line.bugs = bugs;
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
        const MODE: LockMode = LockMode::Exclusive;
        self.line
            .recorder
            .record(LockStep::Requested { mode: MODE });
        let waited = self
            .line
            .within(session, patience, self.try_lock(client))
            .await;
        self.line
            .end_wait(client, waited, |token| LockStep::Acquired {
                token,
                mode: MODE,
            })
            .await
    }

    /// The locking steps; the token on success.
    async fn try_lock(&self, client: &mut EtcdClient) -> Result<u64, RecipeError> {
        let mine = self.line.join(client, "").await?;
        self.line
            .wait_for_turn(
                client,
                mine.create_revision,
                RecipeBug::EtcdMutexNoPostwaitCheck,
            )
            .await
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
            prev_kv: false,
            key: guard.hold.key.clone(),
            range_end: None,
        };
        guard
            .let_go(client, &self.line.context, session, delete)
            .await;
    }
}
