//! One ZooKeeper server as a sans-IO state machine: the ZAB core plus client connections,
//! sessions, watches and the leader's request processor.
//!
//! Request path, step by step:
//! 1. A client request arrives on a connection attached to a session. Reads are answered
//!    from this server's committed tree — unless an earlier write or sync of the same
//!    connection is still pending, in which case they wait behind it (ZooKeeper's
//!    per-session ordering in `CommitProcessor`).
//! 2. Writes, syncs and session changes go to the leader (forwarded over ZAB's FIFO
//!    connection). The leader validates them against its prepared tree and proposes a
//!    transaction (an error transaction if validation failed, a `SessionMoved` one if the
//!    session has since attached through another server).
//! 3. When this server applies the committed transaction, it first sends the watch events
//!    the change fires, then the reply if the session is attached here, then answers the
//!    reads that waited. Because the connection is FIFO, a client always receives a watch
//!    event before any reply showing the change.
//!
//! A server that stops serving (its leader is gone) closes every client connection; the
//! clients reconnect elsewhere and keep their sessions.

use super::{
    acl::{self, AuthIds},
    children_order::ChildrenOrder,
    prep,
    sequence::SequenceWidth,
    sessions::{SessionStatus, SessionTracker},
    tree::DataTree,
    txn::{ApplyOutcome, CloseReason, SessionId, Txn, TxnBody, TxnResult},
    watches::WatchManager,
    wire::{
        AuthInfo, ClientMessage, ClientRequest, LeaderRequest, MultiReadOp, Refusal, Revalidation,
        ServerMessage,
    },
};
use crate::zab::{
    ConfigError, Effect, LeadershipCheck, Link, LinkDirection, Notification, PeerMessage,
    PersistToken, PersistentState, Serving, ZabBug, ZabConfig, ZabCore, Zxid,
};
use sim::{
    NodeId,
    clock::LocalTime,
    history::{
        ProtocolEvent,
        zk::{AddWatchMode, WatchEventType, ZkError, ZkResponse},
    },
};
use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    sync::Arc,
    time::Duration,
};

/// The ZAB core of a ZooKeeper server.
pub type ZkCore = ZabCore<DataTree, ServerMessage>;
/// A message between ZooKeeper servers.
pub type ZkPeerMessage = PeerMessage<DataTree, ServerMessage>;

/// A client connection, as the driver numbers them (sim's connection id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientLink(pub u64);

/// Server settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkServerConfig {
    /// The ZAB side.
    pub zab: ZabConfig,
    /// Smallest session timeout granted (ZooKeeper's `minSessionTimeout`, 2 ticks by
    /// default).
    pub min_session_timeout: Duration,
    /// Largest session timeout granted (ZooKeeper's `maxSessionTimeout`, 20 ticks by
    /// default).
    pub max_session_timeout: Duration,
    /// The width of each parent's sequence counter, which names sequential nodes.
    pub sequence_width: SequenceWidth,
    /// The order `getChildren` answers in (an ensemble keys it by the world's seed).
    pub children_order: ChildrenOrder,
    /// How often the leader deletes containers that had children and have none
    /// (ZooKeeper's `znode.container.checkIntervalMs`, 60 s by default).
    pub container_check_interval: Duration,
}

impl ZkServerConfig {
    /// Defaults around `zab`'s tick: ZooKeeper's session bounds, 2 and 20 ticks
    /// (`ZooKeeperServer.getMinSessionTimeout`/`getMaxSessionTimeout`; a ZooKeeper 3.8.0
    /// with `tickTime=2000` grants 4000 ms for 100 or 1000 asked, 40000 ms for 100000).
    pub fn new(zab: ZabConfig) -> Self {
        Self {
            min_session_timeout: zab.tick * 2,
            max_session_timeout: zab.tick * 20,
            sequence_width: SequenceWidth::ZOOKEEPER,
            children_order: ChildrenOrder::keyed(0),
            container_check_interval: Duration::from_secs(60),
            zab,
        }
    }
}

/// One output of the server, in order.
#[derive(Debug, PartialEq)]
pub enum ServerEffect {
    /// A ZAB effect for the driver (notify, connect, send, disconnect, persist, sync,
    /// record).
    Zab(Effect<DataTree, ServerMessage>),
    /// Send to a client.
    ToClient {
        /// The connection.
        link: ClientLink,
        /// The message.
        message: ClientMessage,
    },
    /// Close a client connection.
    CloseClient {
        /// The connection.
        link: ClientLink,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConnState {
    AwaitingConnect,
    Creating { token: u64 },
    Revalidating { token: u64, session: SessionId },
    Attached { session: SessionId },
}

/// How a write's reply looks: a create answers its stat only to `create2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReplyShape {
    /// `create2`: the created node's stat too.
    WithStat,
    /// Every other request: a create answers its path alone (in a multi too).
    Plain,
}

impl ReplyShape {
    fn shape(self, result: Result<ZkResponse, ZkError>) -> Result<ZkResponse, ZkError> {
        match (self, result) {
            (ReplyShape::WithStat, result) => result,
            (ReplyShape::Plain, Ok(response)) => Ok(plain(response)),
            (ReplyShape::Plain, error) => error,
        }
    }
}

fn plain(response: ZkResponse) -> ZkResponse {
    match response {
        ZkResponse::CreatedWithStat { path, .. } => ZkResponse::Created { path },
        ZkResponse::Multi { results } => ZkResponse::Multi {
            results: results.into_iter().map(plain).collect(),
        },
        other => other,
    }
}

#[derive(Debug)]
enum Queued {
    /// A read waiting for the writes before it.
    Read(u64, ClientRequest),
    /// A write, sync or close sent to the leader, and how its reply looks.
    Forwarded(u64, ReplyShape),
    /// An answer given at once (`addAuth`), sent in its turn.
    Answer(u64, Result<ZkResponse, ZkError>),
}

#[derive(Debug)]
struct ClientConn {
    state: ConnState,
    queue: VecDeque<Queued>,
    /// The ids the connection is authenticated as: its client's address, then `addAuth`s.
    ids: AuthIds,
}

/// A `sync` the leader answers once every proposal before it is committed (and, unless
/// `zab.sync_not_quorum` is on, a quorum confirmed the leader after it arrived).
#[derive(Debug)]
struct PendingSync {
    after: Zxid,
    /// `None` with `zab.sync_not_quorum`: no quorum is asked.
    leadership: Option<LeadershipCheck>,
    origin: NodeId,
    session: SessionId,
    cxid: u64,
}

/// What only the established leader keeps.
#[derive(Debug)]
struct LeaderSide {
    /// The committed tree plus every proposed, not yet committed, transaction.
    prepared: DataTree,
    tracker: SessionTracker,
    /// `sync`s not answered yet.
    pending_syncs: Vec<PendingSync>,
    /// When the leader next looks for empty containers (`ContainerManager`).
    next_container_check: LocalTime,
}

/// One ZooKeeper server. Feed it inputs; drain [`ServerEffect`]s.
pub struct ZkServer {
    core: ZkCore,
    min_session_timeout: Duration,
    max_session_timeout: Duration,
    sequence_width: SequenceWidth,
    children_order: ChildrenOrder,
    container_check_interval: Duration,
    /// Random per incarnation: tokens of a restarted server never match old ones.
    instance: u64,
    next_token: u64,
    clients: BTreeMap<ClientLink, ClientConn>,
    attached: BTreeMap<SessionId, ClientLink>,
    creating: BTreeMap<u64, ClientLink>,
    revalidating: BTreeMap<u64, ClientLink>,
    watches: WatchManager<ClientLink>,
    leader: Option<LeaderSide>,
    /// Follower: sessions active here since the last report to the leader.
    touched: BTreeSet<SessionId>,
    next_housekeeping: LocalTime,
    effects: Vec<ServerEffect>,
    core_buffer: Vec<Effect<DataTree, ServerMessage>>,
    fired: Vec<ClientLink>,
    /// The last transaction whose `Applied` effect this server has handled (replies sent):
    /// the leader answers a sync only after it, so the replies before the sync go first.
    handled_upto: Zxid,
}

impl ZkServer {
    /// A server restarting from `disk`; `instance` must differ between incarnations.
    pub fn new(
        config: ZkServerConfig,
        disk: PersistentState<DataTree>,
        instance: u64,
    ) -> Result<Self, ConfigError> {
        let core = ZabCore::restore(config.zab, disk)?;
        // What it restored owes no replies.
        let handled_upto = core.last_applied();
        Ok(Self {
            core,
            min_session_timeout: config.min_session_timeout,
            max_session_timeout: config.max_session_timeout.max(config.min_session_timeout),
            sequence_width: config.sequence_width,
            children_order: config.children_order,
            container_check_interval: config.container_check_interval,
            instance,
            next_token: 0,
            clients: BTreeMap::new(),
            attached: BTreeMap::new(),
            creating: BTreeMap::new(),
            revalidating: BTreeMap::new(),
            watches: WatchManager::default(),
            leader: None,
            touched: BTreeSet::new(),
            next_housekeeping: LocalTime::from_nanos(0),
            effects: Vec::new(),
            core_buffer: Vec::new(),
            fired: Vec::new(),
            handled_upto,
        })
    }

    /// The ZAB core (for inspection).
    pub fn core(&self) -> &ZkCore {
        &self.core
    }

    /// The committed tree this server serves reads from.
    pub fn tree(&self) -> &DataTree {
        self.core.machine()
    }

    /// Moves pending effects into `buffer` (which should be empty), keeping allocations.
    pub fn swap_effects(&mut self, buffer: &mut Vec<ServerEffect>) {
        std::mem::swap(&mut self.effects, buffer);
    }

    /// The pending effects.
    pub fn take_effects(&mut self) -> Vec<ServerEffect> {
        std::mem::take(&mut self.effects)
    }

    /// When [`tick`](Self::tick) next has something to do.
    pub fn next_deadline(&self) -> LocalTime {
        self.core.next_deadline().min(self.next_housekeeping)
    }

    // ----- ZAB inputs ---------------------------------------------------------------------

    /// Boots.
    pub fn start(&mut self, now: LocalTime) {
        self.core.start(now);
        self.pump(now);
    }

    /// An election notification.
    pub fn on_notification(&mut self, now: LocalTime, from: NodeId, notification: Notification) {
        self.core.on_notification(now, from, notification);
        self.pump(now);
    }

    /// A peer connection opened.
    pub fn on_peer_link_up(
        &mut self,
        now: LocalTime,
        link: Link,
        peer: NodeId,
        direction: LinkDirection,
    ) {
        self.core.on_link_up(now, link, peer, direction);
        self.pump(now);
    }

    /// A peer connection closed.
    pub fn on_peer_link_down(&mut self, now: LocalTime, link: Link) {
        self.core.on_link_down(now, link);
        self.pump(now);
    }

    /// Connecting to the leader failed.
    pub fn on_connect_failed(&mut self, now: LocalTime, leader: NodeId) {
        self.core.on_connect_failed(now, leader);
        self.pump(now);
    }

    /// A peer message.
    pub fn on_peer_message(&mut self, now: LocalTime, link: Link, message: ZkPeerMessage) {
        self.core.on_message(now, link, message);
        self.pump(now);
        // A follower's echo may confirm the leadership a waiting sync needs.
        self.release_syncs(now);
        self.pump(now);
    }

    /// A disk sync completed.
    pub fn on_persisted(&mut self, now: LocalTime, token: PersistToken) {
        self.core.on_persisted(now, token);
        self.pump(now);
    }

    /// Time passed.
    pub fn tick(&mut self, now: LocalTime) {
        self.core.tick(now);
        self.pump(now);
        if now >= self.next_housekeeping {
            self.next_housekeeping = now + self.core.config().tick / 2;
            self.housekeeping(now);
            self.pump(now);
        }
    }

    // ----- Client inputs ------------------------------------------------------------------

    /// A client connected from node `client` (its simulated address is its `ip` id).
    pub fn on_client_connected(&mut self, _now: LocalTime, link: ClientLink, client: NodeId) {
        self.clients.insert(
            link,
            ClientConn {
                state: ConnState::AwaitingConnect,
                queue: VecDeque::new(),
                ids: acl::connection_ids(client),
            },
        );
    }

    /// A client connection closed.
    pub fn on_client_closed(&mut self, _now: LocalTime, link: ClientLink) {
        self.forget_client(link);
    }

    /// A client message.
    pub fn on_client_message(&mut self, now: LocalTime, link: ClientLink, message: ClientMessage) {
        let Some(conn) = self.clients.get(&link) else {
            return;
        };
        let state = conn.state;
        match (state, message) {
            (
                ConnState::AwaitingConnect,
                ClientMessage::Connect {
                    session,
                    timeout_ms,
                    last_zxid_seen,
                    auth,
                },
            ) => {
                // Credentials the client sends with every connection: one that fails ends
                // the connection, as an `addAuth` does. (ZooKeeper attaches the session
                // first and leaves it to expire; the model refuses before attaching.)
                for info in &auth {
                    if self.add_auth(link, info).is_err() {
                        self.refuse(link, Refusal::AuthFailed);
                        self.pump(now);
                        return;
                    }
                }
                self.on_connect(now, link, session, timeout_ms, last_zxid_seen)
            }
            (ConnState::Attached { session }, ClientMessage::Request { xid, request }) => {
                self.touch(session, now);
                self.on_request(now, link, session, xid, request);
            }
            (ConnState::Attached { session }, ClientMessage::Ping) => {
                self.touch(session, now);
                self.send_to_client(link, ClientMessage::Pong);
            }
            (
                ConnState::Attached { .. },
                ClientMessage::SetWatches {
                    relative_zxid,
                    data,
                    exist,
                    child,
                    persistent,
                    recursive,
                },
            ) => {
                self.set_watches(link, relative_zxid, &data, &exist, &child);
                // ZooKeeper's `setWatches` adds persistent watches back without catching up:
                // changes made while the client was away are not delivered (ZOOKEEPER-4698).
                for path in &persistent {
                    self.watches
                        .watch_persistent(path, AddWatchMode::Persistent, link);
                }
                for path in &recursive {
                    self.watches
                        .watch_persistent(path, AddWatchMode::PersistentRecursive, link);
                }
            }
            // Out of protocol: drop the connection.
            _ => self.close_client(link),
        }
        self.pump(now);
    }

    // ----- Internals ----------------------------------------------------------------------

    /// `addAuth` on a connection: the id it adds, or `AuthFailed`.
    fn add_auth(&mut self, link: ClientLink, info: &AuthInfo) -> Result<ZkResponse, ZkError> {
        let id = acl::authenticate(&info.scheme, &info.auth)?;
        if let Some(conn) = self.clients.get_mut(&link)
            && !conn.ids.contains(&id)
        {
            conn.ids = conn.ids.iter().cloned().chain([id]).collect();
        }
        Ok(ZkResponse::AuthAdded)
    }

    fn pump(&mut self, now: LocalTime) {
        loop {
            self.core.swap_effects(&mut self.core_buffer);
            if self.core_buffer.is_empty() {
                // Every transaction applied so far is handled (some, restored from disk or
                // a snapshot, never had replies to send).
                self.handled_upto = self.core.last_applied();
                return;
            }
            let mut buffer = std::mem::take(&mut self.core_buffer);
            for effect in buffer.drain(..) {
                match effect {
                    Effect::Serve(serving) => self.on_serving(now, serving),
                    Effect::Applied { zxid, txn, output } => {
                        self.on_applied(now, zxid, &txn, output)
                    }
                    Effect::App { from, message } => self.on_server_message(now, from, message),
                    other => self.effects.push(ServerEffect::Zab(other)),
                }
            }
            self.core_buffer = buffer;
        }
    }

    fn on_serving(&mut self, now: LocalTime, serving: Serving) {
        match serving {
            Serving::AsLeader { .. } => {
                let tree = self.core.machine();
                self.leader = Some(LeaderSide {
                    prepared: tree.clone(),
                    tracker: SessionTracker::from_committed(tree.sessions(), now),
                    pending_syncs: Vec::new(),
                    next_container_check: now + self.container_check_interval,
                });
            }
            Serving::AsFollower { .. } | Serving::AsObserver { .. } => {}
            Serving::Stopped => {
                let links: Vec<ClientLink> = self.clients.keys().copied().collect();
                for link in links {
                    self.effects.push(ServerEffect::CloseClient { link });
                }
                self.clients.clear();
                self.attached.clear();
                self.creating.clear();
                self.revalidating.clear();
                self.watches.clear();
                self.touched.clear();
                self.leader = None;
            }
        }
    }

    fn on_applied(&mut self, now: LocalTime, zxid: Zxid, txn: &Arc<Txn>, outcome: ApplyOutcome) {
        let zxid_value = zxid.as_u64();
        self.handled_upto = zxid;
        // 1. Watch events first: the client must see them before any later reply.
        for (path, event) in &outcome.triggers {
            self.fired.clear();
            self.watches.trigger(path, *event, &mut self.fired);
            for index in 0..self.fired.len() {
                let link = self.fired[index];
                self.effects.push(ServerEffect::ToClient {
                    link,
                    message: ClientMessage::WatchEvent {
                        path: path.clone(),
                        event: *event,
                        zxid: zxid_value,
                    },
                });
            }
        }
        // 2. Session bookkeeping. The leading server (established or establishing) records
        //    expiries, so an expiry committed as part of a new leader's history is recorded.
        if let TxnResult::SessionClosed {
            session, reason, ..
        } = &outcome.result
        {
            if let Some(leader) = &mut self.leader {
                leader.tracker.remove(*session);
            }
            if *reason == CloseReason::Expired && self.core.role_name() == "leading" {
                self.effects.push(ServerEffect::Zab(Effect::Record(
                    ProtocolEvent::SessionExpired { session: *session },
                )));
            }
        }
        // 3. The reply, if the session is attached here.
        match outcome.result {
            TxnResult::SessionCreated {
                session,
                timeout_ms,
            } => {
                let from_here = matches!(txn.body(), TxnBody::CreateSession { origin, .. }
                    if usize::from(*origin) == self.core.me().ordinal());
                if let (true, Some(link)) = (from_here, self.creating.remove(&txn.cxid())) {
                    self.attach(link, session, timeout_ms);
                }
            }
            TxnResult::SessionClosed {
                session, reason, ..
            } => {
                if let Some(&link) = self.attached.get(&session) {
                    match reason {
                        CloseReason::Closed => {
                            self.send_to_client(link, ClientMessage::Closed { xid: txn.cxid() })
                        }
                        CloseReason::Expired => {
                            self.send_to_client(link, ClientMessage::SessionExpired)
                        }
                    }
                    self.close_client(link);
                }
            }
            TxnResult::Done(response) => {
                self.answer_forwarded(txn.session(), txn.cxid(), zxid_value, Ok(response))
            }
            TxnResult::Failed(error) => {
                self.answer_forwarded(txn.session(), txn.cxid(), zxid_value, Err(error))
            }
            TxnResult::SessionMoved => self.close_moved(txn.session(), txn.cxid()),
        }
        // 4. Syncs waiting for this transaction.
        self.release_syncs(now);
    }

    fn on_server_message(&mut self, now: LocalTime, from: NodeId, message: ServerMessage) {
        match message {
            ServerMessage::Forward {
                session,
                cxid,
                request,
                auth,
            } => self.leader_process(now, from, session, cxid, request, &auth),
            ServerMessage::Touch { sessions } => {
                if let Some(leader) = &mut self.leader {
                    for session in sessions {
                        leader.tracker.touch(session, now);
                    }
                }
            }
            ServerMessage::Revalidate { session, token } => {
                if self.leader.is_some() {
                    let answer = self.revalidate_at_leader(session, from, now);
                    self.core.send_to_follower(
                        from,
                        ServerMessage::Revalidated {
                            session,
                            token,
                            answer,
                        },
                    );
                }
            }
            ServerMessage::Revalidated { token, answer, .. } => {
                self.finish_revalidation(token, answer)
            }
            ServerMessage::SyncDone { session, cxid } => {
                let zxid = self.core.last_applied().as_u64();
                self.answer_forwarded(session, cxid, zxid, Ok(ZkResponse::Synced));
            }
        }
    }

    /// The leader's answer to `server`, where the client of `session` is reconnecting.
    fn revalidate_at_leader(
        &mut self,
        session: SessionId,
        server: NodeId,
        now: LocalTime,
    ) -> Revalidation {
        let Some(leader) = self.leader.as_mut() else {
            return Revalidation::Undecided;
        };
        match leader.tracker.status(session) {
            SessionStatus::Live => {
                leader.tracker.touch(session, now);
                match leader.prepared.sessions().get(&session) {
                    Some(&timeout_ms) => {
                        // The session now belongs to `server`: requests the client left on
                        // the server it came from are refused from here on (see
                        // `leader_process`). Revalidations and forwarded requests of one
                        // server share its FIFO link, so whatever that server forwarded
                        // before is judged before the move.
                        leader.tracker.set_owner(session, server);
                        Revalidation::Live { timeout_ms }
                    }
                    None => Revalidation::Undecided,
                }
            }
            SessionStatus::Closing => Revalidation::Undecided,
            SessionStatus::Gone => Revalidation::Expired,
        }
    }

    fn on_connect(
        &mut self,
        now: LocalTime,
        link: ClientLink,
        session: Option<SessionId>,
        timeout_ms: u64,
        last_zxid_seen: u64,
    ) {
        if self.core.serving() == Serving::Stopped {
            return self.refuse(link, Refusal::NotServing);
        }
        // ZooKeeperServer.processConnectRequest: a client that has seen a later zxid than
        // this server would go back in time here (unless the `zab.reconnect_ignores_last_zxid`
        // ablation is on).
        if last_zxid_seen > self.core.last_applied().as_u64()
            && !self
                .core
                .config()
                .bugs
                .has(ZabBug::ReconnectIgnoresLastZxid)
        {
            return self.refuse(link, Refusal::ServerBehind);
        }
        let timeout = Duration::from_millis(timeout_ms)
            .clamp(self.min_session_timeout, self.max_session_timeout);
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.next_token += 1;
        let token = self.instance.wrapping_add(self.next_token);
        let conn = self.clients.get_mut(&link).expect("known connection");
        match session {
            None => {
                conn.state = ConnState::Creating { token };
                self.creating.insert(token, link);
                let origin = u16::try_from(self.core.me().ordinal()).unwrap_or(u16::MAX);
                let ids = conn.ids.clone();
                self.submit(
                    now,
                    0,
                    token,
                    LeaderRequest::CreateSession { timeout_ms, origin },
                    ids,
                );
            }
            Some(session) => {
                conn.state = ConnState::Revalidating { token, session };
                self.revalidating.insert(token, link);
                if self.leader.is_some() {
                    let me = self.core.me();
                    let answer = self.revalidate_at_leader(session, me, now);
                    self.finish_revalidation(token, answer);
                } else if !self
                    .core
                    .send_to_leader(ServerMessage::Revalidate { session, token })
                {
                    self.refuse(link, Refusal::NotServing);
                }
            }
        }
    }

    fn finish_revalidation(&mut self, token: u64, answer: Revalidation) {
        let Some(link) = self.revalidating.remove(&token) else {
            return;
        };
        let session = match self.clients.get(&link).map(|conn| conn.state) {
            Some(ConnState::Revalidating { session, .. }) => session,
            _ => return,
        };
        match answer {
            Revalidation::Live { timeout_ms } => self.attach(link, session, timeout_ms),
            Revalidation::Expired => self.refuse(link, Refusal::SessionExpired),
            Revalidation::Undecided => self.refuse(link, Refusal::NotServing),
        }
    }

    fn attach(&mut self, link: ClientLink, session: SessionId, timeout_ms: u64) {
        let Some(conn) = self.clients.get_mut(&link) else {
            return;
        };
        conn.state = ConnState::Attached { session };
        if let Some(old) = self.attached.insert(session, link)
            && old != link
        {
            // The client moved to a new connection to this same server.
            self.close_client(old);
            self.attached.insert(session, link);
        }
        self.send_to_client(
            link,
            ClientMessage::Connected {
                session,
                timeout_ms,
            },
        );
    }

    fn on_request(
        &mut self,
        now: LocalTime,
        link: ClientLink,
        session: SessionId,
        xid: u64,
        request: ClientRequest,
    ) {
        if let ClientRequest::AddAuth(info) = &request {
            // Takes effect at once for the requests after it (ZooKeeper handles auth
            // packets on arrival); the answer waits for the replies before it.
            let result = self.add_auth(link, info);
            if result.is_err() {
                // `ZooKeeperServer.processPacket`: an auth packet with an unknown scheme is
                // answered AuthFailed at once and the connection is closed (replies still
                // owed on it are lost); the session stays until it expires.
                let zxid = self.core.last_applied().as_u64();
                self.send_to_client(link, ClientMessage::Reply { xid, zxid, result });
                self.close_client(link);
                return;
            }
            let conn = self.clients.get_mut(&link).expect("known connection");
            if conn.queue.is_empty() {
                let zxid = self.core.last_applied().as_u64();
                self.send_to_client(link, ClientMessage::Reply { xid, zxid, result });
            } else {
                conn.queue.push_back(Queued::Answer(xid, result));
            }
            return;
        }
        let conn = self.clients.get_mut(&link).expect("known connection");
        if request.is_read() {
            if conn.queue.is_empty() {
                self.answer_read(link, xid, &request);
            } else {
                conn.queue.push_back(Queued::Read(xid, request));
            }
            return;
        }
        let shape = match request {
            ClientRequest::Create2(_) => ReplyShape::WithStat,
            _ => ReplyShape::Plain,
        };
        conn.queue.push_back(Queued::Forwarded(xid, shape));
        let ids = conn.ids.clone();
        let request = match request {
            ClientRequest::Write(op) | ClientRequest::Create2(op) => LeaderRequest::Write(op),
            ClientRequest::Multi(ops) => LeaderRequest::Multi(ops),
            ClientRequest::Sync { .. } => LeaderRequest::Sync,
            ClientRequest::CloseSession => LeaderRequest::CloseSession,
            ClientRequest::GetData { .. }
            | ClientRequest::Exists { .. }
            | ClientRequest::GetChildren { .. }
            | ClientRequest::GetAcl { .. }
            | ClientRequest::GetEphemerals { .. }
            | ClientRequest::GetAllChildrenNumber { .. }
            | ClientRequest::AddWatch { .. }
            | ClientRequest::RemoveWatches { .. }
            | ClientRequest::MultiRead(_)
            | ClientRequest::AddAuth(_) => unreachable!("reads and auth handled above"),
        };
        self.submit(now, session, xid, request, ids);
    }

    fn submit(
        &mut self,
        now: LocalTime,
        session: SessionId,
        cxid: u64,
        request: LeaderRequest,
        auth: AuthIds,
    ) {
        if self.leader.is_some() {
            let me = self.core.me();
            self.leader_process(now, me, session, cxid, request, &auth);
        } else {
            // Not in broadcast: the request is lost with the connection (the server closes
            // client connections when it stops serving).
            self.core.send_to_leader(ServerMessage::Forward {
                session,
                cxid,
                request,
                auth,
            });
        }
    }

    fn answer_read(&mut self, link: ClientLink, xid: u64, request: &ClientRequest) {
        let tree = self.core.machine();
        let Some(conn) = self.clients.get(&link) else {
            return;
        };
        let ids = &conn.ids;
        let result = match request {
            ClientRequest::GetData { path, watch } => {
                let result = tree.get_data(path, ids);
                if *watch && result.is_ok() {
                    self.watches.watch_data(path, link);
                }
                result
            }
            ClientRequest::Exists { path, watch } => {
                let result = tree.exists(path);
                if *watch && result.is_ok() {
                    self.watches.watch_data(path, link);
                }
                result
            }
            ClientRequest::GetChildren { path, watch } => {
                let mut result = tree.get_children(path, ids);
                if let Ok(ZkResponse::Children { children, .. }) = &mut result {
                    self.children_order.arrange(children);
                }
                if *watch && result.is_ok() {
                    self.watches.watch_children(path, link);
                }
                result
            }
            ClientRequest::GetAcl { path } => tree.get_acl(path, ids),
            ClientRequest::GetEphemerals { prefix } => match conn.state {
                ConnState::Attached { session } => Ok(tree.get_ephemerals(session, prefix)),
                _ => Err(ZkError::SessionExpired),
            },
            ClientRequest::GetAllChildrenNumber { path } => tree.get_all_children_number(path, ids),
            // `FinalRequestProcessor`: addWatch registers and answers OK whether or not the
            // node exists; removeWatches answers NoWatcher when the connection had none.
            ClientRequest::AddWatch { path, mode } => {
                self.watches.watch_persistent(path, *mode, link);
                Ok(ZkResponse::WatchAdded)
            }
            ClientRequest::RemoveWatches { path, kind } => {
                match self.watches.remove(path, *kind, link) {
                    true => Ok(ZkResponse::WatchesRemoved),
                    false => Err(ZkError::NoWatcher),
                }
            }
            ClientRequest::MultiRead(ops) => Ok(self.multi_read(ops, ids)),
            _ => Err(ZkError::BadArguments),
        };
        let zxid = self.core.last_applied().as_u64();
        self.send_to_client(link, ClientMessage::Reply { xid, zxid, result });
    }

    /// A `multiRead`, as ZooKeeper's `FinalRequestProcessor` answers it: every read on the
    /// same tree (no write applies in between), each answering its own error
    /// (`ErrorResult`) while the others still answer; a `getChildren` answers the names
    /// alone (`GetChildrenResult`), and no read sets a watch.
    fn multi_read(&self, ops: &[MultiReadOp], ids: &AuthIds) -> ZkResponse {
        let tree = self.core.machine();
        let results = ops
            .iter()
            .map(|op| match op {
                MultiReadOp::GetData { path } => tree.get_data(path, ids),
                MultiReadOp::GetChildren { path } => match tree.get_children(path, ids) {
                    Ok(ZkResponse::Children { mut children, .. }) => {
                        self.children_order.arrange(&mut children);
                        Ok(ZkResponse::ChildNames { children })
                    }
                    other => other,
                },
            })
            .collect();
        ZkResponse::MultiRead { results }
    }

    /// Answers the write at the head of the session's queue, then the reads behind it.
    fn answer_forwarded(
        &mut self,
        session: SessionId,
        cxid: u64,
        zxid: u64,
        result: Result<ZkResponse, ZkError>,
    ) {
        let Some(&link) = self.attached.get(&session) else {
            return;
        };
        let Some(conn) = self.clients.get_mut(&link) else {
            return;
        };
        let shape = match conn.queue.front() {
            Some(Queued::Forwarded(xid, shape)) if *xid == cxid => {
                let shape = *shape;
                conn.queue.pop_front();
                shape
            }
            // Asked through another connection (the client moved): not ours to answer.
            _ => return,
        };
        let result = shape.shape(result);
        self.send_to_client(
            link,
            ClientMessage::Reply {
                xid: cxid,
                zxid,
                result,
            },
        );
        while let Some(conn) = self.clients.get_mut(&link) {
            match conn.queue.front() {
                Some(Queued::Read(..)) => {
                    let Some(Queued::Read(xid, request)) = conn.queue.pop_front() else {
                        unreachable!("front is a read")
                    };
                    self.answer_read(link, xid, &request);
                }
                Some(Queued::Answer(..)) => {
                    let Some(Queued::Answer(xid, result)) = conn.queue.pop_front() else {
                        unreachable!("front is an answer")
                    };
                    self.send_to_client(link, ClientMessage::Reply { xid, zxid, result });
                }
                _ => break,
            }
        }
    }

    /// A request of `session` was refused because the session moved to another server: if
    /// the connection that sent it is still open here, close it without an answer (the
    /// client sees a connection loss), as ZooKeeper's `FinalRequestProcessor` does for a
    /// `SessionMovedException` — the client has, in all likelihood, already left it.
    fn close_moved(&mut self, session: SessionId, cxid: u64) {
        let Some(&link) = self.attached.get(&session) else {
            return;
        };
        let sent_here = self.clients.get(&link).is_some_and(
            |conn| matches!(conn.queue.front(), Some(Queued::Forwarded(xid, _)) if *xid == cxid),
        );
        if sent_here {
            self.close_client(link);
        }
    }

    fn set_watches(
        &mut self,
        link: ClientLink,
        relative_zxid: u64,
        data: &[String],
        exist: &[String],
        child: &[String],
    ) {
        // ZooKeeper's setWatches: fire at once for changes after what the client has seen,
        // register the rest.
        let tree = self.core.machine();
        let last = self.core.last_applied().as_u64();
        let mut events: Vec<(u64, String, WatchEventType)> = Vec::new();
        for path in data {
            match tree.node(path).map(|node| node.stat()) {
                None => events.push((last, path.clone(), WatchEventType::NodeDeleted)),
                Some(stat) if stat.mzxid > relative_zxid => {
                    events.push((stat.mzxid, path.clone(), WatchEventType::NodeDataChanged))
                }
                Some(_) => self.watches.watch_data(path, link),
            }
        }
        for path in exist {
            match tree.node(path).map(|node| node.stat()) {
                Some(stat) => events.push((stat.czxid, path.clone(), WatchEventType::NodeCreated)),
                None => self.watches.watch_data(path, link),
            }
        }
        for path in child {
            match tree.node(path).map(|node| node.stat()) {
                None => events.push((last, path.clone(), WatchEventType::NodeDeleted)),
                Some(stat) if stat.pzxid > relative_zxid => events.push((
                    stat.pzxid,
                    path.clone(),
                    WatchEventType::NodeChildrenChanged,
                )),
                Some(_) => self.watches.watch_children(path, link),
            }
        }
        events.sort();
        for (zxid, path, event) in events {
            self.send_to_client(link, ClientMessage::WatchEvent { path, event, zxid });
        }
    }

    fn leader_process(
        &mut self,
        now: LocalTime,
        origin: NodeId,
        session: SessionId,
        cxid: u64,
        request: LeaderRequest,
        ids: &AuthIds,
    ) {
        let sync_not_quorum = self.core.config().bugs.has(ZabBug::SyncNotQuorum);
        let width = self.sequence_width;
        let Some(leader) = &mut self.leader else {
            return;
        };
        let body = match request {
            LeaderRequest::CreateSession { timeout_ms, origin } => {
                TxnBody::CreateSession { timeout_ms, origin }
            }
            _ if !leader.tracker.touch(session, now) => TxnBody::Error(ZkError::SessionExpired),
            // A client gives up on a connection (connection loss: outcome unknown) and
            // resumes its session through another server, then goes on. A request it had
            // sent on the old connection can still be sitting at the old server (paused,
            // slow) and be forwarded afterwards; applying it then would apply it after the
            // client's later, acknowledged requests — out of the session's order, undoing
            // what the client did since (zab_safety seed 0x18884: the client deleted its
            // ephemeral node, then its stale create made it again). ZooKeeper's leader
            // refuses such a request: the session's owner is the server it last attached
            // through (`checkSession` throws `SessionMovedException`), and the old server
            // closes the connection. Closing a session is not checked, as in ZooKeeper: it
            // is the session's last request, and the expirer sends it without owning it.
            LeaderRequest::Write(_) | LeaderRequest::Multi(_) | LeaderRequest::Sync
                if !leader.tracker.check_owner(session, origin) =>
            {
                TxnBody::SessionMoved
            }
            LeaderRequest::Write(op) => prep::prepare(&leader.prepared, session, ids, &op, width)
                .unwrap_or_else(TxnBody::Error),
            LeaderRequest::Multi(ops) => {
                prep::prepare_multi(&leader.prepared, session, ids, &ops, width)
            }
            LeaderRequest::Sync => {
                // As ZooKeeper's `Leader.processSync`: no proposal and no zxid; the answer
                // goes to the follower once every proposal before the sync is committed,
                // after those COMMITs on the same FIFO link, so the follower has applied
                // them when it answers. ZooKeeper asks no quorum (ZOOKEEPER-1675, the
                // `zab.sync_not_quorum` bug); the model also waits until a quorum answers
                // a ping sent after the sync arrived, so a deposed leader cannot answer.
                let after = self.core.last_proposed().unwrap_or(Zxid::ZERO);
                let leadership = if sync_not_quorum {
                    None
                } else {
                    match self.core.confirm_leadership() {
                        Some(check) => Some(check),
                        // Not an established leader: nothing to answer with.
                        None => return,
                    }
                };
                let Some(leader) = &mut self.leader else {
                    return;
                };
                leader.pending_syncs.push(PendingSync {
                    after,
                    leadership,
                    origin,
                    session,
                    cxid,
                });
                self.release_syncs(now);
                return;
            }
            LeaderRequest::CloseSession => {
                leader.tracker.mark_closing(session);
                TxnBody::CloseSession {
                    reason: CloseReason::Closed,
                }
            }
        };
        self.propose(now, Txn::new(session, cxid, body));
    }

    fn propose(&mut self, now: LocalTime, txn: Txn) {
        // Stamped as ZooKeeper's `TxnHeader.time`: the times a stat shows are the leader's.
        let txn = txn.at(now.as_nanos() / 1_000_000);
        let Ok(zxid) = self.core.propose(now, txn) else {
            return;
        };
        let Some(leader) = &mut self.leader else {
            return;
        };
        let entry = self.core.log().last().expect("just proposed");
        let outcome = crate::zab::StateMachine::apply(&mut leader.prepared, zxid, &entry.txn);
        if let TxnResult::SessionCreated {
            session,
            timeout_ms,
        } = outcome.result
        {
            let owner = match entry.txn.body() {
                TxnBody::CreateSession { origin, .. } => Some(NodeId::server((*origin).into())),
                _ => None,
            };
            leader.tracker.add(session, timeout_ms, owner, now);
        }
    }

    fn release_syncs(&mut self, _now: LocalTime) {
        let handled = self.handled_upto.min(self.core.committed());
        let Some(leader) = &mut self.leader else {
            return;
        };
        if leader.pending_syncs.is_empty() {
            return;
        }
        let core = &self.core;
        let (ready, waiting): (Vec<PendingSync>, Vec<PendingSync>) =
            leader.pending_syncs.drain(..).partition(|sync| {
                sync.after <= handled
                    && sync
                        .leadership
                        .as_ref()
                        .is_none_or(|check| core.leadership_confirmed(check))
            });
        leader.pending_syncs = waiting;
        let me = self.core.me();
        for sync in ready {
            if sync.origin == me {
                let zxid = self.core.last_applied().as_u64();
                self.answer_forwarded(sync.session, sync.cxid, zxid, Ok(ZkResponse::Synced));
            } else {
                self.core.send_to_follower(
                    sync.origin,
                    ServerMessage::SyncDone {
                        session: sync.session,
                        cxid: sync.cxid,
                    },
                );
            }
        }
    }

    fn housekeeping(&mut self, now: LocalTime) {
        self.delete_empty_containers(now);
        if let Some(leader) = &mut self.leader {
            let expired = leader.tracker.expired(now);
            for session in expired {
                let Some(leader) = &mut self.leader else {
                    return;
                };
                leader.tracker.mark_closing(session);
                self.propose(
                    now,
                    Txn::new(
                        session,
                        0,
                        TxnBody::CloseSession {
                            reason: CloseReason::Expired,
                        },
                    ),
                );
            }
        } else if !self.touched.is_empty() && self.core.serving() != Serving::Stopped {
            let sessions: Vec<SessionId> = std::mem::take(&mut self.touched).into_iter().collect();
            self.core.send_to_leader(ServerMessage::Touch { sessions });
        }
    }

    /// The leader's `ContainerManager`: every check interval, a delete (of no session,
    /// answered to no one) for each container that has had children and has none, judged
    /// on the prepared tree, so a delete is never proposed twice.
    fn delete_empty_containers(&mut self, now: LocalTime) {
        let interval = self.container_check_interval;
        let Some(leader) = &mut self.leader else {
            return;
        };
        if now < leader.next_container_check {
            return;
        }
        leader.next_container_check = now + interval;
        for path in leader.prepared.empty_containers() {
            self.propose(now, Txn::new(0, 0, TxnBody::Delete { path }));
        }
    }

    fn touch(&mut self, session: SessionId, now: LocalTime) {
        match &mut self.leader {
            Some(leader) => {
                leader.tracker.touch(session, now);
            }
            None => {
                self.touched.insert(session);
            }
        }
    }

    fn send_to_client(&mut self, link: ClientLink, message: ClientMessage) {
        self.effects.push(ServerEffect::ToClient { link, message });
    }

    fn refuse(&mut self, link: ClientLink, reason: Refusal) {
        self.send_to_client(link, ClientMessage::Refused { reason });
        self.close_client(link);
    }

    fn close_client(&mut self, link: ClientLink) {
        if self.forget_client(link) {
            self.effects.push(ServerEffect::CloseClient { link });
        }
    }

    /// Drops a connection's state; false if it was unknown.
    fn forget_client(&mut self, link: ClientLink) -> bool {
        let Some(conn) = self.clients.remove(&link) else {
            return false;
        };
        match conn.state {
            ConnState::Attached { session } => {
                if self.attached.get(&session) == Some(&link) {
                    self.attached.remove(&session);
                }
            }
            ConnState::Creating { token } => {
                self.creating.remove(&token);
            }
            ConnState::Revalidating { token, .. } => {
                self.revalidating.remove(&token);
            }
            ConnState::AwaitingConnect => {}
        }
        self.watches.remove_connection(link);
        true
    }
}
