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

use crate::Checked;
use crate::{
    Violation,
    history::{
        lock_waits::{Lines, LockWait, WaitEnd, line_waits},
        zk::{parent_of, zk_operations},
    },
};
use sim::{
    NodeId,
    history::{
        Event, FaultOutcome, History, OpResult,
        zk::{WatchEventType, ZkError, ZkEvent, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::{collections::BTreeMap, fmt, time::Duration};

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

/// The sequence ZooKeeper appended to a node's name (`%010d`: ten digits, or `-` and nine
/// after the counter wrapped to negative), if it has one.
fn sequence_of(name: &str) -> Option<i64> {
    let suffix = name.get(name.len().checked_sub(10)?..)?;
    let (sign, digits) = match suffix.strip_prefix('-') {
        Some(digits) => (-1, digits),
        None => (1, suffix),
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(sign * digits.parse::<i64>().ok()?)
}

/// What the history says of the nodes under each parent: when each was created (its
/// create's invocation and reply) and when it was first known gone.
#[derive(Default)]
struct Nodes {
    /// Per parent, per child name: its sequence.
    children: BTreeMap<String, BTreeMap<String, i64>>,
    /// Per path: the create's invocation and reply times.
    created: BTreeMap<String, (SimTime, SimTime)>,
    /// Per path: when it was first known gone.
    gone_at: BTreeMap<String, SimTime>,
}

impl Nodes {
    fn read(history: &History) -> Self {
        let mut nodes = Nodes::default();
        let ops = zk_operations(history);
        for op in &ops {
            let Some((done_at, result)) = op.completion else {
                continue;
            };
            match (op.operation, result) {
                (ZkOperation::Create { .. }, OpResult::Ok { .. }) => {
                    if let Some(path) = op.ok().and_then(ZkResponse::created_path) {
                        nodes.add(path);
                        nodes
                            .created
                            .insert(path.to_string(), (op.invoked_at, done_at));
                    }
                }
                (ZkOperation::Delete { path, .. }, OpResult::Ok { .. })
                | (
                    ZkOperation::Delete { path, .. }
                    | ZkOperation::GetData { path }
                    | ZkOperation::Exists { path },
                    OpResult::Fail {
                        error: sim::history::OpError::Zk(ZkError::NoNode),
                    },
                ) => nodes.gone(path, done_at),
                (
                    ZkOperation::Exists { path },
                    OpResult::Ok {
                        response: sim::history::Response::Zk(ZkResponse::Exists { stat: None }),
                    },
                ) => nodes.gone(path, done_at),
                _ => {}
            }
        }
        // Listings: what they show, and what they no longer show.
        for op in &ops {
            let (
                ZkOperation::GetChildren { path: parent },
                Some((
                    done_at,
                    OpResult::Ok {
                        response: sim::history::Response::Zk(ZkResponse::Children { children, .. }),
                    },
                )),
            ) = (op.operation, op.completion)
            else {
                continue;
            };
            for child in children {
                nodes.add(&format!("{parent}/{child}"));
            }
            let known: Vec<String> = nodes
                .children
                .get(parent.as_str())
                .map(|children| children.keys().cloned().collect())
                .unwrap_or_default();
            for child in known {
                let path = format!("{parent}/{child}");
                let created_before = nodes
                    .created
                    .get(&path)
                    .is_some_and(|(_, returned)| *returned < op.invoked_at);
                if created_before && !children.contains(&child) {
                    nodes.gone(&path, done_at);
                }
            }
        }
        for record in history.records() {
            if let Event::Zk(ZkEvent::WatchDelivered {
                path,
                event: WatchEventType::NodeDeleted,
                ..
            }) = &record.event
            {
                nodes.gone(path, record.at);
            }
        }
        nodes
    }

    fn add(&mut self, path: &str) {
        let name = path.rsplit('/').next().unwrap_or_default();
        if let Some(sequence) = sequence_of(name) {
            self.children
                .entry(parent_of(path).to_string())
                .or_default()
                .insert(name.to_string(), sequence);
        }
    }

    fn gone(&mut self, path: &str, at: SimTime) {
        let earliest = self.gone_at.entry(path.to_string()).or_insert(at);
        *earliest = (*earliest).min(at);
    }

    /// Whether sequence order is creation order under `parent`: no negative sequence, and
    /// no node created after another returned has a lower sequence.
    fn in_order(&self, parent: &str) -> bool {
        let Some(children) = self.children.get(parent) else {
            return true;
        };
        if children.values().any(|sequence| *sequence < 0) {
            return false;
        }
        let mut creates: Vec<(i64, SimTime, SimTime)> = children
            .iter()
            .filter_map(|(name, sequence)| {
                let (invoked, returned) = self.created.get(&format!("{parent}/{name}"))?;
                Some((*sequence, *invoked, *returned))
            })
            .collect();
        creates.sort();
        // Sorted by sequence: a later sequence must not have returned before an earlier
        // one was invoked.
        let mut earliest_return_after: Option<SimTime> = None;
        for (_, invoked, returned) in creates.iter().rev() {
            if earliest_return_after.is_some_and(|returned_later| returned_later < *invoked) {
                return false;
            }
            earliest_return_after =
                Some(earliest_return_after.map_or(*returned, |at| at.min(*returned)));
        }
        true
    }
}

/// What happened to a client's connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Disturbance {
    /// It lost its connection (`Disconnected`).
    Down,
    /// It has a connection again, or knows its session is over (`SessionResumed`,
    /// `SessionEstablished`, `SessionExpired`, `SessionAbandoned`).
    Up,
    /// A fault hit its node (a pause, a partition cutting its links, ...).
    Fault,
}

/// Per client process: its session timeouts (from each `SessionEstablished`), and the
/// times its connection was disturbed.
struct Connections {
    timeouts: BTreeMap<(NodeId, u32), Vec<(SimTime, u64)>>,
    disturbed: BTreeMap<NodeId, Vec<(u32, SimTime, Disturbance)>>,
}

/// Any process of the node.
const WHOLE_NODE: u32 = u32::MAX;

impl Connections {
    fn read(history: &History) -> Self {
        let mut timeouts: BTreeMap<(NodeId, u32), Vec<(SimTime, u64)>> = BTreeMap::new();
        let mut disturbed: BTreeMap<NodeId, Vec<(u32, SimTime, Disturbance)>> = BTreeMap::new();
        for record in history.records() {
            match (&record.event, record.node) {
                (
                    Event::Zk(ZkEvent::SessionEstablished {
                        process,
                        timeout_ms,
                        ..
                    }),
                    Some(node),
                ) => {
                    timeouts
                        .entry((node, *process))
                        .or_default()
                        .push((record.at, *timeout_ms));
                    disturbed
                        .entry(node)
                        .or_default()
                        .push((*process, record.at, Disturbance::Up));
                }
                (Event::Zk(ZkEvent::Disconnected { process, .. }), Some(node)) => disturbed
                    .entry(node)
                    .or_default()
                    .push((*process, record.at, Disturbance::Down)),
                (
                    Event::Zk(
                        ZkEvent::SessionResumed { process, .. }
                        | ZkEvent::SessionExpired { process, .. }
                        | ZkEvent::SessionAbandoned { process, .. },
                    ),
                    Some(node),
                ) => {
                    disturbed
                        .entry(node)
                        .or_default()
                        .push((*process, record.at, Disturbance::Up))
                }
                (Event::Fault(fault), _) => {
                    let FaultOutcome::Applied { cut_links, .. } = &fault.outcome else {
                        continue;
                    };
                    let mut hit: Vec<NodeId> = fault.target.into_iter().collect();
                    hit.extend(cut_links.iter().flat_map(|(from, to)| [*from, *to]));
                    hit.sort();
                    hit.dedup();
                    for node in hit {
                        disturbed.entry(node).or_default().push((
                            WHOLE_NODE,
                            record.at,
                            Disturbance::Fault,
                        ));
                    }
                }
                _ => {}
            }
        }
        Connections {
            timeouts,
            disturbed,
        }
    }

    /// The waiter's session timeout at `at` (its latest session's).
    fn timeout_at(&self, waiter: (NodeId, u32), at: SimTime) -> Option<Duration> {
        self.timeouts
            .get(&waiter)?
            .iter()
            .rev()
            .find(|(since, _)| *since <= at)
            .map(|(_, timeout_ms)| Duration::from_millis(*timeout_ms))
    }

    /// When the bound passes for `waiter` if it starts at `from`: it starts again at each
    /// disturbance of the waiter's connection before it passes, and it does not pass while
    /// the waiter is disconnected (it starts again when the waiter is back). `None`: the
    /// waiter never came back.
    fn bound_passes(
        &self,
        waiter: (NodeId, u32),
        from: SimTime,
        bound: Duration,
    ) -> Option<SimTime> {
        let disturbances: Vec<(SimTime, Disturbance)> = self
            .disturbed
            .get(&waiter.0)
            .map(|times| {
                times
                    .iter()
                    .filter(|(process, ..)| *process == waiter.1 || *process == WHOLE_NODE)
                    .map(|(_, at, what)| (*at, *what))
                    .collect()
            })
            .unwrap_or_default();
        let mut start = from;
        loop {
            let passes = start + bound;
            if let Some(later) = disturbances
                .iter()
                .map(|(at, _)| *at)
                .filter(|at| *at > start && *at <= passes)
                .max()
            {
                start = later;
                continue;
            }
            // Still disconnected when it would pass: it starts again once the waiter is back.
            let connection =
                |(at, what): &&(SimTime, Disturbance)| *at <= passes && *what != Disturbance::Fault;
            if disturbances
                .iter()
                .rev()
                .find(connection)
                .map(|(_, what)| *what)
                == Some(Disturbance::Down)
            {
                start = disturbances
                    .iter()
                    .find(|(at, what)| *at > passes && *what == Disturbance::Up)?
                    .0;
                continue;
            }
            return Some(passes);
        }
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
    let own_name = own.rsplit('/').next()?;
    let own_sequence = sequence_of(own_name)?;
    if !nodes.in_order(parent) {
        return None;
    }
    let mut line_clear_at = joined_at;
    for (name, sequence) in nodes.children.get(parent)? {
        if *sequence >= own_sequence {
            continue;
        }
        let gone_at = *nodes.gone_at.get(&format!("{parent}/{name}"))?;
        line_clear_at = line_clear_at.max(gone_at);
    }
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
    let nodes = Nodes::read(history);
    let connections = Connections::read(history);
    // Waits whose line was seen to clear: only they can have lost a wake-up.
    let mut judged = 0;
    let violations = line_waits(history, Lines::LocksAndElections)
        .into_iter()
        .filter_map(|wait| {
            let (node, line_clear_at, bound_passed_at, finished) =
                judge(&wait, &nodes, &connections)?;
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
    use sim::history::{Record, recipe::LockStep, zk::CreateMode};

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
