//! Every acknowledged write survives: the last read of each key, made after the faults
//! healed, shows the last write acknowledged on it (or a later one).
//!
//! A write acknowledged to a client must be durable on a majority (Raft §5.3: an entry is
//! committed once stored on a majority; Fig. 2: persistent state is updated on stable
//! storage before responding). Violated when a single-voter leader acknowledges before its
//! fsync and then crashes (etcd-io/etcd#14370, `raft.ack_before_fsync`), or when a committed
//! entry is overwritten (Raft Figure 8, `raft.commit_prev_term_by_count`).

use crate::{
    Violation,
    checkers::read_sees_prior_writes::{StaleRead, check_reads},
    kv_history::KvHistory,
};
use sim::{history::History, time::SimTime};
use std::fmt;

/// An acknowledged write that the final state does not reflect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostWrite {
    /// The final read that misses the write, and how.
    pub evidence: StaleRead,
}

impl fmt::Display for LostWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "acknowledged write lost: {}", self.evidence)
    }
}

impl Violation for LostWrite {
    fn property(&self) -> &'static str {
        "acknowledged write durability"
    }

    fn reference(&self) -> &'static str {
        "Raft §5.3 and Fig. 2 (commit on a majority; persist before responding); etcd-io/etcd#14370"
    }
}

/// Checks the reads invoked at or after `final_reads_from` (the final reads, after the
/// faults healed) against every write acknowledged before each of them.
pub fn check(history: &History, final_reads_from: SimTime) -> Vec<LostWrite> {
    let kv = KvHistory::of(history);
    check_reads(&kv, |read| read.invoked_at >= final_reads_from)
        .into_iter()
        .map(|evidence| LostWrite { evidence })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::read_sees_prior_writes::tests::{complete, found, get, invoke, put};
    use sim::history::kv::KvResponse;

    #[test]
    fn a_final_read_that_misses_an_acknowledged_write_is_a_lost_write() {
        let lost = History::from_records(vec![
            invoke(1, 1, put("k", "a")),
            complete(2, 1, KvResponse::Put { revision: 2 }),
            invoke(10, 2, get("k")),
            complete(11, 2, found(1, &[])),
        ]);
        assert_eq!(check(&lost, SimTime::from_millis(10)).len(), 1);
        // Reads before the final phase are not this checker's business.
        assert!(check(&lost, SimTime::from_millis(20)).is_empty());
        let kept = History::from_records(vec![
            invoke(1, 1, put("k", "a")),
            complete(2, 1, KvResponse::Put { revision: 2 }),
            invoke(10, 2, get("k")),
            complete(11, 2, found(3, &[("k", "b", 3)])),
        ]);
        assert!(check(&kept, SimTime::from_millis(10)).is_empty());
    }
}
