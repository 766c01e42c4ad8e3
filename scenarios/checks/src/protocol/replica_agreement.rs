//! Replicas that apply the entry at an index apply the same entry.
//!
//! Raft's *State Machine Safety*: "if a server has applied a log entry at a given index to its
//! state machine, no other server will ever apply a different log entry for the same index"
//! (§5.4.3, Figure 3). ZAB's *agreement* / *total order*: servers that deliver a transaction
//! with a given zxid deliver the same one (Junqueira et al., DSN 2011, §III; violated by
//! ZOOKEEPER-1154 and ZOOKEEPER-335).
//!
//! **Reads:** `ProtocolEvent::Applied` (index, term, digest of the entry), recorded by each
//! replica's driver about what it applied. The digest is computed from the entry the replica
//! applied, so two replicas disagreeing is visible whatever either believes.

use crate::{Checked, Violation};
use sim::{
    NodeId,
    history::{Event, History, ProtocolEvent},
    time::SimTime,
};
use std::fmt;

/// One application of an entry: who, when, what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Application {
    /// The node that applied it.
    pub node: NodeId,
    /// When.
    pub at: SimTime,
    /// The entry's term or epoch.
    pub term: u64,
    /// Digest of the entry's content.
    pub digest: u64,
}

/// Two different entries were applied at the same index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DivergentApply {
    /// The index or zxid.
    pub index: u64,
    /// The first application seen.
    pub first: Application,
    /// A conflicting one.
    pub conflicting: Application,
}

impl fmt::Display for DivergentApply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "index {}: {} applied (term {}, digest {:016x}) at {}, but {} applied (term {}, digest {:016x}) at {}",
            self.index,
            self.first.node,
            self.first.term,
            self.first.digest,
            self.first.at,
            self.conflicting.node,
            self.conflicting.term,
            self.conflicting.digest,
            self.conflicting.at
        )
    }
}

impl Violation for DivergentApply {
    fn property(&self) -> &'static str {
        "replica agreement"
    }

    fn reference(&self) -> &'static str {
        "Raft §5.4.3 State Machine Safety (Fig. 3); ZAB agreement (Junqueira et al., DSN 2011)"
    }

    fn at(&self) -> Option<SimTime> {
        // The conflicting application.
        Some(self.conflicting.at)
    }
}

/// Every index at which some application differs from the first one recorded.
pub fn check(history: &History) -> Checked<DivergentApply> {
    let mut first = FirstApplications::default();
    let mut violations = Vec::new();
    let mut judged = 0;
    for record in history.records() {
        let (
            Some(node),
            Event::Protocol(ProtocolEvent::Applied {
                index,
                term,
                digest,
                ..
            }),
        ) = (record.node, &record.event)
        else {
            continue;
        };
        judged += 1;
        let application = Application {
            node,
            at: record.at,
            term: *term,
            digest: *digest,
        };
        match first.get_or_insert(*index, application) {
            None => {}
            Some(existing) if (existing.term, existing.digest) != (*term, *digest) => {
                violations.push(DivergentApply {
                    index: *index,
                    first: existing,
                    conflicting: application,
                });
            }
            Some(_) => {}
        }
    }
    Checked::new(violations, judged)
}

/// The first application of each index, sorted by index. Every node applies in index
/// order, so an index is first applied after every lower one was (snapshots aside): a new
/// index almost always goes at the end, and a repeated one is found by a binary search
/// (cheaper, on the tens of thousands of applications of a run, than a map's search).
#[derive(Default)]
struct FirstApplications {
    sorted: Vec<(u64, Application)>,
}

impl FirstApplications {
    /// The first application of `index` if there was one; otherwise records `application`
    /// as the first and returns `None`.
    fn get_or_insert(&mut self, index: u64, application: Application) -> Option<Application> {
        if self.sorted.last().is_none_or(|&(last, _)| last < index) {
            self.sorted.push((index, application));
            return None;
        }
        match self
            .sorted
            .binary_search_by_key(&index, |&(index, _)| index)
        {
            Ok(found) => Some(self.sorted[found].1),
            Err(slot) => {
                self.sorted.insert(slot, (index, application));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::history::Record;

    fn applied(node: NodeId, index: u64, term: u64, digest: u64) -> Record {
        Record {
            at: SimTime::from_millis(index),
            node: Some(node),
            event: Event::Protocol(ProtocolEvent::Applied {
                index,
                term,
                digest,
                request: None,
            }),
        }
    }

    #[test]
    fn same_entries_pass_and_a_divergent_one_fails() {
        let (s1, s2) = (NodeId::server(0), NodeId::server(1));
        let good = History::from_records(vec![applied(s1, 1, 1, 7), applied(s2, 1, 1, 7)]);
        assert!(check(&good).is_empty());
        let bad = History::from_records(vec![applied(s1, 2, 2, 7), applied(s2, 2, 3, 9)]);
        let violations = check(&bad);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].conflicting.node, s2);
    }
}
