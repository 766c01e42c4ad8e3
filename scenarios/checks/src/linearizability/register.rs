//! A register per key: read, write, compare-and-set. The model of Jepsen's etcd tests
//! (`:read`, `:write`, `:cas` on one key) and of coordsim's register operations.

use super::model::{Model, Operation, OperationHistory, Outcome, partition_by_key};
use sim::history::{
    History, OpError, OpResult, Operation as HistoryOperation, Response,
    register::{RegisterError, RegisterOperation, RegisterResponse},
};
use std::collections::BTreeMap;

/// What a register operation asks, with keys and values interned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterInput {
    /// The register.
    pub key: u32,
    /// The action.
    pub action: RegisterAction,
}

/// Register actions; values are interned ([`RegisterModel::value`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterAction {
    /// Read the value.
    Read,
    /// Overwrite the value.
    Write(u32),
    /// Set to `new` if the value is `expected`.
    CompareAndSet {
        /// Required value.
        expected: u32,
        /// New value.
        new: u32,
    },
}

/// What the client was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterOutput {
    /// The value read (`None`: never written).
    Read(Option<u32>),
    /// The write took effect.
    Written,
    /// The compare-and-set matched and swapped.
    Swapped,
    /// The compare-and-set did not match (a definite failure, and an observation).
    Mismatch,
}

/// The register specification, with the names of interned keys and values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegisterModel {
    keys: Interner,
    values: Interner,
}

/// Strings to small integers and back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Interner {
    names: Vec<String>,
    index: BTreeMap<String, u32>,
}

impl Interner {
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), id);
        id
    }
    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("?", String::as_str)
    }
}

impl RegisterModel {
    /// The id of key `name`, interned.
    pub fn key(&mut self, name: &str) -> u32 {
        self.keys.intern(name)
    }

    /// The id of value `value`, interned.
    pub fn value(&mut self, value: &str) -> u32 {
        self.values.intern(value)
    }

    fn describe_value(&self, value: Option<u32>) -> String {
        match value {
            Some(value) => self.values.name(value).to_string(),
            None => "nil".to_string(),
        }
    }
}

impl Model for RegisterModel {
    /// The value (`None`: never written).
    type State = Option<u32>;
    type Input = RegisterInput;
    type Output = RegisterOutput;

    fn init(&self) -> Self::State {
        None
    }

    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State> {
        match (input.action, output) {
            (RegisterAction::Read, None) => Some(*state),
            (RegisterAction::Read, Some(RegisterOutput::Read(value))) => {
                (value == state).then_some(*state)
            }
            (RegisterAction::Write(value), None | Some(RegisterOutput::Written)) => {
                Some(Some(value))
            }
            (RegisterAction::CompareAndSet { expected, new }, None) => {
                Some(if *state == Some(expected) {
                    Some(new)
                } else {
                    *state
                })
            }
            (RegisterAction::CompareAndSet { expected, new }, Some(RegisterOutput::Swapped)) => {
                (*state == Some(expected)).then_some(Some(new))
            }
            (RegisterAction::CompareAndSet { expected, .. }, Some(RegisterOutput::Mismatch)) => {
                (*state != Some(expected)).then_some(*state)
            }
            // An output that does not fit the input (a reader bug) is never accepted.
            _ => None,
        }
    }

    fn is_read_only(&self, input: &Self::Input) -> bool {
        input.action == RegisterAction::Read
    }

    fn partition(&self, history: &[Operation<Self::Input, Self::Output>]) -> Vec<Vec<usize>> {
        partition_by_key(history, |input| input.key)
    }

    fn describe_partition(
        &self,
        history: &[Operation<Self::Input, Self::Output>],
        partition: &[usize],
    ) -> String {
        match partition.first() {
            Some(&first) => format!("key {}", self.keys.name(history[first].input.key)),
            None => "empty".to_string(),
        }
    }

    fn describe_operation(&self, input: &Self::Input, output: Option<&Self::Output>) -> String {
        let key = self.keys.name(input.key);
        let call = match input.action {
            RegisterAction::Read => format!("read({key})"),
            RegisterAction::Write(value) => format!("write({key}, {})", self.values.name(value)),
            RegisterAction::CompareAndSet { expected, new } => format!(
                "cas({key}, {}, {})",
                self.values.name(expected),
                self.values.name(new)
            ),
        };
        let result = match output {
            None => "unknown".to_string(),
            Some(RegisterOutput::Read(value)) => self.describe_value(*value),
            Some(RegisterOutput::Written) => "ok".to_string(),
            Some(RegisterOutput::Swapped) => "ok".to_string(),
            Some(RegisterOutput::Mismatch) => "fail".to_string(),
        };
        format!("{call} -> {result}")
    }

    fn describe_state(&self, state: &Self::State) -> String {
        self.describe_value(*state)
    }
}

/// The register operations of a coordsim history, ready to check. Operations of other
/// models are left out (and counted).
pub fn from_history(
    history: &History,
) -> (
    RegisterModel,
    OperationHistory<RegisterInput, RegisterOutput>,
) {
    let mut model = RegisterModel::default();
    let mut checked = OperationHistory {
        time_unit: super::TimeUnit::Nanoseconds,
        ..OperationHistory::default()
    };
    for record in history.operations() {
        let HistoryOperation::Register(operation) = record.operation else {
            checked.skipped.push(super::Skipped {
                id: record.op_id.0,
                reason: "not a register operation",
            });
            continue;
        };
        let key = model.key(operation.key());
        let action = match operation {
            RegisterOperation::Read { .. } => RegisterAction::Read,
            RegisterOperation::Write { value, .. } => RegisterAction::Write(model.value(value)),
            RegisterOperation::Cas { expected, new, .. } => RegisterAction::CompareAndSet {
                expected: model.value(expected),
                new: model.value(new),
            },
        };
        let outcome = match record.completion {
            None | Some((_, OpResult::Unknown { .. })) => Outcome::Unknown,
            Some((at, OpResult::Ok { response })) => {
                let output = match response {
                    Response::Register(RegisterResponse::Read { value }) => {
                        RegisterOutput::Read(value.as_deref().map(|value| model.value(value)))
                    }
                    Response::Register(RegisterResponse::Written) => RegisterOutput::Written,
                    Response::Register(RegisterResponse::Swapped) => RegisterOutput::Swapped,
                    _ => {
                        checked.skipped.push(super::Skipped {
                            id: record.op_id.0,
                            reason: "a response that is not a register response",
                        });
                        continue;
                    }
                };
                Outcome::Returned {
                    at: at.as_nanos(),
                    output,
                }
            }
            Some((at, OpResult::Fail { error })) => match error {
                OpError::Register(RegisterError::CasMismatch) => Outcome::Returned {
                    at: at.as_nanos(),
                    output: RegisterOutput::Mismatch,
                },
                _ => {
                    checked.skipped.push(super::Skipped {
                        id: record.op_id.0,
                        reason: "failed definitely (did not take effect)",
                    });
                    continue;
                }
            },
        };
        let lane = checked.lane(&format!("{}/{}", record.client, record.process));
        checked.operations.push(Operation {
            id: record.op_id.0,
            lane,
            input: RegisterInput { key, action },
            invoked_at: record.invoked_at.as_nanos(),
            outcome,
        });
    }
    (model, checked)
}
