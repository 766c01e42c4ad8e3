//! What the ZooKeeper locks share: how an acquisition is recorded, and the guard of a held
//! lock (its node, its token, and how its holder learns it lost it).

use super::bugs::{RecipeBug, RecipeBugs};
use super::lock::{LockError, LockRecorder};
use crate::zk::{ZkClient, ZkClientError};
use futures_util::future::{Either, select};
use sim::{
    NodeContext,
    history::recipe::{LockStep, LossReason},
    time::SimTime,
};
use std::{future::Future, pin::pin};

/// A ZooKeeper lock at `path`, used through one client session.
pub(crate) struct ZkLockBase {
    pub(crate) bugs: RecipeBugs,
    pub(crate) zk: ZkClient,
    pub(crate) path: String,
    pub(crate) context: NodeContext,
    pub(crate) recorder: LockRecorder,
}

impl ZkLockBase {
    pub(crate) fn new(zk: &ZkClient, context: &NodeContext, path: &str) -> Self {
        Self {
            bugs: RecipeBugs::default(),
            zk: zk.clone(),
            path: path.to_string(),
            context: context.clone(),
            recorder: LockRecorder::new(context, zk.process(), path),
        }
    }

    /// Records the request, runs `attempt`, and records giving up if it failed.
    pub(crate) async fn recorded(
        &self,
        attempt: impl Future<Output = Result<ZkLockGuard, LockError>>,
    ) -> Result<ZkLockGuard, LockError> {
        self.recorder.record(LockStep::Requested);
        let result = attempt.await;
        if let Err(error) = &result {
            self.recorder.gave_up(error);
        }
        result
    }

    /// The guard of the lock held through `node`, recorded as acquired with `token`.
    pub(crate) fn held(&self, node: String, token: u64, node_name: NodeName) -> ZkLockGuard {
        self.recorder.record(LockStep::Acquired { token });
        ZkLockGuard {
            zk: self.zk.clone(),
            node,
            token,
            recorder: self.recorder.clone(),
            acquired_at: self.context.sim().now(),
            node_name,
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
        let why = loop {
            let watched = match self.zk.exists_watch(&self.node).await {
                Ok((Some(stat), watch)) if Some(stat.ephemeral_owner) == self.zk.session_id() => {
                    watch
                }
                Ok(_) => break LossReason::NodeDeleted,
                Err(ZkClientError::ConnectionLoss) => break LossReason::ConnectionLost,
                Err(_) => break LossReason::SessionExpired,
            };
            let interrupted = pin!(self.zk.connection_interrupted());
            let fired = pin!(watched.fired());
            match select(fired, interrupted).await {
                Either::Left((Ok(_), _)) => continue,
                Either::Left((Err(_), _)) => break LossReason::SessionExpired,
                Either::Right(((), _)) if self.zk.is_expired() => {
                    break LossReason::SessionExpired;
                }
                Either::Right(((), _)) => break LossReason::ConnectionLost,
            }
        };
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
