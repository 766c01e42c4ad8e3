//! Reading a history's leaderships: which server led which term or epoch, from when until
//! when. Servers record `BecameLeader` and `SteppedDown` themselves; a crash (recorded by
//! the nemesis) ends a leadership without a `SteppedDown`, as it ends it for the nemesis's
//! `leader` role.

use sim::{
    NodeId,
    history::{Event, History, ProtocolEvent},
    time::SimTime,
};
use std::collections::BTreeMap;

/// One server's leadership of one term or epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leadership {
    /// The leader.
    pub node: NodeId,
    /// The term or epoch.
    pub term: u64,
    /// When it became leader.
    pub from: SimTime,
    /// When it stepped down or crashed (none: still leading at the end of the history).
    pub until: Option<SimTime>,
}

impl Leadership {
    /// Whether it still led at `at` (by its own account).
    pub fn covers(&self, at: SimTime) -> bool {
        self.from <= at && self.until.is_none_or(|until| at < until)
    }
}

/// Every leadership, in the order they began.
pub fn leaderships(history: &History) -> Vec<Leadership> {
    let mut all: Vec<Leadership> = Vec::new();
    let mut open: BTreeMap<NodeId, usize> = BTreeMap::new();
    for record in history.records() {
        let ended = match (&record.event, record.node) {
            (Event::Protocol(ProtocolEvent::BecameLeader { term }), Some(node)) => {
                if let Some(index) = open.insert(node, all.len()) {
                    all[index].until = Some(record.at);
                }
                all.push(Leadership {
                    node,
                    term: *term,
                    from: record.at,
                    until: None,
                });
                None
            }
            (Event::Protocol(ProtocolEvent::SteppedDown { .. }), Some(node)) => Some(node),
            (Event::Fault(fault), _) => fault.crashed(),
            _ => None,
        };
        if let Some(index) = ended.and_then(|node| open.remove(&node)) {
            all[index].until = Some(record.at);
        }
    }
    all
}
