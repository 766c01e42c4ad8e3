//! The key-value reads and writes of a history, as checkers of the etcd-like store need
//! them. Pure: reads only the recorded [`History`] (the `sim::history::kv` vocabulary).

use sim::{
    NodeId,
    history::{
        History, OpId, OpResult, Operation, Response,
        kv::{KeyValue, KvOperation, KvResponse, ReadConsistency},
    },
    time::SimTime,
};
use std::collections::BTreeMap;

/// A set of keys as etcd encodes ranges: one key, `[start, end)`, or all keys ≥ `start`
/// (`end == "\0"`).
///
/// Borrowed from the history (or the caller), as every view of this module is: checkers
/// build these views of long histories several times per run, and copying every key and
/// value once cost more than some checks themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySpan<'a> {
    /// First key.
    pub start: &'a str,
    /// End (exclusive); `None` for the single key.
    pub end: Option<&'a str>,
}

impl<'a> KeySpan<'a> {
    /// The span of `key` / `range_end`.
    pub fn new(key: &'a str, range_end: Option<&'a str>) -> Self {
        Self {
            start: key,
            end: range_end,
        }
    }

    /// Whether `key` is in the span.
    pub fn contains(&self, key: &str) -> bool {
        match self.end {
            None => key == self.start,
            Some("\0") => key >= self.start,
            Some(end) => key >= self.start && key < end,
        }
    }

    /// The entries of `map` whose keys are in the span, in key order, without visiting the
    /// others.
    pub fn keys_in<'m, 'k, V>(
        &self,
        map: &'m BTreeMap<&'k str, V>,
    ) -> impl Iterator<Item = (&'k str, &'m V)> + use<'m, 'k, '_, V> {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let start = self.start;
        let bounds = match self.end {
            None => Some((Included(start), Included(start))),
            Some("\0") => Some((Included(start), Unbounded)),
            // An empty or backwards range holds no key (and `range` would panic on it).
            Some(end) if end <= start => None,
            Some(end) => Some((Included(start), Excluded(end))),
        };
        bounds
            .into_iter()
            .flat_map(|bounds| map.range::<str, _>(bounds))
            .map(|(key, value)| (*key, value))
    }
}

/// How a write ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Acknowledged, at this store revision.
    Acknowledged {
        /// The revision of the write.
        revision: u64,
    },
    /// May or may not have happened (timed out, connection lost, or never completed).
    Unknown,
}

/// What a write does to keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteEffect<'h> {
    /// Sets `key` to `value`.
    Put {
        /// Key.
        key: &'h str,
        /// Value.
        value: &'h str,
        /// Lease the key is attached to.
        lease: Option<u64>,
    },
    /// Deletes the keys of `span`.
    Delete {
        /// The keys.
        span: KeySpan<'h>,
    },
}

/// One write (top-level, or one operation of a transaction's branch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write<'h> {
    /// The client operation.
    pub op_id: OpId,
    /// The client.
    pub client: NodeId,
    /// When it was invoked.
    pub invoked_at: SimTime,
    /// When it completed (`None` if never).
    pub completed_at: Option<SimTime>,
    /// What it does.
    pub effect: WriteEffect<'h>,
    /// How it ended.
    pub outcome: WriteOutcome,
    /// Whether it is one operation of a transaction.
    pub in_transaction: bool,
}

/// One successful read of the latest state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read<'h> {
    /// The client operation.
    pub op_id: OpId,
    /// The client.
    pub client: NodeId,
    /// When it was invoked.
    pub invoked_at: SimTime,
    /// When it completed.
    pub completed_at: SimTime,
    /// The keys asked for.
    pub span: KeySpan<'h>,
    /// Linearizable or serializable.
    pub consistency: ReadConsistency,
    /// The store revision of the answer.
    pub revision: u64,
    /// The keys found.
    pub kvs: &'h [KeyValue],
}

/// The writes and reads of a history.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KvHistory<'h> {
    /// Writes whose outcome is acknowledged or unknown (definite failures are left out:
    /// they did not happen).
    pub writes: Vec<Write<'h>>,
    /// Successful reads of the latest revision (reads at a past revision are left out).
    pub reads: Vec<Read<'h>>,
}

impl<'h> KvHistory<'h> {
    /// Extracts the key-value operations of `history`.
    pub fn of(history: &'h History) -> Self {
        let mut kv = KvHistory::default();
        for record in history.operations() {
            let Operation::Kv(operation) = record.operation else {
                continue;
            };
            let completed_at = record.completion.map(|(at, _)| at);
            let result = record.completion.map(|(_, result)| result);
            let base = |effect: WriteEffect<'h>, outcome: WriteOutcome| Write {
                op_id: record.op_id,
                client: record.client,
                invoked_at: record.invoked_at,
                completed_at,
                effect,
                outcome,
                in_transaction: matches!(operation, KvOperation::Txn { .. }),
            };
            match (operation, result) {
                (_, Some(OpResult::Fail { .. })) => {}
                // A delete that deleted nothing changed nothing (not even the revision).
                (
                    KvOperation::Delete { .. },
                    Some(OpResult::Ok {
                        response: Response::Kv(KvResponse::Delete { deleted: 0, .. }),
                    }),
                ) => {}
                (
                    KvOperation::Get {
                        key,
                        range_end,
                        revision: None,
                        consistency,
                    },
                    Some(OpResult::Ok {
                        response: Response::Kv(KvResponse::Get { revision, kvs }),
                    }),
                ) => kv.reads.push(Read {
                    op_id: record.op_id,
                    client: record.client,
                    invoked_at: record.invoked_at,
                    completed_at: completed_at.expect("a result has a completion"),
                    span: KeySpan::new(key, range_end.as_deref()),
                    consistency: *consistency,
                    revision: *revision,
                    kvs,
                }),
                (KvOperation::Put { .. } | KvOperation::Delete { .. }, result) => {
                    let outcome = match result {
                        Some(OpResult::Ok {
                            response:
                                Response::Kv(
                                    KvResponse::Put { revision, .. }
                                    | KvResponse::Delete { revision, .. },
                                ),
                        }) => WriteOutcome::Acknowledged {
                            revision: *revision,
                        },
                        _ => WriteOutcome::Unknown,
                    };
                    if let Some(effect) = effect_of(operation) {
                        kv.writes.push(base(effect, outcome));
                    }
                }
                (
                    KvOperation::Txn {
                        success, failure, ..
                    },
                    result,
                ) => match result {
                    Some(OpResult::Ok {
                        response:
                            Response::Kv(KvResponse::Txn {
                                revision,
                                succeeded,
                                ..
                            }),
                    }) => {
                        let branch = if *succeeded { success } else { failure };
                        for effect in branch.iter().filter_map(effect_of) {
                            kv.writes.push(base(
                                effect,
                                WriteOutcome::Acknowledged {
                                    revision: *revision,
                                },
                            ));
                        }
                    }
                    _ => {
                        for effect in success.iter().chain(failure).filter_map(effect_of) {
                            kv.writes.push(base(effect, WriteOutcome::Unknown));
                        }
                    }
                },
                _ => {}
            }
        }
        kv
    }

    /// Acknowledged writes, with their revisions.
    pub fn acknowledged(&self) -> impl Iterator<Item = (&Write<'h>, u64)> {
        self.writes.iter().filter_map(|write| match write.outcome {
            WriteOutcome::Acknowledged { revision } => Some((write, revision)),
            WriteOutcome::Unknown => None,
        })
    }

    /// Whether some write could have deleted `key` after revision `after`: a delete
    /// acknowledged at a later revision, or one with an unknown outcome.
    pub fn may_have_deleted_after(&self, key: &str, after: u64) -> bool {
        self.writes.iter().any(|write| {
            let WriteEffect::Delete { span } = &write.effect else {
                return false;
            };
            span.contains(key)
                && match write.outcome {
                    WriteOutcome::Acknowledged { revision } => revision > after,
                    WriteOutcome::Unknown => true,
                }
        })
    }
}

fn effect_of(operation: &KvOperation) -> Option<WriteEffect<'_>> {
    match operation {
        KvOperation::Put {
            key, value, lease, ..
        } => Some(WriteEffect::Put {
            key,
            value,
            lease: *lease,
        }),
        KvOperation::Delete { key, range_end, .. } => Some(WriteEffect::Delete {
            span: KeySpan::new(key, range_end.as_deref()),
        }),
        _ => None,
    }
}

/// Why a read does not reflect an acknowledged write that completed before it began.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MissedWrite {
    /// The read's store revision is older than the write's.
    RevisionBehind {
        /// The read's revision.
        read_revision: u64,
        /// The write's revision.
        write_revision: u64,
    },
    /// The key shows an older modification than the write.
    OlderValue {
        /// The key.
        key: String,
        /// The mod revision read.
        read_mod_revision: u64,
        /// The write's revision.
        write_revision: u64,
    },
    /// The key shows another value at the write's own revision: the write was replaced.
    OtherValueAtRevision {
        /// The key.
        key: String,
        /// The value read.
        read_value: String,
        /// The value written.
        written_value: String,
        /// The revision.
        revision: u64,
    },
    /// The key is gone and nothing could have deleted it.
    Vanished {
        /// The key.
        key: String,
        /// The write's revision.
        write_revision: u64,
    },
}

/// How `read` fails to reflect `write` (acknowledged at `revision`, completed before the
/// read was invoked), if it does.
pub fn missed_write(
    kv: &KvHistory,
    read: &Read,
    write: &Write,
    revision: u64,
) -> Option<MissedWrite> {
    if read.revision < revision {
        return Some(MissedWrite::RevisionBehind {
            read_revision: read.revision,
            write_revision: revision,
        });
    }
    let WriteEffect::Put { key, value, lease } = write.effect else {
        return None;
    };
    if !read.span.contains(key) {
        return None;
    }
    match read.kvs.iter().find(|found| found.key == key) {
        Some(found) if found.mod_revision < revision => Some(MissedWrite::OlderValue {
            key: key.to_string(),
            read_mod_revision: found.mod_revision,
            write_revision: revision,
        }),
        Some(found) if found.mod_revision == revision && found.value != value => {
            Some(MissedWrite::OtherValueAtRevision {
                key: key.to_string(),
                read_value: found.value.clone(),
                written_value: value.to_string(),
                revision,
            })
        }
        Some(_) => None,
        None => {
            // A leased key may have expired with its lease.
            if lease.is_some() || kv.may_have_deleted_after(key, revision) {
                None
            } else {
                Some(MissedWrite::Vanished {
                    key: key.to_string(),
                    write_revision: revision,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_a_span_are_the_keys_it_contains() {
        let keys = ["", "a", "a/1", "a/2", "a0", "b", "lock/17", "lock/9", "m"];
        let map: BTreeMap<&str, usize> = keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
        let spans = [
            KeySpan::new("a/1", None),
            KeySpan::new("nope", None),
            KeySpan::new("a/", Some("a0")),
            KeySpan::new("lock/", Some("\0")),
            KeySpan::new("", Some("\0")),
            KeySpan::new("b", Some("a")),
            KeySpan::new("b", Some("b")),
            KeySpan::new("a", Some("m")),
        ];
        for span in spans {
            let direct: Vec<&str> = span.keys_in(&map).map(|(key, _)| key).collect();
            let filtered: Vec<&str> = keys.iter().copied().filter(|k| span.contains(k)).collect();
            assert_eq!(direct, filtered, "{span:?}");
        }
    }
}
