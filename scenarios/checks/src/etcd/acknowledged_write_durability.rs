//! Every acknowledged write survives.
//!
//! A write acknowledged to a client must be durable on a majority (Raft §5.3: an entry is
//! committed once stored on a majority; Fig. 2: persistent state is updated on stable
//! storage before responding). Violated when a single-voter leader acknowledges before its
//! fsync and then crashes (etcd-io/etcd#14370, `raft.ack_before_fsync`), or when a committed
//! entry is overwritten (Raft Figure 8, `raft.commit_prev_term_by_count`).
//!
//! Two kinds of evidence:
//! - the final read of a key (after the faults healed) does not show the last write
//!   acknowledged on it, or a later one;
//! - two different acknowledged writes carry the same store revision: each revision is one
//!   write transaction, so the store forgot the first and gave its revision to the second.
//!
//! **Reads:** client operations only: `Invoke`/`Complete` of `sim::history::kv` operations,
//! recorded by the client library at the client node, and `PhaseEvent::FinalReads`, recorded by
//! the run driver when the final reads start. No server event is trusted.

use crate::Checked;
use crate::history::views::HistoryViews;
use crate::{
    Violation,
    etcd::read_sees_prior_writes::{StaleRead, check_reads},
};
use sim::{
    history::{History, OpId},
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// How an acknowledged write was found lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LostWriteEvidence {
    /// A final read misses it.
    FinalRead(StaleRead),
    /// A later acknowledged write got its revision.
    RevisionReused {
        /// The revision.
        revision: u64,
        /// The write acknowledged first (the lost one, unless the second is).
        first: OpId,
        /// When it was acknowledged.
        first_completed_at: SimTime,
        /// The other write with the same revision.
        second: OpId,
        /// When it was acknowledged.
        second_completed_at: SimTime,
    },
}

/// An acknowledged write that the store lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostWrite {
    /// The evidence.
    pub evidence: LostWriteEvidence,
}

impl fmt::Display for LostWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.evidence {
            LostWriteEvidence::FinalRead(stale) => {
                write!(f, "acknowledged write lost: final {stale}")
            }
            LostWriteEvidence::RevisionReused {
                revision,
                first,
                first_completed_at,
                second,
                second_completed_at,
            } => write!(
                f,
                "acknowledged write lost: {first} (acknowledged at {first_completed_at}) and \
                 {second} (acknowledged at {second_completed_at}) both got revision {revision}"
            ),
        }
    }
}

impl Violation for LostWrite {
    fn property(&self) -> &'static str {
        "acknowledged write durability"
    }

    fn reference(&self) -> &'static str {
        "Raft §5.3 and Fig. 2 (commit on a majority; persist before responding); etcd-io/etcd#14370"
    }

    fn at(&self) -> Option<SimTime> {
        // The final read that missed the write, or the second write's acknowledgement.
        match &self.evidence {
            LostWriteEvidence::FinalRead(read) => Some(read.read_invoked_at),
            LostWriteEvidence::RevisionReused {
                second_completed_at,
                ..
            } => Some(*second_completed_at),
        }
    }
}

/// Checks the linearizable reads invoked at or after `final_reads_from` (the final reads,
/// after the faults healed) against every write acknowledged before each of them, and that no two
/// acknowledged writes share a revision.
pub fn check(history: &History, final_reads_from: SimTime) -> Checked<LostWrite> {
    check_views(&HistoryViews::new(history), final_reads_from)
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>, final_reads_from: SimTime) -> Checked<LostWrite> {
    let kv = history.kv();
    let final_reads = check_reads(&kv, |read| {
        read.invoked_at >= final_reads_from
            && read.consistency == sim::history::kv::ReadConsistency::Linearizable
    });
    let mut judged = final_reads.judged;
    let mut violations: Vec<LostWrite> = final_reads
        .into_iter()
        .map(|stale| LostWrite {
            evidence: LostWriteEvidence::FinalRead(stale),
        })
        .collect();
    let mut by_revision: BTreeMap<u64, (OpId, SimTime)> = BTreeMap::new();
    let mut acknowledged: Vec<_> = kv
        .acknowledged()
        .filter_map(|(write, revision)| write.completed_at.map(|at| (at, write.op_id, revision)))
        .collect();
    acknowledged.sort();
    judged += acknowledged.len() as u64;
    for (completed_at, op_id, revision) in acknowledged {
        match by_revision.get(&revision) {
            None => {
                by_revision.insert(revision, (op_id, completed_at));
            }
            // One transaction may write several keys at one revision.
            Some((first, _)) if *first == op_id => {}
            Some(&(first, first_completed_at)) => violations.push(LostWrite {
                evidence: LostWriteEvidence::RevisionReused {
                    revision,
                    first,
                    first_completed_at,
                    second: op_id,
                    second_completed_at: completed_at,
                },
            }),
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::read_sees_prior_writes::tests::{complete, found, get, invoke, put};
    use sim::history::kv::KvResponse;

    #[test]
    fn a_final_read_that_misses_an_acknowledged_write_is_a_lost_write() {
        let lost = History::from_records(vec![
            invoke(1, 1, put("k", "a")),
            complete(
                2,
                1,
                KvResponse::Put {
                    prev_kv: None,
                    revision: 2,
                },
            ),
            invoke(10, 2, get("k")),
            complete(11, 2, found(1, &[])),
        ]);
        assert_eq!(check(&lost, SimTime::from_millis(10)).len(), 1);
        // Reads before the final phase are not this checker's business.
        assert!(check(&lost, SimTime::from_millis(20)).is_empty());
        let kept = History::from_records(vec![
            invoke(1, 1, put("k", "a")),
            complete(
                2,
                1,
                KvResponse::Put {
                    prev_kv: None,
                    revision: 2,
                },
            ),
            invoke(10, 2, get("k")),
            complete(11, 2, found(3, &[("k", "b", 3)])),
        ]);
        assert!(check(&kept, SimTime::from_millis(10)).is_empty());
    }

    #[test]
    fn two_acknowledged_writes_with_one_revision_mean_one_was_lost() {
        let reused = History::from_records(vec![
            invoke(1, 1, put("k", "a")),
            complete(
                2,
                1,
                KvResponse::Put {
                    prev_kv: None,
                    revision: 2,
                },
            ),
            invoke(3, 2, put("j", "b")),
            complete(
                4,
                2,
                KvResponse::Put {
                    prev_kv: None,
                    revision: 2,
                },
            ),
        ]);
        let violations = check(&reused, SimTime::from_millis(100));
        assert!(matches!(
            violations[..],
            [LostWrite {
                evidence: LostWriteEvidence::RevisionReused { revision: 2, .. }
            }]
        ));
    }
}
