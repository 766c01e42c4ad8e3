//! Reading a history's `Applied` events as *runs*: maximal stretches in which one replica
//! applied entries one after another. A run ends when the node crashes, installs a snapshot
//! (its state jumps), or applies an index not above the previous one (it rebuilt its state).
//! Within a run a correct replica applies a contiguous piece of the one committed sequence.

use sim::{
    NodeId,
    history::{Event, History, ProtocolEvent},
    time::SimTime,
};
use std::collections::BTreeMap;

/// One applied entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppliedEntry {
    /// Log index or zxid.
    pub index: u64,
    /// Term or epoch.
    pub term: u64,
    /// Content digest.
    pub digest: u64,
    /// When it was applied.
    pub at: SimTime,
}

/// Entries one node applied one after another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedRun {
    /// The node.
    pub node: NodeId,
    /// The entries, in the order applied (indices strictly increase).
    pub entries: Vec<AppliedEntry>,
}

/// Every run of every node, in the order the runs ended.
pub fn applied_runs(history: &History) -> Vec<AppliedRun> {
    let mut open: BTreeMap<NodeId, Vec<AppliedEntry>> = BTreeMap::new();
    let mut runs = Vec::new();
    let close = |open: &mut BTreeMap<NodeId, Vec<AppliedEntry>>,
                 runs: &mut Vec<AppliedRun>,
                 node: NodeId| {
        if let Some(entries) = open.remove(&node)
            && !entries.is_empty()
        {
            runs.push(AppliedRun { node, entries });
        }
    };
    for record in history.records() {
        match &record.event {
            Event::Fault(fault) => {
                if let Some(node) = fault.crashed() {
                    close(&mut open, &mut runs, node);
                }
            }
            Event::Protocol(ProtocolEvent::SnapshotInstalled { .. }) => {
                if let Some(node) = record.node {
                    close(&mut open, &mut runs, node);
                }
            }
            Event::Protocol(ProtocolEvent::Applied {
                index,
                term,
                digest,
                ..
            }) => {
                let Some(node) = record.node else { continue };
                let went_back = open
                    .get(&node)
                    .and_then(|entries| entries.last())
                    .is_some_and(|last| *index <= last.index);
                if went_back {
                    close(&mut open, &mut runs, node);
                }
                open.entry(node).or_default().push(AppliedEntry {
                    index: *index,
                    term: *term,
                    digest: *digest,
                    at: record.at,
                });
            }
            _ => {}
        }
    }
    let nodes: Vec<NodeId> = open.keys().copied().collect();
    for node in nodes {
        close(&mut open, &mut runs, node);
    }
    runs
}
