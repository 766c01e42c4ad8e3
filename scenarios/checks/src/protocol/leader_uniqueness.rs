//! At most one leader per term (Raft) or established leader per epoch (ZAB).
//!
//! Raft's *Election Safety*: "at most one leader can be elected in a given term" (Ongaro &
//! Ousterhout, "In Search of an Understandable Consensus Algorithm", §5.2 and Figure 3).
//! ZAB: a prospective leader establishes epoch *e* only with a quorum that accepted *e*, so
//! no two leaders establish the same epoch (Junqueira, Reed & Serafini, "Zab:
//! High-performance broadcast for primary-backup systems", DSN 2011, §IV).
//!
//! **Reads:** `ProtocolEvent::BecameLeader`, recorded by each server's driver when it takes
//! leadership of a term or establishes an epoch. Two servers each claiming the same term is the
//! violation itself; a leader that acted without recording its claim would hide, which is why
//! the client-side checks (linearizability, durability) judge the same runs without these
//! events.

use crate::{Checked, Violation};
use sim::{
    NodeId,
    history::{Event, History, ProtocolEvent},
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// Two nodes became leader of the same term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwoLeadersInOneTerm {
    /// The term or epoch.
    pub term: u64,
    /// Every node that became leader of it, with when.
    pub leaders: Vec<(NodeId, SimTime)>,
}

impl fmt::Display for TwoLeadersInOneTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} leaders in term {}:", self.leaders.len(), self.term)?;
        for (node, at) in &self.leaders {
            write!(f, " {node} at {at};")?;
        }
        Ok(())
    }
}

impl Violation for TwoLeadersInOneTerm {
    fn property(&self) -> &'static str {
        "leader uniqueness"
    }

    fn reference(&self) -> &'static str {
        "Raft §5.2 Election Safety (Ongaro & Ousterhout 2014, Fig. 3); ZAB: one leader per epoch (Junqueira et al., DSN 2011)"
    }

    fn at(&self) -> Option<SimTime> {
        // When the second leader of the term was elected.
        self.leaders.get(1).map(|(_, at)| *at)
    }
}

/// Every term with more than one distinct leader.
pub fn check(history: &History) -> Checked<TwoLeadersInOneTerm> {
    let mut leaders: BTreeMap<u64, Vec<(NodeId, SimTime)>> = BTreeMap::new();
    for record in history.records() {
        let (Some(node), Event::Protocol(ProtocolEvent::BecameLeader { term })) =
            (record.node, &record.event)
        else {
            continue;
        };
        let entry = leaders.entry(*term).or_default();
        // The same node re-announcing the same term (e.g. after re-establishing) is one leader.
        if !entry.iter().any(|(leader, _)| *leader == node) {
            entry.push((node, record.at));
        }
    }
    let terms = leaders.len() as u64;
    let violations = leaders
        .into_iter()
        .filter(|(_, nodes)| nodes.len() > 1)
        .map(|(term, leaders)| TwoLeadersInOneTerm { term, leaders })
        .collect();
    Checked::new(violations, terms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::history::Record;

    fn became_leader(at_ms: u64, node: NodeId, term: u64) -> Record {
        Record {
            at: SimTime::from_millis(at_ms),
            node: Some(node),
            event: Event::Protocol(ProtocolEvent::BecameLeader { term }),
        }
    }

    #[test]
    fn one_leader_per_term_passes() {
        let history = History::from_records(vec![
            became_leader(1, NodeId::server(0), 1),
            became_leader(2, NodeId::server(1), 2),
            became_leader(3, NodeId::server(1), 2),
        ]);
        assert!(check(&history).is_empty());
    }

    #[test]
    fn two_leaders_in_one_term_is_a_violation() {
        let history = History::from_records(vec![
            became_leader(1, NodeId::server(0), 3),
            became_leader(2, NodeId::server(2), 3),
        ]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].term, 3);
        assert_eq!(violations[0].leaders.len(), 2);
        // The term had two leaders once the second was elected.
        assert_eq!(violations[0].at(), Some(SimTime::from_millis(2)));
    }
}
