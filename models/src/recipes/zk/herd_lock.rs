//! The herd lock on ZooKeeper: every waiter tries to create one ephemeral node and, failing,
//! watches it with `exists`. Each release wakes every waiter, and they all race to create
//! the node again: the *herd effect* the queue lock avoids (ZooKeeper recipes, "Locks";
//! the seeds' first go-zookeeper lock).
//!
//! The fencing token is the lock node's `czxid`. The holder keeps an `exists` watch on its
//! node and treats the end of its attachment to a server as a possible loss: while
//! disconnected it cannot know whether its session still lives (Curator's SUSPENDED).

use crate::recipes::shared::bugs::RecipeBugs;
use crate::recipes::shared::error::RecipeError;
use crate::recipes::zk::contender::Contender;
use crate::recipes::zk::held::{NodeName, ZkLockGuard};
use crate::recipes::zk::paths::ensure_parents;
use crate::zk::{ZkClient, ZkClientError};
use sim::{
    NodeContext,
    history::{
        recipe::{LockMode, LockStep},
        zk::{CreateMode, ZkError},
    },
};
use std::time::Duration;

/// A herd lock at `path` (the node whose existence means "held").
pub struct ZkHerdLock {
    waiter: Contender<LockStep>,
}

impl ZkHerdLock {
    /// The lock at `path`, used through `zk` by the client on `context`'s node.
    pub fn new(zk: &ZkClient, context: &NodeContext, path: &str) -> Self {
        Self {
            waiter: Contender::new(zk, context, path),
        }
    }

    /// With the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.waiter.bugs = bugs;
        self
    }

    /// Waits for the lock, for at most `patience`.
    pub async fn acquire(&self, patience: Duration) -> Result<ZkLockGuard, RecipeError> {
        let asked = LockStep::Requested {
            mode: LockMode::Exclusive,
        };
        self.waiter.contend(asked, self.try_acquire(patience)).await
    }

    async fn try_acquire(&self, patience: Duration) -> Result<ZkLockGuard, RecipeError> {
        let Contender {
            zk, path, context, ..
        } = &self.waiter;
        let clock = context.clock().clone();
        let deadline = clock.now() + patience;
        loop {
            if clock.now() >= deadline {
                return Err(RecipeError::TimedOut);
            }
            match zk.create(path, "", CreateMode::Ephemeral).await {
                Ok(_) | Err(ZkClientError::ConnectionLoss) => {
                    // Created, or maybe created before the connection broke: the node's
                    // owner says whether it is ours.
                }
                Err(ZkClientError::Api(ZkError::NodeExists)) => {}
                // The first client ever creates the parents: one failed create, not one
                // per turn.
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    ensure_parents(zk, path).await.map_err(RecipeError::from)?;
                    continue;
                }
                Err(error) => return Err(RecipeError::from(error)),
            }
            let (stat, watch) = match zk.exists_watch(path).await {
                Ok(found) => found,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            };
            let Some(stat) = stat else {
                // Released between our create and our look: race for it again.
                continue;
            };
            if Some(stat.ephemeral_owner) == zk.session_id() {
                let node = path.clone();
                return Ok(self
                    .waiter
                    .won(stat.czxid, node, NodeName::Shared, |token| {
                        LockStep::Acquired {
                            token,
                            mode: LockMode::Exclusive,
                        }
                    }));
            }
            let left = deadline.saturating_duration_since(clock.now());
            match clock.timeout(left, watch.fired()).await {
                Ok(Ok(event)) => self.waiter.recorder.woken(&event.path),
                Ok(Err(_)) => return Err(RecipeError::SessionEnded),
                Err(_) => return Err(RecipeError::TimedOut),
            }
        }
    }
}
