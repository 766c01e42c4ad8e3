//! An etcd-like server: a Raft driver, the state machine it applies, the leader's lessor,
//! client connections and watches, in one task per node (plus small reader tasks).
//!
//! Requests:
//! - writes (put, delete, txn, lease grant/revoke, compaction) are proposed to Raft and
//!   answered when their entry is applied — or answered "not applied" when another entry is
//!   applied at their index (the proposal was overwritten) or this server does not lead;
//! - lease keep-alives are not logged: the leader renews them in its lessor after a
//!   ReadIndex round (`keep_alive`, as etcd's `LeaseRenew`);
//! - linearizable reads and lease TTL queries go through ReadIndex; serializable reads are
//!   served from the local state at once;
//! - watches may be opened on any server and are served from its applied state (`watches`);
//! - snapshots: when Raft says one is due, the state machine (MVCC store and lease table) is
//!   cloned into it; when a leader installs one, the state machine is replaced and every
//!   watcher catches up from its own next revision (etcd's `watchableStore.Restore`);
//! - restarts: the applied state is durable in the server's backend (`backend`), which a
//!   restarted server resumes from, re-applying only what its last commit missed.

mod backend;
mod keep_alive;
mod log_command;
mod watches;

pub use log_command::LogCommand;

use super::{
    command::{StoreCommand, validate},
    config::{EtcdBug, EtcdConfig},
    lease::{Lessor, PromotionTtl},
    protocol::{ClientFrame, ClientRequest, ClientResponse, Compacted},
    state_machine::{ApplyResult, CompactionTombstones, LeaseChange, StoreStateMachine},
    watchers::Watcher,
};
use crate::{
    local_queue::LocalQueue,
    raft::{
        EntryPayload, Message, ProposeError, ReadRequestId, Snapshot,
        driver::{AppEvent, RaftDriver, RaftInput},
        timer::SignalledTimer,
    },
};
use sim::{
    NodeContext, NodeId, Sim,
    history::{
        ProtocolEvent, RequestRef,
        kv::{KvError, KvOperation, KvResponse, ReadConsistency},
    },
    net::{Connection, DatagramNetwork, StreamNetwork},
};
use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    task::Poll,
};

/// A snapshot of the store's state machine (MVCC store and lease table), shared so that
/// InstallSnapshot messages clone cheaply.
pub type StoreSnapshot = Arc<StoreStateMachine>;

/// The Raft messages of the store.
pub type StoreMessage = Message<LogCommand, StoreSnapshot>;

/// A running cluster: the networks its servers and clients share. Cheap to clone.
#[derive(Clone)]
pub struct EtcdCluster {
    raft_network: DatagramNetwork<StoreMessage>,
    client_network: StreamNetwork<ClientFrame>,
    servers: Vec<NodeId>,
    config: EtcdConfig,
    /// The next number a client takes ([`EtcdCluster::take_client_number`]).
    client_numbers: Arc<AtomicU64>,
}

impl EtcdCluster {
    /// Starts a server on every server node of `sim` (each restarts with its node).
    pub fn start(sim: &Sim, config: EtcdConfig) -> Self {
        let servers = sim.servers();
        let mut config = config;
        config.raft.voters = servers.clone();
        let cluster = Self {
            raft_network: sim.datagram_network(),
            client_network: sim.stream_network(),
            servers: servers.clone(),
            config,
            client_numbers: Arc::new(AtomicU64::new(1)),
        };
        for server in servers {
            let cluster = cluster.clone();
            sim.start(server, move |context| {
                let cluster = cluster.clone();
                async move { run_server(context, cluster).await }
            });
        }
        cluster
    }

    /// The servers.
    pub fn servers(&self) -> &[NodeId] {
        &self.servers
    }

    /// The network clients connect through.
    pub fn client_network(&self) -> &StreamNetwork<ClientFrame> {
        &self.client_network
    }

    /// The configuration.
    pub fn config(&self) -> &EtcdConfig {
        &self.config
    }

    /// A number no other client of this cluster has taken, for the identities a client
    /// stamps on its writes: per cluster rather than per node and process, because two
    /// clients may share those (two handles of one process, a client made again after
    /// its node restarted). A real client would draw a random id; a counter is as unique
    /// and reads better in a history.
    pub(crate) fn take_client_number(&self) -> u64 {
        self.client_numbers.fetch_add(1, Ordering::Relaxed)
    }
}

enum Inbound {
    Opened(u64, Connection<ClientFrame>),
    Frame(u64, ClientFrame),
    Closed(u64),
}

async fn accept_connections(listener: sim::net::Listener<ClientFrame>, inbox: LocalQueue<Inbound>) {
    let mut next_id = 0;
    loop {
        let connection = listener.accept().await;
        next_id += 1;
        inbox.push(Inbound::Opened(next_id, connection.clone()));
        sim::task::spawn_local(read_connection(next_id, connection, inbox.clone()));
    }
}

async fn read_connection(id: u64, connection: Connection<ClientFrame>, inbox: LocalQueue<Inbound>) {
    loop {
        match connection.recv().await {
            Ok(frame) => inbox.push(Inbound::Frame(id, frame)),
            Err(_) => {
                inbox.push(Inbound::Closed(id));
                return;
            }
        }
    }
}

struct PendingProposal {
    term: u64,
    connection: u64,
    request_id: u64,
}

struct PendingRead {
    connection: u64,
    request_id: u64,
    operation: KvOperation,
}

enum ServerEvent {
    Raft(RaftInput<LogCommand, StoreSnapshot>),
    Client(Inbound),
    LeaseTimer,
    ProgressTimer,
}

struct Server {
    context: NodeContext,
    config: EtcdConfig,
    raft: RaftDriver<LogCommand, StoreSnapshot>,
    machine: StoreStateMachine,
    backend: backend::Backend,
    lessor: Lessor,
    inbox: LocalQueue<Inbound>,
    connections: BTreeMap<u64, Connection<ClientFrame>>,
    proposals: BTreeMap<u64, PendingProposal>,
    reads: BTreeMap<ReadRequestId, PendingRead>,
    next_read: u64,
    /// Keep-alives of leases past their deadline, waiting for the expiry or the demotion.
    renewals_awaiting_expiry: Vec<keep_alive::PendingRenewal>,
    /// Keep-alives waiting for their checkpoint clear to apply, by the clear's log index.
    checkpoint_clears: BTreeMap<u64, keep_alive::PendingClear>,
    watchers: Vec<Watcher>,
    lease_timer: SignalledTimer,
    /// The next progress notification tick of a watch that asked for them.
    progress_timer: SignalledTimer,
    next_checkpoint: sim::clock::LocalTime,
    fairness: u64,
}

async fn run_server(context: NodeContext, cluster: EtcdCluster) {
    let inbox = LocalQueue::new();
    let listener = cluster.client_network.listen(context.id());
    sim::task::spawn_local(accept_connections(listener, inbox.clone()));
    let tombstones = if cluster.config.has(EtcdBug::CompactDropsTombstone) {
        CompactionTombstones::Dropped
    } else {
        CompactionTombstones::Kept
    };
    let promotion = if cluster.config.has(EtcdBug::LeaseTtlResetOnLeaderChange) {
        PromotionTtl::ResetToFullTtl
    } else {
        PromotionTtl::Checkpointed
    };
    let empty = StoreStateMachine::new(tombstones, cluster.config.min_lease_ttl());
    let (backend, machine, consistent_index) = backend::Backend::open(&context, empty);
    let raft = RaftDriver::boot_resuming(
        &context,
        cluster.config.raft_for(context.id()),
        &cluster.raft_network,
        consistent_index,
    );
    let now = context.clock().now();
    let mut server = Server {
        context,
        config: cluster.config.clone(),
        raft,
        machine,
        backend,
        lessor: Lessor::new(promotion),
        inbox,
        connections: BTreeMap::new(),
        proposals: BTreeMap::new(),
        reads: BTreeMap::new(),
        next_read: 0,
        renewals_awaiting_expiry: Vec::new(),
        checkpoint_clears: BTreeMap::new(),
        watchers: Vec::new(),
        lease_timer: SignalledTimer::new(),
        progress_timer: SignalledTimer::new(),
        next_checkpoint: now,
        fairness: 0,
    };
    server.run().await;
}

impl Server {
    async fn run(&mut self) {
        loop {
            let event = self.next_event().await;
            match event {
                ServerEvent::Raft(input) => self.raft.handle(input),
                ServerEvent::Client(Inbound::Opened(id, connection)) => {
                    self.connections.insert(id, connection);
                }
                ServerEvent::Client(Inbound::Closed(id)) => {
                    self.connections.remove(&id);
                    self.watchers.retain(|watcher| watcher.connection != id);
                }
                ServerEvent::Client(Inbound::Frame(id, frame)) => self.handle_frame(id, frame),
                ServerEvent::LeaseTimer => self.lease_tick(),
                ServerEvent::ProgressTimer => self.progress_tick(),
            }
            self.drain_raft_events();
            self.backend.commit_if_due(self.raft.now());
        }
    }

    /// The next input; Raft and client inputs take turns so neither starves the other.
    async fn next_event(&mut self) -> ServerEvent {
        self.fairness += 1;
        let raft_first = self.fairness.is_multiple_of(2);
        std::future::poll_fn(|cx| {
            for turn in 0..2 {
                if (turn == 0) == raft_first {
                    if let Poll::Ready(input) = self.raft.poll_input(cx) {
                        return Poll::Ready(ServerEvent::Raft(input));
                    }
                } else if let Poll::Ready(inbound) = self.inbox.poll_pop(cx) {
                    return Poll::Ready(ServerEvent::Client(inbound));
                }
            }
            if self.lease_timer.poll_expired(cx) {
                return Poll::Ready(ServerEvent::LeaseTimer);
            }
            if self.progress_timer.poll_expired(cx) {
                return Poll::Ready(ServerEvent::ProgressTimer);
            }
            Poll::Pending
        })
        .await
    }

    fn respond(&self, connection: u64, request_id: u64, response: ClientResponse) {
        if let Some(connection) = self.connections.get(&connection) {
            // A broken connection: the client sees the break and the outcome is unknown.
            let _ = connection.send(ClientFrame::Response {
                request_id,
                response,
            });
        }
    }

    fn handle_frame(&mut self, connection: u64, frame: ClientFrame) {
        match frame {
            ClientFrame::Request {
                request_id,
                request,
                write_id,
            } => self.handle_request(connection, request_id, request, write_id),
            ClientFrame::WatchCreate {
                watch_id,
                key,
                options,
            } => self.create_watch(connection, watch_id, &key, &options),
            ClientFrame::WatchProgressRequest { watch_id } => {
                self.answer_progress_request(connection, watch_id)
            }
            ClientFrame::WatchCancel { watch_id } => self.cancel_watch(connection, watch_id),
            // Server-to-client frames are not expected here.
            ClientFrame::Response { .. }
            | ClientFrame::WatchCreated { .. }
            | ClientFrame::WatchProgress { .. }
            | ClientFrame::WatchCanceled { .. }
            | ClientFrame::WatchEvents { .. }
            | ClientFrame::WatchCompacted { .. } => {}
        }
    }

    /// `write_id`: what the client stamped on a write, kept in its log entry.
    fn handle_request(
        &mut self,
        connection: u64,
        request_id: u64,
        request: ClientRequest,
        write_id: Option<RequestRef>,
    ) {
        let propose = |server: &mut Self, command| {
            server.propose(
                connection,
                request_id,
                LogCommand::requested(command, write_id),
            )
        };
        let operation = match request {
            ClientRequest::Kv(operation) => operation,
            ClientRequest::Compact { revision } => {
                propose(self, StoreCommand::Compact { revision });
                return;
            }
        };
        if let Err(error) = validate(&operation) {
            self.respond(connection, request_id, ClientResponse::Kv(Err(error)));
            return;
        }
        match operation {
            KvOperation::Get {
                consistency: ReadConsistency::Serializable,
                ..
            }
            | KvOperation::GetWithOptions {
                consistency: ReadConsistency::Serializable,
                ..
            } => {
                let result = self.machine.read(&operation);
                self.respond(connection, request_id, ClientResponse::Kv(result));
            }
            // etcd answers from the member's own lessor, without a read index (3.4.23
            // `etcdserver/v3_server.go` `LeaseLeases`: `s.lessor.Leases()`); every member
            // applies grants and revokes, so any one knows them, as of its applied index.
            KvOperation::LeaseLeases => {
                let leases = self.machine.leases().iter().map(|(id, _)| *id).collect();
                let response = ClientResponse::Kv(Ok(KvResponse::LeaseLeases { leases }));
                self.respond(connection, request_id, response);
            }
            KvOperation::Get { .. }
            | KvOperation::GetWithOptions { .. }
            | KvOperation::LeaseTimeToLive { .. } => {
                self.read_after_read_index(connection, request_id, operation)
            }
            KvOperation::Put { .. } | KvOperation::Delete { .. } | KvOperation::Txn { .. } => {
                propose(self, StoreCommand::Kv { operation })
            }
            KvOperation::LeaseGrant { ttl_ms } => {
                propose(self, StoreCommand::LeaseGrant { ttl_ms })
            }
            KvOperation::LeaseRevoke { lease } => {
                propose(self, StoreCommand::LeaseRevoke { lease })
            }
            KvOperation::LeaseKeepAlive { lease } => self.keep_alive(connection, request_id, lease),
        }
    }

    /// Serves `operation` once a ReadIndex round confirms this server still leads and it
    /// has applied up to the read index (linearizable reads, TTL queries, keep-alives).
    fn read_after_read_index(&mut self, connection: u64, request_id: u64, operation: KvOperation) {
        self.next_read += 1;
        let read = ReadRequestId(self.next_read);
        self.reads.insert(
            read,
            PendingRead {
                connection,
                request_id,
                operation,
            },
        );
        self.raft.read_index(read);
    }

    fn propose(&mut self, connection: u64, request_id: u64, command: LogCommand) {
        match self.raft.propose(command) {
            Ok(slot) => {
                self.proposals.insert(
                    slot.index,
                    PendingProposal {
                        term: slot.term,
                        connection,
                        request_id,
                    },
                );
            }
            Err(ProposeError::NotLeader { leader_hint }) => {
                self.respond(
                    connection,
                    request_id,
                    ClientResponse::NotApplied { leader_hint },
                );
            }
        }
    }

    /// Replaces the state machine with a snapshot (at boot, or installed by a leader), and
    /// brings every watcher up to the new revision from its own next revision — or, with
    /// `etcd.watch_restore_keeps_stale_minrev`, from the revision it was created at, which
    /// sends it again what it already had. A watcher whose revision was compacted meanwhile
    /// is told so and dropped, as at creation.
    fn restore(&mut self, snapshot: Snapshot<StoreSnapshot>) {
        self.machine = StoreStateMachine::clone(&snapshot.data);
        self.backend.restored(snapshot.index, &snapshot.data);
        // Proposals the snapshot covers: whether they were committed is not known here; their
        // clients see no answer (outcome unknown).
        self.proposals.retain(|&index, _| index > snapshot.index);
        self.checkpoint_clears
            .retain(|&index, _| index > snapshot.index);
        let current = self.machine.mvcc().revision();
        let stale_minrev = self.config.has(EtcdBug::WatchRestoreKeepsStaleMinRev);
        let mut watchers = std::mem::take(&mut self.watchers);
        watchers.retain_mut(|watcher| {
            let from = if stale_minrev {
                watcher.created_at_revision
            } else {
                watcher.next_revision
            };
            let Some(channel) = self.connections.get(&watcher.connection) else {
                return false;
            };
            match self.machine.mvcc().changes_since(from, &watcher.range) {
                Ok(events) => {
                    watcher.send_events(self.machine.mvcc(), channel, events);
                    watcher.next_revision = current + 1;
                    true
                }
                Err(KvError::Compacted { compact_revision }) => {
                    let _ = channel.send(ClientFrame::WatchCompacted {
                        watch_id: watcher.watch_id,
                        compact_revision,
                    });
                    false
                }
                Err(_) => false,
            }
        });
        self.watchers = watchers;
    }

    fn drain_raft_events(&mut self) {
        while let Some(event) = self.raft.next_app_event() {
            match event {
                AppEvent::Apply(entry) => self.apply(entry),
                AppEvent::RestoreSnapshot(snapshot) => self.restore(snapshot),
                AppEvent::SnapshotDue { index } => {
                    let data = Arc::new(self.machine.clone());
                    self.raft.compact(index, data);
                }
                AppEvent::ReadReady(read) => self.serve_read(read),
                AppEvent::ReadRejected {
                    request,
                    leader_hint,
                } => {
                    if let Some(read) = self.reads.remove(&request) {
                        self.respond(
                            read.connection,
                            read.request_id,
                            ClientResponse::NotApplied { leader_hint },
                        );
                    }
                }
                AppEvent::BecameLeader { .. } => {
                    let now = self.raft.now();
                    let extend = self.config.raft.election_timeout_max;
                    self.lessor.promote(now, self.machine.leases(), extend);
                    self.next_checkpoint = now + self.config.lease_checkpoint_interval;
                }
                AppEvent::SteppedDown => {
                    self.renewals_leadership_lost();
                    if !self.config.has(EtcdBug::LessorNotDemoted) {
                        self.lessor.demote();
                    }
                }
            }
        }
        self.arm_lease_timer();
    }

    fn apply(&mut self, entry: crate::raft::Entry<LogCommand>) {
        let result = match &entry.payload {
            EntryPayload::Noop => None,
            EntryPayload::Command(command) => {
                let outcome = self.machine.apply(entry.index, command);
                match outcome.lease_change {
                    Some(LeaseChange::Granted { lease, ttl_ms }) => {
                        self.lessor.granted(self.raft.now(), lease, ttl_ms)
                    }
                    Some(LeaseChange::Removed { lease, expired }) => {
                        // Every replica records the expiry it applies: it is committed state,
                        // so the checkers need not trust whichever lessor decided it.
                        if expired {
                            self.context
                                .history()
                                .protocol(ProtocolEvent::SessionExpired { session: lease });
                        }
                        self.lessor.removed(lease);
                        self.renewals_lease_removed(lease);
                    }
                    None => {}
                }
                if let Some(revision) = outcome.changed_revision {
                    self.notify_watchers(revision);
                }
                Some(outcome.result)
            }
        };
        let (index, term) = (entry.index, entry.term);
        self.backend.applied(entry);
        self.checkpoint_clear_applied(index, term);
        let Some(proposal) = self.proposals.remove(&index) else {
            return;
        };
        let response = if proposal.term != term {
            // Another leader's entry won this index: ours will never be applied.
            ClientResponse::NotApplied {
                leader_hint: self.raft.core().leader(),
            }
        } else {
            match result {
                Some(ApplyResult::Kv(result)) => ClientResponse::Kv(result),
                Some(ApplyResult::Compact(result)) => {
                    ClientResponse::Compact(result.map(|compact_revision| Compacted {
                        compact_revision,
                        revision: self.machine.mvcc().revision(),
                    }))
                }
                Some(ApplyResult::Internal) | None => return,
            }
        };
        self.respond(proposal.connection, proposal.request_id, response);
    }

    fn serve_read(&mut self, read: ReadRequestId) {
        let Some(read) = self.reads.remove(&read) else {
            return;
        };
        let result = match &read.operation {
            KvOperation::LeaseKeepAlive { lease } => {
                let renewal = keep_alive::PendingRenewal {
                    connection: read.connection,
                    request_id: read.request_id,
                    lease: *lease,
                };
                self.renew_confirmed(renewal);
                return;
            }
            KvOperation::LeaseTimeToLive { lease, keys } => Ok(self.time_to_live(*lease, *keys)),
            operation => self.machine.read(operation),
        };
        self.respond(read.connection, read.request_id, ClientResponse::Kv(result));
    }

    /// What a time-to-live query of `lease` answers. A gone lease is TTL -1 and no error,
    /// as etcd answers it (3.4.23 `etcdserver/api/v3rpc/lease.go` `LeaseTimeToLive`: on
    /// `ErrLeaseNotFound`, `TTL: -1`, granted TTL 0, no keys).
    fn time_to_live(&self, lease: u64, keys: bool) -> KvResponse {
        let Some(record) = self.machine.leases().get(lease) else {
            return KvResponse::LeaseTimeToLive {
                remaining_ms: -1,
                granted_ttl_ms: 0,
                keys: keys.then(Vec::new),
            };
        };
        let remaining_ms = match self.lessor.remaining(self.raft.now(), lease) {
            Some(remaining) => u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX),
            None => record.checkpointed_remaining_ms.unwrap_or(record.ttl_ms),
        };
        KvResponse::LeaseTimeToLive {
            remaining_ms: i64::try_from(remaining_ms).unwrap_or(i64::MAX),
            granted_ttl_ms: record.ttl_ms,
            keys: keys.then(|| record.keys.iter().cloned().collect()),
        }
    }

    /// The leader's lessor: propose the expiry of leases past their deadline, and
    /// checkpoint remaining TTLs now and then.
    fn lease_tick(&mut self) {
        if !self.lessor.is_primary() || !self.raft.core().is_leader() {
            return;
        }
        let now = self.raft.now();
        for lease in self.lessor.take_expired(now) {
            if self.machine.leases().get(lease).is_some() {
                let command = StoreCommand::LeaseExpire { lease };
                // Not leading any more: the demotion that follows forgets the deadline.
                let _ = self.raft.propose(LogCommand::new(command));
            }
        }
        if now >= self.next_checkpoint {
            self.next_checkpoint = now + self.config.lease_checkpoint_interval;
            let remaining = self.lessor.checkpoints(
                now,
                self.machine.leases(),
                self.config.lease_checkpoint_interval,
            );
            if !remaining.is_empty() {
                let _ = self
                    .raft
                    .propose(LogCommand::new(StoreCommand::LeaseCheckpoint { remaining }));
            }
        }
    }

    fn arm_lease_timer(&mut self) {
        if self.lessor.is_primary() && self.lease_timer.deadline().is_none() {
            let sleep = self.context.clock().sleep(self.config.lease_check_interval);
            self.lease_timer.set(sleep);
        } else if !self.lessor.is_primary() {
            self.lease_timer.clear();
        }
    }
}
