#![allow(dead_code)] // each test file uses its own part
//! Hand-built histories for the integration tests: one client's operations, the requests it
//! sent, and the entries the replicas applied, for either store ([`HandStore`] says what
//! differs). Shared by `resolve_unknown.rs` (ZooKeeper) and `resolve_unknown_etcd.rs`.

use sim::{
    NodeId,
    history::{Event, History, OpId, OpResult, Operation, ProtocolEvent, Record, Response},
    time::SimTime,
};
use std::marker::PhantomData;

/// What a hand-built history of one store records differently.
pub trait HandStore {
    /// The store's operation.
    type Op;
    /// The store's response.
    type Answer;
    /// Why an answer was lost, as the store's client says it.
    const LOST_ANSWER: &'static str;
    fn operation(op: Self::Op) -> Operation;
    fn response(answer: Self::Answer) -> Response;
    /// The client's record that it sent op `op` as its request number `sequence`.
    fn sent(op: OpId, sequence: u64) -> Event;
    /// Whether `event` is a record of a request sent.
    fn is_sent(event: &Event) -> bool;
    /// The entry every replica applies for the client's request number `sequence`, as the
    /// `entry`th entry of the log (from 1).
    fn applied(entry: u64, sequence: u64) -> ProtocolEvent;
}

/// The replicas that apply every entry, one millisecond apart.
pub const REPLICAS: [NodeId; 3] = [NodeId::server(0), NodeId::server(1), NodeId::server(2)];

/// A hand-built history: operations by client node 1 (process = its lane), the requests it
/// sent, and what the replicas applied. Methods chain; [`HandBuilt::history`] sorts the
/// records by time.
pub struct HandBuilt<S> {
    records: Vec<Record>,
    entries: u64,
    store: PhantomData<S>,
}

impl<S> Default for HandBuilt<S> {
    fn default() -> Self {
        Self {
            records: Vec::new(),
            entries: 0,
            store: PhantomData,
        }
    }
}

impl<S: HandStore> HandBuilt<S> {
    pub fn push(&mut self, ms: u64, node: NodeId, event: Event) -> &mut Self {
        self.records.push(Record {
            at: SimTime::from_millis(ms),
            node: Some(node),
            event,
        });
        self
    }

    pub fn invoke(&mut self, ms: u64, process: u32, op: u64, operation: S::Op) -> &mut Self {
        let client = NodeId::client(1);
        self.push(
            ms,
            client,
            Event::Invoke {
                client,
                process,
                op_id: OpId(op),
                operation: S::operation(operation),
            },
        )
    }

    pub fn complete(&mut self, ms: u64, op: u64, result: OpResult) -> &mut Self {
        self.push(
            ms,
            NodeId::client(1),
            Event::Complete {
                op_id: OpId(op),
                result,
            },
        )
    }

    pub fn ok(&mut self, ms: u64, op: u64, answer: S::Answer) -> &mut Self {
        let response = S::response(answer);
        self.complete(ms, op, OpResult::Ok { response })
    }

    /// Op `op`'s answer was lost: its outcome is unknown.
    pub fn unknown(&mut self, ms: u64, op: u64) -> &mut Self {
        let reason = S::LOST_ANSWER.into();
        self.complete(ms, op, OpResult::Unknown { reason })
    }

    /// The client sent op `op` as its request number `sequence`.
    pub fn sent(&mut self, ms: u64, op: u64, sequence: u64) -> &mut Self {
        self.push(ms, NodeId::client(1), S::sent(OpId(op), sequence))
    }

    /// Every replica applies the next entry, naming request `sequence`, from `ms` on.
    pub fn applied(&mut self, ms: u64, sequence: u64) -> &mut Self {
        self.entries += 1;
        let entry = S::applied(self.entries, sequence);
        for (offset, replica) in REPLICAS.into_iter().enumerate() {
            self.push(ms + offset as u64, replica, Event::Protocol(entry.clone()));
        }
        self
    }

    /// Drops the records `event` matches.
    pub fn without(&mut self, matches: impl Fn(&Event) -> bool) -> &mut Self {
        self.records.retain(|record| !matches(&record.event));
        self
    }

    pub fn history(&mut self) -> History {
        let mut records = std::mem::take(&mut self.records);
        records.sort_by_key(|record| record.at);
        History::from_records(records)
    }

    /// The history without the sent and applied records: what a black-box checker sees (an
    /// imported history).
    pub fn unresolved(&mut self) -> History {
        self.without(|event| {
            S::is_sent(event) || matches!(event, Event::Protocol(ProtocolEvent::Applied { .. }))
        })
        .history()
    }
}
