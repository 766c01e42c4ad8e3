//! Nested transactions (etcd 3.3+ `RequestOp_RequestTxn`), flattened: they run inside their
//! outer transaction, at its revision, so the ops of the branches that ran are checked as if
//! the outer branch held them in place.

use super::from_history::MISMATCH;
use sim::history::kv::{KvOperation, KvResponse, ReadConsistency};

/// A transaction's branches with nested transactions replaced by their ops.
pub(super) struct Flat {
    /// The success branch.
    pub success: Vec<KvOperation>,
    /// The failure branch.
    pub failure: Vec<KvOperation>,
    /// The responses of the branch that ran, one per op of its flat branch.
    pub responses: Vec<KvResponse>,
}

/// Flattens both branches: the one that ran (`succeeded`, with its `responses`) along the
/// branches its nested responses name; the other with both branches of each nested
/// transaction (only the keys it may touch matter there). A nested transaction with an
/// unknown outcome cannot be flattened.
pub(super) fn flatten(
    success: &[KvOperation],
    failure: &[KvOperation],
    succeeded: Option<bool>,
    responses: &[KvResponse],
) -> Result<Flat, &'static str> {
    let nested = |branch: &[KvOperation]| {
        branch
            .iter()
            .any(|op| matches!(op, KvOperation::Txn { .. }))
    };
    let Some(succeeded) = succeeded else {
        if nested(success) || nested(failure) {
            return Err("nested transaction with an unknown outcome");
        }
        return Ok(Flat {
            success: success.to_vec(),
            failure: failure.to_vec(),
            responses: Vec::new(),
        });
    };
    let (ran, other) = if succeeded {
        (success, failure)
    } else {
        (failure, success)
    };
    let mut flat_ran = Vec::new();
    let mut flat_responses = Vec::new();
    flatten_ran(ran, responses, &mut flat_ran, &mut flat_responses)?;
    let mut flat_other = Vec::new();
    flatten_all(other, &mut flat_other);
    let (success, failure) = if succeeded {
        (flat_ran, flat_other)
    } else {
        (flat_other, flat_ran)
    };
    Ok(Flat {
        success,
        failure,
        responses: flat_responses,
    })
}

fn flatten_ran(
    branch: &[KvOperation],
    responses: &[KvResponse],
    ops: &mut Vec<KvOperation>,
    flat_responses: &mut Vec<KvResponse>,
) -> Result<(), &'static str> {
    if branch.len() != responses.len() {
        return Err(MISMATCH);
    }
    for (operation, response) in branch.iter().zip(responses) {
        match (operation, response) {
            (
                KvOperation::Txn {
                    success, failure, ..
                },
                KvResponse::Txn {
                    succeeded,
                    responses,
                    ..
                },
            ) => {
                let ran = if *succeeded { success } else { failure };
                flatten_ran(ran, responses, ops, flat_responses)?;
            }
            (KvOperation::Txn { .. }, _) => return Err(MISMATCH),
            _ => {
                ops.push(operation.clone());
                flat_responses.push(response.clone());
            }
        }
    }
    Ok(())
}

fn flatten_all(branch: &[KvOperation], ops: &mut Vec<KvOperation>) {
    for operation in branch {
        match operation {
            KvOperation::Txn {
                success, failure, ..
            } => {
                flatten_all(success, ops);
                flatten_all(failure, ops);
            }
            other => ops.push(other.clone()),
        }
    }
}

/// Whether every op of `branch` can be checked: latest linearizable gets, puts, deletes
/// and nested transactions of such ops.
pub(super) fn checkable_ops(branch: &[KvOperation]) -> bool {
    branch.iter().all(|op| match op {
        KvOperation::Get {
            revision: None,
            consistency: ReadConsistency::Linearizable,
            ..
        }
        | KvOperation::Put { .. }
        | KvOperation::Delete { .. } => true,
        KvOperation::Txn {
            success, failure, ..
        } => checkable_ops(success) && checkable_ops(failure),
        _ => false,
    })
}
