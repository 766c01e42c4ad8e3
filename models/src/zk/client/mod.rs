//! The ZooKeeper client: one session, attached to one server at a time.
//!
//! - Reads are answered by the attached server from its own state (sequentially
//!   consistent, possibly stale); `sync` then read catches up with the leader.
//! - On connection loss (broken connection, or nothing heard for 2/3 of the session
//!   timeout) every pending operation fails with [`ZkClientError::ConnectionLoss`] — its
//!   outcome is unknown — and the client reconnects to another server, keeping its
//!   session if the leader still has it, and re-registers its watches there.
//! - When the session is gone (the leader expired it) the client learns it on reconnect
//!   and every operation fails with [`ZkClientError::SessionExpired`]. Opt-in
//!   ([`SessionExpiry::AfterDisconnectedTimeout`]), the client also gives its session up by
//!   itself after a session timeout without a connection, as Curator does, whatever the
//!   servers still hold.
//! - A server that has applied less than the client has seen refuses it, so a client
//!   never goes back in time when it fails over.
//!
//! Every operation's invocation and completion go to the run's history (as ZooKeeper
//! operations), as do session and watch events ([`ZkEvent`]).

mod connection;
mod multi_read;
mod protected;
mod watchers;

pub use protected::{FoundNode, ProtectedCreate};
pub use watchers::PersistentWatcher;

use connection::run_connection;

use super::{
    acl::NodeAcl,
    path::{self, TrailingSlash},
    prep::WriteOp,
    txn::SessionId,
    wire::{AuthInfo, ClientMessage, ClientRequest, MultiReadOp},
};
use serde::{Deserialize, Serialize};
use sim::{
    NodeContext, NodeId,
    history::{
        OpError, OpId, OpResult, Operation, Response,
        zk::{
            Acl, AddWatchMode, CreateMode, Stat, WatchEventType, WatchKind, ZkError, ZkEvent,
            ZkOperation, ZkResponse,
        },
    },
    net::{Connection, StreamNetwork},
};
use std::{
    collections::BTreeMap,
    fmt,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

/// Client settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkClientConfig {
    /// The ensemble's servers (tried in a random order, then round-robin).
    pub servers: Vec<NodeId>,
    /// Requested session timeout (the server may clamp it).
    pub session_timeout: Duration,
    /// The logical process recorded in the history for this client's operations.
    pub process: u32,
    /// How long [`ZkClient::connect`] keeps trying before giving up.
    pub connect_patience: Duration,
    /// Whether the client also declares its session expired by itself.
    pub expiry: SessionExpiry,
    /// The width of the servers' sequence counters, by which recipes order sequential
    /// nodes (32 bits, as in ZooKeeper, unless the ensemble narrows it).
    pub sequence_width: super::SequenceWidth,
    /// Credentials added to every connection from the start (Curator's `authorization`;
    /// [`ZkClient::add_auth`] adds more).
    pub auth: Vec<AuthInfo>,
    /// The ACL of nodes [`ZkClient::create`] makes (Curator's `ACLProvider`): open by
    /// default; [`NodeAcl::creator_all`] needs `auth`.
    pub create_acl: NodeAcl,
}

/// Who tells the client that its session is over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionExpiry {
    /// Only a server (ZooKeeper's own client): the client learns of the expiry when it
    /// reconnects, after the leader has closed the session and deleted its ephemerals.
    #[default]
    ToldByServer,
    /// Also the client's own clock: after a whole session timeout without a connection it
    /// gives the session up (records `SessionAbandoned`, fails its calls with
    /// [`ZkClientError::SessionExpired`]) — Curator's simulated session expiration
    /// (`ConnectionStateManager`, the standard `ConnectionHandlingPolicy`). The servers may
    /// still hold the session and its ephemeral nodes: a new leader gives every session a
    /// fresh timeout, and a quorum lost expires nothing.
    AfterDisconnectedTimeout,
}

impl ZkClientConfig {
    /// A client of `servers` with a 2 s session timeout.
    pub fn new(servers: Vec<NodeId>, process: u32) -> Self {
        Self {
            servers,
            session_timeout: Duration::from_secs(2),
            process,
            connect_patience: Duration::from_secs(30),
            expiry: SessionExpiry::ToldByServer,
            sequence_width: super::SequenceWidth::ZOOKEEPER,
            auth: Vec::new(),
            create_acl: NodeAcl::Open,
        }
    }
}

/// Why an operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZkClientError {
    /// A definite failure: the operation did not take effect.
    Api(ZkError),
    /// The connection was lost while the operation was pending: it may or may not have
    /// taken effect.
    ConnectionLoss,
    /// The session expired: its ephemeral nodes are gone and it cannot be used again.
    SessionExpired,
    /// Authentication failed (`addAuth` with a scheme the server does not know): the
    /// server closed the connection and the client is done, as `zookeeper-client` 0.11's
    /// terminal `SessionState::AuthFailed` (and Java's `AUTH_FAILED`). The servers keep the
    /// session until it expires.
    AuthFailed,
    /// The client was closed.
    Closed,
    /// The configuration names no server.
    NoServers,
    /// The configuration names a node that is not a server of this world.
    UnknownServer(NodeId),
}

impl fmt::Display for ZkClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZkClientError::Api(error) => write!(f, "{error:?}"),
            ZkClientError::ConnectionLoss => write!(f, "connection loss (outcome unknown)"),
            ZkClientError::SessionExpired => write!(f, "session expired"),
            ZkClientError::AuthFailed => write!(f, "authentication failed"),
            ZkClientError::Closed => write!(f, "client closed"),
            ZkClientError::NoServers => write!(f, "no servers configured"),
            ZkClientError::UnknownServer(node) => {
                write!(f, "{node} is not a server of this world")
            }
        }
    }
}

impl std::error::Error for ZkClientError {}

/// A watch event as the client sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchedEvent {
    /// The watched path.
    pub path: String,
    /// What happened.
    pub event: WatchEventType,
    /// The change's zxid.
    pub zxid: u64,
}

/// The watch will never fire: its session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchLost;

impl fmt::Display for WatchLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the watch's session ended before it fired")
    }
}

impl std::error::Error for WatchLost {}

/// A one-shot watch set by a read.
#[derive(Debug)]
pub struct Watch {
    receiver: async_channel::Receiver<WatchedEvent>,
    /// The registering read.
    pub op_id: OpId,
    /// The kind of watch.
    pub kind: WatchKind,
    /// The watched path.
    path: String,
    /// The client, to remove the watch by (`remove`).
    client: watchers::ClientHandle,
}

impl Watch {
    /// Waits for the watch to fire.
    pub async fn fired(self) -> Result<WatchedEvent, WatchLost> {
        self.wait().await
    }

    /// Waits for the watch to fire without giving it up: a caller that stops waiting (a
    /// timeout) keeps the watch set, and may wait for it again.
    pub async fn wait(&self) -> Result<WatchedEvent, WatchLost> {
        self.receiver.recv().await.map_err(|_| WatchLost)
    }
}

type CallOutcome = Result<(ZkResponse, Option<Watch>), ZkClientError>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WatchRequest {
    Data,
    Exists,
    Children,
    /// `addWatch`.
    Persistent(AddWatchMode),
}

struct PendingCall {
    op_id: Option<OpId>,
    reply: async_channel::Sender<CallOutcome>,
    watch: Option<(String, WatchRequest)>,
}

struct Registration {
    op_id: OpId,
    sender: async_channel::Sender<WatchedEvent>,
}

enum Phase {
    Connecting,
    Connected {
        connection: Connection<ClientMessage>,
    },
    Expired,
    /// Terminal: the server refused the client's credentials and closed the connection.
    AuthFailed,
    Closed,
}

struct ClientState {
    phase: Phase,
    session: Option<SessionId>,
    timeout_ms: u64,
    last_zxid: u64,
    next_xid: u64,
    pending: BTreeMap<u64, PendingCall>,
    waiting_for_connection: Vec<async_channel::Sender<()>>,
    watches: BTreeMap<(String, WatchKind), Vec<Registration>>,
    /// Protected creates made so far (part of each GUID).
    protected_creates: u64,
    /// Credentials sent with every connection (the configured ones, then `addAuth`s).
    auth: Vec<AuthInfo>,
    /// Set when the current attachment to a server ends (connection lost, session expired,
    /// client closed); a fresh one for each attachment.
    attachment: sim::signal::Signal,
}

struct Shared {
    context: NodeContext,
    network: StreamNetwork<ClientMessage>,
    config: ZkClientConfig,
    state: Mutex<ClientState>,
}

/// A ZooKeeper client session. Cheap to clone; clones share the session.
#[derive(Clone)]
pub struct ZkClient {
    shared: Arc<Shared>,
}

impl fmt::Debug for ZkClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZkClient")
            .field("node", &self.shared.context.id())
            .field("process", &self.shared.config.process)
            .field("session", &self.session_id())
            .finish()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ClientState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn record_zk(&self, event: ZkEvent) {
        self.context.history().zk(event);
    }

    fn complete(&self, op_id: Option<OpId>, result: OpResult) {
        if let Some(op_id) = op_id {
            self.context.history().complete(op_id, result);
        }
    }
}

fn ok(response: &ZkResponse) -> OpResult {
    OpResult::Ok {
        response: Response::Zk(response.clone()),
    }
}

fn failed(error: ZkError) -> OpResult {
    OpResult::Fail {
        error: OpError::Zk(error),
    }
}

fn unknown(reason: &str) -> OpResult {
    OpResult::Unknown {
        reason: reason.to_string(),
    }
}

impl ZkClient {
    /// Opens a session through one of `config.servers`, from a task on the client node
    /// `context`. Keeps trying for `config.connect_patience`.
    pub async fn connect(
        context: &NodeContext,
        network: StreamNetwork<ClientMessage>,
        config: ZkClientConfig,
    ) -> Result<ZkClient, ZkClientError> {
        if config.servers.is_empty() {
            return Err(ZkClientError::NoServers);
        }
        let world = context.sim().config();
        if let Some(&node) = config
            .servers
            .iter()
            .find(|node| !node.is_server() || !world.contains(**node))
        {
            return Err(ZkClientError::UnknownServer(node));
        }
        let timeout_ms = u64::try_from(config.session_timeout.as_millis()).unwrap_or(u64::MAX);
        let patience = config.connect_patience;
        let auth = config.auth.clone();
        let shared = Arc::new(Shared {
            context: context.clone(),
            network,
            config,
            state: Mutex::new(ClientState {
                phase: Phase::Connecting,
                session: None,
                timeout_ms,
                last_zxid: 0,
                next_xid: 0,
                pending: BTreeMap::new(),
                waiting_for_connection: Vec::new(),
                watches: BTreeMap::new(),
                protected_creates: 0,
                auth,
                attachment: sim::signal::Signal::new(),
            }),
        });
        let client = ZkClient { shared };
        sim::task::spawn_local(run_connection(client.shared.clone()));
        match client.wait_for_connection(patience).await {
            Ok(()) => Ok(client),
            Err(error) => {
                client.shut_down();
                Err(error)
            }
        }
    }

    /// The session id, once established.
    pub fn session_id(&self) -> Option<SessionId> {
        self.shared.lock().session
    }

    /// The negotiated session timeout.
    pub fn session_timeout(&self) -> Duration {
        Duration::from_millis(self.shared.lock().timeout_ms)
    }

    /// Whether the session is known to have expired (or, with
    /// [`SessionExpiry::AfterDisconnectedTimeout`], the client gave it up).
    pub fn is_expired(&self) -> bool {
        matches!(self.shared.lock().phase, Phase::Expired)
    }

    /// Whether the client is done because its authentication failed
    /// ([`ZkClientError::AuthFailed`]).
    pub fn is_auth_failed(&self) -> bool {
        matches!(self.shared.lock().phase, Phase::AuthFailed)
    }

    /// Whether the client was closed (by [`close`](Self::close) or a failed connect).
    pub fn is_closed(&self) -> bool {
        matches!(self.shared.lock().phase, Phase::Closed)
    }

    /// Whether the client is attached to a server right now.
    pub fn is_connected(&self) -> bool {
        matches!(self.shared.lock().phase, Phase::Connected { .. })
    }

    /// The logical process this client records as.
    pub fn process(&self) -> u32 {
        self.shared.config.process
    }

    /// The width of the servers' sequence counters, to order sequential nodes by.
    pub fn sequence_width(&self) -> super::SequenceWidth {
        self.shared.config.sequence_width
    }

    /// The newest zxid this client has seen.
    pub fn last_zxid_seen(&self) -> u64 {
        self.shared.lock().last_zxid
    }

    async fn wait_for_connection(&self, patience: Duration) -> Result<(), ZkClientError> {
        let clock = self.shared.context.clock().clone();
        let deadline = clock.now() + patience;
        loop {
            let receiver = {
                let mut state = self.shared.lock();
                match state.phase {
                    Phase::Connected { .. } => return Ok(()),
                    Phase::Expired => return Err(ZkClientError::SessionExpired),
                    Phase::AuthFailed => return Err(ZkClientError::AuthFailed),
                    Phase::Closed => return Err(ZkClientError::Closed),
                    Phase::Connecting => {
                        let (sender, receiver) = async_channel::bounded(1);
                        state.waiting_for_connection.push(sender);
                        receiver
                    }
                }
            };
            let left = deadline.saturating_duration_since(clock.now());
            if left.is_zero() || clock.timeout(left, receiver.recv()).await.is_err() {
                return Err(ZkClientError::ConnectionLoss);
            }
        }
    }

    /// Completes once the client is attached to a server (at once if it is now), or with
    /// the error of the terminal state it reached instead (`SessionExpired`, `AuthFailed`,
    /// `Closed`). Never gives up by itself: the `zookeeper-client` drop-in's state watcher
    /// waits on it to report `SyncConnected` after a `Disconnected`.
    pub async fn attached(&self) -> Result<(), ZkClientError> {
        loop {
            let receiver = {
                let mut state = self.shared.lock();
                match state.phase {
                    Phase::Connected { .. } => return Ok(()),
                    Phase::Expired => return Err(ZkClientError::SessionExpired),
                    Phase::AuthFailed => return Err(ZkClientError::AuthFailed),
                    Phase::Closed => return Err(ZkClientError::Closed),
                    Phase::Connecting => {
                        let (sender, receiver) = async_channel::bounded(1);
                        state.waiting_for_connection.push(sender);
                        receiver
                    }
                }
            };
            // A dropped sender (the client shut down) is a wake-up too: the phase says why.
            let _ = receiver.recv().await;
        }
    }

    fn shut_down(&self) {
        let mut state = self.shared.lock();
        if let Phase::Connected { connection } = &state.phase {
            connection.close();
        }
        if !matches!(state.phase, Phase::Expired | Phase::AuthFailed) {
            state.phase = Phase::Closed;
        }
        state.attachment.set();
        state.waiting_for_connection.clear();
    }

    /// Completes when the client stops being attached to a server: its connection is lost,
    /// its session expires, or it is closed. At once if it is not attached now. Recipes
    /// use it to stop trusting what they hold: while disconnected, the client cannot know
    /// whether its session still lives (Curator's SUSPENDED state).
    pub async fn connection_interrupted(&self) {
        let attachment = {
            let state = self.shared.lock();
            match state.phase {
                Phase::Connected { .. } => state.attachment.clone(),
                _ => return,
            }
        };
        attachment.wait().await;
    }

    /// Sends a request and waits for its outcome. Invocation is recorded here (if
    /// `operation` is given); completion by whoever learns the outcome.
    async fn call(
        &self,
        operation: Option<Operation>,
        request: ClientRequest,
        mut watch: Option<(String, WatchRequest)>,
    ) -> CallOutcome {
        let shared = &self.shared;
        let op_id = operation.map(|operation| {
            shared
                .context
                .history()
                .invoke(shared.config.process, operation)
        });
        if let Err(error) = validate(&request) {
            shared.complete(op_id, failed(error.clone()));
            return Err(ZkClientError::Api(error));
        }
        let timeout = self.session_timeout();
        let mut request = Some(request);
        enum Step {
            WaitForConnection(async_channel::Receiver<()>),
            AwaitReply(async_channel::Receiver<CallOutcome>),
            Done(CallOutcome),
        }
        loop {
            // Decide under the lock, await outside it.
            let step = {
                let mut state = shared.lock();
                match &state.phase {
                    Phase::Expired => {
                        shared.complete(op_id, failed(ZkError::SessionExpired));
                        Step::Done(Err(ZkClientError::SessionExpired))
                    }
                    Phase::Closed => {
                        shared.complete(op_id, failed(ZkError::SessionExpired));
                        Step::Done(Err(ZkClientError::Closed))
                    }
                    Phase::AuthFailed => {
                        shared.complete(op_id, failed(ZkError::AuthFailed));
                        Step::Done(Err(ZkClientError::AuthFailed))
                    }
                    Phase::Connected { connection } => {
                        let connection = connection.clone();
                        if connection.is_broken() {
                            // Closing: the connection manager is still reading what the
                            // server sent before the close (watch events, replies), after
                            // which it reconnects. This request was not sent; wait for the
                            // next connection.
                            let (sender, waiter) = async_channel::bounded(1);
                            state.waiting_for_connection.push(sender);
                            Step::WaitForConnection(waiter)
                        } else {
                            state.next_xid += 1;
                            let xid = state.next_xid;
                            let (sender, receiver) = async_channel::bounded(1);
                            state.pending.insert(
                                xid,
                                PendingCall {
                                    op_id,
                                    reply: sender,
                                    watch: watch.take(),
                                },
                            );
                            let request = request.take().expect("sent once");
                            match connection.send(ClientMessage::Request { xid, request }) {
                                Ok(()) => Step::AwaitReply(receiver),
                                Err(_) => {
                                    state.pending.remove(&xid);
                                    shared.complete(op_id, unknown("connection loss"));
                                    Step::Done(Err(ZkClientError::ConnectionLoss))
                                }
                            }
                        }
                    }
                    Phase::Connecting => {
                        // ZooKeeper queues requests while reconnecting; give up after a
                        // session timeout.
                        let (sender, waiter) = async_channel::bounded(1);
                        state.waiting_for_connection.push(sender);
                        Step::WaitForConnection(waiter)
                    }
                }
            };
            match step {
                Step::Done(outcome) => return outcome,
                Step::AwaitReply(receiver) => {
                    return receiver
                        .recv()
                        .await
                        .unwrap_or(Err(ZkClientError::ConnectionLoss));
                }
                Step::WaitForConnection(waiter) => {
                    let clock = shared.context.clock();
                    if clock.timeout(timeout, waiter.recv()).await.is_err() {
                        shared.complete(op_id, unknown("connection loss: no server"));
                        return Err(ZkClientError::ConnectionLoss);
                    }
                }
            }
        }
    }

    async fn write(
        &self,
        operation: ZkOperation,
        op: WriteOp,
    ) -> Result<ZkResponse, ZkClientError> {
        self.call(
            Some(Operation::Zk(operation)),
            ClientRequest::Write(op),
            None,
        )
        .await
        .map(|(response, _)| response)
    }

    /// The ACL [`Self::create`] gives new nodes ([`ZkClientConfig::create_acl`]), for the
    /// creates of a [`Self::multi`].
    pub fn create_acl(&self) -> NodeAcl {
        self.shared.config.create_acl.clone()
    }

    /// Creates a node with the configured ACL ([`ZkClientConfig::create_acl`]); returns its
    /// actual path (with the sequence suffix if sequential).
    pub async fn create(
        &self,
        path: &str,
        data: &str,
        mode: CreateMode,
    ) -> Result<String, ZkClientError> {
        let acl = self.shared.config.create_acl.clone();
        self.create_with_acl(path, data, mode, acl).await
    }

    /// Creates a node with `acl` (the history records the create as [`Self::create`] does;
    /// `getACL` shows the ACL).
    pub async fn create_with_acl(
        &self,
        path: &str,
        data: &str,
        mode: CreateMode,
        acl: NodeAcl,
    ) -> Result<String, ZkClientError> {
        let response = self
            .write(
                ZkOperation::Create {
                    path: path.into(),
                    data: data.into(),
                    mode,
                },
                WriteOp::Create {
                    path: path.into(),
                    data: data.into(),
                    mode,
                    acl,
                },
            )
            .await?;
        match response {
            ZkResponse::Created { path } => Ok(path),
            _ => Err(ZkClientError::ConnectionLoss),
        }
    }

    /// Creates a node with the configured ACL and returns its actual path and its stat
    /// (ZooKeeper's `create2`; `zookeeper-client` 0.11's `create` always asks this way).
    /// Recorded as a create whose response carries the stat
    /// ([`ZkResponse::CreatedWithStat`]).
    pub async fn create2(
        &self,
        path: &str,
        data: &str,
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkClientError> {
        let acl = self.shared.config.create_acl.clone();
        self.create2_with_acl(path, data, mode, acl).await
    }

    /// [`Self::create2`] with `acl` (the `zookeeper-client` drop-in's `create`, whose
    /// options carry the ACL); recorded as [`Self::create2`] is.
    pub async fn create2_with_acl(
        &self,
        path: &str,
        data: &str,
        mode: CreateMode,
        acl: NodeAcl,
    ) -> Result<(String, Stat), ZkClientError> {
        let (response, _) = self
            .call(
                Some(Operation::Zk(ZkOperation::Create {
                    path: path.into(),
                    data: data.into(),
                    mode,
                })),
                ClientRequest::Create2(WriteOp::Create {
                    path: path.into(),
                    data: data.into(),
                    mode,
                    acl,
                }),
                None,
            )
            .await?;
        match response {
            ZkResponse::CreatedWithStat { path, stat } => Ok((path, stat)),
            _ => Err(ZkClientError::ConnectionLoss),
        }
    }

    /// Deletes a node without children if its version matches (`None`: any).
    pub async fn delete(&self, path: &str, version: Option<i32>) -> Result<(), ZkClientError> {
        self.write(
            ZkOperation::Delete {
                path: path.into(),
                version,
            },
            WriteOp::Delete {
                path: path.into(),
                version,
            },
        )
        .await
        .map(|_| ())
    }

    /// Replaces a node's ACL if its ACL version (`aversion`) matches (`None`: any); returns
    /// the new ACL version and the node's stat. Needs ADMIN on the node; `auth` entries
    /// become the session's ids.
    pub async fn set_acl(
        &self,
        path: &str,
        acl: Vec<Acl>,
        version: Option<i32>,
    ) -> Result<(i32, Stat), ZkClientError> {
        let response = self
            .write(
                ZkOperation::SetAcl {
                    path: path.into(),
                    acl: acl.clone(),
                    version,
                },
                WriteOp::SetAcl {
                    path: path.into(),
                    acl: NodeAcl::List(acl.into()),
                    version,
                },
            )
            .await?;
        match response {
            ZkResponse::AclSet { aversion, stat } => Ok((aversion, stat)),
            _ => Err(ZkClientError::ConnectionLoss),
        }
    }

    /// Reads a node's ACL, its version and the node's stat (READ or ADMIN on the node; without ADMIN digest hashes
    /// are hidden).
    pub async fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, i32, Stat), ZkClientError> {
        let (response, _) = self
            .read(
                ZkOperation::GetAcl { path: path.into() },
                ClientRequest::GetAcl { path: path.into() },
                None,
            )
            .await?;
        match response {
            ZkResponse::Acl {
                acl,
                aversion,
                stat,
            } => Ok((acl, aversion, stat)),
            _ => Err(ZkClientError::ConnectionLoss),
        }
    }

    /// `addAuth`: authenticates the session's connection as one more id, now and after
    /// every reconnection. Only `digest` (`user:password`) is known; anything else fails
    /// with [`ZkClientError::AuthFailed`], and the client is done: the server closes the
    /// connection (`ZooKeeperServer.processPacket`) and the client stays in its terminal
    /// AUTH_FAILED state, failing every later call the same way. Not recorded in the
    /// history (it carries a password).
    pub async fn add_auth(&self, scheme: &str, auth: &str) -> Result<(), ZkClientError> {
        let info = AuthInfo {
            scheme: scheme.into(),
            auth: auth.into(),
        };
        self.call(None, ClientRequest::AddAuth(info.clone()), None)
            .await?;
        let mut state = self.shared.lock();
        if !state.auth.contains(&info) {
            state.auth.push(info);
        }
        Ok(())
    }

    /// Replaces a node's data if its version matches (`None`: any); returns the new stat.
    pub async fn set_data(
        &self,
        path: &str,
        data: &str,
        version: Option<i32>,
    ) -> Result<Stat, ZkClientError> {
        let response = self
            .write(
                ZkOperation::SetData {
                    path: path.into(),
                    data: data.into(),
                    version,
                },
                WriteOp::SetData {
                    path: path.into(),
                    data: data.into(),
                    version,
                },
            )
            .await?;
        match response {
            ZkResponse::Stat { stat } => Ok(stat),
            _ => Err(ZkClientError::ConnectionLoss),
        }
    }

    async fn read(
        &self,
        operation: ZkOperation,
        request: ClientRequest,
        watch: Option<(String, WatchRequest)>,
    ) -> CallOutcome {
        self.call(Some(Operation::Zk(operation)), request, watch)
            .await
    }

    /// Reads a node's data and stat.
    pub async fn get_data(&self, path: &str) -> Result<(String, Stat), ZkClientError> {
        self.get_data_inner(path, false)
            .await
            .map(|(d, s, _)| (d, s))
    }

    /// Reads a node's data and stat and sets a one-shot data watch.
    pub async fn get_data_watch(&self, path: &str) -> Result<(String, Stat, Watch), ZkClientError> {
        let (data, stat, watch) = self.get_data_inner(path, true).await?;
        Ok((data, stat, watch.ok_or(ZkClientError::ConnectionLoss)?))
    }

    async fn get_data_inner(
        &self,
        path: &str,
        watch: bool,
    ) -> Result<(String, Stat, Option<Watch>), ZkClientError> {
        let (response, watch) = self
            .read(
                ZkOperation::GetData { path: path.into() },
                ClientRequest::GetData {
                    path: path.into(),
                    watch,
                },
                watch.then(|| (path.to_string(), WatchRequest::Data)),
            )
            .await?;
        match response {
            ZkResponse::Data { data, stat } => Ok((data, stat, watch)),
            _ => Err(ZkClientError::ConnectionLoss),
        }
    }

    /// A node's stat, if it exists.
    pub async fn exists(&self, path: &str) -> Result<Option<Stat>, ZkClientError> {
        self.exists_inner(path, false).await.map(|(stat, _)| stat)
    }

    /// A node's stat, if it exists, and a one-shot watch on its data (if it exists) or on
    /// its creation (if not).
    pub async fn exists_watch(&self, path: &str) -> Result<(Option<Stat>, Watch), ZkClientError> {
        let (stat, watch) = self.exists_inner(path, true).await?;
        Ok((stat, watch.ok_or(ZkClientError::ConnectionLoss)?))
    }

    async fn exists_inner(
        &self,
        path: &str,
        watch: bool,
    ) -> Result<(Option<Stat>, Option<Watch>), ZkClientError> {
        let (response, watch) = self
            .read(
                ZkOperation::Exists { path: path.into() },
                ClientRequest::Exists {
                    path: path.into(),
                    watch,
                },
                watch.then(|| (path.to_string(), WatchRequest::Exists)),
            )
            .await?;
        match response {
            ZkResponse::Exists { stat } => Ok((stat, watch)),
            _ => Err(ZkClientError::ConnectionLoss),
        }
    }

    /// A node's children (names, in order) and its stat.
    pub async fn get_children(&self, path: &str) -> Result<(Vec<String>, Stat), ZkClientError> {
        self.children_inner(path, false)
            .await
            .map(|(children, stat, _)| (children, stat))
    }

    /// A node's children and stat, and a one-shot child watch.
    pub async fn get_children_watch(
        &self,
        path: &str,
    ) -> Result<(Vec<String>, Stat, Watch), ZkClientError> {
        let (children, stat, watch) = self.children_inner(path, true).await?;
        Ok((children, stat, watch.ok_or(ZkClientError::ConnectionLoss)?))
    }

    async fn children_inner(
        &self,
        path: &str,
        watch: bool,
    ) -> Result<(Vec<String>, Stat, Option<Watch>), ZkClientError> {
        let (response, watch) = self
            .read(
                ZkOperation::GetChildren { path: path.into() },
                ClientRequest::GetChildren {
                    path: path.into(),
                    watch,
                },
                watch.then(|| (path.to_string(), WatchRequest::Children)),
            )
            .await?;
        match response {
            ZkResponse::Children { children, stat } => Ok((children, stat, watch)),
            _ => Err(ZkClientError::ConnectionLoss),
        }
    }

    /// The session's own ephemeral nodes whose path starts with `prefix` (a string prefix:
    /// `/a` also finds `/ab`; `/` finds them all), in path order (ZooKeeper's
    /// `getEphemerals`, 3.6+; `zookeeper-client`'s `list_ephemerals`).
    pub async fn get_ephemerals(&self, prefix: &str) -> Result<Vec<String>, ZkClientError> {
        let (response, _) = self
            .read(
                ZkOperation::GetEphemerals {
                    prefix: prefix.into(),
                },
                ClientRequest::GetEphemerals {
                    prefix: prefix.into(),
                },
                None,
            )
            .await?;
        match response {
            ZkResponse::Ephemerals { paths } => Ok(paths),
            _ => Err(ZkClientError::ConnectionLoss),
        }
    }

    /// How many nodes lie below `path`, at any depth (ZooKeeper's `getAllChildrenNumber`,
    /// 3.6+; `zookeeper-client`'s `count_descendants_number`). Needs READ on the node.
    pub async fn get_all_children_number(&self, path: &str) -> Result<u32, ZkClientError> {
        let (response, _) = self
            .read(
                ZkOperation::GetAllChildrenNumber { path: path.into() },
                ClientRequest::GetAllChildrenNumber { path: path.into() },
                None,
            )
            .await?;
        match response {
            ZkResponse::ChildrenNumber { number } => Ok(number),
            _ => Err(ZkClientError::ConnectionLoss),
        }
    }

    /// Makes the attached server catch up with the leader: a read after a successful sync
    /// sees every write acknowledged (to anyone) before the sync started.
    pub async fn sync(&self, path: &str) -> Result<(), ZkClientError> {
        self.call(
            Some(Operation::Zk(ZkOperation::Sync { path: path.into() })),
            ClientRequest::Sync { path: path.into() },
            None,
        )
        .await
        .map(|_| ())
    }

    /// Several writes, all or nothing; a [`WriteOp::Check`] among them fences the multi on a
    /// node's version (its result is [`ZkResponse::Checked`]). On failure,
    /// `Api(MultiFailed { index, error })`.
    pub async fn multi(&self, ops: Vec<WriteOp>) -> Result<Vec<ZkResponse>, ZkClientError> {
        let recorded = ops
            .iter()
            .map(|op| match op {
                WriteOp::Create {
                    path, data, mode, ..
                } => ZkOperation::Create {
                    path: path.clone(),
                    data: data.clone(),
                    mode: *mode,
                },
                WriteOp::Delete { path, version } => ZkOperation::Delete {
                    path: path.clone(),
                    version: *version,
                },
                WriteOp::SetData {
                    path,
                    data,
                    version,
                } => ZkOperation::SetData {
                    path: path.clone(),
                    data: data.clone(),
                    version: *version,
                },
                WriteOp::SetAcl { path, acl, version } => ZkOperation::SetAcl {
                    path: path.clone(),
                    acl: acl.entries(),
                    version: *version,
                },
                WriteOp::Check { path, version } => ZkOperation::Check {
                    path: path.clone(),
                    version: *version,
                },
            })
            .collect();
        let (response, _) = self
            .call(
                Some(Operation::Zk(ZkOperation::Multi { ops: recorded })),
                ClientRequest::Multi(ops),
                None,
            )
            .await?;
        match response {
            ZkResponse::Multi { results } => Ok(results),
            _ => Err(ZkClientError::ConnectionLoss),
        }
    }

    /// Closes the session: its ephemeral nodes are deleted.
    pub async fn close(&self) -> Result<(), ZkClientError> {
        let result = self
            .call(None, ClientRequest::CloseSession, None)
            .await
            .map(|_| ());
        self.shut_down();
        result
    }
}

/// Client-side argument checks: `zookeeper-client` 0.11 checks every path before sending
/// (its rules, and the server's, are in [`path`]).
fn validate(request: &ClientRequest) -> Result<(), ZkError> {
    let check = |op: &WriteOp| match op {
        WriteOp::Create { path, mode, .. } => path::validate_create_request(
            path,
            matches!(
                mode,
                CreateMode::PersistentSequential | CreateMode::EphemeralSequential
            ),
        ),
        WriteOp::Delete { path, .. }
        | WriteOp::SetData { path, .. }
        | WriteOp::SetAcl { path, .. }
        | WriteOp::Check { path, .. } => path::validate_request(path, TrailingSlash::Refused),
    };
    match request {
        // A version check exists only inside a multi (`Op.check`).
        ClientRequest::Write(WriteOp::Check { .. }) => Err(ZkError::BadArguments),
        // `zookeeper-client` refuses to create or delete the root before sending.
        ClientRequest::Write(WriteOp::Create { path, .. } | WriteOp::Delete { path, .. })
            if path == "/" =>
        {
            Err(ZkError::BadArguments)
        }
        ClientRequest::Write(op) => check(op),
        ClientRequest::Create2(op @ WriteOp::Create { .. }) => check(op),
        ClientRequest::Create2(_) => Err(ZkError::BadArguments),
        ClientRequest::Multi(ops) => {
            for (index, op) in ops.iter().enumerate() {
                // ZooKeeper's multi has no setACL.
                if matches!(op, WriteOp::SetAcl { .. }) {
                    return Err(ZkError::MultiFailed {
                        index,
                        error: Box::new(ZkError::BadArguments),
                    });
                }
                check(op).map_err(|error| ZkError::MultiFailed {
                    index,
                    error: Box::new(error),
                })?;
            }
            Ok(())
        }
        ClientRequest::GetData { path, .. }
        | ClientRequest::AddWatch { path, .. }
        | ClientRequest::RemoveWatches { path, .. }
        | ClientRequest::Exists { path, .. }
        | ClientRequest::GetChildren { path, .. }
        | ClientRequest::GetAcl { path }
        | ClientRequest::GetAllChildrenNumber { path }
        | ClientRequest::GetEphemerals { prefix: path }
        | ClientRequest::Sync { path } => path::validate_request(path, TrailingSlash::Refused),
        ClientRequest::MultiRead(ops) => {
            for (index, op) in ops.iter().enumerate() {
                let (MultiReadOp::GetData { path } | MultiReadOp::GetChildren { path }) = op;
                path::validate_request(path, TrailingSlash::Refused).map_err(|error| {
                    ZkError::MultiFailed {
                        index,
                        error: Box::new(error),
                    }
                })?;
            }
            Ok(())
        }
        ClientRequest::CloseSession | ClientRequest::AddAuth(_) => Ok(()),
    }
}
