//! A restarted server resumes from a state it held before it crashed: the index (and term)
//! its durable state is at is one it applied, or installed, before.
//!
//! A server's durable state machine can only hold what the server itself put there: etcd
//! writes its backend with the consistent index of the last entry applied to it (etcd
//! `cindex`, `shouldApplyV3` skips entries at or below it after a restart); ZooKeeper loads
//! its newest snapshot, taken of its own state (`FileTxnSnapLog.restore`). A resume index
//! above every index the server reached would skip committed entries it never applied; a
//! term that differs from the one of the entry it applied at that index would mean its
//! state is not the committed prefix through that index (Raft's Log Matching property, §5.3:
//! an index and a term name one prefix). Together with `protocol.applied_in_order`, which
//! judges the first apply after the resume from the resume index, and
//! `protocol.replica_agreement`, which judged the entries applied before the crash against
//! the other replicas', this says a restarted server neither skips nor re-applies committed
//! entries to its state.
//!
//! A restart is recognised by the server's first record after its crash: a server records
//! the state it resumed from (`SnapshotInstalled`) as it boots, before it handles any
//! message (a ZooKeeper observer first records that it observes). A server that records
//! nothing there (an empty state, rebuilt from its log) is not judged; a later
//! `SnapshotInstalled` is a snapshot sent by a leader, which the server did not hold.
//!
//! **Reads:** each server's own `ProtocolEvent::Applied` and `SnapshotInstalled` records,
//! and the crash records. Like the other protocol checks it trusts the server's claims about
//! itself; what it judges is that they agree across the crash.

use crate::{Checked, IndexKind, Violation};
use sim::{
    NodeId,
    history::{Event, History, ProtocolEvent, Record},
    time::SimTime,
};
use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

/// A restarted server resumed from a state it never held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumedUnheldState {
    /// The server.
    pub node: NodeId,
    /// What the indexes are.
    pub kind: IndexKind,
    /// The index and term it resumed from, and when.
    pub resumed: (u64, u64, SimTime),
    /// The highest index it had reached before (applied or installed), with its term.
    pub highest_held: (u64, u64),
    /// The term of the entry it had applied at the resumed index, if it had.
    pub held_term: Option<u64>,
}

impl fmt::Display for ResumedUnheldState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (index, term, at) = self.resumed;
        write!(
            f,
            "{} restarted at {at} from its state at {} (term {term}), ",
            self.node,
            self.kind.describe(index)
        )?;
        match self.held_term {
            Some(held) => write!(
                f,
                "but the entry it had applied there was of term {held}: not the prefix it held"
            ),
            None => write!(
                f,
                "a state it never held (it had reached {} of term {} before): it skips entries",
                self.kind.describe(self.highest_held.0),
                self.highest_held.1
            ),
        }
    }
}

impl Violation for ResumedUnheldState {
    fn property(&self) -> &'static str {
        "resume from a held state"
    }

    fn reference(&self) -> &'static str {
        "Raft §5.3 (Log Matching) and etcd's consistent index (shouldApplyV3); ZooKeeper \
         FileTxnSnapLog.restore"
    }

    fn at(&self) -> Option<SimTime> {
        Some(self.resumed.2)
    }
}

/// Which servers crashed and have recorded nothing about the protocol since: a server's
/// first such record after its crash says how it booted.
#[derive(Default)]
struct Booting(BTreeSet<NodeId>);

impl Booting {
    /// Reads one record: for a `SnapshotInstalled`, whether it is the state a restarted server
    /// booted from (`Some(true)`) or a snapshot sent to it (`Some(false)`); `None` otherwise.
    fn read(&mut self, record: &Record) -> Option<bool> {
        if let Event::Fault(fault) = &record.event
            && let Some(node) = fault.crashed()
        {
            self.0.insert(node);
            return None;
        }
        let (Event::Protocol(event), Some(node)) = (&record.event, record.node) else {
            return None;
        };
        match event {
            // An observer records that it observes before what it loaded.
            ProtocolEvent::StartedObserving => None,
            ProtocolEvent::SnapshotInstalled { .. } => Some(self.0.remove(&node)),
            _ => {
                self.0.remove(&node);
                None
            }
        }
    }
}

/// How many `SnapshotInstalled` records are snapshots sent to a server (Raft
/// InstallSnapshot, ZAB SNAP; a ZAB follower's TRUNC below its snapshot), not the state a
/// restarted server booted from.
pub fn snapshots_sent(history: &History) -> u64 {
    let mut booting = Booting::default();
    let sent = history
        .records()
        .iter()
        .filter(|record| booting.read(record) == Some(false));
    sent.count() as u64
}

/// Every restart that resumed from a state the server did not hold; judges each restart
/// that recorded what it resumed from.
pub fn check(history: &History, kind: IndexKind) -> Checked<ResumedUnheldState> {
    // Every (index, term) each server applied or installed, in the order recorded.
    let mut held: BTreeMap<NodeId, Vec<(u64, u64)>> = BTreeMap::new();
    let mut booting = Booting::default();
    let mut violations = Vec::new();
    let mut judged = 0;
    for record in history.records() {
        let restart = booting.read(record);
        let (Event::Protocol(event), Some(node)) = (&record.event, record.node) else {
            continue;
        };
        let (ProtocolEvent::SnapshotInstalled { index, term }
        | ProtocolEvent::Applied { index, term, .. }) = event
        else {
            continue;
        };
        let server = held.entry(node).or_default();
        if restart == Some(true) {
            judged += 1;
            violations.extend(judge(node, kind, server, (*index, *term, record.at)));
        }
        server.push((*index, *term));
    }
    Checked::new(violations, judged)
}

/// The violation, if `server` never held the state it resumed from.
fn judge(
    node: NodeId,
    kind: IndexKind,
    held: &[(u64, u64)],
    resumed: (u64, u64, SimTime),
) -> Option<ResumedUnheldState> {
    let (index, term, _) = resumed;
    // The empty state, every server's first.
    if index == 0 {
        return None;
    }
    // The latest time it held that index: a ZAB TRUNC may have replaced an earlier entry.
    let held_term = held
        .iter()
        .rev()
        .find(|(held, _)| *held == index)
        .map(|(_, term)| *term);
    if held_term == Some(term) {
        return None;
    }
    let highest_held = held.iter().copied().max().unwrap_or_default();
    Some(ResumedUnheldState {
        node,
        kind,
        resumed,
        highest_held,
        held_term,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::{
        fault::Fault,
        history::{FaultOutcome, FaultRecord},
    };

    const S1: NodeId = NodeId::server(0);
    const S2: NodeId = NodeId::server(1);

    fn record(at_ms: u64, node: NodeId, event: ProtocolEvent) -> Record {
        Record {
            at: SimTime::from_millis(at_ms),
            node: Some(node),
            event: Event::Protocol(event),
        }
    }

    fn applied(at_ms: u64, node: NodeId, index: u64, term: u64) -> Record {
        let event = ProtocolEvent::Applied {
            index,
            term,
            digest: index,
            request: None,
        };
        record(at_ms, node, event)
    }

    fn resumed(at_ms: u64, node: NodeId, index: u64, term: u64) -> Record {
        record(
            at_ms,
            node,
            ProtocolEvent::SnapshotInstalled { index, term },
        )
    }

    fn crash(at_ms: u64, node: NodeId) -> Record {
        Record {
            at: SimTime::from_millis(at_ms),
            node: None,
            event: Event::Fault(FaultRecord {
                fault: Fault::Crash { node: node.into() },
                target: Some(node),
                outcome: FaultOutcome::Applied {
                    cut_links: Vec::new(),
                    broken_connections: 0,
                    lost_writes: 0,
                },
            }),
        }
    }

    /// Applies 1..=3 in term 1 and 4 in term 2 on S1, then crashes it.
    fn applied_then_crashed() -> Vec<Record> {
        vec![
            applied(1, S1, 1, 1),
            applied(2, S1, 2, 1),
            applied(3, S1, 3, 1),
            applied(4, S1, 4, 2),
            crash(5, S1),
        ]
    }

    fn judge_history(records: Vec<Record>) -> Checked<ResumedUnheldState> {
        check(&History::from_records(records), IndexKind::LogIndex)
    }

    #[test]
    fn a_restart_at_an_index_it_applied_passes_and_is_judged() {
        for (index, term) in [(4, 2), (2, 1), (0, 0)] {
            let mut records = applied_then_crashed();
            records.push(resumed(6, S1, index, term));
            records.push(applied(7, S1, index + 1, 2));
            let checked = judge_history(records);
            assert!(checked.is_empty(), "{index}: {:?}", checked.violations);
            assert_eq!(checked.judged, 1);
        }
    }

    #[test]
    fn a_restart_one_index_past_what_it_applied_is_caught() {
        let mut records = applied_then_crashed();
        records.push(resumed(6, S1, 5, 2));
        let checked = judge_history(records);
        assert_eq!(checked.len(), 1);
        let violation = &checked[0];
        assert_eq!(
            (violation.highest_held, violation.held_term),
            ((4, 2), None)
        );
        assert!(
            violation.to_string().contains("a state it never held"),
            "{violation}"
        );
    }

    #[test]
    fn a_restart_whose_term_differs_from_the_entry_it_applied_is_caught() {
        let mut records = applied_then_crashed();
        records.push(resumed(6, S1, 4, 1));
        let checked = judge_history(records);
        assert_eq!(checked.len(), 1);
        assert_eq!(checked[0].held_term, Some(2));
    }

    #[test]
    fn a_snapshot_sent_by_a_leader_after_the_boot_is_not_judged() {
        let mut records = applied_then_crashed();
        // It booted with an empty state (no record), became a follower, then a leader sent
        // a snapshot far ahead of anything it held.
        records.push(record(6, S1, ProtocolEvent::TermChanged { term: 3 }));
        records.push(resumed(7, S1, 90, 3));
        // And a snapshot that is not after a crash is never a restart.
        records.push(resumed(8, S2, 90, 3));
        let history = History::from_records(records);
        let checked = check(&history, IndexKind::LogIndex);
        assert!(checked.is_empty(), "{:?}", checked.violations);
        assert_eq!(checked.judged, 0);
        assert_eq!(snapshots_sent(&history), 2);
    }

    #[test]
    fn a_state_installed_from_a_leader_before_the_crash_is_held() {
        let records = vec![
            resumed(1, S1, 40, 2),
            applied(2, S1, 41, 2),
            crash(3, S1),
            record(4, S1, ProtocolEvent::StartedObserving),
            resumed(4, S1, 40, 2),
        ];
        let history = History::from_records(records);
        let checked = check(&history, IndexKind::LogIndex);
        assert!(checked.is_empty(), "{:?}", checked.violations);
        assert_eq!(checked.judged, 1);
        // The first was sent by a leader, the second is the restart's.
        assert_eq!(snapshots_sent(&history), 1);
    }
}
