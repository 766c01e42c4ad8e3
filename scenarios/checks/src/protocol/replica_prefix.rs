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

use crate::history::views::HistoryViews;
use crate::{Checked, Violation};
use sim::{NodeId, history::History, time::SimTime};
use std::fmt;

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
///
/// Each replica's neighbours of an index are compared with those of the first run that
/// applied it (in the order [`applied_runs`] lists the runs).
pub fn check(history: &History) -> Checked<DivergentSequence> {
    check_views(&HistoryViews::new(history))
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> Checked<DivergentSequence> {
    let mut next = FirstSeen::default();
    let mut previous = FirstSeen::default();
    let mut violations = Vec::new();
    let mut judged = 0;
    for run in history.applied_runs() {
        next.start_run();
        previous.start_run();
        for pair in run.entries.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            judged += 1;
            for (first_seen, key, value, neighbour) in [
                (&mut next, a.index, b.index, Neighbour::Next),
                (&mut previous, b.index, a.index, Neighbour::Previous),
            ] {
                let seen = (run.node, value, b.at);
                if let Some(first) = first_seen.conflict(key, seen) {
                    violations.push(DivergentSequence {
                        index: key,
                        neighbour,
                        first,
                        conflicting: seen,
                    });
                }
            }
        }
        next.end_run();
        previous.end_run();
    }
    Checked::new(violations, judged)
}

/// The first neighbour seen of each index on one side, sorted by index, with whether a
/// conflict was reported for it. A run applies increasing indices, so it is compared by
/// walking both in step and merged at its end: linear in the run and the table, where a
/// map lookup per applied entry dominated the cost of a whole check set on long runs.
#[derive(Default)]
struct FirstSeen {
    /// (index, first neighbour seen with who and when, conflict reported).
    table: Vec<(u64, (NodeId, u64, SimTime), bool)>,
    /// Where the current run's walk is in `table`.
    cursor: usize,
    /// The current run's indices not in `table`, in increasing order.
    fresh: Vec<(u64, (NodeId, u64, SimTime), bool)>,
}

impl FirstSeen {
    fn start_run(&mut self) {
        self.cursor = 0;
        self.fresh.clear();
    }

    /// The first observation of `key`, if `seen` conflicts with it and that was not reported
    /// yet. Keys come in increasing order within a run.
    fn conflict(
        &mut self,
        key: u64,
        seen: (NodeId, u64, SimTime),
    ) -> Option<(NodeId, u64, SimTime)> {
        while self
            .table
            .get(self.cursor)
            .is_some_and(|entry| entry.0 < key)
        {
            self.cursor += 1;
        }
        match self.table.get_mut(self.cursor) {
            Some((index, first, reported)) if *index == key => {
                if first.1 != seen.1 && !*reported {
                    *reported = true;
                    return Some(*first);
                }
                None
            }
            _ => {
                self.fresh.push((key, seen, false));
                None
            }
        }
    }

    fn end_run(&mut self) {
        if self.fresh.is_empty() {
            return;
        }
        // Most runs only go past what earlier runs applied (a replica catching up, the
        // leader proposing): then the merge is an append, and copying the whole table for
        // it, once per run, was most of this check's cost on a restarted cluster.
        if self
            .table
            .last()
            .is_none_or(|last| last.0 < self.fresh[0].0)
        {
            self.table.append(&mut self.fresh);
            return;
        }
        let table = std::mem::take(&mut self.table);
        let mut merged = Vec::with_capacity(table.len() + self.fresh.len());
        let (mut old, mut new) = (
            table.into_iter().peekable(),
            self.fresh.drain(..).peekable(),
        );
        loop {
            let take_old = match (old.peek(), new.peek()) {
                (Some(a), Some(b)) => a.0 < b.0,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            merged.extend(if take_old { old.next() } else { new.next() });
        }
        self.table = merged;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::applied;

    #[test]
    fn the_table_stays_sorted_whether_a_run_goes_past_it_or_fills_in_before_it() {
        let seen = |value| (NodeId::server(0), value, SimTime::ZERO);
        let mut first_seen = FirstSeen::default();
        // Past everything (appended), before everything, and on both sides (merged).
        for run in [&[5u64, 6, 7][..], &[8, 9], &[1, 2, 3], &[4, 10]] {
            first_seen.start_run();
            for &key in run {
                assert_eq!(first_seen.conflict(key, seen(key + 1)), None);
            }
            first_seen.end_run();
        }
        let keys: Vec<u64> = first_seen.table.iter().map(|entry| entry.0).collect();
        assert_eq!(keys, (1..=10).collect::<Vec<_>>());
        // Each is found again in a later run: another neighbour conflicts with the first.
        first_seen.start_run();
        for key in 1..=10 {
            assert_eq!(first_seen.conflict(key, seen(0)), Some(seen(key + 1)));
        }
    }

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

    #[test]
    fn runs_that_cover_different_stretches_are_compared_where_they_overlap() {
        let (s1, s2, s3) = (NodeId::server(0), NodeId::server(1), NodeId::server(2));
        // s1 applies 10..12 and s2 applies 1..3 (no overlap); s3 then walks 1..12 but with
        // 11 followed by 13 (an extra entry): compared with s1's stretch, after s2's.
        let mut records = vec![
            applied(1, s1, 10),
            applied(2, s1, 11),
            applied(3, s1, 12),
            applied(4, s2, 1),
            applied(5, s2, 2),
            applied(6, s2, 3),
        ];
        let s3_indices = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13];
        for (offset, index) in s3_indices.into_iter().enumerate() {
            records.push(applied(10 + offset as u64, s3, index));
        }
        let violations = check(&History::from_records(records));
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].index, 11);
        assert_eq!(violations[0].neighbour, Neighbour::Next);
        assert_eq!(violations[0].first.0, s1);
        assert_eq!(violations[0].conflicting.0, s3);
    }
}
