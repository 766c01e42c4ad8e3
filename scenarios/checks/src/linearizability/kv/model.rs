//! The key-value specification: one key's state and how each call changes it.

use crate::linearizability::{
    model::{Model, Operation, partition_by_key},
    register::Interner,
};
use sim::history::kv::CompareOperator;

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
    /// A get with etcd's range options (limit, sort, keys-only, count-only, filters).
    GetWithOptions,
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
    /// Interned value; `None` for a keys-only read, which does not show it.
    pub value: Option<u32>,
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
    /// For a get of this one key with range options: the count it answered (how many keys
    /// the range holds, 0 or 1), also when it answered only the count.
    pub count: Option<u64>,
}

/// The key-value specification, with the names of interned keys and values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KvModel {
    pub(super) keys: Interner,
    pub(super) values: Interner,
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
        (Presence::Unknown, Some(seen)) => {
            if seen.mod_revision > header || seen.create_revision > seen.mod_revision {
                return None;
            }
            // A keys-only read shows the key exists but not its value, which the state
            // needs: it stays unknown.
            let Some(value) = seen.value else {
                return Some(Presence::Unknown);
            };
            Some(Presence::Present(Live {
                value,
                version: Some(seen.version),
                create_revision: Revision::Known(seen.create_revision),
                mod_revision: Revision::Known(seen.mod_revision),
            }))
        }
        (Presence::Present(live), Some(seen)) => {
            if seen.value.is_some_and(|value| value != live.value)
                || live.version.is_some_and(|v| v != seen.version)
            {
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
        // A count of this one key is a read of whether it exists.
        if let Some(count) = output.and_then(|output| output.count) {
            match (presence, count) {
                (Presence::Present(_), 1) | (Presence::Absent, 0) | (Presence::Unknown, 1) => {}
                (Presence::Unknown, 0) => presence = Presence::Absent,
                _ => return None,
            }
        }
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
            KvCall::GetWithOptions => format!("get-with-options(… {key} …)"),
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
                    seen.value
                        .map_or("(keys only)", |value| self.values.name(value)),
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
        if let Some(count) = output.count {
            result.push_str(&format!(", count {count}"));
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
