//! The herd lock on ZooKeeper: every waiter tries to create one ephemeral node and, failing,
//! watches it with `exists`. Each release wakes every waiter, and they all race to create
//! the node again: the *herd effect* the queue lock avoids (ZooKeeper recipes, "Locks";
//! the seeds' first go-zookeeper lock).
//!
//! The fencing token is the lock node's `czxid`. The holder keeps an `exists` watch on its
//! node and treats the end of its attachment to a server as a possible loss: while
//! disconnected it cannot know whether its session still lives (Curator's SUSPENDED).

use super::bugs::RecipeBugs;
use super::lock::LockError;
use super::zk_lock::{NodeName, ZkLockBase, ZkLockGuard, store_error};
use super::zk_paths::ensure_parents;
use crate::zk::{ZkClient, ZkClientError};
use sim::{
    NodeContext,
    history::zk::{CreateMode, ZkError},
};
use std::time::Duration;

/// A herd lock at `path` (the node whose existence means "held").
pub struct ZkHerdLock {
    base: ZkLockBase,
}

impl ZkHerdLock {
    /// The lock at `path`, used through `zk` by the client on `context`'s node.
    pub fn new(zk: &ZkClient, context: &NodeContext, path: &str) -> Self {
        Self {
            base: ZkLockBase::new(zk, context, path),
        }
    }

    /// With the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.base.bugs = bugs;
        self
    }

    /// Waits for the lock, for at most `patience`.
    pub async fn acquire(&self, patience: Duration) -> Result<ZkLockGuard, LockError> {
        self.base.recorded(self.try_acquire(patience)).await
    }

    async fn try_acquire(&self, patience: Duration) -> Result<ZkLockGuard, LockError> {
        let base = &self.base;
        let clock = base.context.clock().clone();
        let deadline = clock.now() + patience;
        loop {
            if clock.now() >= deadline {
                return Err(LockError::TimedOut);
            }
            match base.zk.create(&base.path, "", CreateMode::Ephemeral).await {
                Ok(_) | Err(ZkClientError::ConnectionLoss) => {
                    // Created, or maybe created before the connection broke: the node's
                    // owner says whether it is ours.
                }
                Err(ZkClientError::Api(ZkError::NodeExists)) => {}
                // The first client ever creates the parents: one failed create, not one
                // per turn.
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    ensure_parents(&base.zk, &base.path)
                        .await
                        .map_err(store_error)?;
                    continue;
                }
                Err(error) => return Err(store_error(error)),
            }
            let (stat, watch) = match base.zk.exists_watch(&base.path).await {
                Ok(found) => found,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(store_error(error)),
            };
            let Some(stat) = stat else {
                // Released between our create and our look: race for it again.
                continue;
            };
            if Some(stat.ephemeral_owner) == base.zk.session_id() {
                return Ok(base.held(base.path.clone(), stat.czxid, NodeName::Shared));
            }
            let left = deadline.saturating_duration_since(clock.now());
            match clock.timeout(left, watch.fired()).await {
                Ok(Ok(event)) => base.recorder.woken(&event.path),
                Ok(Err(_)) => return Err(LockError::SessionEnded),
                Err(_) => return Err(LockError::TimedOut),
            }
        }
    }
}
