//! The herd lock on ZooKeeper: every waiter tries to create one ephemeral node and, failing,
//! watches it with `exists`. Each release wakes every waiter, and they all race to create
//! the node again: the *herd effect* the queue lock avoids (ZooKeeper recipes, "Locks";
//! the seeds' first go-zookeeper lock).
//!
//! The fencing token is the lock node's `czxid`. The holder keeps an `exists` watch on its
//! node and treats the end of its attachment to a server as a possible loss: while
//! disconnected it cannot know whether its session still lives (Curator's SUSPENDED).

use crate::recipes::shared::bugs::{RecipeBug, RecipeBugs};
use crate::recipes::shared::lock::{LockError, LockRecorder};
use crate::recipes::zk::node_loss::until_node_lost;
use crate::recipes::zk::paths::ensure_parents;
use crate::zk::{ZkClient, ZkClientError};
use sim::{
    NodeContext,
    history::{
        recipe::{LockMode, LockStep, LossReason},
        zk::{CreateMode, ZkError},
    },
    time::SimTime,
};
use std::time::Duration;

/// A herd lock at `path` (the node whose existence means "held").
pub struct ZkHerdLock {
    bugs: RecipeBugs,
    zk: ZkClient,
    path: String,
    context: NodeContext,
    recorder: LockRecorder,
}

impl ZkHerdLock {
    /// The lock at `path`, used through `zk` by the client on `context`'s node.
    pub fn new(zk: &ZkClient, context: &NodeContext, path: &str) -> Self {
        Self {
            bugs: RecipeBugs::default(),
            zk: zk.clone(),
            path: path.to_string(),
            context: context.clone(),
            recorder: LockRecorder::new(context, zk.process(), path),
        }
    }

    /// With the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.bugs = bugs;
        self
    }

    /// Waits for the lock, for at most `patience`.
    pub async fn acquire(&self, patience: Duration) -> Result<ZkLockGuard, LockError> {
        self.recorder.record(LockStep::Requested {
            mode: LockMode::Exclusive,
        });
        let result = self.try_acquire(patience).await;
        if let Err(error) = &result {
            self.recorder.gave_up(error);
        }
        result
    }

    async fn try_acquire(&self, patience: Duration) -> Result<ZkLockGuard, LockError> {
        let clock = self.context.clock().clone();
        let deadline = clock.now() + patience;
        loop {
            if clock.now() >= deadline {
                return Err(LockError::TimedOut);
            }
            match self.zk.create(&self.path, "", CreateMode::Ephemeral).await {
                Ok(_) | Err(ZkClientError::ConnectionLoss) => {
                    // Created, or maybe created before the connection broke: the node's
                    // owner says whether it is ours.
                }
                Err(ZkClientError::Api(ZkError::NodeExists)) => {}
                // The first client ever creates the parents: one failed create, not one
                // per turn.
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    ensure_parents(&self.zk, &self.path)
                        .await
                        .map_err(store_error)?;
                    continue;
                }
                Err(error) => return Err(store_error(error)),
            }
            let (stat, watch) = match self.zk.exists_watch(&self.path).await {
                Ok(found) => found,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(store_error(error)),
            };
            let Some(stat) = stat else {
                // Released between our create and our look: race for it again.
                continue;
            };
            if Some(stat.ephemeral_owner) == self.zk.session_id() {
                return Ok(self.held(stat.czxid));
            }
            let left = deadline.saturating_duration_since(clock.now());
            match clock.timeout(left, watch.fired()).await {
                Ok(Ok(event)) => self.recorder.woken(&event.path),
                Ok(Err(_)) => return Err(LockError::SessionEnded),
                Err(_) => return Err(LockError::TimedOut),
            }
        }
    }

    fn held(&self, token: u64) -> ZkLockGuard {
        self.recorder.record(LockStep::Acquired {
            token,
            mode: LockMode::Exclusive,
        });
        ZkLockGuard {
            zk: self.zk.clone(),
            node: self.path.clone(),
            token,
            recorder: self.recorder.clone(),
            acquired_at: self.context.sim().now(),
            node_name: NodeName::Shared,
            bugs: self.bugs,
        }
    }
}

/// A held ZooKeeper lock (herd or queue): its node and fencing token.
pub struct ZkLockGuard {
    pub(crate) zk: ZkClient,
    pub(crate) node: String,
    pub(crate) token: u64,
    pub(crate) recorder: LockRecorder,
    pub(crate) acquired_at: SimTime,
    pub(crate) node_name: NodeName,
    pub(crate) bugs: RecipeBugs,
}

/// Whether the lock node's name is the lock's (herd lock) or the holder's own (queue lock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeName {
    /// Every client creates the same path: another client's node may take its place.
    Shared,
    /// A sequential name no one else gets.
    Unique,
}

impl ZkLockGuard {
    /// The fencing token: the lock node's czxid.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// When the client acquired it (global simulated time, for latency figures).
    pub fn acquired_at(&self) -> SimTime {
        self.acquired_at
    }

    /// Completes when the holder must stop trusting that it holds the lock: its node was
    /// deleted, its session ended, or its connection to the ensemble was interrupted.
    /// Records the loss.
    pub async fn lost(&self) -> LossReason {
        if self.bugs.has(RecipeBug::TrustLocalStateAfterExpiry) {
            // The bug: the holder never looks; its belief lasts until it lets go.
            return std::future::pending().await;
        }
        let why = until_node_lost(&self.zk, &self.node).await;
        self.recorder.lost(self.token, why);
        why
    }

    /// Releases the lock: the holder stops believing it holds it (recorded first), then
    /// deletes its node, retrying while the connection is lost. A node already gone (its
    /// session ended) is released too.
    pub async fn release(self) {
        self.recorder
            .record(LockStep::Released { token: self.token });
        self.delete_node().await;
    }

    /// After a loss: deletes the node if it is still there, so that the others need not
    /// wait for the session to expire. Records nothing (the loss was recorded).
    pub async fn abandon(self) {
        self.delete_node().await;
    }

    async fn delete_node(&self) {
        loop {
            if self.node_name == NodeName::Shared {
                // The herd lock's path is everyone's: delete it only while it is ours. (A
                // window remains: our session could expire and another client create the
                // node between this read and the delete. ZooKeeper cannot delete on a
                // condition on the owner; the queue lock's unique names avoid the question.)
                match self.zk.exists(&self.node).await {
                    Ok(Some(stat)) if Some(stat.ephemeral_owner) == self.zk.session_id() => {}
                    Err(ZkClientError::ConnectionLoss) => continue,
                    _ => return,
                }
            }
            match self.zk.delete(&self.node, None).await {
                // The client waits for a connection inside each call, up to a session
                // timeout, so this retry does not spin.
                Err(ZkClientError::ConnectionLoss) => continue,
                _ => return,
            }
        }
    }
}

pub(crate) fn store_error(error: ZkClientError) -> LockError {
    match error {
        ZkClientError::SessionExpired | ZkClientError::Closed => LockError::SessionEnded,
        other => LockError::Store(other.to_string()),
    }
}
