//! The history of a run: an append-only list of timestamped events.
//!
//! Checkers are pure functions of a [`History`]: they never look inside the models. Every
//! record carries the global simulated time ([`SimTime`]) at which it happened and the node
//! that recorded it. The whole history serializes to JSON and has a stable [`Digest`]: the
//! same scenario and seed give the same digest on every run and every machine.

pub mod beliefs;
mod events;
pub mod kv;
pub mod recipe;
pub mod register;
pub mod zk;

pub use events::{
    Event, FaultOutcome, FaultRecord, OpError, OpId, OpResult, Operation, PhaseEvent,
    ProtocolEvent, QuorumStage, RequestRef, Response,
};
pub use recipe::{RecipeEvent, ResourceVerdict};

use crate::{digest::Digest, node::NodeId, time::SimTime};
use serde::{Deserialize, Serialize};

/// One event and when and where it happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Global simulated time, nanoseconds since the world started.
    pub at: SimTime,
    /// The node that recorded the event; `None` for the world itself (the nemesis, phases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeId>,
    /// What happened.
    pub event: Event,
}

/// Everything that happened in a run, in the order it was recorded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct History {
    records: Vec<Record>,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// A history of these records.
    pub fn from_records(records: Vec<Record>) -> Self {
        Self { records }
    }

    /// Appends a record.
    pub fn push(&mut self, record: Record) {
        self.records.push(record);
    }

    /// The records, in order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The stable digest of the whole history: of every record's serialized structure
    /// ([`Digest::of_structure`]), so the same history read back from its JSON lines has
    /// the same digest.
    pub fn digest(&self) -> Digest {
        Digest::of_structure(self)
    }

    /// The history as JSON, one record per line.
    pub fn to_json_lines(&self) -> String {
        let mut text = String::new();
        for record in &self.records {
            text.push_str(&serde_json::to_string(record).expect("records serialize"));
            text.push('\n');
        }
        text
    }

    /// Reads a history written by [`History::to_json_lines`] (or a JSON array of records).
    ///
    /// A malformed line is reported with its one-based line number.
    pub fn from_json(text: &str) -> Result<Self, HistoryParseError> {
        let trimmed = text.trim_start();
        if trimmed.starts_with('[') {
            return serde_json::from_str(trimmed).map_err(|error| HistoryParseError {
                line: error.line(),
                problem: error.to_string(),
            });
        }
        let mut records = Vec::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let record = serde_json::from_str(line).map_err(|error| HistoryParseError {
                line: index + 1,
                problem: error.to_string(),
            })?;
            records.push(record);
        }
        Ok(Self { records })
    }

    /// Client operations paired with their completions, in invocation order.
    ///
    /// An operation that never completed (the run ended first) has `completion: None`.
    pub fn operations(&self) -> Vec<OperationRecord<'_>> {
        let mut operations = Vec::new();
        let mut positions = OpPositions::default();
        for record in &self.records {
            match &record.event {
                Event::Invoke {
                    client,
                    process,
                    op_id,
                    operation,
                } => {
                    positions.insert(*op_id, operations.len());
                    operations.push(OperationRecord {
                        op_id: *op_id,
                        client: *client,
                        process: *process,
                        operation,
                        invoked_at: record.at,
                        completion: None,
                    });
                }
                Event::Complete { op_id, result } => {
                    if let Some(position) = positions.get(*op_id) {
                        operations[position].completion = Some((record.at, result));
                    }
                }
                _ => {}
            }
        }
        operations
    }
}

/// Where each invoked operation is in a list of operations, by id, for pairing completions
/// with their invocations. Sorted by id: the world numbers operations in invocation order,
/// so each new id goes at the end and a lookup is a binary search (a map per operation
/// cost more than the checks that read the pairs); a hand-written history may number them
/// any way, and pays for an insertion. A second invocation with the same id replaces the
/// first.
#[derive(Debug, Default)]
pub struct OpPositions {
    sorted: Vec<(OpId, usize)>,
}

impl OpPositions {
    /// Records that operation `op_id` is at `position`.
    pub fn insert(&mut self, op_id: OpId, position: usize) {
        let entry = (op_id, position);
        match self.sorted.last() {
            Some(&(last, _)) if last >= op_id => {
                match self.sorted.binary_search_by_key(&op_id, |&(id, _)| id) {
                    Ok(found) => self.sorted[found] = entry,
                    Err(slot) => self.sorted.insert(slot, entry),
                }
            }
            _ => self.sorted.push(entry),
        }
    }

    /// Where operation `op_id` is, if it was invoked.
    pub fn get(&self, op_id: OpId) -> Option<usize> {
        let found = self
            .sorted
            .binary_search_by_key(&op_id, |&(id, _)| id)
            .ok()?;
        Some(self.sorted[found].1)
    }
}

/// A client operation with its invocation and (if it completed) its completion.
#[derive(Clone, Debug, PartialEq)]
pub struct OperationRecord<'a> {
    /// The operation's id.
    pub op_id: OpId,
    /// The client node.
    pub client: NodeId,
    /// The logical process on that node.
    pub process: u32,
    /// What was asked.
    pub operation: &'a Operation,
    /// When it was invoked.
    pub invoked_at: SimTime,
    /// When and how it completed.
    pub completion: Option<(SimTime, &'a OpResult)>,
}

/// A history file that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryParseError {
    /// One-based line number of the problem.
    pub line: usize,
    /// What is wrong.
    pub problem: String,
}

impl std::fmt::Display for HistoryParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}: expected a coordsim history record ({{\"at\":…,\"event\":…}}): {}",
            self.line, self.problem
        )
    }
}

impl std::error::Error for HistoryParseError {}
