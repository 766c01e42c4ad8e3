//! Checkers: one property per module, each a pure function of a history.
//!
//! Protocol-level checkers work on any store whose servers record
//! [`sim::history::ProtocolEvent`]s (`BecameLeader`, `TermChanged`, `Applied`): `term` is a
//! Raft term or a ZAB epoch, `index` a Raft log index or a ZAB zxid.

pub mod acknowledged_write_durability;
pub mod applied_in_order;
pub mod applied_runs;
pub mod kv_linearizable;
pub mod leader_stability;
pub mod leader_uniqueness;
pub mod lease_expires_in_bound;
pub mod lease_keys_removed;
pub mod lease_not_expired_early;
pub mod read_sees_prior_writes;
pub mod replica_agreement;
pub mod replica_prefix;
pub mod term_monotonicity;
#[cfg(test)]
mod test_history;
pub mod watch_delivery;
pub mod zk_ephemeral_lifetime;
pub mod zk_linearizable;
pub mod zk_operations;
pub mod zk_sequential_names;
pub mod zk_sync_then_read;
pub mod zk_watch_delivery;
pub mod zk_watch_order;
pub mod zk_write_durability;

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

/// Every ZooKeeper-store check (znode tree, sessions, watches, linearizability of writes and
/// synced reads) plus the two replica checks
/// that need applied sequences (prefix agreement, acknowledged-write durability). Watches
/// count as missed only for changes acknowledged at least `watch_settle` before the end.
pub fn zk_store_checks(
    history: &History,
    watch_settle: std::time::Duration,
) -> Vec<Box<dyn Violation>> {
    let mut violations = Vec::new();
    violations.extend(crate::violation::boxed(replica_prefix::check(history)));
    violations.extend(crate::violation::boxed(zk_write_durability::check(history)));
    violations.extend(crate::violation::boxed(zk_sync_then_read::check(history)));
    violations.extend(crate::violation::boxed(zk_ephemeral_lifetime::check(
        history,
    )));
    violations.extend(crate::violation::boxed(zk_sequential_names::check(history)));
    violations.extend(crate::violation::boxed(zk_watch_delivery::check(
        history,
        watch_settle,
    )));
    violations.extend(crate::violation::boxed(zk_watch_order::check(history)));
    violations.extend(zk_linearizable::check_history(history));
    violations
}
