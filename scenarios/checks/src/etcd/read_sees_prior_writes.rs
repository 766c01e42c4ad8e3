//! A linearizable read sees every write acknowledged before it began.
//!
//! Linearizability (Herlihy & Wing, 1990) orders a write that completed before a read was
//! invoked before that read. For etcd this means: the read's store revision is at least the
//! write's, and a key the write put shows that write or a later modification. Violated by
//! reads served without confirming leadership (etcd-io/etcd#741, `raft.read_without_readindex`)
//! or before the new leader committed an entry of its term (etcd-io/raft 758ff0163,
//! `raft.readindex_before_term_commit`). Serializable reads may be stale and are not checked.
//!
//! **Reads:** client operations only (`Invoke`/`Complete` of `sim::history::kv` operations,
//! recorded by the client library at the client node, with the revision each response carried).
//! No server event is trusted.

use crate::Checked;
use crate::history::views::HistoryViews;
use crate::{
    Violation,
    history::kv::{KvHistory, MissedWrite, Write, WriteEffect, missed_write},
};
use sim::{
    NodeId,
    history::{History, OpId, kv::ReadConsistency},
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// A read missed a write acknowledged before it was invoked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleRead {
    /// The read.
    pub read: OpId,
    /// Its client.
    pub reader: NodeId,
    /// When it was invoked.
    pub read_invoked_at: SimTime,
    /// The write it missed.
    pub write: OpId,
    /// When that write was acknowledged.
    pub write_completed_at: SimTime,
    /// How.
    pub missed: MissedWrite,
}

impl fmt::Display for StaleRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "read {} by {} invoked at {} missed write {} acknowledged at {}: {:?}",
            self.read,
            self.reader,
            self.read_invoked_at,
            self.write,
            self.write_completed_at,
            self.missed
        )
    }
}

impl Violation for StaleRead {
    fn property(&self) -> &'static str {
        "read sees prior writes"
    }

    fn reference(&self) -> &'static str {
        "linearizability (Herlihy & Wing 1990); etcd-io/etcd#741; etcd-io/raft 758ff0163 (etcd#12680)"
    }

    fn at(&self) -> Option<SimTime> {
        // When the stale read was invoked.
        Some(self.read_invoked_at)
    }
}

/// Every linearizable read that misses a write acknowledged before it began (at most one
/// violation per read: the latest such write).
pub fn check(history: &History) -> Checked<StaleRead> {
    check_views(&HistoryViews::new(history))
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> Checked<StaleRead> {
    let kv = history.kv();
    check_reads(&kv, |read| {
        read.consistency == ReadConsistency::Linearizable
    })
}

/// The check over the reads `selected` picks (shared with the durability checker).
pub(crate) fn check_reads(
    kv: &KvHistory,
    selected: impl Fn(&crate::history::kv::Read) -> bool,
) -> Checked<StaleRead> {
    let mut acknowledged: Vec<_> = kv
        .acknowledged()
        .filter_map(|(write, revision)| write.completed_at.map(|at| (at, write, revision)))
        .collect();
    acknowledged.sort_by_key(|(at, write, _)| (*at, write.op_id));
    let mut reads: Vec<_> = kv.reads.iter().filter(|read| selected(read)).collect();
    reads.sort_by_key(|read| (read.invoked_at, read.op_id));
    let judged = reads.len() as u64;
    let mut violations = Vec::new();
    let mut next = 0;
    // The latest acknowledged put per key, and the latest write overall, among writes
    // completed so far. Puts of keys with a lease are kept apart: such a key may be gone
    // with its lease, so only a read that shows it can miss them, and the read's own keys
    // find them; a lock's prefix accumulates thousands of leased keys over a run, and
    // walking them all for every read made this check quadratic.
    let mut latest_leased_put: BTreeMap<&str, (&Write, u64)> = BTreeMap::new();
    let mut latest_unleased_put: BTreeMap<&str, (&Write, u64)> = BTreeMap::new();
    let mut highest: Option<(&Write, u64)> = None;
    let mut candidates: Vec<(&str, &Write, u64)> = Vec::new();
    for read in reads {
        while next < acknowledged.len() && acknowledged[next].0 < read.invoked_at {
            let (_, write, revision) = acknowledged[next];
            if let WriteEffect::Put { key, lease, .. } = &write.effect {
                let (latest, other) = match lease {
                    Some(_) => (&mut latest_leased_put, &mut latest_unleased_put),
                    None => (&mut latest_unleased_put, &mut latest_leased_put),
                };
                // The key's latest put decides, whichever kind it is (writes complete out
                // of revision order).
                match other.get(key) {
                    Some(&(_, newer)) if newer > revision => {}
                    _ => {
                        other.remove(key);
                        let entry = latest.entry(key).or_insert((write, revision));
                        if revision >= entry.1 {
                            *entry = (write, revision);
                        }
                    }
                }
            }
            if highest.is_none_or(|(_, top)| revision > top) {
                highest = Some((write, revision));
            }
            next += 1;
        }
        // The writes to compare the read with, by key: the unleased puts in its span, and
        // the leased puts of the keys it shows.
        candidates.clear();
        candidates.extend(
            read.span
                .keys_in(&latest_unleased_put)
                .map(|(key, &(write, revision))| (key, write, revision)),
        );
        candidates.extend(read.kvs.iter().filter_map(|found| {
            let (key, &(write, revision)) = latest_leased_put.get_key_value(found.key.as_str())?;
            read.span.contains(key).then_some((*key, write, revision))
        }));
        candidates.sort_unstable_by_key(|&(key, ..)| key);
        let keyed = candidates
            .iter()
            .map(|&(_, write, revision)| (write, revision));
        for (write, revision) in highest.into_iter().chain(keyed) {
            if let Some(missed) = missed_write(kv, read, write, revision) {
                violations.push(StaleRead {
                    read: read.op_id,
                    reader: read.client,
                    read_invoked_at: read.invoked_at,
                    write: write.op_id,
                    write_completed_at: write.completed_at.expect("acknowledged"),
                    missed,
                });
                break;
            }
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use sim::history::{
        Event, OpResult, Operation, Record, Response,
        kv::{KeyValue, KvOperation, KvResponse},
    };

    pub(crate) fn invoke(at_ms: u64, op: u64, operation: KvOperation) -> Record {
        Record {
            at: SimTime::from_millis(at_ms),
            node: Some(NodeId::client(0)),
            event: Event::Invoke {
                client: NodeId::client(0),
                process: 0,
                op_id: OpId(op),
                operation: Operation::Kv(operation),
            },
        }
    }

    pub(crate) fn complete(at_ms: u64, op: u64, response: KvResponse) -> Record {
        Record {
            at: SimTime::from_millis(at_ms),
            node: Some(NodeId::client(0)),
            event: Event::Complete {
                op_id: OpId(op),
                result: OpResult::Ok {
                    response: Response::Kv(response),
                },
            },
        }
    }

    pub(crate) fn put(key: &str, value: &str) -> KvOperation {
        KvOperation::Put {
            prev_kv: false,
            key: key.into(),
            value: value.into(),
            lease: None,
        }
    }

    pub(crate) fn get(key: &str) -> KvOperation {
        KvOperation::Get {
            key: key.into(),
            range_end: None,
            revision: None,
            consistency: ReadConsistency::Linearizable,
        }
    }

    pub(crate) fn found(revision: u64, kvs: &[(&str, &str, u64)]) -> KvResponse {
        KvResponse::Get {
            revision,
            kvs: kvs
                .iter()
                .map(|(key, value, mod_revision)| KeyValue {
                    key: key.to_string(),
                    value: value.to_string(),
                    create_revision: 2,
                    mod_revision: *mod_revision,
                    version: 1,
                    lease: None,
                })
                .collect(),
        }
    }

    #[test]
    fn a_read_after_an_acknowledged_write_must_see_it() {
        let fresh = History::from_records(vec![
            invoke(1, 1, put("k", "a")),
            complete(
                2,
                1,
                KvResponse::Put {
                    prev_kv: None,
                    revision: 2,
                },
            ),
            invoke(3, 2, get("k")),
            complete(4, 2, found(2, &[("k", "a", 2)])),
        ]);
        assert!(check(&fresh).is_empty());
        let stale = History::from_records(vec![
            invoke(1, 1, put("k", "a")),
            complete(
                2,
                1,
                KvResponse::Put {
                    prev_kv: None,
                    revision: 2,
                },
            ),
            invoke(3, 2, get("k")),
            complete(4, 2, found(1, &[])),
        ]);
        let violations = check(&stale);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].read, OpId(2));
        assert!(matches!(
            violations[0].missed,
            MissedWrite::RevisionBehind { .. }
        ));
        // Concurrent (read invoked before the write completed): either answer is fine.
        let concurrent = History::from_records(vec![
            invoke(1, 1, put("k", "a")),
            invoke(2, 2, get("k")),
            complete(
                3,
                1,
                KvResponse::Put {
                    prev_kv: None,
                    revision: 2,
                },
            ),
            complete(4, 2, found(1, &[])),
        ]);
        assert!(check(&concurrent).is_empty());
        // A lost write replaced by another at the same revision.
        let replaced = History::from_records(vec![
            invoke(1, 1, put("k", "a")),
            complete(
                2,
                1,
                KvResponse::Put {
                    prev_kv: None,
                    revision: 2,
                },
            ),
            invoke(3, 2, get("k")),
            complete(4, 2, found(2, &[("k", "b", 2)])),
        ]);
        assert!(matches!(
            check(&replaced)[0].missed,
            MissedWrite::OtherValueAtRevision { .. }
        ));
    }
}
