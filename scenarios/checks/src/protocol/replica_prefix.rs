//! Every replica applies the same sequence: the entry applied right after (and right
//! before) a given index is the same on every server.
//!
//! ZAB's *agreement* and *primary order* (Junqueira, Reed & Serafini, DSN 2011, §III): all
//! servers deliver the same transactions in the same order, so within a run of consecutive
//! applies (see [`crate::history::applied_runs`]) each replica walks one common sequence. Comparing
//! neighbours catches what comparing single indices cannot: a replica that applies an
//! extra transaction no one else has (ZOOKEEPER-1154, a proposal kept without TRUNC) or
//! skips transactions the others applied (ZOOKEEPER-2355).
//!
//! **Reads:** `ProtocolEvent::Applied` and `SnapshotInstalled` (through
//! [`crate::history::applied_runs`]), recorded by each replica's driver about what it applied;
//! as for `protocol.replica_agreement`, the entries' digests are compared, not any server's
//! claim of agreement.

use crate::Violation;
use crate::history::applied_runs::applied_runs;
use sim::{NodeId, history::History, time::SimTime};
use std::{collections::BTreeMap, fmt};

/// Which neighbour disagrees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Neighbour {
    /// The entry applied next.
    Next,
    /// The entry applied just before.
    Previous,
}

/// Two replicas applied different neighbours of the same index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DivergentSequence {
    /// The index (zxid) both applied.
    pub index: u64,
    /// Which neighbour.
    pub neighbour: Neighbour,
    /// The first replica, the neighbour it applied, and when.
    pub first: (NodeId, u64, SimTime),
    /// The replica that disagreed.
    pub conflicting: (NodeId, u64, SimTime),
}

impl fmt::Display for DivergentSequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let which = match self.neighbour {
            Neighbour::Next => "after",
            Neighbour::Previous => "before",
        };
        write!(
            f,
            "{} applied {:#x} {which} {:#x} (at {}), but {} applied {:#x} {which} it (at {})",
            self.first.0,
            self.first.1,
            self.index,
            self.first.2,
            self.conflicting.0,
            self.conflicting.1,
            self.conflicting.2
        )
    }
}

impl Violation for DivergentSequence {
    fn property(&self) -> &'static str {
        "replica prefix agreement"
    }

    fn reference(&self) -> &'static str {
        "ZAB agreement and primary order (Junqueira et al., DSN 2011, §III); ZOOKEEPER-1154, ZOOKEEPER-2355"
    }

    fn at(&self) -> Option<SimTime> {
        // When the replica that disagreed applied its neighbour.
        Some(self.conflicting.2)
    }
}

/// Every index whose neighbour differs between replicas (one violation per index and side).
pub fn check(history: &History) -> Vec<DivergentSequence> {
    let mut next: BTreeMap<u64, (NodeId, u64, SimTime)> = BTreeMap::new();
    let mut previous: BTreeMap<u64, (NodeId, u64, SimTime)> = BTreeMap::new();
    let mut reported: BTreeMap<(u64, bool), ()> = BTreeMap::new();
    let mut violations = Vec::new();
    for run in applied_runs(history) {
        for pair in run.entries.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            for (map, key, value, neighbour) in [
                (&mut next, a.index, b.index, Neighbour::Next),
                (&mut previous, b.index, a.index, Neighbour::Previous),
            ] {
                let seen = (run.node, value, b.at);
                match map.get(&key) {
                    None => {
                        map.insert(key, seen);
                    }
                    Some(first) if first.1 != value => {
                        let side = neighbour == Neighbour::Next;
                        if reported.insert((key, side), ()).is_none() {
                            violations.push(DivergentSequence {
                                index: key,
                                neighbour,
                                first: *first,
                                conflicting: seen,
                            });
                        }
                    }
                    Some(_) => {}
                }
            }
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::applied;

    #[test]
    fn a_common_sequence_passes_and_an_extra_entry_fails() {
        let (s1, s2) = (NodeId::server(0), NodeId::server(1));
        let good = History::from_records(vec![
            applied(1, s1, 1),
            applied(2, s1, 2),
            applied(3, s1, 3),
            applied(4, s2, 2),
            applied(5, s2, 3),
            // s2 rebuilds from scratch: a new run.
            applied(6, s2, 1),
            applied(7, s2, 2),
        ]);
        assert!(check(&good).is_empty());
        let bad = History::from_records(vec![
            applied(1, s1, 1),
            applied(2, s1, 2),
            applied(3, s1, 9),
            applied(4, s2, 1),
            applied(5, s2, 2),
            applied(6, s2, 3),
            applied(7, s2, 9),
        ]);
        let violations = check(&bad);
        assert_eq!(violations.len(), 2);
        assert_eq!(
            (violations[0].index, violations[0].neighbour),
            (2, Neighbour::Next)
        );
        assert_eq!(
            (violations[1].index, violations[1].neighbour),
            (9, Neighbour::Previous)
        );
    }
}
