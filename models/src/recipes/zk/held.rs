//! What a ZooKeeper lock or leadership rests on: the holder's node. How the holder learns
//! that it lost what its node stood for — the node was deleted, the session ended, or the
//! connection to the ensemble was interrupted — and how it lets go (deletes its node).
//!
//! While disconnected the client cannot know whether its session still lives, so it must
//! stop trusting its node then (Curator's SUSPENDED state), not only when it hears of the
//! expiry on reconnecting (CURATOR-460).

use crate::recipes::shared::held::Held;
use crate::recipes::shared::recorder::TokenSteps;
use crate::zk::{ZkClient, ZkClientError};
use futures_util::future::{Either, select};
use sim::history::recipe::{ElectionStep, LockStep, LossReason};
use std::pin::pin;

/// A held ZooKeeper lock (herd, queue or read/write lock): its node and fencing token (the
/// node's czxid).
pub type ZkLockGuard = Held<LockStep, ZkNode>;

/// A ZooKeeper leadership: the leader's node and fencing token (the node's czxid).
pub type ZkLeadership = Held<ElectionStep, ZkNode>;

/// The node a ZooKeeper holder holds by, and the client that made it.
pub struct ZkNode {
    zk: ZkClient,
    path: String,
    name: NodeName,
}

/// Whether the holder's node's name is the lock's (herd lock) or the holder's own (queue
/// lock, read/write lock, election).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeName {
    /// Every client creates the same path: another client's node may take its place.
    Shared,
    /// A sequential name no one else gets.
    Unique,
}

impl ZkNode {
    /// The node at `path`, made through `zk`, named as `name` says.
    pub(crate) fn new(zk: &ZkClient, path: String, name: NodeName) -> Self {
        Self {
            zk: zk.clone(),
            path,
            name,
        }
    }

    /// Deletes the node (a shared name only while it is this session's), retrying while the
    /// connection is lost. A node already gone (its session ended) is left alone.
    async fn delete(&self) {
        loop {
            if self.name == NodeName::Shared {
                // The herd lock's path is everyone's: delete it only while it is ours. (A
                // window remains: our session could expire and another client create the
                // node between this read and the delete. ZooKeeper cannot delete on a
                // condition on the owner; unique names avoid the question.)
                match self.zk.exists(&self.path).await {
                    Ok(Some(stat)) if Some(stat.ephemeral_owner) == self.zk.session_id() => {}
                    Err(ZkClientError::ConnectionLoss) => continue,
                    _ => return,
                }
            }
            match self.zk.delete(&self.path, None).await {
                // The client waits for a connection inside each call, up to a session
                // timeout, so this retry does not spin.
                Err(ZkClientError::ConnectionLoss) => continue,
                _ => return,
            }
        }
    }
}

impl<S: TokenSteps> Held<S, ZkNode> {
    /// Completes when the holder must stop trusting that it holds (for a leader,
    /// `OnStoppedLeading`): its node was deleted, its session ended, or its connection to
    /// the ensemble was interrupted. Records the loss.
    pub async fn lost(&self) -> LossReason {
        self.until(until_node_lost(&self.hold.zk, &self.hold.path))
            .await
    }

    /// After a loss: deletes the node if it is still there, so that the others need not
    /// wait for the session to expire. Records nothing (the loss was recorded).
    pub async fn abandon(self) {
        self.hold.delete().await;
    }

    /// Lets go: the holder stops believing it holds (recorded first), then deletes its
    /// node, so that the next in line takes over.
    async fn let_go(self) {
        self.record_let_go();
        self.hold.delete().await;
    }
}

impl ZkLockGuard {
    /// Releases the lock: the holder stops believing it holds it (recorded first), then
    /// deletes its node, retrying while the connection is lost. A node already gone (its
    /// session ended) is released too.
    pub async fn release(self) {
        self.let_go().await;
    }
}

impl ZkLeadership {
    /// Resigns: the leader stops believing it leads (recorded first), then deletes its
    /// node, retrying while the connection is lost, so the next candidate takes over.
    pub async fn resign(self) {
        self.let_go().await;
    }
}

/// Completes when `node` stops being this session's for all the client can tell; why.
/// Keeps an `exists` watch on the node, re-armed after each data change.
async fn until_node_lost(zk: &ZkClient, node: &str) -> LossReason {
    loop {
        let watched = match zk.exists_watch(node).await {
            Ok((Some(stat), watch)) if Some(stat.ephemeral_owner) == zk.session_id() => watch,
            Ok(_) => return LossReason::NodeDeleted,
            Err(ZkClientError::ConnectionLoss) => return LossReason::ConnectionLost,
            Err(_) => return LossReason::SessionExpired,
        };
        let interrupted = pin!(zk.connection_interrupted());
        let fired = pin!(watched.fired());
        match select(fired, interrupted).await {
            Either::Left((Ok(_), _)) => continue,
            Either::Left((Err(_), _)) => return LossReason::SessionExpired,
            Either::Right(((), _)) if zk.is_expired() => return LossReason::SessionExpired,
            Either::Right(((), _)) => return LossReason::ConnectionLost,
        }
    }
}
