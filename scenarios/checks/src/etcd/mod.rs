//! Properties of the etcd-like key-value store, judged from what clients observed: the
//! operations they invoked and the responses they got (`Invoke`/`Complete` events with
//! `sim::history::kv` operations, recorded by the client library at the client node), the
//! watch events delivered to them (`kv_watch` records), and lease expiries.
//!
//! Lease expiry is the one fact servers report: `ProtocolEvent::SessionExpired`, recorded by
//! every replica when it applies the committed expiry of a lease (the leader's lessor decides
//! it, but only a committed entry that replicas apply counts, so a deposed or buggy lessor's
//! opinion is not taken). A lease ended at the first such record; replica agreement checks
//! that every replica applied the same entries.

pub mod acknowledged_write_durability;
pub mod lease_expires_in_bound;
pub mod lease_keys_removed;
pub mod lease_not_expired_early;
pub mod linearizable;
pub mod read_sees_prior_writes;
pub mod watch_delivery;

use crate::{Check, history::final_reads_from};
use sim::time::SimTime;

/// The etcd-store checks every run of the Raft store gets (add [`crate::protocol::CHECKS`]
/// for the consensus level).
pub const CHECKS: &[Check] = &[
    Check {
        name: "etcd.read_sees_prior_writes",
        judges: "linearizable reads",
        property: "read sees prior writes",
        run: |history, _| read_sees_prior_writes::check_views(history).verdict(),
    },
    Check {
        name: "etcd.acknowledged_write_durability",
        judges: "acknowledged writes and final reads",
        property: "acknowledged write durability",
        // Without final reads only the revision evidence applies.
        run: |history, _| {
            let from = final_reads_from(history).unwrap_or(SimTime::from_nanos(u64::MAX));
            acknowledged_write_durability::check_views(history, from).verdict()
        },
    },
    Check {
        name: "etcd.linearizable",
        judges: "operations",
        property: "linearizability",
        run: |history, _| linearizable::check_history(history),
    },
    Check {
        name: "etcd.watch_delivery",
        judges: "delivered watch events",
        property: "watch delivery",
        run: |history, _| watch_delivery::check_views(history).verdict(),
    },
    Check {
        name: "etcd.lease_keys_removed",
        judges: "leased keys read",
        property: "lease keys removed",
        run: |history, _| lease_keys_removed::check_views(history).verdict(),
    },
];

/// Checks a scenario must ask for by name: early lease expiry can legitimately happen when
/// clocks are stepped, and the expiry bound needs a workload that abandons leases.
pub const OPTIONAL: &[Check] = &[
    Check {
        name: "etcd.lease_not_expired_early",
        judges: "lease expiries",
        property: "lease not expired early",
        run: |history, context| {
            lease_not_expired_early::check(history, context.lease_drift_allowance_ppm).verdict()
        },
    },
    Check {
        name: "etcd.lease_expires_in_bound",
        judges: "abandoned leases",
        property: "lease expires in bound",
        run: |history, context| {
            lease_expires_in_bound::check(history, context.lease_timing).verdict()
        },
    },
];
