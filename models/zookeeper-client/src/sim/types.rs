//! zookeeper-client's `CreateMode`, `CreateOptions`, `CreateSequence` (`src/client/mod.rs`)
//! and `Stat` (`src/proto/stat.rs`).

use super::acl::Acls;
use sim::history::zk::CreateMode as ModelMode;

/// CreateMode specifies ZooKeeper znode type (zookeeper-client's `CreateMode`; its TTL
/// nodes are not mirrored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateMode {
    /// Lives until deleted.
    Persistent,
    /// Persistent, with a sequence suffix.
    PersistentSequential,
    /// Deleted when its session ends.
    Ephemeral,
    /// Ephemeral, with a sequence suffix.
    EphemeralSequential,
    /// Persistent, deleted by the server once its last child is gone.
    Container,
}

impl CreateMode {
    /// Constructs [CreateOptions] with this mode and given acls.
    pub const fn with_acls(self, acls: Acls<'_>) -> CreateOptions<'_> {
        CreateOptions { mode: self, acls }
    }

    pub(crate) fn is_sequential(self) -> bool {
        self == CreateMode::PersistentSequential || self == CreateMode::EphemeralSequential
    }

    pub(crate) fn to_model(self) -> ModelMode {
        match self {
            CreateMode::Persistent => ModelMode::Persistent,
            CreateMode::PersistentSequential => ModelMode::PersistentSequential,
            CreateMode::Ephemeral => ModelMode::Ephemeral,
            CreateMode::EphemeralSequential => ModelMode::EphemeralSequential,
            CreateMode::Container => ModelMode::Container,
        }
    }
}

/// Options for node creation, constructed from [CreateMode::with_acls]
/// (zookeeper-client's `CreateOptions`; `with_ttl` is not mirrored).
#[derive(Clone, Debug)]
pub struct CreateOptions<'a> {
    pub(crate) mode: CreateMode,
    pub(crate) acls: Acls<'a>,
}

/// Thin wrapper to encapsulate sequential node's sequence number (zookeeper-client's
/// `CreateSequence`).
///
/// It prints in ten decimal digits with possible leading padding 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CreateSequence(pub(crate) i64);

impl std::fmt::Display for CreateSequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 <= i32::MAX.into() {
            write!(f, "{:010}", self.0)
        } else {
            write!(f, "{:019}", self.0)
        }
    }
}

impl CreateSequence {
    /// The sequence number.
    pub fn into_i64(self) -> i64 {
        self.0
    }
}

/// ZooKeeper node stat (zookeeper-client's `Stat`). Times are the model's simulated
/// milliseconds, not milliseconds from the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The zxid of the change that caused this znode to be created.
    pub czxid: i64,
    /// The zxid of the change that last modified this znode.
    pub mzxid: i64,
    /// The zxid of the change that last modified children of this znode.
    pub pzxid: i64,
    /// The time in milliseconds from epoch when this znode was created.
    pub ctime: i64,
    /// The time in milliseconds from epoch when this znode was last modified.
    pub mtime: i64,
    /// The number of changes to the data of this znode.
    pub version: i32,
    /// The number of changes to the children of this znode.
    pub cversion: i32,
    /// The number of changes to the ACL of this znode.
    pub aversion: i32,
    /// The session id of the owner of this znode if the znode is an ephemeral node. If it is
    /// not an ephemeral node, it will be zero.
    pub ephemeral_owner: i64,
    /// The length of the data field of this znode.
    pub data_length: i32,
    /// The number of children of this znode.
    pub num_children: i32,
}

impl Stat {
    /// Tests whether this stat is invalid.
    ///
    /// This method is exported to circumvent bugs in ZooKeeper server. The model's stats
    /// are always valid.
    pub fn is_invalid(&self) -> bool {
        self.czxid == -1
    }

    /// The stat a create answers when the server gave none (zookeeper-client's
    /// `new_invalid`).
    pub(crate) fn new_invalid() -> Self {
        Self {
            czxid: -1,
            mzxid: -1,
            pzxid: -1,
            ctime: 0,
            mtime: 0,
            version: -1,
            cversion: -1,
            aversion: -1,
            ephemeral_owner: 0,
            data_length: 0,
            num_children: 0,
        }
    }

    /// The model's stat, field by field (zxids and session ids reinterpreted as signed, as
    /// ZooKeeper's wire does).
    pub(crate) fn from_model(stat: &sim::history::zk::Stat) -> Stat {
        Stat {
            czxid: stat.czxid as i64,
            mzxid: stat.mzxid as i64,
            pzxid: stat.pzxid as i64,
            ctime: stat.ctime_ms as i64,
            mtime: stat.mtime_ms as i64,
            version: stat.version,
            cversion: stat.cversion,
            aversion: stat.aversion,
            ephemeral_owner: stat.ephemeral_owner as i64,
            data_length: stat.data_length as i32,
            num_children: stat.num_children as i32,
        }
    }
}
