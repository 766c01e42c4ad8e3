//! Coordination recipes, written against the two stores' clients the way real libraries
//! are (Curator and the ZooKeeper recipes; etcd's `concurrency` package), and the fenced
//! resource their critical sections write to: locks (a read/write lock among them), service
//! discovery on both stores, pub/sub on etcd, and the other ZooKeeper primitives (queue,
//! counter, barrier, configuration, rendezvous).
//!
//! Every recipe records what its client believes (`sim::history::recipe`): when it asked
//! for a lock or campaigned, got it or began to lead (with its fencing token), let it go or
//! resigned, or learned it had lost it; that a member registered or unregistered, and the
//! view a discoverer handed its caller; that a message was published (at its revision), and
//! what a subscription received. The checkers compare those beliefs on the global clock.

mod etcd;
mod shared;
mod zk;

pub use etcd::discovery::{EtcdDiscoverer, EtcdRegistration};
pub use etcd::election::{EtcdElection, EtcdLeaderObserver};
pub use etcd::held::{EtcdLeadership, EtcdMutexGuard};
pub use etcd::mutex::EtcdMutex;
pub use etcd::pubsub::{EtcdPublisher, EtcdSubscriber, Message};
pub use etcd::session::{EtcdSession, KEEP_ALIVE_PROCESS};
pub use shared::bugs::{RecipeBug, RecipeBugs};
pub use shared::error::{RecipeError, UnsettledTake};
pub use shared::fenced_resource::{
    FencedResource, Fencing, ResourceClient, ResourceFrame, ResourceUnavailable,
};
pub use zk::barrier::ZkDoubleBarrier;
pub use zk::config::ZkConfig;
pub use zk::counter::ZkCounter;
pub use zk::discovery::{ZkDiscoverer, ZkRegistration};
pub use zk::election::{ZkElection, ZkLeaderObserver};
pub use zk::held::{ZkLeadership, ZkLockGuard};
pub use zk::herd_lock::ZkHerdLock;
pub use zk::line::CarriedJoin;
pub use zk::queue::ZkQueue;
pub use zk::queue_lock::ZkQueueLock;
pub use zk::rendezvous::ZkRendezvous;
pub use zk::rw_lock::ZkRwLock;
