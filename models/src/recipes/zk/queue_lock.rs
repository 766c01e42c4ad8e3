//! The queue lock on ZooKeeper (the ZooKeeper recipe; Curator's `InterProcessMutex`): each
//! waiter joins a line of protected ephemeral-sequential children of the lock node
//! ([`super::line`]); the first in line holds; every other waiter watches only its
//! immediate predecessor, so a release wakes one client, not the herd. The fencing token is
//! the client's node's `czxid`.

use crate::recipes::shared::bugs::RecipeBugs;
use crate::recipes::shared::error::RecipeError;
use crate::recipes::zk::contender::Contender;
use crate::recipes::zk::held::{NodeName, ZkLockGuard};
use crate::recipes::zk::line::{CarriedJoin, Waits};
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
    waiter: Contender<LockStep>,
    carried: Option<CarriedJoin>,
}

impl ZkQueueLock {
    /// The lock at `path`, used through `zk` by the client on `context`'s node.
    pub fn new(zk: &ZkClient, context: &NodeContext, path: &str) -> Self {
        Self {
            waiter: Contender::new(zk, context, path),
            carried: None,
        }
    }

    /// With the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.waiter.bugs = bugs;
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
        let waiter = &self.waiter;
        let steps = async {
            let line = waiter.line(
                CHILD_PREFIX,
                self.carried.as_ref(),
                Waits::BehindPredecessor,
            );
            let first = line
                .wait_to_be_first("", patience, |watched| waiter.recorder.woken(watched))
                .await?;
            Ok(
                waiter.won(first.czxid, first.node, NodeName::Unique, |token| {
                    LockStep::Acquired {
                        token,
                        mode: LockMode::Exclusive,
                    }
                }),
            )
        };
        let asked = LockStep::Requested {
            mode: LockMode::Exclusive,
        };
        waiter.contend(asked, steps).await
    }
}
