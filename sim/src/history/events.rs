//! The event vocabulary of a history.

use super::{kv, recipe::RecipeEvent, register, zk};
use crate::{fault::Fault, node::NodeId, seed::Seed};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Identifies one client operation within a run.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OpId(pub u64);

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op{}", self.0)
    }
}

impl fmt::Debug for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Something that happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A client invoked an operation.
    Invoke {
        /// The client node.
        client: NodeId,
        /// The logical process on that node (a node may run several concurrent clients).
        process: u32,
        /// The operation's id, unique in the run.
        op_id: OpId,
        /// What was asked.
        operation: Operation,
    },
    /// An operation completed: with a result, a definite failure, or an unknown outcome.
    Complete {
        /// The operation's id.
        op_id: OpId,
        /// How it ended.
        result: OpResult,
    },
    /// A consensus protocol did something observable.
    Protocol(ProtocolEvent),
    /// A coordination recipe did something observable.
    Recipe(RecipeEvent),
    /// A ZooKeeper-style client session did something observable (session established,
    /// resumed, expired; watch registered or delivered).
    Zk(zk::ZkEvent),
    /// A fault fired (or was skipped).
    Fault(FaultRecord),
    /// The run moved to a new phase.
    Phase(PhaseEvent),
    /// Free text, for the human reading a trace.
    Note {
        /// The text.
        text: String,
    },
    // New events go last: histories hash variants by index.
    /// An etcd-style key-value client did something observable (sent a write).
    Kv(kv::KvEvent),
}

/// An operation a client asked a store to perform.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum Operation {
    /// On a register (one value per key).
    Register(register::RegisterOperation),
    /// On an etcd-like key-value store.
    Kv(kv::KvOperation),
    /// On a ZooKeeper-like znode tree.
    Zk(zk::ZkOperation),
    /// Anything else, for demos and custom stores.
    Other {
        /// Operation name.
        name: String,
        /// Its argument.
        #[serde(default)]
        argument: serde_json::Value,
    },
}

/// How an operation ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum OpResult {
    /// It took effect, with this response.
    Ok {
        /// The response.
        response: Response,
    },
    /// It definitely did not take effect.
    Fail {
        /// Why.
        error: OpError,
    },
    /// It may or may not have taken effect (timeout, connection lost).
    Unknown {
        /// Why the outcome is unknown.
        reason: String,
    },
}

/// A successful response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum Response {
    /// From a register.
    Register(register::RegisterResponse),
    /// From an etcd-like store.
    Kv(kv::KvResponse),
    /// From a ZooKeeper-like store.
    Zk(zk::ZkResponse),
    /// Anything else.
    Other {
        /// The response value.
        #[serde(default)]
        value: serde_json::Value,
    },
}

/// A definite failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum OpError {
    /// From a register.
    Register(register::RegisterError),
    /// From an etcd-like store.
    Kv(kv::KvError),
    /// From a ZooKeeper-like store.
    Zk(zk::ZkError),
    /// Anything else.
    Other {
        /// What went wrong.
        message: String,
    },
}

/// Observable steps of a consensus protocol.
///
/// `term` is a Raft term or a ZAB epoch; `index` is a Raft log index or a ZAB zxid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "protocol_event", rename_all = "snake_case")]
pub enum ProtocolEvent {
    /// This node became leader of `term` (Raft: won the election; ZAB: established).
    BecameLeader {
        /// The term or epoch.
        term: u64,
    },
    /// This node stopped being leader of `term`.
    SteppedDown {
        /// The term or epoch.
        term: u64,
    },
    /// This node durably moved to `term` (to check that terms never decrease).
    TermChanged {
        /// The new term or epoch.
        term: u64,
    },
    /// This node applied the entry at `index` to its state machine.
    Applied {
        /// Log index or zxid.
        index: u64,
        /// Term or epoch of the entry.
        term: u64,
        /// Digest of the entry's content, to compare replicas.
        digest: u64,
        /// The client request whose change this entry carries, as the entry names it
        /// (ZooKeeper's transaction header; the id an etcd model client stamps on a write);
        /// `None` for entries that change nothing for a client request (a refusal logged as
        /// an error transaction, a server's own entry) and for entries that name no
        /// request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request: Option<RequestRef>,
    },
    /// This node replaced its state machine with a snapshot taken at `index` (Raft
    /// InstallSnapshot, ZAB SNAP sync, a ZAB server loading its snapshot as it restarts, a
    /// Raft server booting from its snapshot or an etcd server opening its durable backend at
    /// its consistent index as it restarts): entries up to `index` were not applied one by
    /// one. Recorded at a restart before anything else the node records about the protocol.
    SnapshotInstalled {
        /// Log index or zxid the snapshot covers.
        index: u64,
        /// Term or epoch of that entry.
        term: u64,
    },
    /// This node took a snapshot of its state machine at `index` and compacted its log
    /// through it (Raft log compaction). Its state machine is unchanged.
    SnapshotTaken {
        /// Log index the snapshot covers.
        index: u64,
        /// Term of that entry.
        term: u64,
    },
    /// A session (ZooKeeper) or lease (etcd) expired on this node's authority.
    SessionExpired {
        /// Session or lease id.
        session: u64,
    },
    /// This node started as a non-voting observer (ZAB: ZooKeeper's `LearnerType.OBSERVER`):
    /// it must never lead nor be counted in a quorum. Recorded by an observer each time it
    /// starts; a voting server records nothing of the kind.
    StartedObserving,
    /// A leader counted `servers` (itself included) towards a quorum of `term`: every server
    /// whose part in `stage` it had when the quorum was reached (for a commit: every server
    /// whose durable copy reached `index`). ZAB records these only in an ensemble with
    /// observers, for the check that no observer is ever counted.
    QuorumCounted {
        /// The term or epoch.
        term: u64,
        /// What the quorum was for.
        stage: QuorumStage,
        /// For [`QuorumStage::Commit`], the zxid committed; otherwise the leader's last
        /// logged zxid (or index) when the quorum was reached.
        index: u64,
        /// The servers counted, ascending.
        servers: Vec<NodeId>,
    },
    /// Anything else a protocol wants a checker or a human to see.
    Other {
        /// Event name.
        name: String,
        /// Details.
        #[serde(default)]
        detail: serde_json::Value,
    },
}

/// A client request as a log entry names it, and as the client recorded it when it sent
/// it: which client, and which of its requests.
///
/// - ZooKeeper: the transaction header, `client` the session id and `sequence` the
///   request's xid in it (`TxnHeader.clientId` / `cxid`); the client records the pair in
///   [`super::zk::ZkEvent::RequestSent`].
/// - etcd (coordsim's model; real etcd's entries carry a server-made id instead):
///   `client` a number the model client takes when it is made, unique in the run, and
///   `sequence` its count of writes; the client records it in
///   [`super::kv::KvEvent::RequestSent`] and the server keeps it in the write's log entry.
///
/// The fields were ZooKeeper's `session` and `xid` until etcd entries named requests too;
/// histories written with those names still read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RequestRef {
    /// The client: a ZooKeeper session id, an etcd model client's number.
    #[serde(alias = "session")]
    pub client: u64,
    /// The request's number among that client's: a ZooKeeper xid, an etcd write count.
    #[serde(alias = "xid")]
    pub sequence: u64,
}

/// What a quorum counted in [`ProtocolEvent::QuorumCounted`] was for (ZAB's phases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuorumStage {
    /// Discovery: the FOLLOWERINFOs from which the leader chose its new epoch.
    NewEpoch,
    /// Discovery: the ACKEPOCHs after which the epoch is the leader's current one.
    AckEpoch,
    /// Synchronization: the NEWLEADER ACKs that established the leader.
    NewLeader,
    /// Broadcast: the ACKs that committed a proposal.
    Commit,
}

/// A fault the nemesis tried to apply and what came of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// The fault as scheduled or requested (its node may be a role such as `leader`).
    pub fault: Fault,
    /// The node the fault's subject resolved to when it fired (for faults that act on one
    /// node: a crash, a pause, a clock fault, an isolated or stranded node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<NodeId>,
    /// What happened.
    pub outcome: FaultOutcome,
}

impl FaultRecord {
    /// The node this record crashed, if it is a crash that took effect.
    pub fn crashed(&self) -> Option<NodeId> {
        match (&self.fault, &self.outcome) {
            (Fault::Crash { .. }, FaultOutcome::Applied { .. }) => self.target,
            _ => None,
        }
    }
}

/// What came of a fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum FaultOutcome {
    /// It took effect.
    Applied {
        /// For partitions: the directed links (`from`, `to`) now cut.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        cut_links: Vec<(NodeId, NodeId)>,
        /// FIFO connections it broke.
        #[serde(default, skip_serializing_if = "is_zero")]
        broken_connections: u64,
        /// Unsynced disk writes it destroyed (crashes).
        #[serde(default, skip_serializing_if = "is_zero")]
        lost_writes: u64,
    },
    /// It could not apply (e.g. restarting a node that is up) and changed nothing.
    Skipped {
        /// Why.
        reason: String,
    },
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Phases of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum PhaseEvent {
    /// The run started.
    Started {
        /// The seed.
        seed: Seed,
    },
    /// The fault plan's last fault fired: from here on, only liveness is in question.
    FaultPhaseEnded,
    /// The run driver healed everything (partitions, clogs, network conditions, crashed and
    /// paused nodes, clock drift) at the end of the fault phase. Not a fault: it is counted
    /// apart from them.
    Healed,
    /// The workload's final reads begin (after the heal): every write acknowledged before
    /// this point must show in them (the durability checkers read this marker).
    FinalReads,
    /// The scenario finished.
    Completed,
    /// The time limit was reached before the scenario finished.
    TimeLimitReached,
}
