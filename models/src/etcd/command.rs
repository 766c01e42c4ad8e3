//! What the etcd store puts in the Raft log, and request validation.

use serde::Serialize;
use sim::{
    digest::StableHasher,
    history::kv::{
        Compare, CompareOperator, CompareTarget, KvError, KvOperation, RangeOptions,
        ReadConsistency,
    },
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
    /// The leader's lessor found the lease expired: revoke it, deleting its keys (etcd's
    /// `revokeExpiredLeases` proposes a `LeaseRevoke`; the model names it apart so that
    /// every replica records the expiry it applies). Keep-alives are not logged (they renew
    /// in the leader's lessor, as etcd's), so none can race it in the log: a renewal waits
    /// for a pending expiry (`Lessor::renewal`), and a new leader's renewals wait, through
    /// ReadIndex, for every entry of earlier terms to apply.
    LeaseExpire {
        /// Lease id.
        lease: u64,
    },
    /// The leader's remaining time for some leases, so that a new leader does not restart
    /// TTLs from scratch (etcd lease checkpointing, etcd#9924); a remaining time of 0 clears
    /// the lease's checkpoint (what a keep-alive of a checkpointed lease proposes first).
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
    /// A stable digest of the command (replicas compare it; every replica records it for
    /// every applied entry). FNV-1a ([`StableHasher`]) over the command's fields, each
    /// variant tagged and each string length-prefixed, so that no two commands share their
    /// input; no serialization, and the same value on every platform and run.
    pub fn digest(&self) -> u64 {
        let mut hasher = StableHasher::new();
        match self {
            StoreCommand::Kv { operation } => {
                hasher.write_bytes(&[1]);
                hash_operation(&mut hasher, operation);
            }
            StoreCommand::LeaseGrant { ttl_ms } => {
                hasher.write_bytes(&[2]);
                hasher.write_u64(*ttl_ms);
            }
            StoreCommand::LeaseRevoke { lease } => {
                hasher.write_bytes(&[3]);
                hasher.write_u64(*lease);
            }
            StoreCommand::LeaseExpire { lease } => {
                hasher.write_bytes(&[5]);
                hasher.write_u64(*lease);
            }
            StoreCommand::LeaseCheckpoint { remaining } => {
                hasher.write_bytes(&[6]);
                hasher.write_u64(remaining.len() as u64);
                for &(lease, remaining_ms) in remaining {
                    hasher.write_u64(lease);
                    hasher.write_u64(remaining_ms);
                }
            }
            StoreCommand::Compact { revision } => {
                hasher.write_bytes(&[7]);
                hasher.write_u64(*revision);
            }
        }
        hasher.finish().0
    }
}

fn hash_str(hasher: &mut StableHasher, text: &str) {
    hasher.write_u64(text.len() as u64);
    hasher.write_bytes(text.as_bytes());
}

fn hash_optional_str(hasher: &mut StableHasher, text: Option<&str>) {
    match text {
        None => hasher.write_bytes(&[0]),
        Some(text) => {
            hasher.write_bytes(&[1]);
            hash_str(hasher, text);
        }
    }
}

fn hash_optional_u64(hasher: &mut StableHasher, value: Option<u64>) {
    match value {
        None => hasher.write_bytes(&[0]),
        Some(value) => {
            hasher.write_bytes(&[1]);
            hasher.write_u64(value);
        }
    }
}

/// An option flag that was added after digests were pinned: it feeds the hasher only when
/// set, so every command without it keeps the digest it had (digests are recorded in
/// histories), while a set flag still changes it.
fn hash_flag(hasher: &mut StableHasher, flag: bool) {
    if flag {
        hasher.write_bytes(&[0xf1]);
    }
}

fn hash_operations(hasher: &mut StableHasher, operations: &[KvOperation]) {
    hasher.write_u64(operations.len() as u64);
    for operation in operations {
        hash_operation(hasher, operation);
    }
}

/// Every field of every variant (spelled out, so that a new field fails to compile here
/// rather than being left out of the digest).
fn hash_operation(hasher: &mut StableHasher, operation: &KvOperation) {
    match operation {
        KvOperation::Get {
            key,
            range_end,
            revision,
            consistency,
        } => {
            hasher.write_bytes(&[1]);
            hash_str(hasher, key);
            hash_optional_str(hasher, range_end.as_deref());
            hash_optional_u64(hasher, *revision);
            hasher.write_bytes(&[match consistency {
                ReadConsistency::Linearizable => 0,
                ReadConsistency::Serializable => 1,
            }]);
        }
        KvOperation::Put {
            key,
            value,
            lease,
            prev_kv,
        } => {
            hasher.write_bytes(&[2]);
            hash_str(hasher, key);
            hash_str(hasher, value);
            hash_optional_u64(hasher, *lease);
            hash_flag(hasher, *prev_kv);
        }
        KvOperation::Delete {
            key,
            range_end,
            prev_kv,
        } => {
            hasher.write_bytes(&[3]);
            hash_str(hasher, key);
            hash_optional_str(hasher, range_end.as_deref());
            hash_flag(hasher, *prev_kv);
        }
        KvOperation::Txn {
            compares,
            success,
            failure,
        } => {
            hasher.write_bytes(&[4]);
            hasher.write_u64(compares.len() as u64);
            for compare in compares {
                hash_compare(hasher, compare);
            }
            hash_operations(hasher, success);
            hash_operations(hasher, failure);
        }
        KvOperation::LeaseGrant { ttl_ms } => {
            hasher.write_bytes(&[5]);
            hasher.write_u64(*ttl_ms);
        }
        KvOperation::LeaseRevoke { lease } => {
            hasher.write_bytes(&[6]);
            hasher.write_u64(*lease);
        }
        KvOperation::LeaseKeepAlive { lease } => {
            hasher.write_bytes(&[7]);
            hasher.write_u64(*lease);
        }
        KvOperation::LeaseTimeToLive { lease, keys } => {
            hasher.write_bytes(&[8]);
            hasher.write_u64(*lease);
            hash_flag(hasher, *keys);
        }
        KvOperation::GetWithOptions {
            key,
            range_end,
            revision,
            consistency,
            options,
        } => {
            hasher.write_bytes(&[9]);
            hash_str(hasher, key);
            hash_optional_str(hasher, range_end.as_deref());
            hash_optional_u64(hasher, *revision);
            hasher.write_bytes(&[match consistency {
                ReadConsistency::Linearizable => 0,
                ReadConsistency::Serializable => 1,
            }]);
            hash_range_options(hasher, options);
        }
        KvOperation::LeaseLeases => hasher.write_bytes(&[10]),
    }
}

fn hash_range_options(hasher: &mut StableHasher, options: &RangeOptions) {
    let RangeOptions {
        limit,
        sort_order,
        sort_target,
        keys_only,
        count_only,
        min_mod_revision,
        max_mod_revision,
        min_create_revision,
        max_create_revision,
    } = options;
    hasher.write_u64(*limit);
    hasher.write_bytes(&[*sort_order as u8, *sort_target as u8]);
    hasher.write_bytes(&[u8::from(*keys_only), u8::from(*count_only)]);
    for revision in [
        min_mod_revision,
        max_mod_revision,
        min_create_revision,
        max_create_revision,
    ] {
        hasher.write_u64(*revision);
    }
}

fn hash_compare(hasher: &mut StableHasher, compare: &Compare) {
    let Compare {
        key,
        target,
        operator,
        range_end,
    } = compare;
    hash_str(hasher, key);
    // Fed only when set (added after digests were pinned, as `hash_flag`).
    if let Some(range_end) = range_end {
        hasher.write_bytes(&[0xf2]);
        hash_str(hasher, range_end);
    }
    match target {
        CompareTarget::Value(value) => {
            hasher.write_bytes(&[1]);
            hash_str(hasher, value);
        }
        CompareTarget::Version(version) => {
            hasher.write_bytes(&[2]);
            hasher.write_u64(*version);
        }
        CompareTarget::CreateRevision(revision) => {
            hasher.write_bytes(&[3]);
            hasher.write_u64(*revision);
        }
        CompareTarget::ModRevision(revision) => {
            hasher.write_bytes(&[4]);
            hasher.write_u64(*revision);
        }
        CompareTarget::Lease(lease) => {
            hasher.write_bytes(&[5]);
            hasher.write_u64(*lease);
        }
    }
    hasher.write_bytes(&[match operator {
        CompareOperator::Equal => 1,
        CompareOperator::NotEqual => 2,
        CompareOperator::Greater => 3,
        CompareOperator::Less => 4,
    }]);
}

/// Checks a client operation before it is proposed or served: an empty key, duplicate keys
/// in a transaction branch, or operations a transaction cannot hold are refused with a
/// typed error.
pub fn validate(operation: &KvOperation) -> Result<(), KvError> {
    match operation {
        KvOperation::Get { key, .. }
        | KvOperation::GetWithOptions { key, .. }
        | KvOperation::Delete { key, .. } => {
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
        // An empty transaction is valid: etcd answers it (succeeded, at the current
        // revision, no responses).
        KvOperation::Txn {
            compares,
            success,
            failure,
        } => {
            if compares.iter().any(|compare| compare.key.is_empty()) {
                return Err(KvError::EmptyKey);
            }
            for branch in [success, failure] {
                for operation in branch {
                    match operation {
                        KvOperation::Get { .. }
                        | KvOperation::GetWithOptions { .. }
                        | KvOperation::Delete { .. }
                        | KvOperation::Put { .. }
                        // A nested transaction (etcd 3.3+ `RequestOp_RequestTxn`).
                        | KvOperation::Txn { .. } => {}
                        _ => {
                            return Err(KvError::Other {
                                message: "a transaction may hold only get, put, delete and txn"
                                    .into(),
                            });
                        }
                    }
                    validate_in_txn(operation)?;
                }
            }
            // etcd checks every op of both branches, nested ones included, before the
            // overlaps (`Txn` in `v3rpc/key.go`: `checkTxnRequest`, then `checkIntervals`).
            check_writes_overlap(success)?;
            check_writes_overlap(failure)?;
            Ok(())
        }
        // Any TTL: the state machine raises it to the minimum (0 included), as etcd does.
        KvOperation::LeaseGrant { .. }
        | KvOperation::LeaseRevoke { .. }
        | KvOperation::LeaseKeepAlive { .. }
        | KvOperation::LeaseTimeToLive { .. }
        | KvOperation::LeaseLeases => Ok(()),
    }
}

/// A nested transaction is checked as etcd checks one (`checkRequestOp` calls
/// `checkTxnRequest`), except that its overlaps are checked with its parent's branch
/// ([`check_writes_overlap`]): an empty one is valid too.
fn validate_in_txn(operation: &KvOperation) -> Result<(), KvError> {
    match operation {
        KvOperation::Txn {
            compares,
            success,
            failure,
        } => {
            if compares.iter().any(|compare| compare.key.is_empty()) {
                return Err(KvError::EmptyKey);
            }
            for operation in success.iter().chain(failure) {
                if matches!(operation, KvOperation::Txn { .. }) {
                    validate_in_txn(operation)?;
                } else {
                    validate(operation)?;
                }
            }
            Ok(())
        }
        other => validate(other),
    }
}

/// A delete's interval as etcd's `checkIntervals` builds it: `[key, range_end)` compared as
/// strings, a single key without `range_end`. So a delete to the end of the keyspace
/// (`range_end` "\0") covers no put there (its interval is empty), and etcd runs such a
/// branch; so does the model.
fn delete_covers(delete: &KvOperation, put_key: &str) -> bool {
    match delete {
        KvOperation::Delete {
            key,
            range_end: None,
            ..
        } => key == put_key,
        KvOperation::Delete {
            key,
            range_end: Some(end),
            ..
        } => key.as_str() <= put_key && put_key < end.as_str(),
        _ => false,
    }
}

/// Refuses a transaction branch that puts a key twice, or puts a key that one of its
/// deletes covers, as etcd does before proposing it (etcd 3.4.23
/// `etcdserver/api/v3rpc/key.go` `checkIntervals`, "duplicate key given in txn request").
fn check_writes_overlap(branch: &[KvOperation]) -> Result<(), KvError> {
    writes_of_branch(branch).map(|_| ())
}

/// The puts and deletes of a branch, nested transactions included, or the duplicate-key
/// error, in `checkIntervals`' order: this level's deletes first; then each nested
/// transaction's puts, checked against the puts of the nested transactions before it and
/// every delete gathered so far (a key put in both branches of one nested transaction is
/// fine: only one runs), its deletes then joining the others; last this level's puts,
/// checked against all of them.
fn writes_of_branch(branch: &[KvOperation]) -> Result<Writes<'_>, KvError> {
    let mut deletes: Vec<&KvOperation> = branch
        .iter()
        .filter(|operation| matches!(operation, KvOperation::Delete { .. }))
        .collect();
    let covered = |deletes: &[&KvOperation], key: &str| {
        deletes.iter().any(|delete| delete_covers(delete, key))
    };
    let mut puts = std::collections::BTreeSet::new();
    for operation in branch {
        let KvOperation::Txn {
            success, failure, ..
        } = operation
        else {
            continue;
        };
        let then = writes_of_branch(success)?;
        let otherwise = writes_of_branch(failure)?;
        for key in &then.puts {
            if puts.contains(key) || covered(&deletes, key) {
                return Err(KvError::DuplicateKey);
            }
            puts.insert(*key);
        }
        for key in &otherwise.puts {
            if (puts.contains(key) && !then.puts.contains(key)) || covered(&deletes, key) {
                return Err(KvError::DuplicateKey);
            }
            puts.insert(*key);
        }
        deletes.extend(then.deletes);
        deletes.extend(otherwise.deletes);
    }
    for operation in branch {
        if let KvOperation::Put { key, .. } = operation {
            if puts.contains(key.as_str()) || covered(&deletes, key) {
                return Err(KvError::DuplicateKey);
            }
            puts.insert(key.as_str());
        }
    }
    Ok(Writes { puts, deletes })
}

/// What `writes_of_branch` gathers.
struct Writes<'a> {
    puts: std::collections::BTreeSet<&'a str>,
    deletes: Vec<&'a KvOperation>,
}

/// Whether the operation only reads (served with ReadIndex, not through the log).
pub fn is_read_only(operation: &KvOperation) -> bool {
    match operation {
        KvOperation::Get { .. }
        | KvOperation::GetWithOptions { .. }
        | KvOperation::LeaseTimeToLive { .. }
        | KvOperation::LeaseLeases => true,
        // Every transaction goes through the log, read-only ones included: simpler, and
        // still linearizable.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &str, value: &str) -> StoreCommand {
        StoreCommand::Kv {
            operation: KvOperation::Put {
                prev_kv: false,
                key: key.into(),
                value: value.into(),
                lease: None,
            },
        }
    }

    /// Digests are recorded in histories and compared across replicas and runs: they must
    /// not change with the platform, the Rust version or the process. (Values computed by
    /// hand from the FNV-1a definition over the bytes the digest feeds.)
    #[test]
    fn digests_are_pinned() {
        assert_eq!(put("k", "v").digest(), 0xec5b_9a1f_a2b7_2d4f);
        assert_eq!(
            StoreCommand::LeaseExpire { lease: 7 }.digest(),
            0xddcc_48a5_8a14_6247
        );
    }

    fn txn(success: Vec<KvOperation>, failure: Vec<KvOperation>) -> KvOperation {
        KvOperation::Txn {
            compares: vec![],
            success,
            failure,
        }
    }

    fn put_op(key: &str) -> KvOperation {
        KvOperation::Put {
            prev_kv: false,
            key: key.into(),
            value: "v".into(),
            lease: None,
        }
    }

    fn delete_op(key: &str, range_end: Option<&str>) -> KvOperation {
        KvOperation::Delete {
            prev_kv: false,
            key: key.into(),
            range_end: range_end.map(str::to_string),
        }
    }

    /// The cases confirmed on etcd 3.4.23 (etcdctl `txn`): a branch that puts a key twice,
    /// or puts a key and deletes it (singly or in a range), is refused; a range that ends
    /// before the key, a put in the other branch, or a delete to the end of the keyspace
    /// ("\0", an empty interval to etcd's check) is not; nor is an empty transaction.
    #[test]
    fn a_branch_that_writes_a_key_twice_is_refused_as_etcd_does() {
        let refused = [
            txn(vec![put_op("a"), delete_op("a", None)], vec![]),
            txn(vec![delete_op("a", None), put_op("a")], vec![]),
            txn(vec![put_op("a"), delete_op("0", Some("z"))], vec![]),
            txn(vec![put_op("a"), put_op("a")], vec![]),
            txn(vec![put_op("b")], vec![put_op("a"), delete_op("a", None)]),
        ];
        for operation in refused {
            assert_eq!(
                validate(&operation),
                Err(KvError::DuplicateKey),
                "{operation:?}"
            );
        }
        let accepted = [
            txn(vec![], vec![]),
            txn(vec![put_op("b"), delete_op("a", Some("b"))], vec![]),
            txn(vec![put_op("a"), delete_op("0", Some("\0"))], vec![]),
            txn(vec![put_op("a")], vec![put_op("a"), delete_op("b", None)]),
            txn(vec![delete_op("a", None), delete_op("a", None)], vec![]),
        ];
        for operation in accepted {
            assert_eq!(validate(&operation), Ok(()), "{operation:?}");
        }
    }

    fn nested(success: Vec<KvOperation>, failure: Vec<KvOperation>) -> KvOperation {
        txn(success, failure)
    }

    /// The nesting cases recorded on etcd 3.4.23 (`txn_nested_duplicate.probe`): a put at
    /// two levels, in two nested transactions, or under a delete at any level gathered
    /// before it is refused; the two branches of one nested transaction may put one key;
    /// a delete in a later nested transaction does not count against an earlier one's put
    /// (`checkIntervals` checks a nested transaction's puts only against what came before).
    #[test]
    fn the_duplicate_key_rule_spans_nested_transactions_as_etcd_checks_it() {
        let refused = [
            txn(vec![put_op("k"), nested(vec![put_op("k")], vec![])], vec![]),
            txn(
                vec![
                    nested(vec![put_op("k")], vec![]),
                    nested(vec![put_op("k")], vec![]),
                ],
                vec![],
            ),
            txn(
                vec![delete_op("a", Some("z")), nested(vec![put_op("k")], vec![])],
                vec![],
            ),
            txn(
                vec![nested(vec![delete_op("k", None)], vec![]), put_op("k")],
                vec![],
            ),
            txn(
                vec![
                    nested(vec![delete_op("k", None)], vec![]),
                    nested(vec![put_op("k")], vec![]),
                ],
                vec![],
            ),
            txn(vec![put_op("k"), nested(vec![], vec![put_op("k")])], vec![]),
        ];
        for operation in refused {
            assert_eq!(
                validate(&operation),
                Err(KvError::DuplicateKey),
                "{operation:?}"
            );
        }
        let accepted = [
            txn(vec![nested(vec![put_op("k")], vec![put_op("k")])], vec![]),
            txn(
                vec![
                    nested(vec![put_op("k")], vec![]),
                    nested(vec![delete_op("k", None)], vec![]),
                ],
                vec![],
            ),
            txn(vec![put_op("j")], vec![nested(vec![put_op("j")], vec![])]),
            txn(vec![nested(vec![], vec![])], vec![]),
        ];
        for operation in accepted {
            assert_eq!(validate(&operation), Ok(()), "{operation:?}");
        }
    }

    #[test]
    fn digests_tell_fields_apart() {
        let commands = [
            put("k", "v"),
            put("kv", ""),
            put("", "kv"),
            put("k", "w"),
            StoreCommand::Kv {
                operation: KvOperation::Put {
                    prev_kv: false,
                    key: "k".into(),
                    value: "v".into(),
                    lease: Some(1),
                },
            },
            StoreCommand::Kv {
                operation: KvOperation::Delete {
                    prev_kv: false,
                    key: "k".into(),
                    range_end: None,
                },
            },
            StoreCommand::Kv {
                operation: KvOperation::Delete {
                    prev_kv: false,
                    key: "k".into(),
                    range_end: Some(String::new()),
                },
            },
            StoreCommand::Kv {
                operation: KvOperation::Txn {
                    compares: vec![Compare {
                        key: "k".into(),
                        target: CompareTarget::Version(0),
                        operator: CompareOperator::Equal,
                        range_end: None,
                    }],
                    success: vec![KvOperation::Put {
                        prev_kv: false,
                        key: "k".into(),
                        value: "v".into(),
                        lease: None,
                    }],
                    failure: vec![],
                },
            },
            StoreCommand::Kv {
                operation: KvOperation::Txn {
                    compares: vec![Compare {
                        key: "k".into(),
                        target: CompareTarget::Version(0),
                        operator: CompareOperator::Equal,
                        range_end: None,
                    }],
                    success: vec![],
                    failure: vec![KvOperation::Put {
                        prev_kv: false,
                        key: "k".into(),
                        value: "v".into(),
                        lease: None,
                    }],
                },
            },
            StoreCommand::Kv {
                operation: KvOperation::GetWithOptions {
                    key: "k".into(),
                    range_end: None,
                    revision: None,
                    consistency: ReadConsistency::Linearizable,
                    options: RangeOptions {
                        limit: 7,
                        ..RangeOptions::default()
                    },
                },
            },
            StoreCommand::Kv {
                operation: KvOperation::GetWithOptions {
                    key: "k".into(),
                    range_end: None,
                    revision: None,
                    consistency: ReadConsistency::Linearizable,
                    options: RangeOptions {
                        min_mod_revision: 7,
                        ..RangeOptions::default()
                    },
                },
            },
            StoreCommand::Kv {
                operation: KvOperation::LeaseLeases,
            },
            StoreCommand::LeaseGrant { ttl_ms: 7 },
            StoreCommand::LeaseRevoke { lease: 7 },
            StoreCommand::LeaseExpire { lease: 7 },
            StoreCommand::LeaseCheckpoint {
                remaining: vec![(7, 0)],
            },
            StoreCommand::LeaseCheckpoint { remaining: vec![] },
            StoreCommand::Compact { revision: 7 },
        ];
        let digests: std::collections::BTreeSet<u64> =
            commands.iter().map(StoreCommand::digest).collect();
        assert_eq!(digests.len(), commands.len());
        assert_eq!(put("k", "v").digest(), put("k", "v").digest());
    }
}
