//! Checkers: one property per module, each a pure function of a history.
//!
//! Protocol-level checkers work on any store whose servers record
//! [`sim::history::ProtocolEvent`]s (`BecameLeader`, `TermChanged`, `Applied`): `term` is a
//! Raft term or a ZAB epoch, `index` a Raft log index or a ZAB zxid.

pub mod acknowledged_write_durability;
pub mod applied_in_order;
pub mod leader_stability;
pub mod leader_uniqueness;
pub mod lease_expires_in_bound;
pub mod lease_keys_removed;
pub mod lease_not_expired_early;
pub mod read_sees_prior_writes;
pub mod replica_agreement;
pub mod term_monotonicity;
pub mod watch_delivery;

use crate::Violation;
use sim::history::History;

/// Every protocol-level check, for suites that want them all.
pub fn protocol_checks(history: &History) -> Vec<Box<dyn Violation>> {
    let mut violations = Vec::new();
    violations.extend(crate::violation::boxed(leader_uniqueness::check(history)));
    violations.extend(crate::violation::boxed(term_monotonicity::check(history)));
    violations.extend(crate::violation::boxed(replica_agreement::check(history)));
    violations.extend(crate::violation::boxed(applied_in_order::check(history)));
    violations
}
