//! Each replica applies entries exactly in log order: no entry skipped, none applied twice,
//! never going back.
//!
//! Raft applies committed entries "in log order" (§5.3, Figure 2 rules for all servers:
//! "If commitIndex > lastApplied: increment lastApplied, apply log\[lastApplied\]"); ZAB
//! delivers transactions in zxid order, each once (*local primary order*, Junqueira et al.,
//! DSN 2011).
//!
//! Per node incarnation: the first incarnation starts from the empty state (index 0), and
//! each `Applied` index must be the successor ([`IndexKind::follows`]) of the one before,
//! or of the index of a `SnapshotInstalled` recorded since (the state machine was replaced:
//! Raft InstallSnapshot, a ZAB SNAP, or a ZAB follower that truncated its log below what it
//! had applied and reloaded its snapshot, which may go *back*). A crash of the node (applied,
//! not skipped) ends its incarnation: the restarted node rebuilds its state from its disk,
//! which no event records, so its first apply may be any index (unless it records the
//! state it loaded as `SnapshotInstalled`, as a ZAB server does with its snapshot and an etcd
//! server with its backend's consistent index: then it is judged from that index, and
//! `protocol.resumes_held_state` judges that it held that state before).
//!
//! **Reads:** `ProtocolEvent::Applied` and `SnapshotInstalled`, recorded by each server's
//! driver (in `models`) about itself when it applies an entry or replaces its state. The
//! property is about the server's own sequence, so its own record is the fact judged; a server
//! that applied without recording would hide from this check, but not from
//! `protocol.replica_agreement` and the client-side checks, which judge what the others applied
//! and what clients read.

use crate::{Checked, IndexKind, Violation};
use sim::{
    NodeId,
    history::{Event, History, ProtocolEvent},
    time::SimTime,
};
use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

/// What the node's state was at before the out-of-order apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Before {
    /// The run's start: nothing applied yet (index 0).
    Start,
    /// It applied this index, at this time.
    Applied(u64, SimTime),
    /// It installed a snapshot taken at this index, at this time.
    Snapshot(u64, SimTime),
}

impl Before {
    fn index(self) -> u64 {
        match self {
            Before::Start => 0,
            Before::Applied(index, _) | Before::Snapshot(index, _) => index,
        }
    }
}

/// How the apply broke the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disorder {
    /// The same index again.
    Repeated,
    /// A lower index, without a snapshot that went back.
    WentBack,
    /// A higher index that is not the successor: entries were skipped.
    Skipped,
}

/// A node applied an index that does not follow what it applied (or installed) just before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedOutOfOrder {
    /// The node.
    pub node: NodeId,
    /// What the indexes are.
    pub kind: IndexKind,
    /// Its state just before.
    pub before: Before,
    /// The index it applied, and when.
    pub applied: (u64, SimTime),
    /// How that breaks the order.
    pub disorder: Disorder,
}

impl fmt::Display for AppliedOutOfOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let before = match self.before {
            Before::Start => "at the start of the run, with nothing applied".to_string(),
            Before::Applied(index, at) => {
                format!("after applying {} at {at}", self.kind.describe(index))
            }
            Before::Snapshot(index, at) => format!(
                "after installing a snapshot at {} at {at}",
                self.kind.describe(index)
            ),
        };
        let disorder = match self.disorder {
            Disorder::Repeated => "applied twice",
            Disorder::WentBack => "went back",
            Disorder::Skipped => "skipped entries",
        };
        write!(
            f,
            "{} applied {} at {} {before}, without restarting: {disorder}",
            self.node,
            self.kind.describe(self.applied.0),
            self.applied.1,
        )
    }
}

impl Violation for AppliedOutOfOrder {
    fn property(&self) -> &'static str {
        "apply in log order"
    }

    fn reference(&self) -> &'static str {
        "Raft §5.3 and Fig. 2 (apply log[lastApplied] in order); ZAB local primary order (DSN 2011)"
    }

    fn at(&self) -> Option<SimTime> {
        // The out-of-order apply.
        Some(self.applied.1)
    }
}

/// Every apply that is not the successor of the node's previous apply or snapshot, within
/// one incarnation of the node. `kind` says whether indexes are log indexes or zxids.
pub fn check(history: &History, kind: IndexKind) -> Checked<AppliedOutOfOrder> {
    // Per node: its state so far in this incarnation; absent after a crash (unknown).
    let mut state: BTreeMap<NodeId, Before> = BTreeMap::new();
    let mut crashed: BTreeSet<NodeId> = BTreeSet::new();
    let mut violations = Vec::new();
    let mut judged = 0;
    for record in history.records() {
        match &record.event {
            Event::Fault(fault) => {
                if let Some(node) = fault.crashed() {
                    state.remove(&node);
                    crashed.insert(node);
                }
            }
            Event::Protocol(ProtocolEvent::SnapshotInstalled { index, .. }) => {
                let Some(node) = record.node else { continue };
                state.insert(node, Before::Snapshot(*index, record.at));
            }
            Event::Protocol(ProtocolEvent::Applied { index, .. }) => {
                let Some(node) = record.node else { continue };
                let before = match state.get(&node) {
                    Some(before) => Some(*before),
                    None if crashed.contains(&node) => None,
                    None => Some(Before::Start),
                };
                judged += u64::from(before.is_some());
                if let Some(before) = before
                    && !kind.follows(before.index(), *index)
                {
                    let previous = before.index();
                    violations.push(AppliedOutOfOrder {
                        node,
                        kind,
                        before,
                        applied: (*index, record.at),
                        disorder: if *index == previous {
                            Disorder::Repeated
                        } else if *index < previous {
                            Disorder::WentBack
                        } else {
                            Disorder::Skipped
                        },
                    });
                }
                state.insert(node, Before::Applied(*index, record.at));
            }
            _ => {}
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::{
        fault::Fault,
        history::{FaultOutcome, FaultRecord, Record},
    };

    const S1: NodeId = NodeId::server(0);
    const S2: NodeId = NodeId::server(1);

    fn applied(at_ms: u64, node: NodeId, index: u64) -> Record {
        Record {
            at: SimTime::from_millis(at_ms),
            node: Some(node),
            event: Event::Protocol(ProtocolEvent::Applied {
                index,
                term: 1,
                digest: index,
                request: None,
            }),
        }
    }

    fn snapshot(at_ms: u64, node: NodeId, index: u64) -> Record {
        Record {
            at: SimTime::from_millis(at_ms),
            node: Some(node),
            event: Event::Protocol(ProtocolEvent::SnapshotInstalled { index, term: 1 }),
        }
    }

    fn crash(at_ms: u64, node: NodeId, outcome: FaultOutcome) -> Record {
        Record {
            at: SimTime::from_millis(at_ms),
            node: None,
            event: Event::Fault(FaultRecord {
                fault: Fault::Crash { node: node.into() },
                target: Some(node),
                outcome,
            }),
        }
    }

    fn crashed() -> FaultOutcome {
        FaultOutcome::Applied {
            cut_links: Vec::new(),
            broken_connections: 0,
            lost_writes: 0,
        }
    }

    fn zxid(epoch: u64, counter: u64) -> u64 {
        epoch << 32 | counter
    }

    /// The violations of applying `indexes` on one node, in order.
    fn run(kind: IndexKind, indexes: &[u64]) -> Vec<AppliedOutOfOrder> {
        let records = indexes
            .iter()
            .enumerate()
            .map(|(at, index)| applied(at as u64 + 1, S1, *index))
            .collect();
        check(&History::from_records(records), kind).violations
    }

    fn disorders(violations: &[AppliedOutOfOrder]) -> Vec<(u64, Disorder)> {
        violations
            .iter()
            .map(|v| (v.applied.0, v.disorder))
            .collect()
    }

    #[test]
    fn consecutive_indexes_pass_on_every_node() {
        let history = History::from_records(vec![
            applied(1, S1, 1),
            applied(2, S2, 1),
            applied(3, S1, 2),
            applied(4, S2, 2),
            applied(5, S1, 3),
        ]);
        assert!(check(&history, IndexKind::LogIndex).is_empty());
    }

    #[test]
    fn a_skipped_entry_fails() {
        let violations = run(IndexKind::LogIndex, &[1, 2, 4, 5]);
        assert_eq!(disorders(&violations), [(4, Disorder::Skipped)]);
        assert_eq!(
            violations[0].before,
            Before::Applied(2, SimTime::from_millis(2))
        );
        // The run starts from index 0: a first apply of 2 skipped entry 1.
        assert_eq!(
            disorders(&run(IndexKind::LogIndex, &[2, 3])),
            [(2, Disorder::Skipped)]
        );
    }

    #[test]
    fn going_back_without_a_snapshot_fails() {
        // Rebuilding state from an earlier index is only legal after a crash or a snapshot.
        let violations = run(IndexKind::LogIndex, &[1, 2, 3, 1, 2]);
        assert_eq!(disorders(&violations), [(1, Disorder::WentBack)]);
        assert!(violations[0].to_string().contains("went back"));
    }

    #[test]
    fn an_entry_applied_twice_in_a_row_fails() {
        let violations = run(IndexKind::LogIndex, &[1, 2, 2, 3]);
        assert_eq!(disorders(&violations), [(2, Disorder::Repeated)]);
    }

    #[test]
    fn a_snapshot_jump_passes_forward_and_back() {
        // Forward: a snapshot at 10 replaces entries 3..=10 (Raft InstallSnapshot, ZAB SNAP).
        let forward = History::from_records(vec![
            applied(1, S1, 1),
            applied(2, S1, 2),
            snapshot(3, S1, 10),
            applied(4, S1, 11),
        ]);
        assert!(check(&forward, IndexKind::LogIndex).is_empty());
        // Back: a ZAB follower truncates below what it applied and reloads its snapshot.
        let back = History::from_records(vec![
            applied(1, S1, zxid(1, 1)),
            applied(2, S1, zxid(1, 2)),
            applied(3, S1, zxid(1, 3)),
            snapshot(4, S1, zxid(1, 1)),
            applied(5, S1, zxid(1, 2)),
            applied(6, S1, zxid(2, 1)),
        ]);
        assert!(check(&back, IndexKind::Zxid).is_empty());
        // The first apply after a snapshot must be the snapshot's successor.
        let gap = History::from_records(vec![
            applied(1, S1, 1),
            snapshot(2, S1, 10),
            applied(3, S1, 12),
        ]);
        let violations = check(&gap, IndexKind::LogIndex);
        assert_eq!(disorders(&violations), [(12, Disorder::Skipped)]);
        assert_eq!(
            violations[0].before,
            Before::Snapshot(10, SimTime::from_millis(2))
        );
    }

    #[test]
    fn a_crash_starts_a_new_incarnation() {
        let restart = History::from_records(vec![
            applied(1, S1, 1),
            applied(2, S1, 2),
            applied(3, S1, 3),
            crash(4, S1, crashed()),
            // Rebuilt from the log: from the start again, or from a snapshot on disk.
            applied(5, S1, 1),
            applied(6, S1, 2),
            crash(7, S1, crashed()),
            applied(8, S1, 5),
            applied(9, S1, 6),
        ]);
        assert!(check(&restart, IndexKind::LogIndex).is_empty());
        // A crash of another node, or one that was skipped, changes nothing.
        for other in [
            crash(3, S2, crashed()),
            crash(
                3,
                S1,
                FaultOutcome::Skipped {
                    reason: "already crashed".into(),
                },
            ),
        ] {
            let history = History::from_records(vec![
                applied(1, S1, 1),
                applied(2, S1, 2),
                other,
                applied(4, S1, 1),
            ]);
            assert_eq!(
                disorders(&check(&history, IndexKind::LogIndex)),
                [(1, Disorder::WentBack)]
            );
        }
    }

    #[test]
    fn zxids_follow_within_an_epoch_and_start_new_epochs_at_counter_one() {
        let good = [
            zxid(1, 1),
            zxid(1, 2),
            zxid(2, 1), // the next epoch's first proposal
            zxid(2, 2),
            zxid(5, 1), // epochs 3 and 4 committed nothing
        ];
        assert!(run(IndexKind::Zxid, &good).is_empty());
        // The same zxids read as log indexes are one big skip after another.
        assert_eq!(run(IndexKind::LogIndex, &good).len(), 3);
        // A new epoch does not start at counter 0 or 2; a counter cannot skip.
        for (bad, disorder) in [
            (zxid(2, 0), Disorder::Skipped),
            (zxid(2, 2), Disorder::Skipped),
            (zxid(1, 4), Disorder::Skipped),
            (zxid(1, 2), Disorder::Repeated),
            (zxid(1, 1), Disorder::WentBack),
        ] {
            let violations = run(IndexKind::Zxid, &[zxid(1, 1), zxid(1, 2), bad]);
            assert_eq!(disorders(&violations), [(bad, disorder)], "{bad:#x}");
        }
        // The first transaction ever is counter 1 of some epoch.
        assert!(run(IndexKind::Zxid, &[zxid(3, 1)]).is_empty());
        assert_eq!(run(IndexKind::Zxid, &[zxid(3, 2)]).len(), 1);
        let violation = &run(IndexKind::Zxid, &[zxid(1, 1), zxid(1, 3)])[0];
        assert!(
            violation.to_string().contains("zxid 0x100000003 (1,3)"),
            "{violation}"
        );
    }
}
