//! Waiting in line under a ZooKeeper node, as the queue lock and leader election both do
//! (ZooKeeper recipes, "Locks" and "Leader Election"; Curator's `LockInternals`, which
//! `InterProcessMutex` and `LeaderLatch` share):
//!
//! - each client creates a *protected* ephemeral-sequential child of the line's node
//!   ([`ZkClient::create_protected`]): after a connection loss it finds its node by GUID
//!   **and** checks that it belongs to its own session, instead of creating a second node or
//!   adopting a dead session's (without the GUID, `recipe.unprotected_seq_create`, a lost
//!   reply leaves an orphan of the client's own session in line ahead of it);
//! - a create whose session ended before its reply came may be carried into the next
//!   session ([`CarriedJoin`], Curator's retry loop after a simulated expiry): it looks for
//!   its GUID first, and deletes a node its old session made — which the servers may still
//!   hold — instead of adopting it (without the check, `recipe.protection_without_session_check`,
//!   it holds the lock by a node that goes when the old session expires);
//! - the lowest sequence is first; every other client watches only its immediate
//!   predecessor, so one departure wakes one client, not the herd (with
//!   `recipe.herd_watch_all` every waiter watches the first node, so its going wakes them
//!   all);
//! - if the predecessor vanished before the watch was set, the client lists the children
//!   again instead of waiting for a notification that will never come (with
//!   `recipe.no_relist_on_gone_predecessor` it waits on, until its patience runs out).
//!
//! The read/write lock (ZooKeeper recipes, "Shared Locks") waits in a line of two kinds of
//! node: a writer waits for its immediate predecessor of either kind, as above, but a reader
//! waits only for the nearest *writer* before it, so readers with no writer between them
//! hold together ([`Waits::BehindNearest`]).

use crate::recipes::shared::bugs::{RecipeBug, RecipeBugs};
use crate::recipes::shared::error::RecipeError;
use crate::recipes::zk::paths::{ensure_parents, in_sequence_order};
use crate::zk::{FoundNode, ProtectedCreate, ZkClient, ZkClientError};
use sim::{
    NodeContext,
    history::zk::{CreateMode, Stat, ZkError},
};
use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

/// A client's node at the head of the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FirstInLine {
    /// Its full path.
    pub(crate) node: String,
    /// Its `czxid`: the fencing token.
    pub(crate) czxid: u64,
}

/// Whom a client in line waits behind.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Waits<'a> {
    /// The line is the nodes named with the line's `child_prefix`; each waits for the node
    /// just before its own (queue lock, election).
    BehindPredecessor,
    /// The line is every node whose name contains one of `line`; a node waits for the
    /// nearest node before its own whose name contains one of `blockers`, and is through
    /// when there is none (the read/write lock: a reader's blockers are the writers, a
    /// writer's are everyone).
    BehindNearest {
        /// What marks a node of the line.
        line: &'a [&'a str],
        /// What marks a node this client must wait for.
        blockers: &'a [&'a str],
    },
}

impl Waits<'_> {
    /// The node a client must wait for, given the nodes `before` its own (first to last);
    /// `None` if it is through.
    fn blocker<'n>(&self, before: &'n [String]) -> Option<&'n String> {
        match self {
            Waits::BehindPredecessor => before.last(),
            Waits::BehindNearest { blockers, .. } => before
                .iter()
                .rev()
                .find(|name| blockers.iter().any(|mark| name.contains(mark))),
        }
    }
}

/// A line of ephemeral-sequential children of `parent`, named `<guid>-<child_prefix><seq>`.
pub(crate) struct Line<'a> {
    pub(crate) zk: &'a ZkClient,
    pub(crate) context: &'a NodeContext,
    pub(crate) parent: &'a str,
    pub(crate) child_prefix: &'a str,
    /// The recipe's known-bug variants.
    pub(crate) bugs: RecipeBugs,
    /// Where a join whose session ended is kept for the client's next session, if the
    /// client carries joins across sessions.
    pub(crate) carried: Option<&'a CarriedJoin>,
    pub(crate) waits: Waits<'a>,
}

/// A client process's line join carried from one session to the next, as Curator's retry
/// loop carries a create on after a session expiry: the protected create of the client's
/// node, kept (GUID and all) when its session ended before the client learned whether it
/// took effect, and resumed by the process's next join. Clones share it.
#[derive(Clone, Debug, Default)]
pub struct CarriedJoin(Arc<Mutex<Option<ProtectedCreate>>>);

impl CarriedJoin {
    fn take(&self) -> Option<ProtectedCreate> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }

    fn keep(&self, create: ProtectedCreate) {
        *self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(create);
    }
}

impl Line<'_> {
    /// Joins the line with a node holding `data` and waits, for at most `patience`, until
    /// the node is first (or, [`Waits::BehindNearest`], has no blocker before it). Calls `woken` with the path of each predecessor whose watch fired.
    /// On giving up, deletes its node (leaves the line).
    pub(crate) async fn wait_to_be_first(
        &self,
        data: &str,
        patience: Duration,
        woken: impl Fn(&str),
    ) -> Result<FirstInLine, RecipeError> {
        let clock = self.context.clock().clone();
        let deadline = clock.now() + patience;
        let mine = self.join(data).await?;
        let my_name = mine.rsplit('/').next().unwrap_or_default().to_string();
        let withdraw = |error: RecipeError| async {
            self.delete(&mine).await;
            error
        };
        loop {
            if clock.now() >= deadline {
                return Err(withdraw(RecipeError::TimedOut).await);
            }
            let line = match self.in_order().await {
                Ok(line) => line,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            };
            let Some(place) = line.iter().position(|name| *name == my_name) else {
                // Our node is gone: the session that owned it ended (or someone deleted
                // it). Coming first through it is impossible.
                return Err(RecipeError::SessionEnded);
            };
            let Some(blocker) = self.watched(&line[..place]) else {
                match self.zk.exists(&mine).await {
                    Ok(Some(stat)) if self.may_hold_by(&stat) => {
                        return Ok(FirstInLine {
                            node: mine,
                            czxid: stat.czxid,
                        });
                    }
                    Ok(_) => return Err(RecipeError::SessionEnded),
                    Err(ZkClientError::ConnectionLoss) => continue,
                    Err(error) => return Err(RecipeError::from(error)),
                }
            };
            let predecessor = self.path_of(blocker);
            let watch = match self.zk.exists_watch(&predecessor).await {
                Ok((Some(_), watch)) => watch,
                // The bug: gone before the watch was set, and the client waits anyway, on a
                // watch for the node's creation.
                Ok((None, watch)) if self.bugs.has(RecipeBug::NoRelistOnGonePredecessor) => watch,
                // Gone before the watch was set: list again.
                Ok((None, _)) | Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            };
            let left = deadline.saturating_duration_since(clock.now());
            match clock.timeout(left, watch.fired()).await {
                Ok(Ok(event)) => woken(&event.path),
                Ok(Err(_)) => return Err(RecipeError::SessionEnded),
                Err(_) => return Err(withdraw(RecipeError::TimedOut).await),
            }
        }
    }

    /// The node to watch, given the nodes `before` the client's own (first to last); `None`
    /// if it is through. With `recipe.herd_watch_all` (a lock) or
    /// `recipe.election_watches_leader` (an election), a client that waits behind its
    /// predecessor watches the first node in line instead, as every herd-lock waiter
    /// watches the one lock node.
    fn watched<'n>(&self, before: &'n [String]) -> Option<&'n String> {
        match self.waits {
            Waits::BehindPredecessor
                if self.bugs.has(RecipeBug::HerdWatchAll)
                    || self.bugs.has(RecipeBug::ElectionWatchesLeader) =>
            {
                before.first()
            }
            _ => self.waits.blocker(before),
        }
    }

    /// The prefix the child `name` was created with, if it may be in the line (a name
    /// without it is then left out by [`in_sequence_order`]).
    fn prefix_in_line(&self, name: &str) -> Option<&str> {
        match self.waits {
            // Not searched here: a name without the prefix has no sequence after it, and
            // `in_sequence_order` leaves it out (one search of each name, not two).
            Waits::BehindPredecessor => Some(self.child_prefix),
            Waits::BehindNearest { line, .. } => {
                line.iter().copied().find(|mark| name.contains(mark))
            }
        }
    }

    /// The names of the line's nodes, first to last (in the order of the parent's sequence
    /// counter, across its wrap: [`in_sequence_order`]).
    pub(crate) async fn in_order(&self) -> Result<Vec<String>, ZkClientError> {
        let (children, _) = self.zk.get_children(self.parent).await?;
        let line = children
            .into_iter()
            .filter_map(|name| {
                let prefix = self.prefix_in_line(&name)?;
                Some((name, prefix))
            })
            .collect();
        Ok(in_sequence_order(line, self.zk.sequence_width(), self.bugs))
    }

    /// The full path of the line's node `name`.
    pub(crate) fn path_of(&self, name: &str) -> String {
        format!("{}/{name}", self.parent)
    }

    /// Whether the client may take the lock (or lead) by its node, as the server describes
    /// it: only if its own session owns it. With `recipe.protection_without_session_check`
    /// it does not look (Curator's `LockInternals` goes by the node's place alone).
    fn may_hold_by(&self, stat: &Stat) -> bool {
        self.bugs.has(RecipeBug::ProtectionWithoutSessionCheck)
            || Some(stat.ephemeral_owner) == self.zk.session_id()
    }

    /// Creates our node; its path. The first client ever creates the line's node (Curator's
    /// `creatingParentsIfNeeded`): one failed create, not one per turn.
    async fn join(&self, data: &str) -> Result<String, RecipeError> {
        let child = self.path_of(self.child_prefix);
        let unprotected = self.bugs.has(RecipeBug::UnprotectedSeqCreate);
        let found = if self.bugs.has(RecipeBug::ProtectionWithoutSessionCheck) {
            FoundNode::ByGuidAlone
        } else {
            FoundNode::OwnedBySession
        };
        let mut resumed = self.carried.and_then(CarriedJoin::take);
        loop {
            let created = if unprotected {
                // A plain sequential create, tried again after a connection loss as if the
                // lost one never happened.
                self.zk
                    .create(&child, data, CreateMode::EphemeralSequential)
                    .await
            } else {
                let mut create = resumed.take().unwrap_or_else(|| self.zk.protect());
                let created = self
                    .zk
                    .create_protected_with(
                        &mut create,
                        &child,
                        data,
                        CreateMode::EphemeralSequential,
                        found,
                    )
                    .await;
                if let (Some(carried), Err(ZkClientError::SessionExpired)) =
                    (self.carried, &created)
                    && create.may_exist()
                {
                    carried.keep(create);
                }
                created
            };
            match created {
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    ensure_parents(self.zk, &child)
                        .await
                        .map_err(RecipeError::from)?;
                }
                Err(ZkClientError::ConnectionLoss) if unprotected => {}
                created => return created.map_err(RecipeError::from),
            }
        }
    }

    async fn delete(&self, node: &str) {
        while let Err(ZkClientError::ConnectionLoss) = self.zk.delete(node, None).await {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn a_queue_waits_for_its_predecessor_and_a_reader_only_for_the_nearest_writer() {
        let before = names(&["g1-write-01", "g2-read-02", "g3-read-03"]);
        let queue = Waits::BehindPredecessor;
        assert_eq!(queue.blocker(&before), Some(&before[2]));
        assert_eq!(queue.blocker(&[]), None);
        let reader = Waits::BehindNearest {
            line: &["read-", "write-"],
            blockers: &["write-"],
        };
        assert_eq!(reader.blocker(&before), Some(&before[0]));
        // Only readers before it: a reader holds with them.
        assert_eq!(reader.blocker(&before[1..]), None);
        let writer = Waits::BehindNearest {
            line: &["read-", "write-"],
            blockers: &["read-", "write-"],
        };
        assert_eq!(writer.blocker(&before), Some(&before[2]));
    }
}
