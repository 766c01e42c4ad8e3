//! The ZooKeeper operations of a run are linearizable where ZooKeeper promises it: every
//! write, and every read made after a `sync` of the same client process (checked from the
//! sync's invocation). Plain reads may be stale by design and are left out.
//!
//! Per path ([`crate::linearizability::zk`]). Shown broken (`zab_known_bugs`) by an
//! acknowledged write lost when followers acknowledge NEWLEADER before persisting
//! (`zab.ack_newleader_before_persist`, ZOOKEEPER-3911) and by a leader that answers `sync`
//! without a quorum (`zab.sync_not_quorum`, ZOOKEEPER-1675).
//!
//! A write whose reply was lost is resolved from the replicas' `Applied` records: taken
//! effect (linearized before the first replica applied it) or left out (no replica did);
//! why that is safe: [`crate::linearizability::resolve`].
//!
//! **Reads:** client operations (`Invoke`/`Complete` of `sim::history::zk` operations,
//! recorded by the client library at the client node); for writes of unknown outcome, the
//! client's `ZkEvent::RequestSent` and the replicas' `ProtocolEvent::Applied` requests
//! (facts `protocol.replica_agreement` and `protocol.replica_prefix` verify).

use crate::etcd::linearizable::verdict;
use crate::history::views::HistoryViews;
use crate::linearizability::{CheckOptions, check, zk};
use sim::history::History;

/// What a ZooKeeper-store linearizability violation cites.
pub const REFERENCE: &str = "linearizability (Herlihy & Wing, TOPLAS 1990); ZooKeeper Programmer's Guide, \
     Consistency Guarantees (linearizable writes; sync then read); ZAB (Junqueira et al., DSN 2011); \
     ZOOKEEPER-3911; ZOOKEEPER-1675";

/// Checks the history's ZooKeeper operations.
pub fn check_history(history: &History) -> crate::Verdict {
    check_views(&HistoryViews::new(history))
}

/// What [`check_history`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> crate::Verdict {
    let (model, operations) = zk::from_views(history);
    verdict(
        check(&model, &operations, &CheckOptions::default()),
        REFERENCE,
    )
}
