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
use super::lock::{LockError, LockRecorder};
use super::zk_herd_lock::{NodeName, ZkLockGuard, store_error};
use super::zk_paths::{ensure_parents, sequence_of};
use crate::zk::{ZkClient, ZkClientError};
use sim::{
    NodeContext,
    history::{
        recipe::LockStep,
        zk::{CreateMode, ZkError},
    },
};
use std::time::Duration;

/// The prefix of every waiter's node name (after the protection GUID).
const CHILD_PREFIX: &str = "lock-";

/// A queue lock whose waiters queue under `path`.
pub struct ZkQueueLock {
    bugs: RecipeBugs,
    zk: ZkClient,
    path: String,
    context: NodeContext,
    recorder: LockRecorder,
}

impl ZkQueueLock {
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

    /// Waits for the lock, for at most `patience`; on giving up, withdraws from the queue.
    pub async fn acquire(&self, patience: Duration) -> Result<ZkLockGuard, LockError> {
        self.recorder.record(LockStep::Requested);
        let result = self.try_acquire(patience).await;
        if let Err(error) = &result {
            self.recorder.gave_up(error);
        }
        result
    }

    async fn try_acquire(&self, patience: Duration) -> Result<ZkLockGuard, LockError> {
        let clock = self.context.clock().clone();
        let deadline = clock.now() + patience;
        let child = format!("{}/{CHILD_PREFIX}", self.path);
        let mine = loop {
            match self
                .zk
                .create_protected(&child, "", CreateMode::EphemeralSequential)
                .await
            {
                // The first waiter ever creates the lock node (Curator's
                // `creatingParentsIfNeeded`): one failed create, not one per turn.
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    ensure_parents(&self.zk, &child)
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
            let children = match self.zk.get_children(&self.path).await {
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
                match self.zk.exists(&mine).await {
                    Ok(Some(stat)) if Some(stat.ephemeral_owner) == self.zk.session_id() => {
                        return Ok(self.held(mine, stat.czxid));
                    }
                    Ok(_) => return Err(LockError::SessionEnded),
                    Err(ZkClientError::ConnectionLoss) => continue,
                    Err(error) => return Err(store_error(error)),
                }
            }
            let predecessor = format!("{}/{}", self.path, queue[place - 1].1);
            let watch = match self.zk.exists_watch(&predecessor).await {
                Ok((Some(_), watch)) => watch,
                // Gone before the watch was set: list again.
                Ok((None, _)) | Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(store_error(error)),
            };
            let left = deadline.saturating_duration_since(clock.now());
            match clock.timeout(left, watch.fired()).await {
                Ok(Ok(event)) => self.recorder.woken(&event.path),
                Ok(Err(_)) => return Err(LockError::SessionEnded),
                Err(_) => return Err(withdraw(LockError::TimedOut).await),
            }
        }
    }

    async fn delete(&self, node: &str) {
        while let Err(ZkClientError::ConnectionLoss) = self.zk.delete(node, None).await {}
    }

    fn held(&self, node: String, token: u64) -> ZkLockGuard {
        self.recorder.record(LockStep::Acquired { token });
        ZkLockGuard {
            zk: self.zk.clone(),
            node,
            token,
            recorder: self.recorder.clone(),
            acquired_at: self.context.sim().now(),
            node_name: NodeName::Unique,
            bugs: self.bugs,
        }
    }
}
