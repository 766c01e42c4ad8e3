//! etcd's key-value API as a sequential specification: get / put / delete / transactions
//! with compares, with revisions where the client saw them.
//!
//! # Per-key partitioning, with revisions
//!
//! Every operation is split into one sub-operation per key it touches, and each key is
//! checked on its own. The split keeps what the client saw about that key: values,
//! versions, create and mod revisions, and the response's header revision `R`. Revisions
//! tie the keys back together: the store's revision only grows, so within one key the
//! linearization must see non-decreasing header revisions, strictly increasing ones for
//! changes to the key, and every read at `R` must follow the writes of revision ≤ `R` and
//! precede those above. Each key's state therefore carries a lower bound of the store
//! revision at that point of the linearization.
//!
//! The split is sound (a linearizable history passes) and loses only what crosses keys
//! without a revision to show it:
//! - a range read is checked as per-key reads at the same header revision, for every key the
//!   history writes or reads; a range delete's count is not checked;
//! - a transaction whose compares span several keys and that failed is not checked against
//!   those compares (one of them failed; which is unknown per key); if its outcome is also
//!   unknown, its effect on each key is unknown, and the key's state becomes unknown until
//!   the next read binds it;
//! - a write whose outcome is unknown gets an unknown revision, bound by the first read that
//!   shows it (not checked against the bound at its placement: keeping that bound would make
//!   each placement a different state and the search exponential in unknown writes).
//!
//! Left out (and counted in the report): serializable reads (not linearizable by design),
//! reads at a past revision, lease operations, definite failures, operations on keys ever
//! attached to a lease (lease expiry deletes them without a client operation), and nested
//! transactions.

use super::{
    Skipped,
    model::{Model, Operation, OperationHistory, Outcome, partition_by_key},
    register::Interner,
};
use sim::history::{
    History, OpResult, Operation as HistoryOperation, Response,
    kv::{
        Compare, CompareOperator, CompareTarget, KeyValue, KvOperation, KvResponse, ReadConsistency,
    },
};
use std::collections::BTreeSet;

/// A revision the checker knows, or not yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Revision {
    /// Exactly this.
    Known(u64),
    /// Not known yet (the write's outcome was unknown; the first read that shows it binds it).
    Unknown,
}

impl Revision {
    /// Whether `seen`, observed at header revision `header`, fits; the bound value if so.
    fn bind(self, seen: u64, header: u64) -> Option<Revision> {
        match self {
            Revision::Known(known) => (known == seen).then_some(self),
            Revision::Unknown => (seen <= header).then_some(Revision::Known(seen)),
        }
    }

    fn known(self) -> Option<u64> {
        match self {
            Revision::Known(value) => Some(value),
            Revision::Unknown => None,
        }
    }
}

/// A live key, as far as the checker knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Live {
    /// Interned value.
    pub value: u32,
    /// Version (`None`: unknown, after a put on a key whose presence was unknown).
    pub version: Option<u64>,
    /// Create revision.
    pub create_revision: Revision,
    /// Mod revision.
    pub mod_revision: Revision,
}

/// Whether the key exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Presence {
    /// It does not.
    Absent,
    /// It does.
    Present(Live),
    /// Unknown (after a transaction with an unknown outcome and an unknown branch); the next
    /// read binds it.
    Unknown,
}

/// One key's state, with a lower bound of the store's revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyState {
    /// The key.
    pub presence: Presence,
    /// The store revision is at least this at this point of the linearization.
    pub revision_floor: u64,
}

/// A compare on the sub-operation's key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyCompare {
    /// What and against what (values interned; a value compare against a value the history
    /// never wrote uses an id no key holds).
    pub target: KeyCompareTarget,
    /// How.
    pub operator: CompareOperator,
}

/// A compare's target on one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyCompareTarget {
    /// The value (interned).
    Value(u32),
    /// The version (0: absent).
    Version(u64),
    /// The create revision (0: absent).
    CreateRevision(u64),
    /// The mod revision (0: absent).
    ModRevision(u64),
}

/// What an operation does to one key, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyAction {
    /// Read it.
    Read,
    /// Put this (interned) value.
    Put(u32),
    /// Delete it.
    Delete,
}

/// Which client call a sub-operation comes from (for reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvCall {
    /// A get of one key.
    Get,
    /// A get of a range.
    GetRange,
    /// A put.
    Put,
    /// A delete of one key.
    Delete,
    /// A delete of a range.
    DeleteRange,
    /// A transaction.
    Txn,
}

/// One operation's part on one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvInput {
    /// The key (interned).
    pub key: u32,
    /// The client call.
    pub call: KvCall,
    /// The transaction's compares on this key (none for plain calls).
    pub compares: Vec<KeyCompare>,
    /// Whether `compares` are all of the transaction's compares (so they decide the branch).
    pub compares_decide: bool,
    /// Actions on this key when the compares hold (plain calls: their action).
    pub success: Vec<KeyAction>,
    /// Actions on this key otherwise.
    pub failure: Vec<KeyAction>,
}

/// A key as a read returned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeenKey {
    /// Interned value.
    pub value: u32,
    /// Version.
    pub version: u64,
    /// Create revision.
    pub create_revision: u64,
    /// Mod revision.
    pub mod_revision: u64,
}

/// What the client was told, about this key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvOutput {
    /// The response's header revision.
    pub revision: u64,
    /// Whether the compares held (true for plain calls).
    pub succeeded: bool,
    /// For each `Read` action of the branch that ran, in order: the key, or `None` if absent.
    pub reads: Vec<Option<SeenKey>>,
    /// For a delete of this one key: how many keys it deleted.
    pub deleted: Option<u64>,
}

/// The key-value specification, with the names of interned keys and values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KvModel {
    keys: Interner,
    values: Interner,
}

fn compare_u64(actual: u64, operator: CompareOperator, operand: u64) -> bool {
    match operator {
        CompareOperator::Equal => actual == operand,
        CompareOperator::NotEqual => actual != operand,
        CompareOperator::Greater => actual > operand,
        CompareOperator::Less => actual < operand,
    }
}

/// Whether the compares hold in `presence`; `None` if that is unknown.
fn evaluate(presence: &Presence, compares: &[KeyCompare]) -> Option<bool> {
    let mut all = true;
    for compare in compares {
        let holds = match (presence, compare.target) {
            (Presence::Unknown, _) => return None,
            // etcd: a value compare on a missing key is false whatever the operator.
            (Presence::Absent, KeyCompareTarget::Value(_)) => false,
            (Presence::Absent, KeyCompareTarget::Version(operand))
            | (Presence::Absent, KeyCompareTarget::CreateRevision(operand))
            | (Presence::Absent, KeyCompareTarget::ModRevision(operand)) => {
                compare_u64(0, compare.operator, operand)
            }
            (Presence::Present(live), KeyCompareTarget::Value(operand)) => match compare.operator {
                CompareOperator::Equal => live.value == operand,
                CompareOperator::NotEqual => live.value != operand,
                // Interned ids do not order like the strings: the reader refuses these.
                CompareOperator::Greater | CompareOperator::Less => return None,
            },
            (Presence::Present(live), KeyCompareTarget::Version(operand)) => {
                compare_u64(live.version?, compare.operator, operand)
            }
            (Presence::Present(live), KeyCompareTarget::CreateRevision(operand)) => {
                compare_u64(live.create_revision.known()?, compare.operator, operand)
            }
            (Presence::Present(live), KeyCompareTarget::ModRevision(operand)) => {
                compare_u64(live.mod_revision.known()?, compare.operator, operand)
            }
        };
        all &= holds;
    }
    Some(all)
}

/// Checks a read of `presence` that returned `seen` at header revision `header`; returns
/// the presence with what the read revealed bound.
fn read(presence: Presence, seen: Option<SeenKey>, header: u64) -> Option<Presence> {
    match (presence, seen) {
        (Presence::Absent, None) => Some(Presence::Absent),
        (Presence::Absent, Some(_)) | (Presence::Present(_), None) => None,
        (Presence::Unknown, None) => Some(Presence::Absent),
        (Presence::Unknown, Some(seen)) => (seen.mod_revision <= header
            && seen.create_revision <= seen.mod_revision)
            .then_some(Presence::Present(Live {
                value: seen.value,
                version: Some(seen.version),
                create_revision: Revision::Known(seen.create_revision),
                mod_revision: Revision::Known(seen.mod_revision),
            })),
        (Presence::Present(live), Some(seen)) => {
            if live.value != seen.value || live.version.is_some_and(|v| v != seen.version) {
                return None;
            }
            Some(Presence::Present(Live {
                value: live.value,
                version: Some(seen.version),
                create_revision: live.create_revision.bind(seen.create_revision, header)?,
                mod_revision: live.mod_revision.bind(seen.mod_revision, header)?,
            }))
        }
    }
}

impl Model for KvModel {
    type State = KeyState;
    type Input = KvInput;
    type Output = KvOutput;

    fn init(&self) -> KeyState {
        KeyState {
            presence: Presence::Absent,
            revision_floor: 0,
        }
    }

    fn step(
        &self,
        state: &KeyState,
        input: &KvInput,
        output: Option<&KvOutput>,
    ) -> Option<KeyState> {
        let holds = evaluate(&state.presence, &input.compares);
        let branch = match (output, input.compares_decide) {
            (Some(output), true) => {
                if holds.is_some_and(|holds| holds != output.succeeded) {
                    return None;
                }
                Some(output.succeeded)
            }
            (Some(output), false) => {
                // It succeeded only if every compare held, this key's among them.
                if output.succeeded && holds == Some(false) {
                    return None;
                }
                Some(output.succeeded)
            }
            (None, true) => holds,
            (None, false) => None,
        };
        let actions = match branch {
            Some(true) => &input.success,
            Some(false) => &input.failure,
            None if input.success == input.failure => &input.success,
            None => {
                // Unknown branch and unknown outcome: the key may have changed or not.
                let writes = |actions: &[KeyAction]| actions.iter().any(|a| *a != KeyAction::Read);
                let presence = if writes(&input.success) || writes(&input.failure) {
                    Presence::Unknown
                } else {
                    state.presence
                };
                return Some(KeyState {
                    presence,
                    revision_floor: state.revision_floor,
                });
            }
        };
        let changes_key = actions.iter().any(|action| match action {
            KeyAction::Put(_) => true,
            KeyAction::Delete => matches!(state.presence, Presence::Present(_)),
            KeyAction::Read => false,
        });
        // The revision this operation's changes carry, and the new floor.
        let (this_revision, floor) = match output {
            Some(output) => {
                let allowed = if changes_key {
                    output.revision > state.revision_floor
                } else {
                    output.revision >= state.revision_floor
                };
                if !allowed {
                    return None;
                }
                (Revision::Known(output.revision), output.revision)
            }
            // An unknown outcome: the revision is above the floor, but recording that bound
            // (and raising the floor) would make every placement of the operation a different
            // state and defeat the memo. Only "some revision" is kept — weaker, still sound —
            // and the first read that shows the write binds it.
            None => (Revision::Unknown, state.revision_floor),
        };
        if let Some(deleted) = output.and_then(|output| output.deleted) {
            let existed = match state.presence {
                Presence::Present(_) => 1,
                Presence::Absent => 0,
                Presence::Unknown => deleted,
            };
            if deleted != existed {
                return None;
            }
        }
        let mut presence = state.presence;
        let mut reads = output.map(|output| output.reads.iter());
        for action in actions {
            match action {
                KeyAction::Put(value) => {
                    presence = Presence::Present(match presence {
                        Presence::Present(live) => Live {
                            value: *value,
                            version: live.version.map(|version| version + 1),
                            create_revision: live.create_revision,
                            mod_revision: this_revision,
                        },
                        Presence::Absent => Live {
                            value: *value,
                            version: Some(1),
                            create_revision: this_revision,
                            mod_revision: this_revision,
                        },
                        Presence::Unknown => Live {
                            value: *value,
                            version: None,
                            create_revision: Revision::Unknown,
                            mod_revision: this_revision,
                        },
                    });
                }
                KeyAction::Delete => presence = Presence::Absent,
                KeyAction::Read => {
                    if let (Some(reads), Some(output)) = (reads.as_mut(), output) {
                        let seen = *reads.next()?;
                        presence = read(presence, seen, output.revision)?;
                    }
                }
            }
        }
        if reads.is_some_and(|mut rest| rest.next().is_some()) {
            return None;
        }
        Some(KeyState {
            presence,
            revision_floor: floor,
        })
    }

    fn is_read_only(&self, input: &KvInput) -> bool {
        input
            .success
            .iter()
            .chain(&input.failure)
            .all(|action| *action == KeyAction::Read)
    }

    fn partition(&self, history: &[Operation<KvInput, KvOutput>]) -> Vec<Vec<usize>> {
        partition_by_key(history, |input| input.key)
    }

    fn describe_partition(
        &self,
        history: &[Operation<KvInput, KvOutput>],
        partition: &[usize],
    ) -> String {
        match partition.first() {
            Some(&first) => format!("key {}", self.keys.name(history[first].input.key)),
            None => "empty".into(),
        }
    }

    fn describe_operation(&self, input: &KvInput, output: Option<&KvOutput>) -> String {
        let key = self.keys.name(input.key);
        let actions = |actions: &[KeyAction]| {
            actions
                .iter()
                .map(|action| match action {
                    KeyAction::Read => format!("get({key})"),
                    KeyAction::Put(value) => format!("put({key}, {})", self.values.name(*value)),
                    KeyAction::Delete => format!("delete({key})"),
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let call = match input.call {
            KvCall::Txn => {
                let compares: Vec<String> = input
                    .compares
                    .iter()
                    .map(|compare| {
                        let operator = match compare.operator {
                            CompareOperator::Equal => "==",
                            CompareOperator::NotEqual => "!=",
                            CompareOperator::Greater => ">",
                            CompareOperator::Less => "<",
                        };
                        match compare.target {
                            KeyCompareTarget::Value(v) => {
                                format!("value({key}) {operator} {}", self.values.name(v))
                            }
                            KeyCompareTarget::Version(v) => {
                                format!("version({key}) {operator} {v}")
                            }
                            KeyCompareTarget::CreateRevision(v) => {
                                format!("create_revision({key}) {operator} {v}")
                            }
                            KeyCompareTarget::ModRevision(v) => {
                                format!("mod_revision({key}) {operator} {v}")
                            }
                        }
                    })
                    .collect();
                let more = if input.compares_decide {
                    ""
                } else {
                    " and compares on other keys"
                };
                format!(
                    "txn(if {}{more} then [{}] else [{}])",
                    if compares.is_empty() {
                        "true".into()
                    } else {
                        compares.join(" && ")
                    },
                    actions(&input.success),
                    actions(&input.failure)
                )
            }
            KvCall::GetRange => format!("get-range(… {key} …)"),
            KvCall::DeleteRange => format!("delete-range(… {key} …)"),
            _ => actions(&input.success),
        };
        let Some(output) = output else {
            return format!("{call} -> unknown");
        };
        let reads: Vec<String> = output
            .reads
            .iter()
            .map(|seen| match seen {
                None => "absent".into(),
                Some(seen) => format!(
                    "{} (version {}, create {}, mod {})",
                    self.values.name(seen.value),
                    seen.version,
                    seen.create_revision,
                    seen.mod_revision
                ),
            })
            .collect();
        let mut result = format!("revision {}", output.revision);
        if input.call == KvCall::Txn {
            result.push_str(if output.succeeded {
                ", succeeded"
            } else {
                ", failed"
            });
        }
        if let Some(deleted) = output.deleted {
            result.push_str(&format!(", deleted {deleted}"));
        }
        if !reads.is_empty() {
            result.push_str(&format!(", read {}", reads.join(", ")));
        }
        format!("{call} -> {result}")
    }

    fn describe_state(&self, state: &KeyState) -> String {
        let revision = |revision: Revision| match revision {
            Revision::Known(value) => value.to_string(),
            Revision::Unknown => "?".to_string(),
        };
        let key = match state.presence {
            Presence::Absent => "absent".to_string(),
            Presence::Unknown => "unknown".to_string(),
            Presence::Present(live) => format!(
                "{} (version {}, create {}, mod {})",
                self.values.name(live.value),
                live.version.map_or("?".into(), |v| v.to_string()),
                revision(live.create_revision),
                revision(live.mod_revision)
            ),
        };
        format!("{key}; store revision ≥ {}", state.revision_floor)
    }
}

/// The key-value operations of a coordsim history, split per key, ready to check.
pub fn from_history(history: &History) -> (KvModel, OperationHistory<KvInput, KvOutput>) {
    let records = history.operations();
    // The keys the history writes or reads, and those ever attached to a lease. (The store
    // starts empty and every write is a recorded operation, so a key that a read shows but
    // nobody wrote is a violation, not a key to ignore.)
    let mut written = BTreeSet::new();
    let mut leased = BTreeSet::new();
    for record in &records {
        if let HistoryOperation::Kv(operation) = record.operation {
            collect_keys(operation, &mut written, &mut leased);
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
    let mut model = KvModel::default();
    let mut checked = OperationHistory {
        time_unit: super::TimeUnit::Nanoseconds,
        ..OperationHistory::default()
    };
    let universe: Vec<&String> = written
        .iter()
        .filter(|key| !leased.contains(*key))
        .collect();
    for record in records {
        let id = record.op_id.0;
        let skip = |checked: &mut OperationHistory<KvInput, KvOutput>, reason| {
            checked.skipped.push(Skipped { id, reason });
        };
        let HistoryOperation::Kv(operation) = record.operation else {
            skip(&mut checked, "not a key-value operation");
            continue;
        };
        if let Some(reason) = unchecked_reason(operation) {
            skip(&mut checked, reason);
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
                skip(&mut checked, "a response that is not a key-value response");
                continue;
            }
            Some((_, OpResult::Fail { .. })) => {
                skip(&mut checked, "failed definitely (did not take effect)");
                continue;
            }
        };
        let parts = match split(&mut model, operation, response, &universe) {
            Ok(parts) => parts,
            Err(reason) => {
                skip(&mut checked, reason);
                continue;
            }
        };
        if parts.is_empty() {
            skip(&mut checked, "touches only keys attached to a lease");
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
    (model, checked)
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
        | KvOperation::Delete {
            key,
            range_end: None,
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
        KvResponse::Get { kvs, .. } => keys.extend(kvs.iter().map(|kv| kv.key.clone())),
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
        } => Some("serializable read (not linearizable by design)"),
        KvOperation::Get {
            revision: Some(_), ..
        } => Some("read at a past revision"),
        KvOperation::LeaseGrant { .. }
        | KvOperation::LeaseRevoke { .. }
        | KvOperation::LeaseKeepAlive { .. }
        | KvOperation::LeaseTimeToLive { .. } => Some("lease operation"),
        KvOperation::Txn {
            compares,
            success,
            failure,
        } => {
            let nested = success.iter().chain(failure).any(|op| {
                !matches!(
                    op,
                    KvOperation::Get {
                        revision: None,
                        consistency: ReadConsistency::Linearizable,
                        ..
                    } | KvOperation::Put { .. }
                        | KvOperation::Delete { .. }
                )
            });
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
                Some("transaction with nested transactions, lease or past-revision operations")
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
fn covered<'k>(universe: &[&'k String], key: &str, range_end: Option<&str>) -> Vec<&'k String> {
    let span = crate::history::kv::KeySpan::new(key, range_end);
    universe
        .iter()
        .copied()
        .filter(|candidate| span.contains(candidate))
        .collect()
}

fn seen(model: &mut KvModel, kvs: &[KeyValue], key: &str) -> Option<SeenKey> {
    kvs.iter().find(|kv| kv.key == key).map(|kv| SeenKey {
        value: model.values.intern(&kv.value),
        version: kv.version,
        create_revision: kv.create_revision,
        mod_revision: kv.mod_revision,
    })
}

/// Per-key parts of one operation: inputs with outputs (`None`: outcome unknown).
fn split(
    model: &mut KvModel,
    operation: &KvOperation,
    response: Option<&KvResponse>,
    universe: &[&String],
) -> Result<Vec<(KvInput, Option<KvOutput>)>, &'static str> {
    let mismatch = "a response that does not match the operation";
    let plain = |model: &mut KvModel, key: &String, call, action| KvInput {
        key: model.keys.intern(key),
        call,
        compares: Vec::new(),
        compares_decide: true,
        success: vec![action],
        failure: vec![action],
    };
    let mut parts = Vec::new();
    match operation {
        KvOperation::Get { key, range_end, .. } => {
            let call = if range_end.is_some() {
                KvCall::GetRange
            } else {
                KvCall::Get
            };
            for covered_key in covered(universe, key, range_end.as_deref()) {
                let output = match response {
                    None => None,
                    Some(KvResponse::Get { revision, kvs }) => Some(KvOutput {
                        revision: *revision,
                        succeeded: true,
                        reads: vec![seen(model, kvs, covered_key)],
                        deleted: None,
                    }),
                    Some(_) => return Err(mismatch),
                };
                parts.push((plain(model, covered_key, call, KeyAction::Read), output));
            }
        }
        KvOperation::Put { key, value, .. } => {
            if !universe.contains(&key) {
                return Ok(parts);
            }
            let value = model.values.intern(value);
            let output = match response {
                None => None,
                Some(KvResponse::Put { revision }) => Some(KvOutput {
                    revision: *revision,
                    succeeded: true,
                    reads: Vec::new(),
                    deleted: None,
                }),
                Some(_) => return Err(mismatch),
            };
            parts.push((
                plain(model, key, KvCall::Put, KeyAction::Put(value)),
                output,
            ));
        }
        KvOperation::Delete { key, range_end } => {
            let call = if range_end.is_some() {
                KvCall::DeleteRange
            } else {
                KvCall::Delete
            };
            for covered_key in covered(universe, key, range_end.as_deref()) {
                let output = match response {
                    None => None,
                    Some(KvResponse::Delete { revision, deleted }) => Some(KvOutput {
                        revision: *revision,
                        succeeded: true,
                        reads: Vec::new(),
                        deleted: range_end.is_none().then_some(*deleted),
                    }),
                    Some(_) => return Err(mismatch),
                };
                parts.push((plain(model, covered_key, call, KeyAction::Delete), output));
            }
        }
        KvOperation::Txn {
            compares,
            success,
            failure,
        } => {
            let (revision, succeeded, responses) = match response {
                None => (0, None, &[][..]),
                Some(KvResponse::Txn {
                    revision,
                    succeeded,
                    responses,
                }) => (*revision, Some(*succeeded), responses.as_slice()),
                Some(_) => return Err(mismatch),
            };
            let compare_keys: BTreeSet<&String> = compares.iter().map(|c| &c.key).collect();
            let mut keys: BTreeSet<&String> = compare_keys
                .iter()
                .copied()
                .filter(|k| universe.contains(k))
                .collect();
            for operation in success.iter().chain(failure) {
                let (key, range_end) = match operation {
                    KvOperation::Get { key, range_end, .. }
                    | KvOperation::Delete { key, range_end } => (key, range_end.as_deref()),
                    KvOperation::Put { key, .. } => (key, None),
                    _ => {
                        return Err(
                            "transaction with nested transactions, lease or past-revision operations",
                        );
                    }
                };
                keys.extend(covered(universe, key, range_end));
            }
            for key in keys {
                let on_key: Vec<KeyCompare> = compares
                    .iter()
                    .filter(|compare| compare.key == *key)
                    .map(|compare| key_compare(model, compare))
                    .collect();
                let actions = |model: &mut KvModel,
                               branch: &[KvOperation]|
                 -> Vec<(KeyAction, usize)> {
                    let mut actions = Vec::new();
                    for (index, operation) in branch.iter().enumerate() {
                        let action = match operation {
                            KvOperation::Get {
                                key: start,
                                range_end,
                                ..
                            } if crate::history::kv::KeySpan::new(start, range_end.as_deref())
                                .contains(key) =>
                            {
                                KeyAction::Read
                            }
                            KvOperation::Delete {
                                key: start,
                                range_end,
                            } if crate::history::kv::KeySpan::new(start, range_end.as_deref())
                                .contains(key) =>
                            {
                                KeyAction::Delete
                            }
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
                };
                let on_success = actions(model, success);
                let on_failure = actions(model, failure);
                let output = match succeeded {
                    None => None,
                    Some(succeeded) => {
                        let ran = if succeeded { &on_success } else { &on_failure };
                        let mut reads = Vec::new();
                        for (action, index) in ran {
                            if *action != KeyAction::Read {
                                continue;
                            }
                            match responses.get(*index) {
                                Some(KvResponse::Get { kvs, .. }) => {
                                    reads.push(seen(model, kvs, key))
                                }
                                _ => return Err(mismatch),
                            }
                        }
                        Some(KvOutput {
                            revision,
                            succeeded,
                            reads,
                            deleted: None,
                        })
                    }
                };
                parts.push((
                    KvInput {
                        key: model.keys.intern(key),
                        call: KvCall::Txn,
                        compares_decide: compare_keys.iter().all(|compared| *compared == key),
                        compares: on_key,
                        success: on_success.into_iter().map(|(action, _)| action).collect(),
                        failure: on_failure.into_iter().map(|(action, _)| action).collect(),
                    },
                    output,
                ));
            }
        }
        _ => return Err("lease operation"),
    }
    Ok(parts)
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
