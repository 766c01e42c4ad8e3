//! ZooKeeper-style znode operations, as clients invoke them and as histories record them.

use serde::{Deserialize, Serialize};

/// How a znode is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreateMode {
    /// Lives until deleted.
    Persistent,
    /// Deleted when its session ends.
    Ephemeral,
    /// Persistent, with a 10-digit sequence suffix from the parent's counter.
    PersistentSequential,
    /// Ephemeral, with a sequence suffix.
    EphemeralSequential,
    // New modes go last: histories hash variants by index.
    /// A container (ZooKeeper 3.5+): persistent, but the leader deletes it once it has had
    /// a child and has none left (`ContainerManager`, every `checkIntervalMs`, 60 s by
    /// default).
    Container,
}

/// A znode operation. `version: None` means "any version" (ZooKeeper's -1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "snake_case")]
pub enum ZkOperation {
    /// Create a znode.
    Create {
        /// Path (for sequential modes, the prefix).
        path: String,
        /// Data.
        data: String,
        /// Mode.
        mode: CreateMode,
    },
    /// Delete a znode without children.
    Delete {
        /// Path.
        path: String,
        /// Expected version.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<i32>,
    },
    /// Replace a znode's data.
    SetData {
        /// Path.
        path: String,
        /// Data.
        data: String,
        /// Expected version.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<i32>,
    },
    /// Read a znode's data and stat.
    GetData {
        /// Path.
        path: String,
    },
    /// Read a znode's stat, if it exists.
    Exists {
        /// Path.
        path: String,
    },
    /// List a znode's children.
    GetChildren {
        /// Path.
        path: String,
    },
    /// Make the server the client is connected to catch up with the leader.
    Sync {
        /// Path.
        path: String,
    },
    /// Several operations, all or nothing.
    Multi {
        /// The operations.
        ops: Vec<ZkOperation>,
    },
    /// Read a znode's ACL and stat.
    GetAcl {
        /// Path.
        path: String,
    },
    /// Replace a znode's ACL, if its ACL version (`aversion`) matches.
    SetAcl {
        /// Path.
        path: String,
        /// The new ACL, as the client sent it (`auth` entries not yet expanded).
        acl: Vec<Acl>,
        /// Expected ACL version.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<i32>,
    },
    // New operations go last: histories hash variants by index.
    /// Check a znode's version, inside a multi (ZooKeeper's `Op.check`): the multi fails
    /// unless the node exists with that version (`None`: any version).
    Check {
        /// Path.
        path: String,
        /// Expected version.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<i32>,
    },
    /// List the session's own ephemeral nodes whose path starts with `prefix` (ZooKeeper's
    /// `getEphemerals`: a plain string prefix; `/` lists them all).
    GetEphemerals {
        /// Prefix.
        prefix: String,
    },
    /// Count every node below a znode (ZooKeeper's `getAllChildrenNumber`).
    GetAllChildrenNumber {
        /// Path.
        path: String,
    },
    /// Set a persistent watch (ZooKeeper 3.6+'s `addWatch`): it is not one-shot, it fires
    /// for every change it watches until it is removed or its session ends.
    AddWatch {
        /// Path (it need not exist).
        path: String,
        /// The node alone, or its whole subtree.
        mode: AddWatchMode,
    },
    /// Remove the session's watches of a kind on a path (ZooKeeper 3.6+'s `removeWatches`).
    RemoveWatches {
        /// Path.
        path: String,
        /// Which watches.
        kind: WatcherType,
    },
    /// Several reads in one request (ZooKeeper 3.6+'s `multiRead`), read at one point of the
    /// server's tree and answered each on its own: a read that fails answers its error in its
    /// slot, the others still answer. Its `ops` are [`ZkOperation::GetData`] and
    /// [`ZkOperation::GetChildren`]; neither sets a watch.
    MultiRead {
        /// The reads.
        ops: Vec<ZkOperation>,
    },
}

/// What a persistent watch watches (ZooKeeper's `AddWatchMode`; `zookeeper-client`'s
/// `AddWatchMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AddWatchMode {
    /// The node: its data, its existence and its children, as a data and a child watch
    /// together.
    Persistent,
    /// The node and every node below it: data and existence, never `NodeChildrenChanged`.
    PersistentRecursive,
}

/// Which watches a `removeWatches` removes (ZooKeeper's `Watcher.WatcherType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatcherType {
    /// Child watches (and the child half of persistent ones).
    Children,
    /// Data and exists watches (and the data half of persistent ones).
    Data,
    /// Every watch on the path, persistent ones included.
    Any,
}

/// ZooKeeper's permission bits (`ZooDefs.Perms`), as ZooKeeper numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Perms(pub u32);

impl Perms {
    /// `getData`, `getChildren` (and `getACL`'s stat) on the node.
    pub const READ: Perms = Perms(1);
    /// `setData` on the node.
    pub const WRITE: Perms = Perms(2);
    /// `create` of a child.
    pub const CREATE: Perms = Perms(4);
    /// `delete` of a child.
    pub const DELETE: Perms = Perms(8);
    /// `setACL` on the node.
    pub const ADMIN: Perms = Perms(16);
    /// All five.
    pub const ALL: Perms = Perms(31);

    /// Whether any bit of `wanted` is granted (ZooKeeper's `checkACL` test: `getACL` asks
    /// for READ | ADMIN and either will do).
    pub fn grants_any(self, wanted: Perms) -> bool {
        self.0 & wanted.0 != 0
    }

    /// Both sets of bits.
    pub const fn union(self, other: Perms) -> Perms {
        Perms(self.0 | other.0)
    }
}

/// One ACL entry (ZooKeeper's `ACL`: permissions for an `Id(scheme, id)`).
///
/// Schemes: `world` (id `anyone`), `digest` (id `user:base64(sha1(user:password))`, never the
/// password), `ip` (an IPv4 address with optional `/prefix-bits`), and `auth` (only in a
/// request: the server replaces it with the ids the session authenticated as).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Acl {
    /// What the id may do.
    pub perms: Perms,
    /// The authentication scheme.
    pub scheme: String,
    /// The id within the scheme.
    pub id: String,
}

impl Acl {
    /// An entry granting `perms` to `scheme:id`.
    pub fn new(perms: Perms, scheme: &str, id: &str) -> Self {
        Self {
            perms,
            scheme: scheme.to_string(),
            id: id.to_string(),
        }
    }

    /// `world:anyone` with every permission: ZooKeeper's `OPEN_ACL_UNSAFE` entry, the ACL
    /// of every node created without one.
    pub fn open() -> Self {
        Self::new(Perms::ALL, "world", "anyone")
    }

    /// `auth` with every permission: ZooKeeper's `CREATOR_ALL_ACL` entry (the creating
    /// session's authenticated ids get everything).
    pub fn creator_all() -> Self {
        Self::new(Perms::ALL, "auth", "")
    }
}

/// A znode's metadata.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    /// Zxid of the create.
    pub czxid: u64,
    /// Zxid of the last data change.
    pub mzxid: u64,
    /// Zxid of the last change to the children.
    pub pzxid: u64,
    /// Number of data changes.
    pub version: i32,
    /// Number of changes to the children.
    pub cversion: i32,
    /// Owning session for an ephemeral node, else 0.
    pub ephemeral_owner: u64,
    /// Number of children.
    pub num_children: u32,
    /// Length of the data.
    pub data_length: u32,
    /// Number of ACL changes (`aversion`). Left out of the record while 0, so histories
    /// written before it was recorded read the same (and hash the same).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub aversion: i32,
    /// When the node was created (ZooKeeper's `ctime`): the leader's clock when it
    /// prepared the create, in ms of simulated time (ZooKeeper's is wall-clock ms). Left out
    /// of the record while 0, as `aversion`.
    #[serde(default, skip_serializing_if = "is_zero_ms")]
    pub ctime_ms: u64,
    /// When the node's data last changed (ZooKeeper's `mtime`), likewise; the create's
    /// time until a `setData`.
    #[serde(default, skip_serializing_if = "is_zero_ms")]
    pub mtime_ms: u64,
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}

fn is_zero_ms(value: &u64) -> bool {
    *value == 0
}

/// A successful znode response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "snake_case")]
pub enum ZkResponse {
    /// Created; `path` is the actual name (with a sequence suffix if sequential).
    Created {
        /// Actual path.
        path: String,
    },
    /// Deleted.
    Deleted,
    /// Data replaced.
    Stat {
        /// The new stat.
        stat: Stat,
    },
    /// Data read.
    Data {
        /// Data.
        data: String,
        /// Stat.
        stat: Stat,
    },
    /// Existence checked.
    Exists {
        /// Stat, if the node exists.
        stat: Option<Stat>,
    },
    /// Children listed, in the server's order (ZooKeeper's hash order; the model's is keyed
    /// by the world's seed): unrelated to the names.
    Children {
        /// Child names (last path segment).
        children: Vec<String>,
        /// Stat of the parent.
        stat: Stat,
    },
    /// Synced.
    Synced,
    /// Multi done: one response per operation.
    Multi {
        /// Responses.
        results: Vec<ZkResponse>,
    },
    /// ACL read: the node's ACL, its version and the node's stat. (ZooKeeper's `Stat` holds
    /// `aversion`; here it comes with the ACL responses only, so that histories without
    /// ACLs are as they were.)
    Acl {
        /// The ACL (digest ids shown as `user:x` to a session without ADMIN, as ZooKeeper
        /// does).
        acl: Vec<Acl>,
        /// The ACL's version: how many times it was set.
        aversion: i32,
        /// Stat.
        stat: Stat,
    },
    /// Authentication added to the connection.
    AuthAdded,
    /// ACL replaced: its new version and the node's stat.
    AclSet {
        /// The ACL's new version.
        aversion: i32,
        /// Stat.
        stat: Stat,
    },
    /// A multi's `check` passed.
    Checked,
    /// Created, with the new node's stat (ZooKeeper's `create2`); `path` as in
    /// [`ZkResponse::Created`].
    CreatedWithStat {
        /// Actual path.
        path: String,
        /// The new node's stat.
        stat: Stat,
    },
    /// The session's ephemeral nodes under a prefix (in path order; ZooKeeper answers in
    /// its hash order).
    Ephemerals {
        /// Full paths.
        paths: Vec<String>,
    },
    /// How many nodes lie below a znode.
    ChildrenNumber {
        /// The count.
        number: u32,
    },
    /// A persistent watch set (`addWatch`).
    WatchAdded,
    /// Watches removed (`removeWatches`).
    WatchesRemoved,
    /// A `multiRead` answered: one result per read, in order, each a response or the error
    /// that read alone met (ZooKeeper's `ErrorResult`).
    MultiRead {
        /// Results.
        results: Vec<Result<ZkResponse, ZkError>>,
    },
    /// Children listed without the parent's stat: a `getChildren` inside a `multiRead`
    /// (ZooKeeper's `GetChildrenResult` holds the names alone).
    ChildNames {
        /// Child names (last path segment), in the server's order.
        children: Vec<String>,
    },
}

impl ZkResponse {
    /// The node a create made, by its actual name (with its sequence suffix, if
    /// sequential), whichever reply the create got: its path alone ([`ZkResponse::Created`]:
    /// `create`, and every create inside a multi) or its stat too
    /// ([`ZkResponse::CreatedWithStat`]: `create2`, which the zookeeper-client drop-in
    /// sends). `None` for any other response. Checks read a create's node only through
    /// this, so that both replies are judged alike.
    pub fn created_path(&self) -> Option<&str> {
        match self {
            ZkResponse::Created { path } | ZkResponse::CreatedWithStat { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The new node's stat, if the create answered it (`create2`); `None` for a plain
    /// `create` and any other response.
    pub fn created_stat(&self) -> Option<&Stat> {
        match self {
            ZkResponse::CreatedWithStat { stat, .. } => Some(stat),
            _ => None,
        }
    }
}

/// ZooKeeper's error kinds for a definite failure (the operation did not take effect).
///
/// Connection loss and session expiry leave the outcome unknown, so they are recorded as
/// [`crate::history::OpResult::Unknown`], not here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZkError {
    /// The node (or a parent) does not exist.
    NoNode,
    /// The node already exists.
    NodeExists,
    /// The version did not match.
    BadVersion,
    /// The node has children.
    NotEmpty,
    /// Ephemeral nodes cannot have children.
    NoChildrenForEphemerals,
    /// The path or arguments are invalid.
    BadArguments,
    /// The session has expired (the operation was rejected, not attempted).
    SessionExpired,
    /// A multi failed: the index of the first failing operation and its error.
    MultiFailed {
        /// Index of the failing operation.
        index: usize,
        /// Its error.
        error: Box<ZkError>,
    },
    // New kinds go last: histories hash variants by index.
    /// The session's ids lack the permission the operation needs (`NoAuth`).
    NoAuth,
    /// The ACL is malformed: empty, an unknown scheme, an id the scheme rejects, or `auth`
    /// from a session with no authenticated id (`InvalidACL`).
    InvalidAcl,
    /// `addAuth` with a scheme the server does not know, or malformed credentials
    /// (`AuthFailed`).
    AuthFailed,
    /// `removeWatches` found no watch of that kind on the path for this session
    /// (`NoWatcher`).
    NoWatcher,
}

/// Which one-shot watch a read set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchKind {
    /// Set by `getData` (or `exists` on an existing node): fires on data change or delete.
    Data,
    /// Set by `exists` on a missing node: fires on create.
    Exists,
    /// Set by `getChildren`: fires on a child created or deleted, or the node deleted.
    Children,
    // New kinds go last: histories hash variants by index.
    /// Set by `addWatch` (persistent): fires, without being used up, on the node's
    /// creation, data change and deletion and on a child created or deleted.
    Persistent,
    /// Set by `addWatch` (persistent, recursive): fires, without being used up, on the
    /// creation, data change and deletion of the node and of every node below it.
    PersistentRecursive,
}

impl WatchKind {
    /// Whether the watch stays set after it fires.
    pub fn is_persistent(self) -> bool {
        matches!(self, WatchKind::Persistent | WatchKind::PersistentRecursive)
    }
}

/// What change fired a watch (ZooKeeper's `Watcher.Event.EventType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchEventType {
    /// The node was created.
    NodeCreated,
    /// The node was deleted.
    NodeDeleted,
    /// The node's data changed.
    NodeDataChanged,
    /// A child was created or deleted.
    NodeChildrenChanged,
}

/// Observable steps of a ZooKeeper-style client session, recorded by the client, for the
/// session and watch checkers. `process` is the client's logical process (as in
/// [`crate::history::Event::Invoke`]); `session` the session id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "zk_event", rename_all = "snake_case")]
pub enum ZkEvent {
    /// The client established a new session through `server`.
    SessionEstablished {
        /// Logical process.
        process: u32,
        /// Session id.
        session: u64,
        /// Negotiated session timeout.
        timeout_ms: u64,
        /// The server that accepted it.
        server: crate::node::NodeId,
    },
    /// The client re-attached its existing session through a new connection.
    SessionResumed {
        /// Logical process.
        process: u32,
        /// Session id.
        session: u64,
        /// The server it is now connected to.
        server: crate::node::NodeId,
    },
    /// The client lost its connection; the session may live on.
    Disconnected {
        /// Logical process.
        process: u32,
        /// Session id.
        session: u64,
        /// The server it was connected to.
        server: crate::node::NodeId,
    },
    /// The client learned that its session expired (its ephemerals are gone).
    SessionExpired {
        /// Logical process.
        process: u32,
        /// Session id.
        session: u64,
    },
    /// The client gave up on its session after a whole session timeout without a
    /// connection (Curator's simulated session expiration, opt-in: see the ZooKeeper
    /// client's `SessionExpiry`). Only the client's belief: the servers may still hold the
    /// session and its ephemeral nodes (a new leader gives every session a fresh timeout),
    /// so no check takes this as the session's end.
    SessionAbandoned {
        /// Logical process.
        process: u32,
        /// Session id.
        session: u64,
    },
    /// The client closed its session and the close was committed.
    SessionClosed {
        /// Logical process.
        process: u32,
        /// Session id.
        session: u64,
    },
    /// A successful read set a one-shot watch.
    WatchRegistered {
        /// Logical process.
        process: u32,
        /// Session id.
        session: u64,
        /// The read that set it.
        op_id: crate::history::OpId,
        /// Watched path.
        path: String,
        /// Kind of watch.
        kind: WatchKind,
    },
    /// A watch fired at the client (once per registration; a persistent watch, once per
    /// change it watches).
    WatchDelivered {
        /// Logical process.
        process: u32,
        /// Session id.
        session: u64,
        /// The operation that set the watch.
        op_id: crate::history::OpId,
        /// The path of the node that changed: the watched path, or for a recursive watch
        /// the node below it.
        path: String,
        /// Kind of watch.
        kind: WatchKind,
        /// The change that fired it.
        event: WatchEventType,
        /// Zxid of that change (as `epoch << 32 | counter`).
        zxid: u64,
    },
    // New events go last: histories hash variants by index.
    /// A watch was removed (`removeWatches` answered, or the client had no need to ask the
    /// server): it delivers nothing after this.
    WatchRemoved {
        /// Logical process.
        process: u32,
        /// Session id.
        session: u64,
        /// The operation that set the watch.
        op_id: crate::history::OpId,
        /// Watched path.
        path: String,
        /// Kind of watch.
        kind: WatchKind,
    },
    /// The client sent a recorded write to its server as request `xid` of `session`: the
    /// transaction header (session, cxid) that the replicas record when they apply it
    /// ([`crate::history::ProtocolEvent::Applied`]'s `request`). Links an operation whose
    /// outcome the client never learned to the log, for the linearizability checker.
    RequestSent {
        /// Logical process.
        process: u32,
        /// Session id.
        session: u64,
        /// The operation sent.
        op_id: crate::history::OpId,
        /// The request's xid in that session (ZooKeeper's cxid).
        xid: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_path_reads_create_and_create2_replies_alike() {
        let stat = Stat {
            czxid: 3,
            ..Stat::default()
        };
        let create = ZkResponse::Created {
            path: "/n-0000000001".into(),
        };
        let create2 = ZkResponse::CreatedWithStat {
            path: "/n-0000000001".into(),
            stat,
        };
        assert_eq!(create.created_path(), Some("/n-0000000001"));
        assert_eq!(create2.created_path(), Some("/n-0000000001"));
        assert_eq!(create.created_stat(), None);
        assert_eq!(create2.created_stat(), Some(&stat));
        assert_eq!(ZkResponse::Deleted.created_path(), None);
        assert_eq!(ZkResponse::Stat { stat }.created_stat(), None);
    }
}
