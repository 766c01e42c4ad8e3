//! Reading the key-value operations of a history: one sub-operation per key, with what is
//! left out and why.

use super::{KeyAction, KeyCompare, KeyCompareTarget, KvCall, KvInput, KvModel, KvOutput, SeenKey};
use crate::history::{applied_requests::AppliedRequests, kv::KeySpan};
use crate::linearizability::{
    Skipped, TimeUnit,
    model::{Operation, OperationHistory, Outcome},
    resolve::resolve,
};
use sim::history::{
    History, OpResult, Operation as HistoryOperation, OperationRecord, Response,
    kv::{
        Compare, CompareOperator, CompareTarget, KeyValue, KvOperation, KvResponse, ReadConsistency,
    },
};
use std::collections::BTreeSet;

/// The key-value operations of a coordsim history, split per key, ready to check.
///
/// A key is judged only if every write that may have changed it is judged too: a key ever
/// attached to a lease (expiry deletes it without a client operation), and a key that an
/// operation left out may have written (a transaction with a branch the model cannot
/// follow, a nested transaction whose outcome is unknown), are left out with every operation
/// on them. Otherwise a read after such a write would look like a violation that is only
/// the checker's blind spot. Leaving out a key can leave out more writes, so this repeats
/// until no new key is left out (at most once per key).
///
/// A write of unknown outcome is then resolved from what the replicas applied, where the
/// history shows it ([`crate::linearizability::resolve`]).
pub fn from_history(history: &History) -> (KvModel, OperationHistory<KvInput, KvOutput>) {
    let records = history.operations();
    // The keys the history writes or reads, and those ever attached to a lease. (The store
    // starts empty and every write is a recorded operation, so a key that a read shows but
    // nobody wrote is a violation, not a key to ignore.)
    let mut written = BTreeSet::new();
    let mut left_out = BTreeSet::new();
    for record in &records {
        if let HistoryOperation::Kv(operation) = record.operation {
            collect_keys(operation, &mut written, &mut left_out);
        }
        if let Some((
            _,
            OpResult::Ok {
                response: Response::Kv(response),
            },
        )) = record.completion
        {
            collect_read_keys(response, &mut written);
        }
    }
    loop {
        let universe: Vec<&String> = written
            .iter()
            .filter(|key| !left_out.contains(*key))
            .collect();
        let (model, mut checked, unjudged_writes) = split_all(&records, &universe);
        let newly_left_out: Vec<String> = unjudged_writes
            .iter()
            .flat_map(|(key, range_end)| covered(&universe, key, range_end.as_deref()))
            .cloned()
            .collect();
        if newly_left_out.is_empty() {
            resolve(&model, &mut checked, &AppliedRequests::of(history));
            return (model, checked);
        }
        left_out.extend(newly_left_out);
    }
}

/// A key span an operation may write: its key and range end.
type WriteSpan = (String, Option<String>);

/// Every operation split over the keys of `universe`, and the spans that operations left out
/// (but for definite failures, which took no effect) may have written.
fn split_all(
    records: &[OperationRecord<'_>],
    universe: &[&String],
) -> (KvModel, OperationHistory<KvInput, KvOutput>, Vec<WriteSpan>) {
    let mut model = KvModel::default();
    let mut checked = OperationHistory {
        time_unit: TimeUnit::Nanoseconds,
        ..OperationHistory::default()
    };
    let mut unjudged_writes = Vec::new();
    for record in records {
        let id = record.op_id.0;
        let skip = |checked: &mut OperationHistory<KvInput, KvOutput>, reason| {
            checked.skipped.push(Skipped { id, reason });
        };
        let HistoryOperation::Kv(operation) = record.operation else {
            skip(&mut checked, "not a key-value operation");
            continue;
        };
        let failed = matches!(record.completion, Some((_, OpResult::Fail { .. })));
        let mut leave_out = |checked: &mut OperationHistory<KvInput, KvOutput>,
                             reason: &'static str| {
            skip(checked, reason);
            if !failed {
                write_spans(operation, &mut unjudged_writes);
            }
        };
        if let Some(reason) = unchecked_reason(operation) {
            leave_out(&mut checked, reason);
            continue;
        }
        let (returned_at, response) = match record.completion {
            None | Some((_, OpResult::Unknown { .. })) => (None, None),
            Some((
                at,
                OpResult::Ok {
                    response: Response::Kv(response),
                },
            )) => (Some(at.as_nanos()), Some(response)),
            Some((_, OpResult::Ok { .. })) => {
                leave_out(&mut checked, "a response that is not a key-value response");
                continue;
            }
            Some((_, OpResult::Fail { .. })) => {
                skip(&mut checked, "failed definitely (did not take effect)");
                continue;
            }
        };
        let parts = match split(&mut model, operation, response, universe) {
            Ok(parts) => parts,
            Err(reason) => {
                leave_out(&mut checked, reason);
                continue;
            }
        };
        if parts.is_empty() {
            skip(
                &mut checked,
                "touches only keys left out (attached to a lease, or written by an operation \
                 left out)",
            );
            continue;
        }
        let lane = checked.lane(&format!("{}/{}", record.client, record.process));
        for (input, output) in parts {
            let outcome = match (returned_at, output) {
                (Some(at), Some(output)) => Outcome::Returned { at, output },
                _ => Outcome::Unknown,
            };
            checked.operations.push(Operation {
                id,
                lane,
                input,
                invoked_at: record.invoked_at.as_nanos(),
                outcome,
            });
        }
    }
    (model, checked, unjudged_writes)
}

/// The key spans `operation` may write (both branches of a transaction: which one ran is
/// what a left-out transaction does not tell).
fn write_spans(operation: &KvOperation, spans: &mut Vec<WriteSpan>) {
    match operation {
        KvOperation::Put { key, .. } => spans.push((key.clone(), None)),
        KvOperation::Delete { key, range_end, .. } => spans.push((key.clone(), range_end.clone())),
        KvOperation::Txn {
            success, failure, ..
        } => {
            for operation in success.iter().chain(failure) {
                write_spans(operation, spans);
            }
        }
        _ => {}
    }
}

fn collect_keys(
    operation: &KvOperation,
    keys: &mut BTreeSet<String>,
    leased: &mut BTreeSet<String>,
) {
    match operation {
        KvOperation::Put { key, lease, .. } => {
            keys.insert(key.clone());
            if lease.is_some() {
                leased.insert(key.clone());
            }
        }
        KvOperation::Get {
            key,
            range_end: None,
            ..
        }
        | KvOperation::GetWithOptions {
            key,
            range_end: None,
            ..
        }
        | KvOperation::Delete {
            key,
            range_end: None,
            ..
        } => {
            keys.insert(key.clone());
        }
        KvOperation::Txn {
            compares,
            success,
            failure,
        } => {
            keys.extend(compares.iter().map(|compare| compare.key.clone()));
            for operation in success.iter().chain(failure) {
                collect_keys(operation, keys, leased);
            }
        }
        _ => {}
    }
}

fn collect_read_keys(response: &KvResponse, keys: &mut BTreeSet<String>) {
    match response {
        KvResponse::Get { kvs, .. } | KvResponse::GetWithOptions { kvs, .. } => {
            keys.extend(kvs.iter().map(|kv| kv.key.clone()))
        }
        KvResponse::Txn { responses, .. } => {
            for response in responses {
                collect_read_keys(response, keys);
            }
        }
        _ => {}
    }
}

fn unchecked_reason(operation: &KvOperation) -> Option<&'static str> {
    match operation {
        KvOperation::Get {
            consistency: ReadConsistency::Serializable,
            ..
        }
        | KvOperation::GetWithOptions {
            consistency: ReadConsistency::Serializable,
            ..
        } => Some("serializable read (not linearizable by design)"),
        KvOperation::Get {
            revision: Some(_), ..
        }
        | KvOperation::GetWithOptions {
            revision: Some(_), ..
        } => Some("read at a past revision"),
        KvOperation::LeaseGrant { .. }
        | KvOperation::LeaseRevoke { .. }
        | KvOperation::LeaseKeepAlive { .. }
        | KvOperation::LeaseTimeToLive { .. }
        | KvOperation::LeaseLeases => Some("lease operation"),
        KvOperation::Txn {
            compares,
            success,
            failure,
        } if compares.is_empty() && success.is_empty() && failure.is_empty() => {
            Some("empty transaction (reads and writes nothing)")
        }
        KvOperation::Txn {
            compares,
            success,
            failure,
        } => {
            let nested = !super::nested_txn::checkable_ops(success)
                || !super::nested_txn::checkable_ops(failure);
            let ordered_value = compares.iter().any(|compare| {
                matches!(compare.target, CompareTarget::Value(_))
                    && matches!(
                        compare.operator,
                        CompareOperator::Greater | CompareOperator::Less
                    )
            });
            let lease = compares
                .iter()
                .any(|compare| matches!(compare.target, CompareTarget::Lease(_)));
            if nested {
                Some("transaction with lease, past-revision or ranged-option operations")
            } else if ordered_value {
                Some("transaction ordering values (`>`/`<` on a value)")
            } else if lease {
                Some("transaction comparing a lease")
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The keys of the universe that `key`/`range_end` covers.
pub(super) fn covered<'k>(
    universe: &[&'k String],
    key: &str,
    range_end: Option<&str>,
) -> Vec<&'k String> {
    let span = KeySpan::new(key, range_end);
    universe
        .iter()
        .copied()
        .filter(|candidate| span.contains(candidate))
        .collect()
}

pub(super) fn seen(model: &mut KvModel, kvs: &[KeyValue], key: &str) -> Option<SeenKey> {
    kvs.iter().find(|kv| kv.key == key).map(|kv| SeenKey {
        value: Some(model.values.intern(&kv.value)),
        version: kv.version,
        create_revision: kv.create_revision,
        mod_revision: kv.mod_revision,
    })
}

/// One key's part of an operation: its input, and its output (`None`: outcome unknown).
pub(super) type KeyPart = (KvInput, Option<KvOutput>);

pub(super) const MISMATCH: &str = "a response that does not match the operation";

/// Per-key parts of one operation: inputs with outputs (`None`: outcome unknown).
fn split(
    model: &mut KvModel,
    operation: &KvOperation,
    response: Option<&KvResponse>,
    universe: &[&String],
) -> Result<Vec<KeyPart>, &'static str> {
    match operation {
        KvOperation::Get { key, range_end, .. } => {
            split_get(model, key, range_end.as_deref(), response, universe)
        }
        KvOperation::Put {
            key,
            value,
            prev_kv,
            ..
        } => split_put(model, key, value, *prev_kv, response, universe),
        KvOperation::Delete {
            key,
            range_end,
            prev_kv,
        } => split_delete(
            model,
            key,
            range_end.as_deref(),
            *prev_kv,
            response,
            universe,
        ),
        KvOperation::Txn {
            compares,
            success,
            failure,
        } => split_txn(model, compares, success, failure, response, universe),
        KvOperation::GetWithOptions {
            key,
            range_end,
            options,
            ..
        } => super::range_options::split_get_with_options(
            model,
            key,
            range_end.as_deref(),
            options,
            response,
            universe,
        ),
        _ => Err("lease operation"),
    }
}

/// A plain (non-transaction) call's input on one key: its actions, whatever the compares.
pub(super) fn plain(
    model: &mut KvModel,
    key: &str,
    call: KvCall,
    actions: Vec<KeyAction>,
) -> KvInput {
    KvInput {
        key: model.keys.intern(key),
        call,
        compares: Vec::new(),
        compares_decide: true,
        success: actions.clone(),
        failure: actions,
    }
}

/// A write's actions on one key: with `prev_kv`, a read of the key just before it (what
/// the answer's previous key shows), then the write.
fn write_actions(write: KeyAction, prev_kv: bool) -> Vec<KeyAction> {
    if prev_kv {
        vec![KeyAction::Read, write]
    } else {
        vec![write]
    }
}

/// A get: a read of every checked key it covers, at the response's header revision.
fn split_get(
    model: &mut KvModel,
    key: &str,
    range_end: Option<&str>,
    response: Option<&KvResponse>,
    universe: &[&String],
) -> Result<Vec<KeyPart>, &'static str> {
    let call = if range_end.is_some() {
        KvCall::GetRange
    } else {
        KvCall::Get
    };
    let mut parts = Vec::new();
    for covered_key in covered(universe, key, range_end) {
        let output = match response {
            None => None,
            Some(KvResponse::Get { revision, kvs }) => Some(KvOutput {
                revision: *revision,
                succeeded: true,
                reads: vec![seen(model, kvs, covered_key)],
                deleted: None,
                count: None,
            }),
            Some(_) => return Err(MISMATCH),
        };
        parts.push((
            plain(model, covered_key, call, vec![KeyAction::Read]),
            output,
        ));
    }
    Ok(parts)
}

/// A put: one part, if its key is checked; with `prev_kv`, the previous key it answered is
/// checked as a read just before it.
fn split_put(
    model: &mut KvModel,
    key: &String,
    value: &str,
    prev_kv: bool,
    response: Option<&KvResponse>,
    universe: &[&String],
) -> Result<Vec<KeyPart>, &'static str> {
    if !universe.contains(&key) {
        return Ok(Vec::new());
    }
    let value = model.values.intern(value);
    let output = match response {
        None => None,
        Some(KvResponse::Put {
            revision,
            prev_kv: previous,
        }) => Some(KvOutput {
            revision: *revision,
            succeeded: true,
            reads: if prev_kv {
                vec![seen(model, previous.as_slice(), key)]
            } else {
                Vec::new()
            },
            deleted: None,
            count: None,
        }),
        Some(_) => return Err(MISMATCH),
    };
    let actions = write_actions(KeyAction::Put(value), prev_kv);
    Ok(vec![(plain(model, key, KvCall::Put, actions), output)])
}

/// A delete: a delete of every checked key it covers; the count only for a single key; with
/// `prev_kv`, the deleted keys it answered are checked as a read of each key just before.
fn split_delete(
    model: &mut KvModel,
    key: &str,
    range_end: Option<&str>,
    prev_kv: bool,
    response: Option<&KvResponse>,
    universe: &[&String],
) -> Result<Vec<KeyPart>, &'static str> {
    let call = if range_end.is_some() {
        KvCall::DeleteRange
    } else {
        KvCall::Delete
    };
    let mut parts = Vec::new();
    for covered_key in covered(universe, key, range_end) {
        let output = match response {
            None => None,
            Some(KvResponse::Delete {
                revision,
                deleted,
                prev_kvs,
            }) => Some(KvOutput {
                revision: *revision,
                succeeded: true,
                reads: if prev_kv {
                    vec![seen(model, prev_kvs, covered_key)]
                } else {
                    Vec::new()
                },
                deleted: range_end.is_none().then_some(*deleted),
                count: None,
            }),
            Some(_) => return Err(MISMATCH),
        };
        let actions = write_actions(KeyAction::Delete, prev_kv);
        parts.push((plain(model, covered_key, call, actions), output));
    }
    Ok(parts)
}

/// A transaction: one part per checked key it compares or touches, with that key's
/// compares and the actions of each branch on it.
fn split_txn(
    model: &mut KvModel,
    compares: &[Compare],
    success: &[KvOperation],
    failure: &[KvOperation],
    response: Option<&KvResponse>,
    universe: &[&String],
) -> Result<Vec<KeyPart>, &'static str> {
    let (revision, succeeded, responses) = match response {
        None => (0, None, &[][..]),
        Some(KvResponse::Txn {
            revision,
            succeeded,
            responses,
        }) => (*revision, Some(*succeeded), responses.as_slice()),
        Some(_) => return Err(MISMATCH),
    };
    // Nested transactions: the ops of the branches that ran, as if written in place.
    let flat = super::nested_txn::flatten(success, failure, succeeded, responses)?;
    let (success, failure, responses) = (
        flat.success.as_slice(),
        flat.failure.as_slice(),
        flat.responses.as_slice(),
    );
    // A compare over a range is not split per key (which keys it held on depends on which
    // exist): it only makes every key's compares not decide the branch alone.
    let single_key = |compare: &&Compare| compare.range_end.is_none();
    let compare_keys: BTreeSet<&String> =
        compares.iter().filter(single_key).map(|c| &c.key).collect();
    let ranged = compares.iter().any(|compare| compare.range_end.is_some());
    let keys = txn_keys(&compare_keys, success, failure, universe)?;
    let mut parts = Vec::new();
    for key in keys {
        let on_key: Vec<KeyCompare> = compares
            .iter()
            .filter(single_key)
            .filter(|compare| compare.key == *key)
            .map(|compare| key_compare(model, compare))
            .collect();
        let on_success = branch_actions(model, success, key);
        let on_failure = branch_actions(model, failure, key);
        let output = match succeeded {
            None => None,
            Some(succeeded) => {
                let ran = if succeeded { &on_success } else { &on_failure };
                Some(KvOutput {
                    revision,
                    succeeded,
                    reads: txn_reads(model, ran, responses, key)?,
                    deleted: None,
                    count: None,
                })
            }
        };
        parts.push((
            KvInput {
                key: model.keys.intern(key),
                call: KvCall::Txn,
                compares_decide: !ranged && compare_keys.iter().all(|compared| *compared == key),
                compares: on_key,
                success: on_success.into_iter().map(|(action, _)| action).collect(),
                failure: on_failure.into_iter().map(|(action, _)| action).collect(),
            },
            output,
        ));
    }
    Ok(parts)
}

/// The checked keys a transaction compares or that its branches cover.
fn txn_keys<'k>(
    compare_keys: &BTreeSet<&'k String>,
    success: &[KvOperation],
    failure: &[KvOperation],
    universe: &[&'k String],
) -> Result<BTreeSet<&'k String>, &'static str> {
    let mut keys: BTreeSet<&String> = compare_keys
        .iter()
        .copied()
        .filter(|k| universe.contains(k))
        .collect();
    for operation in success.iter().chain(failure) {
        let (key, range_end) = match operation {
            KvOperation::Get { key, range_end, .. }
            | KvOperation::Delete { key, range_end, .. } => (key, range_end.as_deref()),
            KvOperation::Put { key, .. } => (key, None),
            _ => {
                return Err("transaction with lease, past-revision or ranged-option operations");
            }
        };
        keys.extend(covered(universe, key, range_end));
    }
    Ok(keys)
}

/// What one branch of a transaction does to `key`, with each action's index in the branch.
fn branch_actions(
    model: &mut KvModel,
    branch: &[KvOperation],
    key: &str,
) -> Vec<(KeyAction, usize)> {
    let mut actions = Vec::new();
    for (index, operation) in branch.iter().enumerate() {
        let action = match operation {
            KvOperation::Get {
                key: start,
                range_end,
                ..
            } if KeySpan::new(start, range_end.as_deref()).contains(key) => KeyAction::Read,
            KvOperation::Delete {
                key: start,
                range_end,
                ..
            } if KeySpan::new(start, range_end.as_deref()).contains(key) => KeyAction::Delete,
            KvOperation::Put {
                key: put_key,
                value,
                ..
            } if put_key == key => KeyAction::Put(model.values.intern(value)),
            _ => continue,
        };
        actions.push((action, index));
    }
    actions
}

/// What the reads of the branch that ran saw of `key`.
fn txn_reads(
    model: &mut KvModel,
    ran: &[(KeyAction, usize)],
    responses: &[KvResponse],
    key: &str,
) -> Result<Vec<Option<SeenKey>>, &'static str> {
    let mut reads = Vec::new();
    for (action, index) in ran {
        if *action != KeyAction::Read {
            continue;
        }
        match responses.get(*index) {
            Some(KvResponse::Get { kvs, .. }) => reads.push(seen(model, kvs, key)),
            _ => return Err(MISMATCH),
        }
    }
    Ok(reads)
}

fn key_compare(model: &mut KvModel, compare: &Compare) -> KeyCompare {
    let target = match &compare.target {
        CompareTarget::Value(value) => KeyCompareTarget::Value(model.values.intern(value)),
        CompareTarget::Version(version) => KeyCompareTarget::Version(*version),
        CompareTarget::CreateRevision(revision) => KeyCompareTarget::CreateRevision(*revision),
        CompareTarget::ModRevision(revision) => KeyCompareTarget::ModRevision(*revision),
        CompareTarget::Lease(_) => unreachable!("transactions comparing leases are left out"),
    };
    KeyCompare {
        target,
        operator: compare.operator,
    }
}
