//! Each replica applies entries in increasing index order.
//!
//! Raft applies committed entries "in log order" (§5.3, Figure 2 rules for all servers:
//! "If commitIndex > lastApplied: increment lastApplied, apply log[lastApplied]"); ZAB
//! delivers transactions in zxid order (*local primary order*, Junqueira et al., DSN 2011).
//! A node may rebuild its state machine and apply again from an earlier index (after a
//! restart, or a ZAB re-synchronization that truncates its log), so an index that goes *down*
//! starts a new run; an index applied twice in a row is a violation (an entry applied twice,
//! e.g. from a duplicated or re-delivered message).

use crate::Violation;
use sim::{
    NodeId,
    history::{Event, History, ProtocolEvent},
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// A node applied the same index twice in a row without restarting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedOutOfOrder {
    /// The node.
    pub node: NodeId,
    /// The previous index applied, and when.
    pub previous: (u64, SimTime),
    /// The repeated index, and when.
    pub repeated: (u64, SimTime),
}

impl fmt::Display for AppliedOutOfOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} applied index {} at {} and then index {} again at {} without restarting",
            self.node, self.previous.0, self.previous.1, self.repeated.0, self.repeated.1
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
}

/// Every entry applied twice in a row by one node (a crash in between starts afresh).
pub fn check(history: &History) -> Vec<AppliedOutOfOrder> {
    let mut last: BTreeMap<NodeId, (u64, SimTime)> = BTreeMap::new();
    let mut violations = Vec::new();
    for record in history.records() {
        match &record.event {
            Event::Fault(fault) => {
                if let Some(node) = fault.crashed() {
                    last.remove(&node);
                }
            }
            Event::Protocol(ProtocolEvent::Applied { index, .. }) => {
                let Some(node) = record.node else { continue };
                if let Some(&(previous, at)) = last.get(&node)
                    && *index == previous
                {
                    violations.push(AppliedOutOfOrder {
                        node,
                        previous: (previous, at),
                        repeated: (*index, record.at),
                    });
                }
                last.insert(node, (*index, record.at));
            }
            _ => {}
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::history::Record;

    fn applied(at_ms: u64, node: NodeId, index: u64) -> Record {
        Record {
            at: SimTime::from_millis(at_ms),
            node: Some(node),
            event: Event::Protocol(ProtocolEvent::Applied {
                index,
                term: 1,
                digest: index,
            }),
        }
    }

    #[test]
    fn an_entry_applied_twice_in_a_row_fails_and_a_rebuild_passes() {
        let s1 = NodeId::server(0);
        let rebuild = History::from_records(vec![
            applied(1, s1, 1),
            applied(2, s1, 2),
            applied(3, s1, 1),
            applied(4, s1, 2),
        ]);
        assert!(check(&rebuild).is_empty());
        let twice = History::from_records(vec![
            applied(1, s1, 1),
            applied(2, s1, 2),
            applied(3, s1, 2),
        ]);
        let violations = check(&twice);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].repeated.0, 2);
    }
}
