//! The ZooKeeper-like store above ZAB: the znode tree, sessions, watches, the server and
//! the client.

pub mod acl;
pub mod children_order;
pub mod client;
pub mod driver;
pub mod path;
pub mod prep;
pub mod sequence;
pub mod server;
pub mod sessions;
pub mod tree;
pub mod txn;
pub mod watches;
pub mod wire;

pub use acl::NodeAcl;
pub use children_order::ChildrenOrder;
pub use client::{
    FoundNode, PersistentWatcher, ProtectedCreate, SessionExpiry, Watch, WatchLost, WatchedEvent,
    ZkClient, ZkClientConfig, ZkClientError,
};
pub use driver::{ZkEnsemble, ZkEnsembleConfig};
pub use prep::WriteOp;
pub use sequence::SequenceWidth;
pub use server::{ClientLink, ServerEffect, ZkServer, ZkServerConfig};
pub use tree::DataTree;
pub use wire::MultiReadOp;
