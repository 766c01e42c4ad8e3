//! Coverage marks: the situations a scenario exists to reach, counted when a run reaches
//! them, so that a sweep can say which it reached and fail when one it declared never
//! happened. A green sweep that never handed a lock over after a session expiry has not
//! tested what its name promises.
//!
//! These are FoundationDB's code probes, TigerBeetle's coverage marks and Antithesis's
//! `sometimes` assertions: not properties (nothing is wrong when one is missed in a run)
//! but evidence that a property was exercised where it matters. Marks are counted outside
//! the history, so reaching one does not change a run's history digest. Some are reached in
//! model code (a ZAB follower truncating its log), the rest are read off the history after
//! the run (`checks::coverage`).

use serde::{Deserialize, Serialize};
use std::{collections::BTreeMap, fmt};

/// A situation worth reaching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// A lock passed to another holder while its previous holder had not released it: its
    /// session expired (or its lease), or it crashed, and the store gave the lock away.
    LockHandedOverWithoutRelease,
    /// The fenced resource refused a write for its stale token.
    FencedWriteRejected,
    /// A ZAB follower was synchronised by TRUNC: it had transactions the new leader lacks,
    /// and dropped them.
    ZabTruncSync,
    /// A ZAB follower was synchronised by SNAP: it was too far behind for a DIFF.
    ZabSnapSync,
    /// A Raft follower installed a leader's snapshot (InstallSnapshot).
    RaftInstallSnapshot,
    /// A ZooKeeper watch fired on a session that had moved to another server since the
    /// watch was set (the client re-registered it on reconnection).
    WatchFiredAcrossFailover,
    /// A write whose outcome its client did not learn (connection loss, timeout) and which
    /// the client then found had taken effect.
    IndeterminateWriteCommitted,
    /// A write whose outcome its client did not learn and which the client then found had
    /// not taken effect.
    IndeterminateWriteLost,
    /// An etcd lease that its owner was keeping alive (granted, renewed, not revoked)
    /// expired.
    LeaseExpiredWhileHeld,
    /// A ZooKeeper session expired and its client was told so.
    SessionExpiredWhileInUse,
    /// A leader lost its leadership (stepped down, or crashed) while client writes were in
    /// flight: invoked and not yet answered.
    LeaderDeposedWithWritesInFlight,
}

impl Mark {
    /// Every mark, in order.
    pub const ALL: [Mark; 11] = [
        Mark::LockHandedOverWithoutRelease,
        Mark::FencedWriteRejected,
        Mark::ZabTruncSync,
        Mark::ZabSnapSync,
        Mark::RaftInstallSnapshot,
        Mark::WatchFiredAcrossFailover,
        Mark::IndeterminateWriteCommitted,
        Mark::IndeterminateWriteLost,
        Mark::LeaseExpiredWhileHeld,
        Mark::SessionExpiredWhileInUse,
        Mark::LeaderDeposedWithWritesInFlight,
    ];

    /// Its name in scenario files and reports (`zab_trunc_sync`).
    pub fn name(self) -> &'static str {
        match self {
            Mark::LockHandedOverWithoutRelease => "lock_handed_over_without_release",
            Mark::FencedWriteRejected => "fenced_write_rejected",
            Mark::ZabTruncSync => "zab_trunc_sync",
            Mark::ZabSnapSync => "zab_snap_sync",
            Mark::RaftInstallSnapshot => "raft_install_snapshot",
            Mark::WatchFiredAcrossFailover => "watch_fired_across_failover",
            Mark::IndeterminateWriteCommitted => "indeterminate_write_committed",
            Mark::IndeterminateWriteLost => "indeterminate_write_lost",
            Mark::LeaseExpiredWhileHeld => "lease_expired_while_held",
            Mark::SessionExpiredWhileInUse => "session_expired_while_in_use",
            Mark::LeaderDeposedWithWritesInFlight => "leader_deposed_with_writes_in_flight",
        }
    }
}

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How often a run reached each mark (marks never reached are absent).
pub type Marks = BTreeMap<Mark, u64>;
