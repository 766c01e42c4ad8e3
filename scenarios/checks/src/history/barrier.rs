//! The double barrier as its participants saw it: each participant's steps, and, for each
//! attempt at a gate, what the participant had seen of the barrier when it went through.
//!
//! Reads the barrier recipe's `RecipeEvent::Barrier` records (written at the client node:
//! `Entering`/`Leaving` before the recipe does anything, `Entered`/`Left` once it believes
//! it is through) and the participant's own ZooKeeper operations on the barrier's node
//! (`Invoke`/`Complete`, recorded by the client library): the children it listed
//! (`getChildren` of the barrier), whether it saw `<barrier>/ready` (an `exists` that found
//! it, or its own create of it answered `Ok` or `NodeExists`), the creates of `ready`, and
//! the names and sessions of its own nodes under the barrier. The layout — one child per
//! participant and a `ready` child that frees the entry — is the ZooKeeper recipe's
//! ("Double Barriers") and Curator's `DistributedDoubleBarrier`'s.

use super::locks::Holder;
use sim::{
    history::{
        Event, History, OpId, OpResult, Operation, RecipeEvent, Response,
        recipe::BarrierStep,
        zk::{ZkError, ZkEvent, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::collections::{BTreeMap, BTreeSet};

/// The child of a barrier whose creation frees the entry.
pub const READY: &str = "ready";

/// Which gate of the double barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Gate {
    /// The entry: through it is `Entered`, begun is `Entering`.
    Entry,
    /// The exit: through it is `Left`, begun is `Leaving`.
    Exit,
}

/// One attempt of one participant at one gate: from its `Entering` (or `Leaving`) to its
/// `Entered` (or `Left`), if it got through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateAttempt {
    /// The barrier.
    pub barrier: String,
    /// The participant.
    pub participant: Holder,
    /// The gate.
    pub gate: Gate,
    /// When the attempt began.
    pub began_at: SimTime,
    /// When it was through, if it got through.
    pub through_at: Option<SimTime>,
    /// Whether the participant saw `ready` during the attempt.
    pub saw_ready: bool,
    /// The most participants (children but `ready`) one of its listings showed.
    pub most_listed: Option<usize>,
    /// In its last listing: the participants other than itself.
    pub others_in_last_listing: Option<usize>,
}

/// A create of `<barrier>/ready`, with what its creator had listed before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadyCreate {
    /// The barrier.
    pub barrier: String,
    /// Who created it.
    pub creator: Holder,
    /// When the create was sent.
    pub at: SimTime,
    /// The most participants a listing of the creator's attempt showed.
    pub most_listed: Option<usize>,
}

/// Everything [`read`] finds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BarrierRecords {
    /// Per barrier and participant, its steps in order.
    pub steps: BTreeMap<String, BTreeMap<Holder, Vec<(BarrierStep, SimTime)>>>,
    /// Every gate attempt, in the order they began.
    pub attempts: Vec<GateAttempt>,
    /// Every create of a `ready` node.
    pub ready_creates: Vec<ReadyCreate>,
    /// Per barrier and participant, the sessions in which it created its own node.
    pub node_sessions: BTreeMap<(String, Holder), BTreeSet<u64>>,
}

impl BarrierRecords {
    /// The participants of `barrier`: every process that began to enter it.
    pub fn participants(&self, barrier: &str) -> usize {
        self.steps.get(barrier).map_or(0, BTreeMap::len)
    }
}

/// A barrier operation sent and not yet answered.
struct Sent {
    who: Holder,
    operation: ZkOperation,
}

/// Reads every barrier's records from `history`.
pub fn read(history: &History) -> BarrierRecords {
    let mut reading = BarrierReading::default();
    for record in history.records() {
        match &record.event {
            Event::Recipe(RecipeEvent::Barrier {
                process,
                barrier,
                step,
            }) => {
                if let Some(node) = record.node {
                    reading.step((node, *process), barrier, *step, record.at);
                }
            }
            Event::Zk(ZkEvent::SessionEstablished {
                process, session, ..
            }) => {
                if let Some(node) = record.node {
                    reading.sessions.insert((node, *process), *session);
                }
            }
            Event::Invoke {
                client,
                process,
                op_id,
                operation: Operation::Zk(operation),
            } => reading.invoked((*client, *process), *op_id, operation, record.at),
            Event::Complete { op_id, result } => reading.completed(*op_id, result),
            _ => {}
        }
    }
    reading.records
}

/// The barriers' records as the history goes by, with what ties operations to attempts.
#[derive(Default)]
struct BarrierReading {
    records: BarrierRecords,
    /// The attempt each process is in (an index into `records.attempts`).
    current: BTreeMap<Holder, usize>,
    /// The names each process created under each barrier.
    own_names: BTreeMap<(String, Holder), BTreeSet<String>>,
    /// Each process's latest session.
    sessions: BTreeMap<Holder, u64>,
    sent: BTreeMap<OpId, Sent>,
}

impl BarrierReading {
    /// `who` recorded `step` of `barrier`: an attempt at a gate begins or goes through.
    fn step(&mut self, who: Holder, barrier: &str, step: BarrierStep, at: SimTime) {
        self.records
            .steps
            .entry(barrier.to_string())
            .or_default()
            .entry(who)
            .or_default()
            .push((step, at));
        match step {
            BarrierStep::Entering | BarrierStep::Leaving => {
                let gate = if step == BarrierStep::Entering {
                    Gate::Entry
                } else {
                    Gate::Exit
                };
                self.current.insert(who, self.records.attempts.len());
                self.records.attempts.push(GateAttempt {
                    barrier: barrier.to_string(),
                    participant: who,
                    gate,
                    began_at: at,
                    through_at: None,
                    saw_ready: false,
                    most_listed: None,
                    others_in_last_listing: None,
                });
            }
            BarrierStep::Entered | BarrierStep::Left => {
                if let Some(index) = self.current.remove(&who) {
                    self.records.attempts[index].through_at = Some(at);
                }
            }
        }
    }

    /// `who` invoked `operation`: a create under the barrier it is in names its node (or
    /// the ready node); the operation is kept for its completion.
    fn invoked(&mut self, who: Holder, op_id: OpId, operation: &ZkOperation, at: SimTime) {
        let Some(&index) = self.current.get(&who) else {
            return;
        };
        let barrier = self.records.attempts[index].barrier.clone();
        if let ZkOperation::Create { path, .. } = operation
            && let Some(name) = child_of(&barrier, path)
        {
            if name == READY {
                self.records.ready_creates.push(ReadyCreate {
                    barrier: barrier.clone(),
                    creator: who,
                    at,
                    most_listed: self.records.attempts[index].most_listed,
                });
            } else {
                self.own_names
                    .entry((barrier.clone(), who))
                    .or_default()
                    .insert(name.to_string());
                if let Some(&session) = self.sessions.get(&who) {
                    self.records
                        .node_sessions
                        .entry((barrier.clone(), who))
                        .or_default()
                        .insert(session);
                }
            }
        }
        self.sent.insert(
            op_id,
            Sent {
                who,
                operation: operation.clone(),
            },
        );
    }

    /// An operation completed: a listing of the barrier counts who is in it; the ready
    /// node seen (or found existing by a create) is noted.
    fn completed(&mut self, op_id: OpId, result: &OpResult) {
        let Some(Sent { who, operation }) = self.sent.remove(&op_id) else {
            return;
        };
        let Some(&index) = self.current.get(&who) else {
            return;
        };
        let attempt = &mut self.records.attempts[index];
        let ready = format!("{}/{READY}", attempt.barrier);
        match (&operation, result) {
            (
                ZkOperation::GetChildren { path },
                OpResult::Ok {
                    response: Response::Zk(ZkResponse::Children { children, .. }),
                },
            ) if *path == attempt.barrier => {
                let mine = self.own_names.get(&(attempt.barrier.clone(), who));
                let listed = children.iter().filter(|name| *name != READY);
                let participants = listed.clone().count();
                let others = listed
                    .filter(|name| mine.is_none_or(|mine| !mine.contains(*name)))
                    .count();
                attempt.most_listed = attempt.most_listed.max(Some(participants));
                attempt.others_in_last_listing = Some(others);
            }
            (
                ZkOperation::Exists { path },
                OpResult::Ok {
                    response: Response::Zk(ZkResponse::Exists { stat: Some(_) }),
                },
            )
            | (
                ZkOperation::Create { path, .. },
                OpResult::Ok { .. }
                | OpResult::Fail {
                    error: sim::history::OpError::Zk(ZkError::NodeExists),
                },
            ) if *path == ready => attempt.saw_ready = true,
            _ => {}
        }
    }
}

/// The name of `path`'s child if `path` is directly under `parent`.
fn child_of<'a>(parent: &str, path: &'a str) -> Option<&'a str> {
    path.strip_prefix(parent)?
        .strip_prefix('/')
        .filter(|name| !name.is_empty() && !name.contains('/'))
}
