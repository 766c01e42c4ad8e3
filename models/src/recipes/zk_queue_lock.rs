//! The queue lock on ZooKeeper (the ZooKeeper recipe; Curator's `InterProcessMutex`): each
//! waiter creates a protected ephemeral-sequential child of the lock node; the lowest
//! sequence holds; every other waiter watches only its immediate predecessor, so a release
//! wakes one client, not the herd.
//!
//! - The create is *protected* (a GUID in the name, [`ZkClient::create_protected`]): after
//!   a connection loss the client finds its node by GUID **and** checks that it belongs to
//!   its own session, instead of creating a second node or adopting a dead session's.
//! - If the predecessor vanished before the watch was set, the client lists the children
//!   again instead of waiting for a notification that will never come.
//! - The fencing token is the client's node's `czxid`.

use super::bugs::RecipeBugs;
use super::lock::LockError;
use super::zk_lock::{NodeName, ZkLockBase, ZkLockGuard, store_error};
use super::zk_paths::{ensure_parents, sequence_of};
use crate::zk::{ZkClient, ZkClientError};
use sim::{
    NodeContext,
    history::zk::{CreateMode, ZkError},
};
use std::time::Duration;

/// The prefix of every waiter's node name (after the protection GUID).
const CHILD_PREFIX: &str = "lock-";

/// A queue lock whose waiters queue under `path`.
pub struct ZkQueueLock {
    base: ZkLockBase,
}

impl ZkQueueLock {
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

    /// Waits for the lock, for at most `patience`; on giving up, withdraws from the queue.
    pub async fn acquire(&self, patience: Duration) -> Result<ZkLockGuard, LockError> {
        self.base.recorded(self.try_acquire(patience)).await
    }

    async fn try_acquire(&self, patience: Duration) -> Result<ZkLockGuard, LockError> {
        let base = &self.base;
        let clock = base.context.clock().clone();
        let deadline = clock.now() + patience;
        let child = format!("{}/{CHILD_PREFIX}", base.path);
        let mine = loop {
            match base
                .zk
                .create_protected(&child, "", CreateMode::EphemeralSequential)
                .await
            {
                // The first waiter ever creates the lock node (Curator's
                // `creatingParentsIfNeeded`): one failed create, not one per turn.
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    ensure_parents(&base.zk, &child)
                        .await
                        .map_err(store_error)?;
                }
                created => break created.map_err(store_error)?,
            }
        };
        let my_name = mine.rsplit('/').next().unwrap_or_default().to_string();
        let withdraw = |error: LockError| async {
            self.delete(&mine).await;
            error
        };
        loop {
            if clock.now() >= deadline {
                return Err(withdraw(LockError::TimedOut).await);
            }
            let children = match base.zk.get_children(&base.path).await {
                Ok((children, _)) => children,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(store_error(error)),
            };
            let mut queue: Vec<(i64, String)> = children
                .into_iter()
                .filter(|name| name.contains(CHILD_PREFIX))
                .filter_map(|name| Some((sequence_of(&name)?, name)))
                .collect();
            queue.sort();
            let Some(place) = queue.iter().position(|(_, name)| *name == my_name) else {
                // Our node is gone: the session that owned it ended (or someone deleted
                // it). Holding a lock through it is impossible.
                return Err(LockError::SessionEnded);
            };
            if place == 0 {
                match base.zk.exists(&mine).await {
                    Ok(Some(stat)) if Some(stat.ephemeral_owner) == base.zk.session_id() => {
                        return Ok(base.held(mine, stat.czxid, NodeName::Unique));
                    }
                    Ok(_) => return Err(LockError::SessionEnded),
                    Err(ZkClientError::ConnectionLoss) => continue,
                    Err(error) => return Err(store_error(error)),
                }
            }
            let predecessor = format!("{}/{}", base.path, queue[place - 1].1);
            let watch = match base.zk.exists_watch(&predecessor).await {
                Ok((Some(_), watch)) => watch,
                // Gone before the watch was set: list again.
                Ok((None, _)) | Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(store_error(error)),
            };
            let left = deadline.saturating_duration_since(clock.now());
            match clock.timeout(left, watch.fired()).await {
                Ok(Ok(event)) => base.recorder.woken(&event.path),
                Ok(Err(_)) => return Err(LockError::SessionEnded),
                Err(_) => return Err(withdraw(LockError::TimedOut).await),
            }
        }
    }

    async fn delete(&self, node: &str) {
        while let Err(ZkClientError::ConnectionLoss) = self.base.zk.delete(node, None).await {}
    }
}
