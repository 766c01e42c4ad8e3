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
use crate::recipes::zk::contender::Contender;
use crate::recipes::zk::held::{NodeName, ZkLockGuard};
use crate::recipes::zk::line::Waits;
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
    waiter: Contender<LockStep>,
}

impl ZkRwLock {
    /// The lock at `path`, used through `zk` by the client on `context`'s node.
    pub fn new(zk: &ZkClient, context: &NodeContext, path: &str) -> Self {
        Self {
            waiter: Contender::new(zk, context, path),
        }
    }

    /// With the known-bug variants `bugs` switched on (those of the line it shares with the
    /// queue lock, and of its guard).
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.waiter.bugs = bugs;
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
        let (child_prefix, blockers) = match mode {
            LockMode::Shared => (READER_PREFIX, WRITERS),
            LockMode::Exclusive => (WRITER_PREFIX, EVERYONE),
        };
        let waiter = &self.waiter;
        let steps = async {
            // The read/write lock's clients give up a session only when a server says so:
            // no join is carried into the next one.
            let waits = Waits::BehindNearest {
                line: EVERYONE,
                blockers,
            };
            let through = waiter
                .line(child_prefix, None, waits)
                .wait_to_be_first("", patience, |watched| waiter.recorder.woken(watched))
                .await?;
            Ok(
                waiter.won(through.czxid, through.node, NodeName::Unique, |token| {
                    LockStep::Acquired { token, mode }
                }),
            )
        };
        waiter.contend(LockStep::Requested { mode }, steps).await
    }
}
