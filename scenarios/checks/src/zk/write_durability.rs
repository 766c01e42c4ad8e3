//! No acknowledged write is lost: a replica that applies entries on both sides of an
//! acknowledged write's zxid, one after another, applies that write too.
//!
//! A write is acknowledged to the client only once committed; ZAB must then deliver it on
//! every server in its place in the order (Junqueira et al., DSN 2011, §III, *integrity*
//! and *agreement*). If a later leader's history lacks it, the replicas that follow that
//! leader apply the entries before and after it with nothing in between (ZOOKEEPER-3911:
//! NEWLEADER acknowledged before the synced history was durable, then a quorum crash).
//! Acknowledged writes are found in the history by their zxid: the `mzxid` of the Stat a
//! `setData` (or a `multi` containing one) returned.
//!
//! **Reads:** the acknowledged writes' zxids (from the Stats clients received,
//! `Invoke`/`Complete`) and `ProtocolEvent::Applied`, recorded by each replica's driver when it
//! applies a transaction. A replica that skipped a write shows as consecutive applies around
//! its zxid; a replica that never recorded its applies could hide, but then
//! `protocol.replica_prefix` sees it diverge from the others.

use crate::history::views::HistoryViews;
use crate::{Checked, Violation};
use sim::{
    NodeId,
    history::{
        History, OpId,
        zk::{ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::{collections::BTreeSet, fmt};

/// An acknowledged write that a replica skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcknowledgedWriteLost {
    /// The write.
    pub write: OpId,
    /// Its zxid.
    pub zxid: u64,
    /// When it was acknowledged.
    pub acknowledged_at: SimTime,
    /// The replica that skipped it.
    pub node: NodeId,
    /// What that replica applied just before and just after, and when.
    pub applied_around: (u64, u64, SimTime),
}

impl fmt::Display for AcknowledgedWriteLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "write {} acknowledged at {} with zxid {:#x}, but {} applied {:#x} then {:#x} (at {}) without it",
            self.write,
            self.acknowledged_at,
            self.zxid,
            self.node,
            self.applied_around.0,
            self.applied_around.1,
            self.applied_around.2
        )
    }
}

impl Violation for AcknowledgedWriteLost {
    fn property(&self) -> &'static str {
        "acknowledged write durability"
    }

    fn reference(&self) -> &'static str {
        "ZAB integrity and agreement (Junqueira et al., DSN 2011, §III); ZOOKEEPER-3911"
    }

    fn at(&self) -> Option<SimTime> {
        // When the replica applied past the write.
        Some(self.applied_around.2)
    }
}

/// Every (acknowledged write, replica) where the replica skipped the write.
pub fn check(history: &History) -> Checked<AcknowledgedWriteLost> {
    check_views(&HistoryViews::new(history))
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> Checked<AcknowledgedWriteLost> {
    let mut acknowledged: Vec<(OpId, u64, SimTime)> = Vec::new();
    for op in history.zk_operations() {
        let (Some(response), Some(at)) = (op.ok(), op.ok_at()) else {
            continue;
        };
        match (op.operation, response) {
            (ZkOperation::SetData { .. }, ZkResponse::Stat { stat }) => {
                acknowledged.push((op.op_id, stat.mzxid, at));
            }
            (ZkOperation::Multi { .. }, ZkResponse::Multi { results }) => {
                if let Some(ZkResponse::Stat { stat }) = results
                    .iter()
                    .find(|r| matches!(r, ZkResponse::Stat { .. }))
                {
                    acknowledged.push((op.op_id, stat.mzxid, at));
                }
            }
            _ => {}
        }
    }
    let judged = acknowledged.len() as u64;
    let mut violations = Vec::new();
    let mut reported = BTreeSet::new();
    for run in history.applied_runs() {
        for &(write, zxid, acknowledged_at) in &acknowledged {
            let after = run.entries.partition_point(|entry| entry.index <= zxid);
            if after == 0 || after == run.entries.len() {
                continue;
            }
            let before = run.entries[after - 1];
            if before.index == zxid || !reported.insert((write, run.node)) {
                continue;
            }
            let next = run.entries[after];
            violations.push(AcknowledgedWriteLost {
                write,
                zxid,
                acknowledged_at,
                node: run.node,
                applied_around: (before.index, next.index, next.at),
            });
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::*;

    #[test]
    fn an_applied_write_passes_and_a_skipped_one_fails() {
        let s1 = NodeId::server(0);
        let write = [
            invoke(1, C1, 1, set_data("/x", "a")),
            ok(
                2,
                C1,
                1,
                ZkResponse::Stat {
                    stat: stat(5, 1, 0),
                },
            ),
        ];
        let mut good = write.to_vec();
        good.extend([applied(1, s1, 4), applied(2, s1, 5), applied(3, s1, 6)]);
        assert!(check(&History::from_records(good)).is_empty());
        let mut bad = write.to_vec();
        bad.extend([applied(1, s1, 4), applied(9, s1, 1 << 32)]);
        let violations = check(&History::from_records(bad));
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].zxid, 5);
        assert_eq!(violations[0].applied_around.0, 4);
    }
}
