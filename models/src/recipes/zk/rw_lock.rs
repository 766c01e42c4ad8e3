//! The read/write lock on ZooKeeper (ZooKeeper recipes, "Shared Locks"; Curator's
//! `InterProcessReadWriteLock`): readers and writers join one line of protected
//! ephemeral-sequential children of the lock node ([`super::line`]), readers as `read-`
//! nodes and writers as `write-` nodes.
//!
//! - A **writer** waits for the node just before its own, of either kind, as the queue lock
//!   does: it holds when it is first.
//! - A **reader** waits only for the nearest writer's node before its own, and holds as soon
//!   as there is none: readers with no writer between them hold together. If that writer
//!   vanished before the watch was set, the reader lists the children again.
//!
//! Either way one departure wakes one waiter: a writer's release wakes the readers behind it
//! that watch it and the node just after it, not the herd. The fencing token is the client's
//! node's `czxid`.

use crate::recipes::shared::bugs::RecipeBugs;
use crate::recipes::shared::error::RecipeError;
use crate::recipes::shared::recorder::LockRecorder;
use crate::recipes::zk::held::{NodeName, ZkLockGuard, ZkNode};
use crate::recipes::zk::line::{Line, Waits};
use crate::zk::ZkClient;
use sim::{
    NodeContext,
    history::recipe::{LockMode, LockStep},
};
use std::time::Duration;

/// What marks a reader's node (after the protection GUID).
const READER_PREFIX: &str = "read-";
/// What marks a writer's node (after the protection GUID).
const WRITER_PREFIX: &str = "write-";
/// Both kinds share one line.
const EVERYONE: &[&str] = &[READER_PREFIX, WRITER_PREFIX];
/// A reader waits for writers only.
const WRITERS: &[&str] = &[WRITER_PREFIX];

/// A read/write lock whose readers and writers queue under `path`.
pub struct ZkRwLock {
    bugs: RecipeBugs,
    zk: ZkClient,
    path: String,
    context: NodeContext,
    recorder: LockRecorder,
}

impl ZkRwLock {
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

    /// With the known-bug variants `bugs` switched on (those of the line it shares with the
    /// queue lock, and of its guard).
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.bugs = bugs;
        self
    }

    /// Waits for the lock in `mode` (shared: the read lock; exclusive: the write lock), for
    /// at most `patience`; on giving up, withdraws from the line. `RecipeError::SessionEnded`
    /// tells the caller its session is gone and a new one is needed.
    pub async fn acquire(
        &self,
        mode: LockMode,
        patience: Duration,
    ) -> Result<ZkLockGuard, RecipeError> {
        self.recorder.record(LockStep::Requested { mode });
        let result = self.try_acquire(mode, patience).await;
        if let Err(error) = &result {
            self.recorder.gave_up(error);
        }
        result
    }

    async fn try_acquire(
        &self,
        mode: LockMode,
        patience: Duration,
    ) -> Result<ZkLockGuard, RecipeError> {
        let (child_prefix, blockers) = match mode {
            LockMode::Shared => (READER_PREFIX, WRITERS),
            LockMode::Exclusive => (WRITER_PREFIX, EVERYONE),
        };
        let line = Line {
            zk: &self.zk,
            context: &self.context,
            parent: &self.path,
            child_prefix,
            bugs: self.bugs,
            // The read/write lock's clients give up a session only when a server says so.
            carried: None,
            waits: Waits::BehindNearest {
                line: EVERYONE,
                blockers,
            },
        };
        let through = line
            .wait_to_be_first("", patience, |watched| self.recorder.woken(watched))
            .await?;
        self.recorder.record(LockStep::Acquired {
            token: through.czxid,
            mode,
        });
        Ok(ZkLockGuard::new(
            through.czxid,
            &self.recorder,
            self.context.sim().now(),
            self.bugs,
            ZkNode::new(&self.zk, through.node, NodeName::Unique),
        ))
    }
}
