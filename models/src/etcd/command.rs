//! What the etcd store puts in the Raft log, and request validation.

use serde::Serialize;
use sim::{
    digest::Digest,
    history::kv::{KvError, KvOperation},
};

/// A state-machine command: one Raft log entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum StoreCommand {
    /// A client write: `Put`, `Delete` or `Txn` (validated).
    Kv {
        /// The operation.
        operation: KvOperation,
    },
    /// Grant a lease; its id is the index of this entry (unique and the same on every
    /// replica).
    LeaseGrant {
        /// Time to live, milliseconds.
        ttl_ms: u64,
    },
    /// Revoke a lease at a client's request, deleting its keys.
    LeaseRevoke {
        /// Lease id.
        lease: u64,
    },
    /// Renew a lease (its full TTL starts again on the leader).
    LeaseKeepAlive {
        /// Lease id.
        lease: u64,
    },
    /// The leader's lessor found the lease expired: revoke it, deleting its keys — unless
    /// it was renewed since the leader looked (`renewals` no longer matches).
    LeaseExpire {
        /// Lease id.
        lease: u64,
        /// The lease's renewal count the leader saw.
        renewals: u64,
    },
    /// The leader's remaining time for each lease, so that a new leader does not restart
    /// TTLs from scratch (etcd lease checkpointing, etcd#9924).
    LeaseCheckpoint {
        /// `(lease, remaining_ms)` pairs.
        remaining: Vec<(u64, u64)>,
    },
    /// Compact the MVCC history up to `revision`.
    Compact {
        /// The revision.
        revision: u64,
    },
}

impl StoreCommand {
    /// A stable digest of the command (replicas compare it).
    pub fn digest(&self) -> u64 {
        Digest::of_json(self).0
    }
}

/// Checks a client operation before it is proposed or served: an empty key, a transaction
/// without operations, duplicate keys in a transaction branch, or operations a transaction
/// cannot hold are refused with a typed error.
pub fn validate(operation: &KvOperation) -> Result<(), KvError> {
    match operation {
        KvOperation::Get { key, .. } | KvOperation::Delete { key, .. } => {
            if key.is_empty() {
                return Err(KvError::EmptyKey);
            }
            Ok(())
        }
        KvOperation::Put { key, .. } => {
            if key.is_empty() {
                return Err(KvError::EmptyKey);
            }
            Ok(())
        }
        KvOperation::Txn {
            compares,
            success,
            failure,
        } => {
            if success.is_empty() && failure.is_empty() {
                return Err(KvError::EmptyTransaction);
            }
            if compares.iter().any(|compare| compare.key.is_empty()) {
                return Err(KvError::EmptyKey);
            }
            for branch in [success, failure] {
                let mut put_keys = std::collections::BTreeSet::new();
                for operation in branch {
                    match operation {
                        KvOperation::Get { .. } | KvOperation::Delete { .. } => {}
                        KvOperation::Put { key, .. } => {
                            if !put_keys.insert(key.as_str()) {
                                return Err(KvError::Other {
                                    message: format!(
                                        "duplicate key `{key}` in one transaction branch"
                                    ),
                                });
                            }
                        }
                        _ => {
                            return Err(KvError::Other {
                                message: "a transaction may hold only get, put and delete".into(),
                            });
                        }
                    }
                    validate(operation)?;
                }
            }
            Ok(())
        }
        KvOperation::LeaseGrant { ttl_ms } => {
            if *ttl_ms == 0 {
                return Err(KvError::Other {
                    message: "a lease needs a positive TTL".into(),
                });
            }
            Ok(())
        }
        KvOperation::LeaseRevoke { .. }
        | KvOperation::LeaseKeepAlive { .. }
        | KvOperation::LeaseTimeToLive { .. } => Ok(()),
    }
}

/// Whether the operation only reads (served with ReadIndex, not through the log).
pub fn is_read_only(operation: &KvOperation) -> bool {
    match operation {
        KvOperation::Get { .. } | KvOperation::LeaseTimeToLive { .. } => true,
        // Every transaction goes through the log, read-only ones included: simpler, and
        // still linearizable.
        _ => false,
    }
}
