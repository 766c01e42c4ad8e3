//! Messages: client ↔ server (one FIFO connection per session attachment) and server ↔
//! server above ZAB (forwarded requests, session touches, revalidation).

use super::{acl::AuthIds, prep::WriteOp, txn::SessionId};
use sim::history::zk::{AddWatchMode, WatchEventType, WatcherType, ZkError, ZkResponse};

/// A client request on an established session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientRequest {
    /// A single write.
    Write(WriteOp),
    /// A create answered with the new node's stat (ZooKeeper's `create2`; the op is a
    /// [`WriteOp::Create`]).
    Create2(WriteOp),
    /// All-or-nothing writes.
    Multi(Vec<WriteOp>),
    /// `getData`, optionally setting a data watch.
    GetData {
        /// Path.
        path: String,
        /// Set a watch.
        watch: bool,
    },
    /// `exists`, optionally setting a data (existing node) or exists (missing node) watch.
    Exists {
        /// Path.
        path: String,
        /// Set a watch.
        watch: bool,
    },
    /// `getChildren`, optionally setting a child watch.
    GetChildren {
        /// Path.
        path: String,
        /// Set a watch.
        watch: bool,
    },
    /// `getACL`: the node's ACL and stat.
    GetAcl {
        /// Path.
        path: String,
    },
    /// `getEphemerals`: the session's ephemeral nodes whose path starts with `prefix`.
    GetEphemerals {
        /// Prefix (a plain string prefix; `/` for all).
        prefix: String,
    },
    /// `getAllChildrenNumber`: how many nodes lie below `path`.
    GetAllChildrenNumber {
        /// Path.
        path: String,
    },
    /// `addWatch`: set a persistent watch (answered in order with the reads, as ZooKeeper
    /// answers it: no transaction).
    AddWatch {
        /// Path (it need not exist).
        path: String,
        /// The node or its subtree.
        mode: AddWatchMode,
    },
    /// `removeWatches`: remove this connection's watches of a kind on a path (no
    /// transaction either).
    RemoveWatches {
        /// Path.
        path: String,
        /// Which watches.
        kind: WatcherType,
    },
    /// `addAuth`: authenticate the connection as one more id (kept by the client and sent
    /// again with every reconnection, as ZooKeeper's client does).
    AddAuth(AuthInfo),
    /// Catch this server up with the leader.
    Sync {
        /// Path (unused, as in ZooKeeper).
        path: String,
    },
    /// End the session.
    CloseSession,
    /// `multiRead` (ZooKeeper 3.6+): several reads answered together, each on its own,
    /// setting no watch.
    MultiRead(Vec<MultiReadOp>),
}

/// One read of a `multiRead` (ZooKeeper's `Op.getData` and `Op.getChildren`, the only ops
/// `FinalRequestProcessor` takes in one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiReadOp {
    /// The node's data and stat.
    GetData {
        /// Path.
        path: String,
    },
    /// The node's children, without its stat.
    GetChildren {
        /// Path.
        path: String,
    },
}

impl ClientRequest {
    /// Whether the server answers it from its own state.
    pub fn is_read(&self) -> bool {
        matches!(
            self,
            ClientRequest::GetData { .. }
                | ClientRequest::Exists { .. }
                | ClientRequest::GetChildren { .. }
                | ClientRequest::GetAcl { .. }
                | ClientRequest::GetEphemerals { .. }
                | ClientRequest::GetAllChildrenNumber { .. }
                | ClientRequest::AddWatch { .. }
                | ClientRequest::RemoveWatches { .. }
                | ClientRequest::MultiRead(_)
        )
    }
}

/// Credentials for `addAuth` (ZooKeeper's `AuthPacket`): `digest` with `user:password`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthInfo {
    /// The scheme.
    pub scheme: String,
    /// The credentials, in clear on the wire as in ZooKeeper; servers keep only the digest.
    pub auth: String,
}

/// Why a server refused a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The session is gone; the client must start a new one.
    SessionExpired,
    /// The client has seen a newer zxid than this server has applied; try another server
    /// (otherwise the client would go back in time).
    ServerBehind,
    /// The server is not in broadcast (electing or synchronizing).
    NotServing,
    /// Credentials sent with the connect failed (an unknown scheme): ZooKeeper answers the
    /// auth packet `AuthFailed` and closes the connection; the client is done.
    AuthFailed,
}

/// Both directions of a client connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientMessage {
    /// Client → server: attach a session (a new one if `session` is `None`).
    Connect {
        /// The session to resume.
        session: Option<SessionId>,
        /// Requested timeout.
        timeout_ms: u64,
        /// The newest zxid the client has seen.
        last_zxid_seen: u64,
        /// Credentials the client added to its session (`addAuth`), to add again.
        auth: Vec<AuthInfo>,
    },
    /// Client → server: a request.
    Request {
        /// Request id, increasing within the session.
        xid: u64,
        /// The request.
        request: ClientRequest,
    },
    /// Client → server: heartbeat.
    Ping,
    /// Client → server, after reconnecting: the client's watches, to re-register (or fire at
    /// once if the node changed after `relative_zxid`).
    SetWatches {
        /// The newest zxid the client has seen.
        relative_zxid: u64,
        /// Data watches.
        data: Vec<String>,
        /// Exists watches (node missing when set).
        exist: Vec<String>,
        /// Child watches.
        child: Vec<String>,
        /// Persistent watches (ZooKeeper's `SetWatches2`).
        persistent: Vec<String>,
        /// Persistent recursive watches.
        recursive: Vec<String>,
    },
    /// Server → client: attached.
    Connected {
        /// The session.
        session: SessionId,
        /// Negotiated timeout.
        timeout_ms: u64,
    },
    /// Server → client: not attached; the connection closes.
    Refused {
        /// Why.
        reason: Refusal,
    },
    /// Server → client: a request's outcome.
    Reply {
        /// The request.
        xid: u64,
        /// For a write, its zxid; for a read, the server's last applied zxid.
        zxid: u64,
        /// The outcome.
        result: Result<ZkResponse, ZkError>,
    },
    /// Server → client: a watch fired.
    WatchEvent {
        /// The path.
        path: String,
        /// What happened.
        event: WatchEventType,
        /// The change's zxid.
        zxid: u64,
    },
    /// Server → client: heartbeat answer.
    Pong,
    /// Server → client: the session closed as the client asked (request `xid`).
    Closed {
        /// The close request.
        xid: u64,
    },
    /// Server → client: the session expired; the connection closes.
    SessionExpired,
}

/// A write a server sends the leader on a client's behalf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaderRequest {
    /// One write.
    Write(WriteOp),
    /// A multi.
    Multi(Vec<WriteOp>),
    /// A sync.
    Sync,
    /// Open a session.
    CreateSession {
        /// Negotiated timeout.
        timeout_ms: u64,
        /// The server the client connected to.
        origin: u16,
    },
    /// Close the session.
    CloseSession,
}

/// The leader's answer to "may this session attach?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revalidation {
    /// Yes: the session is live, with this timeout.
    Live {
        /// The session timeout.
        timeout_ms: u64,
    },
    /// No: the session's close is committed; the client must be told it expired.
    Expired,
    /// Not now: the session's close is proposed but not committed (this leader may even be
    /// deposed); the client should try again elsewhere. Telling it "expired" now could be
    /// false, and would make it abandon ephemeral nodes that still exist.
    Undecided,
}

/// Server ↔ server messages of the ZooKeeper layer, carried in ZAB's FIFO connections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerMessage {
    /// Follower → leader: a client's write.
    Forward {
        /// The client's session (0 for a session creation).
        session: SessionId,
        /// The request id (for a session creation: the follower's token).
        cxid: u64,
        /// The write.
        request: LeaderRequest,
        /// The ids the client's connection is authenticated as, for the leader's ACL
        /// checks (ZooKeeper's `QuorumPacket.authinfo`).
        auth: AuthIds,
    },
    /// Follower → leader: these sessions were active here.
    Touch {
        /// Sessions.
        sessions: Vec<SessionId>,
    },
    /// Follower → leader: may this session attach here?
    Revalidate {
        /// The session.
        session: SessionId,
        /// The follower's token for the waiting connection.
        token: u64,
    },
    /// Leader → follower: the answer.
    Revalidated {
        /// The session.
        session: SessionId,
        /// The token.
        token: u64,
        /// The answer.
        answer: Revalidation,
    },
    /// Leader → follower: everything before this sync is committed (only with the
    /// `zab.sync_not_quorum` bug; the correct model orders syncs through the broadcast).
    SyncDone {
        /// The session.
        session: SessionId,
        /// The request id.
        cxid: u64,
    },
}
