//! The key-value operations of a run are linearizable (etcd's guarantee for its default,
//! linearizable, requests).
//!
//! Every put, delete, transaction and linearizable get is checked against etcd's sequential
//! specification, per key with revisions ([`crate::linearizability::kv`]). Broken by reads
//! served without a quorum round (`raft.read_without_readindex`, etcd-io/etcd#741), by a new
//! leader answering reads before committing an entry of its term
//! (`raft.readindex_before_term_commit`, etcd-io/raft 758ff0163), and by lost acknowledged
//! writes.
//!
//! A write whose reply was lost is resolved from the replicas' `Applied` records: taken
//! effect (linearized before the first replica applied it) or left out (no replica did);
//! why that is safe: [`crate::linearizability::resolve`]. One whose fate the history does
//! not show (not recorded as sent, its identity shared, applied as two entries) is left
//! open: it may or may not have taken effect.
//!
//! **Reads:** client operations (`Invoke`/`Complete` of `sim::history::kv` operations,
//! recorded by the client library at the client node); for writes of unknown outcome, the
//! client's `KvEvent::RequestSent` and the replicas' `ProtocolEvent::Applied` requests
//! (facts `protocol.replica_agreement` and `protocol.replica_prefix` verify).

use crate::{
    Violation,
    linearizability::{CheckOptions, Evidence, Report, TimeUnit, Unfinished, Verdict, check, kv},
};
use sim::{history::History, time::SimTime};
use std::fmt;

/// What an etcd-store linearizability violation cites.
pub const REFERENCE: &str = "linearizability (Herlihy & Wing, TOPLAS 1990); etcd API guarantees \
     (etcd.io/docs/v3.5/learning/api_guarantees); etcd-io/etcd#741; etcd-io/raft 758ff0163";

/// No order of the operations, consistent with real time, is legal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotLinearizable {
    /// The evidence: the smallest failing key, the longest linearizable prefix, the
    /// operation that cannot be placed.
    pub evidence: Box<Evidence>,
    /// Where the store's guarantee comes from.
    pub reference: &'static str,
}

impl fmt::Display for NotLinearizable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not linearizable:\n{}", self.evidence)
    }
}

impl Violation for NotLinearizable {
    fn property(&self) -> &'static str {
        "linearizability"
    }
    fn reference(&self) -> &'static str {
        self.reference
    }
    fn at(&self) -> Option<SimTime> {
        // When the operation that cannot be placed returned (or was invoked, if it never did).
        let operation = &self.evidence.operations[self.evidence.unplaceable?];
        (self.evidence.time_unit == TimeUnit::Nanoseconds)
            .then(|| SimTime::from_nanos(operation.returned_at.unwrap_or(operation.invoked_at)))
    }
}

/// The checker ran out of budget: linearizability is not established. A suite counts this
/// as a failure (a check that cannot conclude must not pass silently).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinearizabilityUnknown {
    /// The partition that ran out.
    pub unfinished: Unfinished,
    /// Where the store's guarantee comes from.
    pub reference: &'static str,
}

impl fmt::Display for LinearizabilityUnknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "linearizability unknown: the {:?} budget ran out after {} steps on {} ({} operations)",
            self.unfinished.budget,
            self.unfinished.steps,
            self.unfinished.partition,
            self.unfinished.operations
        )
    }
}

impl Violation for LinearizabilityUnknown {
    fn property(&self) -> &'static str {
        "linearizability (inconclusive)"
    }
    fn reference(&self) -> &'static str {
        self.reference
    }
}

/// The report's verdict as violations (none when linearizable), with the operations it
/// judged (none: vacuous, whatever the search says).
pub(crate) fn verdict(report: Report, reference: &'static str) -> crate::Verdict {
    crate::Verdict {
        judged: report.operations as u64,
        resolved: report.resolved,
        violations: violations(report, reference),
    }
}

/// The report's verdict as violations (none when linearizable).
fn violations(report: Report, reference: &'static str) -> Vec<Box<dyn Violation>> {
    match report.verdict {
        Verdict::Ok => Vec::new(),
        Verdict::Violation(evidence) => vec![Box::new(NotLinearizable {
            evidence,
            reference,
        })],
        Verdict::Unknown(unfinished) => vec![Box::new(LinearizabilityUnknown {
            unfinished,
            reference,
        })],
    }
}

/// Checks the history's key-value operations.
pub fn check_history(history: &History) -> crate::Verdict {
    let (model, operations) = kv::from_history(history);
    verdict(
        check(&model, &operations, &CheckOptions::default()),
        REFERENCE,
    )
}
