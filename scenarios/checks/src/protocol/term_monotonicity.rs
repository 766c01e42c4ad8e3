//! A node's durable term (Raft) or epoch (ZAB) never decreases, across restarts included.
//!
//! Raft: "currentTerm … increases monotonically" and must be persisted before responding to
//! RPCs (Figure 2, "Persistent state on all servers"). A node that forgets its term after a
//! restart may vote twice in one term (camunda/camunda#5356, hazelcast/hazelcast#16643).
//! ZAB: acceptedEpoch and currentEpoch only grow, and are persisted (ZOOKEEPER-335).
//!
//! **Reads:** `ProtocolEvent::TermChanged` and `BecameLeader`, recorded by each server's driver
//! when its durable term or epoch changes (after it is persisted) and when it leads. A term is
//! a server's own state, so its own record is the fact judged; a restart that lost the term
//! shows as a later, lower record of the same node.

use crate::{Checked, Violation};
use sim::{
    NodeId,
    history::{Event, History, ProtocolEvent},
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// A node recorded a term lower than one it recorded before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TermWentBackwards {
    /// The node.
    pub node: NodeId,
    /// The earlier, higher term and when it was recorded.
    pub earlier: (u64, SimTime),
    /// The later, lower term and when it was recorded.
    pub later: (u64, SimTime),
}

impl fmt::Display for TermWentBackwards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}'s term went from {} (at {}) back to {} (at {})",
            self.node, self.earlier.0, self.earlier.1, self.later.0, self.later.1
        )
    }
}

impl Violation for TermWentBackwards {
    fn property(&self) -> &'static str {
        "term monotonicity"
    }

    fn reference(&self) -> &'static str {
        "Raft Fig. 2 (currentTerm persistent, increases monotonically); ZAB epochs (ZOOKEEPER-335)"
    }

    fn at(&self) -> Option<SimTime> {
        // When the lower term was recorded.
        Some(self.later.1)
    }
}

/// Every point where a node's recorded term decreased.
///
/// Looks at `TermChanged` (recorded when the term is durable) and `BecameLeader`.
pub fn check(history: &History) -> Checked<TermWentBackwards> {
    let mut highest: BTreeMap<NodeId, (u64, SimTime)> = BTreeMap::new();
    let mut violations = Vec::new();
    let mut judged = 0;
    for record in history.records() {
        let term = match (&record.node, &record.event) {
            (Some(_), Event::Protocol(ProtocolEvent::TermChanged { term }))
            | (Some(_), Event::Protocol(ProtocolEvent::BecameLeader { term })) => *term,
            _ => continue,
        };
        let node = record.node.expect("matched Some");
        judged += 1;
        match highest.get(&node) {
            Some(&(previous, at)) if term < previous => violations.push(TermWentBackwards {
                node,
                earlier: (previous, at),
                later: (term, record.at),
            }),
            Some(&(previous, _)) if term == previous => {}
            _ => {
                highest.insert(node, (term, record.at));
            }
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::history::Record;

    fn term(at_ms: u64, node: NodeId, term: u64) -> Record {
        Record {
            at: SimTime::from_millis(at_ms),
            node: Some(node),
            event: Event::Protocol(ProtocolEvent::TermChanged { term }),
        }
    }

    #[test]
    fn growing_terms_pass_and_a_step_back_fails() {
        let s1 = NodeId::server(0);
        let good = History::from_records(vec![term(1, s1, 1), term(2, s1, 1), term(3, s1, 4)]);
        assert!(check(&good).is_empty());
        let bad = History::from_records(vec![term(1, s1, 5), term(2, s1, 2)]);
        let violations = check(&bad);
        assert_eq!(violations.len(), 1);
        assert_eq!((violations[0].earlier.0, violations[0].later.0), (5, 2));
        // Another node's lower term is not a violation.
        let other = History::from_records(vec![term(1, s1, 5), term(2, NodeId::server(1), 2)]);
        assert!(check(&other).is_empty());
    }
}
