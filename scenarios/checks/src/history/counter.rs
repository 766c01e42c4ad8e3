//! A ZooKeeper counter's increments as their clients made them: each increment with the
//! conditional writes it sent, and which write moved the counter's node from each version
//! to the next.
//!
//! Reads the counter recipe's `RecipeEvent::Counter` records (written at the client node
//! when an increment ended: `Incremented` or `Unknown`; `Read` for a read, which writes
//! nothing) and the client's own ZooKeeper operations on the counter's node (`Invoke` and
//! `Complete`, recorded by the client library): every `setData` with an expected version
//! (Curator's `DistributedAtomicLong` and kazoo's `Counter` write this way), and every
//! version the store reported for the node (a `getData`'s or a `setData`'s stat).
//!
//! A node's version moves from `k` to `k + 1` only by a write that expected `k`, and at most
//! one write expecting `k` succeeds. So when the node is seen at a version above `k`, the
//! move from `k` was made by the write expecting `k` that was acknowledged, or, if none was,
//! by one of those that may have taken effect (not refused).

use super::locks::Holder;
use sim::{
    history::{
        Event, History, OpId, OpResult, Operation, RecipeEvent, Response,
        recipe::CounterStep,
        zk::{ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::collections::{BTreeMap, BTreeSet};

/// How a conditional write ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Acknowledged: it took effect.
    Acknowledged,
    /// Refused (`BadVersion` or another definite failure): it did not take effect.
    Refused,
    /// Its reply was lost, or it never completed: it may or may not have taken effect.
    Unknown,
}

/// One conditional write of the counter's node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterWrite {
    /// The operation.
    pub op_id: OpId,
    /// The version it expected.
    pub expected_version: i32,
    /// How it ended.
    pub outcome: WriteOutcome,
}

/// One increment: the writes a client sent for it, up to the step that ended it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Increment {
    /// The counter (its node's path).
    pub counter: String,
    /// The client process.
    pub incrementer: Holder,
    /// When it ended, and how (`None`: it never did, e.g. its client crashed).
    pub ended: Option<(SimTime, CounterStep)>,
    /// Its conditional writes, in order.
    pub writes: Vec<CounterWrite>,
}

/// Every increment of every counter, and the highest version each counter's node was seen
/// at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterRecords {
    /// Every increment, in the order they ended (unended ones last).
    pub increments: Vec<Increment>,
    /// Per counter, the highest version the store reported for its node.
    pub highest_version: BTreeMap<String, i32>,
}

/// Who moved a counter's node from a version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mover {
    /// This increment (by its position in [`CounterRecords::increments`]).
    Known(usize),
    /// One of these increments, the history cannot tell which: several writes expecting
    /// the version may have taken effect, and none was acknowledged.
    OneOf(BTreeSet<usize>),
}

impl CounterRecords {
    /// Per counter and version `k` below the highest seen: who moved the node from `k`.
    pub fn movers(&self) -> BTreeMap<(String, i32), Mover> {
        // Per (counter, expected version): the writes that may have taken effect.
        let mut candidates: BTreeMap<(String, i32), Vec<(usize, WriteOutcome)>> = BTreeMap::new();
        for (index, increment) in self.increments.iter().enumerate() {
            for write in &increment.writes {
                if write.outcome != WriteOutcome::Refused {
                    candidates
                        .entry((increment.counter.clone(), write.expected_version))
                        .or_default()
                        .push((index, write.outcome));
                }
            }
        }
        candidates
            .into_iter()
            .filter(|((counter, version), _)| {
                self.highest_version
                    .get(counter)
                    .is_some_and(|highest| highest > version)
            })
            .map(|(key, writes)| {
                let acknowledged = writes
                    .iter()
                    .find(|(_, outcome)| *outcome == WriteOutcome::Acknowledged);
                let mover = match (acknowledged, &writes[..]) {
                    (Some((index, _)), _) | (None, [(index, _)]) => Mover::Known(*index),
                    (None, _) => Mover::OneOf(writes.iter().map(|(index, _)| *index).collect()),
                };
                (key, mover)
            })
            .collect()
    }
}

/// Reads every counter's increments from `history`.
pub fn read(history: &History) -> CounterRecords {
    let counters: BTreeSet<&str> = history
        .records()
        .iter()
        .filter_map(|record| match &record.event {
            Event::Recipe(RecipeEvent::Counter { counter, .. }) => Some(counter.as_str()),
            _ => None,
        })
        .collect();
    let mut records = CounterRecords::default();
    let mut open: BTreeMap<(Holder, String), Vec<CounterWrite>> = BTreeMap::new();
    // Each counter operation sent: who sent it, on which counter, and its expected version
    // (for a write).
    let mut sent: BTreeMap<OpId, (Holder, String, Option<i32>)> = BTreeMap::new();
    for record in history.records() {
        match &record.event {
            Event::Invoke {
                client,
                process,
                op_id,
                operation: Operation::Zk(operation),
            } => {
                let (path, expected) = match operation {
                    ZkOperation::SetData {
                        path,
                        version: Some(version),
                        ..
                    } => (path, Some(*version)),
                    ZkOperation::GetData { path } => (path, None),
                    _ => continue,
                };
                if !counters.contains(path.as_str()) {
                    continue;
                }
                let who = (*client, *process);
                if let Some(expected_version) = expected {
                    open.entry((who, path.clone()))
                        .or_default()
                        .push(CounterWrite {
                            op_id: *op_id,
                            expected_version,
                            outcome: WriteOutcome::Unknown,
                        });
                }
                sent.insert(*op_id, (who, path.clone(), expected));
            }
            Event::Complete { op_id, result } => {
                let Some((who, counter, expected)) = sent.remove(op_id) else {
                    continue;
                };
                if let OpResult::Ok {
                    response:
                        Response::Zk(ZkResponse::Data { stat, .. } | ZkResponse::Stat { stat }),
                } = result
                {
                    let highest = records
                        .highest_version
                        .entry(counter.clone())
                        .or_insert(stat.version);
                    *highest = (*highest).max(stat.version);
                }
                if expected.is_none() {
                    continue;
                }
                let outcome = match result {
                    OpResult::Ok { .. } => WriteOutcome::Acknowledged,
                    OpResult::Fail { .. } => WriteOutcome::Refused,
                    OpResult::Unknown { .. } => WriteOutcome::Unknown,
                };
                if let Some(write) = open
                    .get_mut(&(who, counter))
                    .and_then(|writes| writes.iter_mut().find(|write| write.op_id == *op_id))
                {
                    write.outcome = outcome;
                }
            }
            Event::Recipe(RecipeEvent::Counter {
                process,
                counter,
                step: step @ (CounterStep::Incremented { .. } | CounterStep::Unknown),
            }) => {
                let Some(node) = record.node else { continue };
                let who = (node, *process);
                records.increments.push(Increment {
                    counter: counter.clone(),
                    incrementer: who,
                    ended: Some((record.at, *step)),
                    writes: open.remove(&(who, counter.clone())).unwrap_or_default(),
                });
            }
            _ => {}
        }
    }
    for ((incrementer, counter), writes) in open {
        records.increments.push(Increment {
            counter,
            incrementer,
            ended: None,
            writes,
        });
    }
    records
}
