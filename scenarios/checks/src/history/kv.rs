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

/// A set of keys as etcd encodes ranges: one key, `[start, end)`, or all keys ≥ `start`
/// (`end == "\0"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySpan {
    /// First key.
    pub start: String,
    /// End (exclusive); `None` for the single key.
    pub end: Option<String>,
}

impl KeySpan {
    /// The span of `key` / `range_end`.
    pub fn new(key: &str, range_end: Option<&str>) -> Self {
        Self {
            start: key.to_string(),
            end: range_end.map(str::to_string),
        }
    }

    /// Whether `key` is in the span.
    pub fn contains(&self, key: &str) -> bool {
        match self.end.as_deref() {
            None => key == self.start,
            Some("\0") => key >= self.start.as_str(),
            Some(end) => key >= self.start.as_str() && key < end,
        }
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteEffect {
    /// Sets `key` to `value`.
    Put {
        /// Key.
        key: String,
        /// Value.
        value: String,
        /// Lease the key is attached to.
        lease: Option<u64>,
    },
    /// Deletes the keys of `span`.
    Delete {
        /// The keys.
        span: KeySpan,
    },
}

/// One write (top-level, or one operation of a transaction's branch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    /// The client operation.
    pub op_id: OpId,
    /// The client.
    pub client: NodeId,
    /// When it was invoked.
    pub invoked_at: SimTime,
    /// When it completed (`None` if never).
    pub completed_at: Option<SimTime>,
    /// What it does.
    pub effect: WriteEffect,
    /// How it ended.
    pub outcome: WriteOutcome,
    /// Whether it is one operation of a transaction.
    pub in_transaction: bool,
}

/// One successful read of the latest state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    /// The client operation.
    pub op_id: OpId,
    /// The client.
    pub client: NodeId,
    /// When it was invoked.
    pub invoked_at: SimTime,
    /// When it completed.
    pub completed_at: SimTime,
    /// The keys asked for.
    pub span: KeySpan,
    /// Linearizable or serializable.
    pub consistency: ReadConsistency,
    /// The store revision of the answer.
    pub revision: u64,
    /// The keys found.
    pub kvs: Vec<KeyValue>,
}

/// The writes and reads of a history.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KvHistory {
    /// Writes whose outcome is acknowledged or unknown (definite failures are left out:
    /// they did not happen).
    pub writes: Vec<Write>,
    /// Successful reads of the latest revision (reads at a past revision are left out).
    pub reads: Vec<Read>,
}

impl KvHistory {
    /// Extracts the key-value operations of `history`.
    pub fn of(history: &History) -> Self {
        let mut kv = KvHistory::default();
        for record in history.operations() {
            let Operation::Kv(operation) = record.operation else {
                continue;
            };
            let completed_at = record.completion.map(|(at, _)| at);
            let result = record.completion.map(|(_, result)| result);
            let base = |effect: WriteEffect, outcome: WriteOutcome| Write {
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
                    kvs: kvs.clone(),
                }),
                (KvOperation::Put { .. } | KvOperation::Delete { .. }, result) => {
                    let outcome = match result {
                        Some(OpResult::Ok {
                            response:
                                Response::Kv(
                                    KvResponse::Put { revision }
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
    pub fn acknowledged(&self) -> impl Iterator<Item = (&Write, u64)> {
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

fn effect_of(operation: &KvOperation) -> Option<WriteEffect> {
    match operation {
        KvOperation::Put { key, value, lease } => Some(WriteEffect::Put {
            key: key.clone(),
            value: value.clone(),
            lease: *lease,
        }),
        KvOperation::Delete { key, range_end } => Some(WriteEffect::Delete {
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
    let WriteEffect::Put { key, value, lease } = &write.effect else {
        return None;
    };
    if !read.span.contains(key) {
        return None;
    }
    match read.kvs.iter().find(|found| &found.key == key) {
        Some(found) if found.mod_revision < revision => Some(MissedWrite::OlderValue {
            key: key.clone(),
            read_mod_revision: found.mod_revision,
            write_revision: revision,
        }),
        Some(found) if found.mod_revision == revision && &found.value != value => {
            Some(MissedWrite::OtherValueAtRevision {
                key: key.clone(),
                read_value: found.value.clone(),
                written_value: value.clone(),
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
                    key: key.clone(),
                    write_revision: revision,
                })
            }
        }
    }
}
