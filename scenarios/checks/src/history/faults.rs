//! Reading a history's faults: which ones took effect, when, and on which node a role or
//! `$name` resolved to. The nemesis records every fault it tries (`Event::Fault`), with the
//! node it resolved the fault's subject to and whether it applied; nothing else does.

use sim::{
    NodeId,
    fault::Fault,
    history::{Event, FaultOutcome, History},
    time::SimTime,
};

/// A fault that took effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FiredFault<'a> {
    /// When it fired.
    pub at: SimTime,
    /// The fault, as scheduled (its node may be a role such as `leader`).
    pub fault: &'a Fault,
    /// The node its subject resolved to, for a fault that acts on one node.
    pub target: Option<NodeId>,
}

/// Every fault that took effect, in the order they fired (skipped ones left out), the
/// inverses of spans included. The driver's heal at the end of the fault phase is no fault:
/// it is [`super::healed_at`].
pub fn fired_faults(history: &History) -> Vec<FiredFault<'_>> {
    history
        .records()
        .iter()
        .filter_map(|record| match &record.event {
            Event::Fault(fault) if matches!(fault.outcome, FaultOutcome::Applied { .. }) => {
                Some(FiredFault {
                    at: record.at,
                    fault: &fault.fault,
                    target: fault.target,
                })
            }
            _ => None,
        })
        .collect()
}
