//! No lost wake-up: a ZooKeeper lock waiter or election candidate does not go on waiting
//! once everything before it in line is gone.
//!
//! A waiter in a queue lock lists the lock's children and watches its predecessor with
//! `exists`. If the predecessor goes between the listing and the `exists`, `exists` finds
//! nothing and leaves a watch for the node's *creation*, which never comes: the recipe says
//! "if exists() returns false, go to step 2" — list the children again (ZooKeeper Recipes,
//! "Locks"; Curator's `LockInternals` does it). A waiter that does not sleeps until its
//! patience runs out while the lock is free, and every waiter behind it sleeps too
//! (apache/helix#44; ZooKeeper's own `WriteLock` recipe, shayhatsor/zookeeper#26;
//! `recipe.no_relist_on_gone_predecessor`). Mutual exclusion holds throughout, and the
//! waiter gives up in the end, so no other check sees it.
//!
//! **The property.** Once every node before the waiter's own in line is gone — the store
//! acknowledged it: a `delete` of it succeeded or found no node, an `exists` or `getData`
//! of it found none, a watch reported its deletion, or a `getChildren` of the line's node
//! invoked after its create returned did not list it — a waiter whose own node is still
//! there holds the lock (or gives up) within the bound: twice its session timeout, plus a
//! second for notifications in flight. Twice the session timeout covers a waiter whose
//! server does not see the deletion: a server cut off from the leader drops its clients
//! within the session timeout, and a client that reconnects re-registers its watches, which
//! fire at once for nodes that went meanwhile (ZooKeeper's `SetWatches`). The bound starts
//! again whenever the waiter's own connection is disturbed — it was disconnected or
//! reconnected, its session changed or expired, or a fault hit its node — and does not run
//! while the waiter is disconnected (it starts again when the waiter is back), since a
//! waiter that cannot reach the store cannot be woken; that is availability, not a lost
//! wake-up. (A leader change gives every session a fresh timeout, so a client may stay
//! disconnected for longer than its session timeout and come back to the same session.)
//!
//! The line is the lock node's children with a sequence suffix, in sequence order. A line
//! whose parent's counter wrapped (a negative sequence, or a node created after another
//! returned with a lower sequence) is not judged: sequence order is not line order there.
//! Waits without a created node (the herd lock's waiters, etcd's) are not judged. "Before"
//! is sequence order, whatever a node's kind: a read/write lock's reader waits only for
//! writers, so once everything before it is gone it may hold too.
//!
//! An election candidate waits in the same line (ZooKeeper Recipes, "Leader Election";
//! Curator's `LeaderLatch` shares `LockInternals`' wait): it is judged from `Campaigned` to
//! `Gained` as a lock waiter is from `Requested` to `Acquired`.
//!
//! **Reads:** the lock waits and election campaigns of [`crate::history::lock_waits`] (the waiter's node, from its
//! create's reply; its session from `SessionEstablished`, with the session timeout the
//! client asked for); every client's ZooKeeper operations ([`crate::history::zk`]: creates,
//! deletes, `exists`, `getData`, `getChildren` and their replies); `WatchDelivered` events
//! of node deletions; the waiter's own connection events (`Disconnected`, `SessionResumed`,
//! `SessionEstablished`, `SessionExpired`) and the fault records naming its node.

mod connections;
mod nodes;

use crate::Checked;
use crate::history::views::HistoryViews;
use crate::{
    Violation,
    history::{
        lock_waits::{LockWait, WaitEnd},
        zk::parent_of,
    },
};
use connections::Connections;
use nodes::{Nodes, name_of, sequence_of};
use sim::{NodeId, history::History, time::SimTime};
use std::{fmt, time::Duration};

/// Notifications in flight: added to the bound.
const SETTLE: Duration = Duration::from_secs(1);

/// A waiter still waiting past the bound after everything before it was gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostWakeup {
    /// The lock.
    pub lock: String,
    /// The waiter.
    pub waiter: (NodeId, u32),
    /// Its node.
    pub node: String,
    /// When the last node before it was known gone (or, if none was before it, when its
    /// create returned).
    pub line_clear_at: SimTime,
    /// When the bound passed.
    pub bound_passed_at: SimTime,
    /// When the wait ended (acquired, gave up, or the history ended).
    pub until: SimTime,
    /// How it ended.
    pub end: WaitEnd,
}

impl fmt::Display for LostWakeup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ended = match self.end {
            WaitEnd::Acquired { .. } => "acquired",
            WaitEnd::GaveUp { .. } => "gave up",
            WaitEnd::Unfinished => "was still waiting",
        };
        write!(
            f,
            "{}/{} waiting for `{}` by {}: everything before it in line was gone at {}, and it \
             {ended} only at {} (the bound passed at {}): a lost wake-up",
            self.waiter.0,
            self.waiter.1,
            self.lock,
            self.node,
            self.line_clear_at,
            self.until,
            self.bound_passed_at
        )
    }
}

impl Violation for LostWakeup {
    fn property(&self) -> &'static str {
        "no lost wake-up"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Recipes, Locks (if exists() returns false, go to step 2); apache/helix#44"
    }

    fn at(&self) -> Option<SimTime> {
        // When the waiter should have been through.
        Some(self.bound_passed_at)
    }
}

/// The judgement of one wait, if it is judged: when its line was clear, and when the bound
/// passed.
fn judge(
    wait: &LockWait,
    nodes: &Nodes,
    connections: &Connections,
) -> Option<(String, SimTime, SimTime, Finished)> {
    let own = wait.created.last()?;
    let joined_at = wait.joined_at?;
    let parent = parent_of(own);
    let own_name = name_of(own);
    let own_sequence = sequence_of(own_name)?;
    let line = nodes.lines.get(parent)?.as_ref()?;
    let line_clear_at = joined_at.max(line.clear_below(own_sequence)?);
    let timeout = connections.timeout_at(wait.waiter, line_clear_at)?;
    let bound = timeout * 2 + SETTLE;
    let bound_passed_at = connections.bound_passes(wait.waiter, line_clear_at, bound)?;
    // Its own node gone before the bound passed: it held and released, or its session
    // ended; either way it was not left sleeping. Judged, and fine.
    let finished = if nodes
        .gone_at
        .get(own)
        .is_some_and(|gone_at| *gone_at <= bound_passed_at)
    {
        Finished::NodeGoneInBound
    } else {
        Finished::NotByNode
    };
    Some((own.clone(), line_clear_at, bound_passed_at, finished))
}

/// Whether a judged wait's own node was gone within the bound.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Finished {
    /// It was: the waiter held and released, or its session ended.
    NodeGoneInBound,
    /// It was not: the wait's own end decides.
    NotByNode,
}

/// Every lock wait or campaign that went on past the bound after everything before its node was gone.
pub fn check(history: &History) -> Checked<LostWakeup> {
    check_views(&HistoryViews::new(history))
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> Checked<LostWakeup> {
    let nodes = Nodes::read(history, history.zk_operations());
    let connections = Connections::read(history);
    // Waits whose line was seen to clear: only they can have lost a wake-up.
    let mut judged = 0;
    let violations = history
        .line_waits()
        .iter()
        .filter_map(|wait| {
            let (node, line_clear_at, bound_passed_at, finished) =
                judge(wait, &nodes, &connections)?;
            judged += 1;
            (finished == Finished::NotByNode && wait.until > bound_passed_at).then(|| LostWakeup {
                lock: wait.lock.clone(),
                waiter: wait.waiter,
                node,
                line_clear_at,
                bound_passed_at,
                until: wait.until,
                end: wait.end,
            })
        })
        .collect();
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{
        C1, C2, create, created2, established, exclusive, invoke, lock_step, ok, record, requested,
    };
    use sim::history::{
        Event, OpResult, Record,
        recipe::LockStep,
        zk::{CreateMode, ZkEvent, ZkOperation, ZkResponse},
    };

    const HOLDER: &str = "/lock/_c_b-lock-0000000000";
    const WAITER: &str = "/lock/_c_a-lock-0000000001";

    /// C2 holds by HOLDER; C1 joins behind it, lists the line, and finds HOLDER gone with
    /// `exists` at 20 ms. C1's session timeout is 1 s: the bound is 3 s.
    fn behind_a_gone_holder() -> Vec<Record> {
        let lock_node = || create("/lock/lock-", CreateMode::EphemeralSequential);
        vec![
            established(0, C1, 7),
            established(0, C2, 9),
            invoke(1, C2, 1, lock_node()),
            ok(
                2,
                C2,
                1,
                ZkResponse::Created {
                    path: HOLDER.into(),
                },
            ),
            lock_step(10, C1, requested()),
            invoke(10, C1, 2, lock_node()),
            ok(
                11,
                C1,
                2,
                ZkResponse::Created {
                    path: WAITER.into(),
                },
            ),
            invoke(
                12,
                C1,
                3,
                ZkOperation::GetChildren {
                    path: "/lock".into(),
                },
            ),
            ok(
                13,
                C1,
                3,
                ZkResponse::Children {
                    children: vec!["_c_b-lock-0000000000".into(), "_c_a-lock-0000000001".into()],
                    stat: Default::default(),
                },
            ),
            invoke(
                19,
                C1,
                4,
                ZkOperation::Exists {
                    path: HOLDER.into(),
                },
            ),
            ok(20, C1, 4, ZkResponse::Exists { stat: None }),
        ]
    }

    fn gave_up(ms: u64) -> Record {
        lock_step(
            ms,
            C1,
            LockStep::GaveUp {
                why: "timed out".into(),
            },
        )
    }

    #[test]
    fn a_waiter_sleeping_on_a_gone_predecessor_until_its_patience_ends_is_reported() {
        let mut records = behind_a_gone_holder();
        records.push(gave_up(10_010));
        let violations = check(&History::from_records(records));
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].node, WAITER);
        assert_eq!(violations[0].line_clear_at, SimTime::from_millis(20));
        assert_eq!(violations[0].bound_passed_at, SimTime::from_millis(3_020));
        assert!(violations[0].to_string().contains("lost wake-up"));
    }

    #[test]
    fn a_waiter_whose_creates_answered_create2_is_judged_too() {
        // The zookeeper-client drop-in's create is create2: its reply carries the stat.
        let mut records: Vec<Record> = behind_a_gone_holder()
            .into_iter()
            .map(|mut record| {
                if let Event::Complete {
                    result:
                        OpResult::Ok {
                            response: sim::history::Response::Zk(response),
                        },
                    ..
                } = &mut record.event
                    && let ZkResponse::Created { path } = response
                {
                    *response = created2(path, 7);
                }
                record
            })
            .collect();
        records.push(gave_up(10_010));
        let checked = check(&History::from_records(records));
        assert_eq!(checked.judged, 1);
        assert_eq!(checked.len(), 1, "{:?}", checked.violations);
        assert_eq!(checked[0].node, WAITER);
    }

    /// A listing of the line's node, invoked at `invoked_ms` and returned at `done_ms`,
    /// that shows only the waiter.
    fn listing_without_holder(
        client: NodeId,
        op_id: u64,
        invoked_ms: u64,
        done_ms: u64,
    ) -> [Record; 2] {
        [
            invoke(
                invoked_ms,
                client,
                op_id,
                ZkOperation::GetChildren {
                    path: "/lock".into(),
                },
            ),
            ok(
                done_ms,
                client,
                op_id,
                ZkResponse::Children {
                    children: vec!["_c_a-lock-0000000001".into()],
                    stat: Default::default(),
                },
            ),
        ]
    }

    #[test]
    fn a_listing_that_no_longer_shows_a_node_dates_its_going_by_the_earliest_return() {
        // No `exists` this time: only listings tell that the holder went. The listing
        // invoked first returns last; the one invoked after it returns first, and dates it.
        let mut records = behind_a_gone_holder();
        records.truncate(records.len() - 2);
        records.extend(listing_without_holder(C2, 5, 14, 30));
        records.extend(listing_without_holder(C1, 6, 15, 16));
        records.push(gave_up(10_010));
        let violations = check(&History::from_records(records));
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].line_clear_at, SimTime::from_millis(16));
    }

    #[test]
    fn a_waiter_that_lists_again_and_acquires_passes() {
        let mut records = behind_a_gone_holder();
        records.push(lock_step(25, C1, exclusive(11)));
        assert_eq!(check(&History::from_records(records)), vec![]);
    }

    #[test]
    fn a_waiter_behind_a_node_not_known_gone_is_not_judged() {
        let mut records = behind_a_gone_holder();
        // The `exists` found the holder's node: it is still there.
        records.pop();
        records.push(ok(
            20,
            C1,
            4,
            ZkResponse::Exists {
                stat: Some(Default::default()),
            },
        ));
        records.push(gave_up(10_010));
        assert_eq!(check(&History::from_records(records)), vec![]);
    }

    #[test]
    fn a_disturbed_connection_starts_the_bound_again() {
        let mut records = behind_a_gone_holder();
        records.push(record(
            2_000,
            C1,
            Event::Zk(ZkEvent::Disconnected {
                process: 0,
                session: 7,
                server: NodeId::server(0),
            }),
        ));
        records.push(record(
            2_100,
            C1,
            Event::Zk(ZkEvent::SessionResumed {
                process: 0,
                session: 7,
                server: NodeId::server(1),
            }),
        ));
        // The bound starts again at 2.1 s: it passes at 5.1 s.
        records.push(gave_up(4_500));
        assert_eq!(check(&History::from_records(records.clone())), vec![]);
        records.pop();
        records.push(gave_up(5_500));
        assert_eq!(check(&History::from_records(records)).len(), 1);
    }

    #[test]
    fn a_waiter_disconnected_for_longer_than_the_bound_is_judged_from_its_return() {
        let mut records = behind_a_gone_holder();
        let connection = |ms, event| record(ms, C1, Event::Zk(event));
        records.push(connection(
            1_000,
            ZkEvent::Disconnected {
                process: 0,
                session: 7,
                server: NodeId::server(0),
            },
        ));
        records.push(connection(
            7_000,
            ZkEvent::SessionResumed {
                process: 0,
                session: 7,
                server: NodeId::server(1),
            },
        ));
        records.push(lock_step(7_050, C1, exclusive(11)));
        assert_eq!(check(&History::from_records(records.clone())), vec![]);
        // Back at 7 s, and still asleep 3 s later: lost.
        records.pop();
        records.push(gave_up(10_100));
        let violations = check(&History::from_records(records));
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].bound_passed_at, SimTime::from_millis(10_000));
    }

    #[test]
    fn sequences_are_read_from_names_and_wrapped_lines_are_not_judged() {
        assert_eq!(sequence_of("_c_a-lock-0000000012"), Some(12));
        assert_eq!(sequence_of("_c_a-lock--000000005"), Some(-5));
        assert_eq!(sequence_of("lock"), None);
        // A node created after the waiter's returned, with a lower sequence (the same as
        // the holder's): the counter wrapped, and sequence order is not line order.
        let mut wrapped = behind_a_gone_holder();
        wrapped.push(invoke(
            30,
            C2,
            5,
            create("/lock/lock-", CreateMode::EphemeralSequential),
        ));
        wrapped.push(ok(
            31,
            C2,
            5,
            ZkResponse::Created {
                path: "/lock/_c_c-lock-0000000000".into(),
            },
        ));
        wrapped.push(invoke(
            40,
            C2,
            6,
            ZkOperation::Delete {
                path: "/lock/_c_c-lock-0000000000".into(),
                version: None,
            },
        ));
        wrapped.push(ok(41, C2, 6, ZkResponse::Deleted));
        wrapped.push(gave_up(10_010));
        assert_eq!(check(&History::from_records(wrapped)), vec![]);
    }
}
