//! Sequential nodes get unique names whose sequence numbers increase per parent.
//!
//! "The sequence number ... is a monotonically increasing counter maintained by the
//! parent znode" (ZooKeeper Programmer's Guide, *Sequence Nodes*): no two creates get the
//! same name, and a create that starts after another finished gets a larger number.
//!
//! The counter is a signed integer of [`crate::CheckContext::sequence_counter_bits`] bits
//! (ZooKeeper's 32, or fewer in a scenario that makes it wrap within the run), formatted
//! `%010d` after the path the create asked for, and it wraps from its largest value to its
//! smallest (ZOOKEEPER-2944): `n-2147483647` is followed by `n--2147483648`. So "larger" is
//! along the counter, unwrapped: each parent's
//! sequences, in the order their creates were acknowledged, are counted on from the one
//! before by the shortest way round the counter (less than half its range: the check
//! assumes no two creates acknowledged one after the other are half the range apart). A
//! name that comes round again a whole turn of the counter later is not a duplicate.
//!
//! **Reads:** client operations only (the names `create` returned to clients, from
//! `Invoke`/`Complete`). No server event is trusted.

use crate::history::views::HistoryViews;
use crate::history::zk::{parent_of, sequence_appended};
use crate::{Checked, Violation};
use sim::{
    history::{
        History, OpId,
        zk::{CreateMode, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// Two sequential creates that got the same name, or numbers out of real-time order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SequenceViolation {
    /// The same name twice.
    Duplicate {
        /// The name.
        path: String,
        /// The two creates.
        creates: (OpId, OpId),
    },
    /// A later create got a number not above an earlier one's.
    NotIncreasing {
        /// The earlier create (finished first) and its name.
        earlier: (OpId, String, SimTime),
        /// The later create (started after) and its name.
        later: (OpId, String, SimTime),
    },
}

impl fmt::Display for SequenceViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SequenceViolation::Duplicate { path, creates } => {
                write!(f, "{} and {} both created {path}", creates.0, creates.1)
            }
            SequenceViolation::NotIncreasing { earlier, later } => write!(
                f,
                "{} created {} (done at {}), then {} (started at {}) created {}",
                earlier.0, earlier.1, earlier.2, later.0, later.2, later.1
            ),
        }
    }
}

impl Violation for SequenceViolation {
    fn property(&self) -> &'static str {
        "sequential names unique and increasing"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Programmer's Guide, Sequence Nodes"
    }

    fn at(&self) -> Option<SimTime> {
        // The later create; unknown for a duplicate.
        match self {
            SequenceViolation::NotIncreasing { later, .. } => Some(later.2),
            SequenceViolation::Duplicate { .. } => None,
        }
    }
}

/// One acknowledged sequential create: (sequence unwrapped, name, create, invoked,
/// acknowledged).
type SequentialCreate = (i64, String, OpId, SimTime, SimTime);

/// `sequence` counted on from `previous` (unwrapped) by the shortest way round a counter of
/// `bits` bits.
fn unwrap_after(previous: i64, sequence: i32, bits: u32) -> i64 {
    let range = 1i64 << bits;
    let ahead = (i64::from(sequence) - previous).rem_euclid(range);
    if ahead >= range / 2 {
        previous + ahead - range
    } else {
        previous + ahead
    }
}

/// Every duplicate or out-of-order sequential name, over a counter of `counter_bits` bits.
pub fn check(history: &History, counter_bits: u32) -> Checked<SequenceViolation> {
    check_views(&HistoryViews::new(history), counter_bits)
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>, counter_bits: u32) -> Checked<SequenceViolation> {
    let counter_bits = counter_bits.clamp(1, 32);
    let mut by_parent: BTreeMap<String, Vec<(i32, String, OpId, SimTime, SimTime)>> =
        BTreeMap::new();
    for op in history.zk_operations() {
        let ZkOperation::Create {
            path: requested,
            mode,
            ..
        } = op.operation
        else {
            continue;
        };
        if !matches!(
            mode,
            CreateMode::PersistentSequential | CreateMode::EphemeralSequential
        ) {
            continue;
        }
        let (Some(path), Some(done)) = (op.ok().and_then(ZkResponse::created_path), op.ok_at())
        else {
            continue;
        };
        let Some(sequence) = sequence_appended(requested, path) else {
            continue;
        };
        by_parent
            .entry(parent_of(path).to_string())
            .or_default()
            .push((sequence, path.to_string(), op.op_id, op.invoked_at, done));
    }
    let by_parent: BTreeMap<String, Vec<SequentialCreate>> = by_parent
        .into_iter()
        .map(|(parent, mut creates)| {
            creates.sort_by_key(|create| (create.4, create.2));
            let mut previous: Option<i64> = None;
            let unwrapped = creates
                .into_iter()
                .map(|(sequence, name, op, invoked, done)| {
                    let sequence = match previous {
                        None => i64::from(sequence),
                        Some(previous) => unwrap_after(previous, sequence, counter_bits),
                    };
                    previous = Some(sequence);
                    (sequence, name, op, invoked, done)
                })
                .collect();
            (parent, unwrapped)
        })
        .collect();
    let judged = by_parent.values().map(|creates| creates.len() as u64).sum();
    let mut violations = Vec::new();
    for creates in by_parent.values() {
        let mut names: BTreeMap<(&str, i64), OpId> = BTreeMap::new();
        for (sequence, name, op, _, _) in creates {
            if let Some(first) = names.insert((name, *sequence), *op) {
                violations.push(SequenceViolation::Duplicate {
                    path: name.clone(),
                    creates: (first, *op),
                });
            }
        }
        for a in creates {
            for b in creates {
                if a.4 < b.3 && a.0 >= b.0 {
                    violations.push(SequenceViolation::NotIncreasing {
                        earlier: (a.2, a.1.clone(), a.4),
                        later: (b.2, b.1.clone(), b.3),
                    });
                }
            }
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::*;

    fn created(start: u64, op: u64, name: &str) -> [sim::history::Record; 2] {
        [
            invoke(
                start,
                C1,
                op,
                create("/q/n-", CreateMode::PersistentSequential),
            ),
            ok(start + 1, C1, op, ZkResponse::Created { path: name.into() }),
        ]
    }

    #[test]
    fn increasing_unique_names_pass_and_repeats_fail() {
        let mut good = created(1, 1, "/q/n-0000000000").to_vec();
        good.extend(created(5, 2, "/q/n-0000000002"));
        assert!(check(&History::from_records(good), 32).is_empty());
        let mut bad = created(1, 1, "/q/n-0000000003").to_vec();
        bad.extend(created(5, 2, "/q/n-0000000003"));
        let violations = check(&History::from_records(bad), 32);
        assert!(matches!(violations[0], SequenceViolation::Duplicate { .. }));
        assert!(matches!(
            violations[1],
            SequenceViolation::NotIncreasing { .. }
        ));
    }

    #[test]
    fn names_follow_the_counter_round_its_wrap() {
        // 6 bits: 31 is followed by -32; at 32 bits 2147483647 by -2147483648.
        let mut wrapped = created(1, 1, "/q/n-0000000030").to_vec();
        wrapped.extend(created(5, 2, "/q/n-0000000031"));
        wrapped.extend(created(9, 3, "/q/n--000000032"));
        wrapped.extend(created(13, 4, "/q/n--000000001"));
        wrapped.extend(created(17, 5, "/q/n-0000000000"));
        // A whole turn later the first name comes round again: not a duplicate.
        wrapped.extend(created(21, 6, "/q/n-0000000030"));
        assert!(check(&History::from_records(wrapped.clone()), 6).is_empty());
        // At 32 bits the same names go backwards.
        assert!(!check(&History::from_records(wrapped), 32).is_empty());
        let mut zookeeper = created(1, 1, "/q/n-2147483647").to_vec();
        zookeeper.extend(created(5, 2, "/q/n--2147483648"));
        zookeeper.extend(created(9, 3, "/q/n--2147483647"));
        assert!(check(&History::from_records(zookeeper), 32).is_empty());
        // Going back across the wrap is still a violation.
        let mut backwards = created(1, 1, "/q/n--000000032").to_vec();
        backwards.extend(created(5, 2, "/q/n-0000000031"));
        assert!(matches!(
            check(&History::from_records(backwards), 6)[..],
            [SequenceViolation::NotIncreasing { .. }]
        ));
    }

    #[test]
    fn a_create2_reply_is_judged_as_a_create_reply() {
        // The zookeeper-client drop-in's create is create2: its reply carries the stat.
        let create2 = |start: u64, op: u64, name: &str| {
            [
                invoke(
                    start,
                    C1,
                    op,
                    create("/q/n-", CreateMode::EphemeralSequential),
                ),
                ok(start + 1, C1, op, created2(name, 7)),
            ]
        };
        let mut twice = create2(1, 1, "/q/n-0000000004").to_vec();
        twice.extend(create2(5, 2, "/q/n-0000000004"));
        let checked = check(&History::from_records(twice), 32);
        assert_eq!(checked.judged, 2);
        assert!(matches!(
            checked[..],
            [SequenceViolation::Duplicate { .. }, ..]
        ));
    }
}
