//! The ZooKeeper operations of a run are linearizable where ZooKeeper promises it: every
//! write, and every read made after a `sync` of the same client process (checked from the
//! sync's invocation). Plain reads may be stale by design and are left out.
//!
//! Per path ([`crate::linearizability::zk`]). Broken by lost committed writes
//! (`zab.diff_without_trunc`, `zab.epoch_not_persisted`, ZOOKEEPER-1549/-2325 and kin) and by
//! a leader that answers `sync` without a quorum (`zab.sync_not_quorum`, ZOOKEEPER-1675).

use super::kv_linearizable::violations;
use crate::{
    Violation,
    linearizability::{CheckOptions, Report, check, zk},
};
use sim::history::History;

/// What a ZooKeeper-store linearizability violation cites.
pub const REFERENCE: &str = "linearizability (Herlihy & Wing, TOPLAS 1990); ZooKeeper Programmer's Guide, \
     Consistency Guarantees (linearizable writes; sync then read); ZAB (Junqueira et al., DSN 2011); \
     ZOOKEEPER-1675";

/// Checks the history's ZooKeeper operations; the full report.
pub fn check_report(history: &History) -> Report {
    let (model, operations) = zk::from_history(history);
    check(&model, &operations, &CheckOptions::default())
}

/// Checks the history's ZooKeeper operations.
pub fn check_history(history: &History) -> Vec<Box<dyn Violation>> {
    violations(check_report(history), REFERENCE)
}
