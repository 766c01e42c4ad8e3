//! The queue lock on ZooKeeper (the ZooKeeper recipe; Curator's `InterProcessMutex`): each
//! waiter joins a line of protected ephemeral-sequential children of the lock node
//! ([`super::line`]); the first in line holds; every other waiter watches only its
//! immediate predecessor, so a release wakes one client, not the herd. The fencing token is
//! the client's node's `czxid`.

use crate::recipes::shared::bugs::RecipeBugs;
use crate::recipes::shared::error::RecipeError;
use crate::recipes::shared::recorder::LockRecorder;
use crate::recipes::zk::held::{NodeName, ZkLockGuard, ZkNode};
use crate::recipes::zk::line::{CarriedJoin, Line, Waits};
use crate::zk::ZkClient;
use sim::{
    NodeContext,
    history::recipe::{LockMode, LockStep},
};
use std::time::Duration;

/// The prefix of every waiter's node name (after the protection GUID).
const CHILD_PREFIX: &str = "lock-";

/// A queue lock whose waiters queue under `path`.
pub struct ZkQueueLock {
    bugs: RecipeBugs,
    carried: Option<CarriedJoin>,
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
            carried: None,
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

    /// Carries a join whose session ends before the create's reply came into the client's
    /// next session, through `carried` (the process's one for all its sessions), as
    /// Curator's `InterProcessMutex` does after a simulated session expiry.
    pub fn carrying(mut self, carried: &CarriedJoin) -> Self {
        self.carried = Some(carried.clone());
        self
    }

    /// Waits for the lock, for at most `patience`; on giving up, withdraws from the queue.
    pub async fn acquire(&self, patience: Duration) -> Result<ZkLockGuard, RecipeError> {
        self.recorder.record(LockStep::Requested {
            mode: LockMode::Exclusive,
        });
        let result = self.try_acquire(patience).await;
        if let Err(error) = &result {
            self.recorder.gave_up(error);
        }
        result
    }

    async fn try_acquire(&self, patience: Duration) -> Result<ZkLockGuard, RecipeError> {
        let line = Line {
            zk: &self.zk,
            context: &self.context,
            parent: &self.path,
            child_prefix: CHILD_PREFIX,
            bugs: self.bugs,
            carried: self.carried.as_ref(),
            waits: Waits::BehindPredecessor,
        };
        let first = line
            .wait_to_be_first("", patience, |watched| self.recorder.woken(watched))
            .await?;
        Ok(self.held(first.node, first.czxid))
    }

    fn held(&self, node: String, token: u64) -> ZkLockGuard {
        self.recorder.record(LockStep::Acquired {
            token,
            mode: LockMode::Exclusive,
        });
        ZkLockGuard::new(
            token,
            &self.recorder,
            self.context.sim().now(),
            self.bugs,
            ZkNode::new(&self.zk, node, NodeName::Unique),
        )
    }
}
