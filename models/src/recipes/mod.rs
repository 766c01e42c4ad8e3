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

mod bugs;
mod election;
mod etcd_discovery;
mod etcd_election;
mod etcd_keys;
mod etcd_mutex;
mod etcd_pubsub;
mod etcd_session;
mod fenced_resource;
mod lock;
mod membership;
mod zk_barrier;
mod zk_config;
mod zk_counter;
mod zk_discovery;
mod zk_election;
mod zk_herd_lock;
mod zk_line;
mod zk_node_loss;
mod zk_paths;
mod zk_queue;
mod zk_queue_lock;
mod zk_rendezvous;
mod zk_rw_lock;

pub use bugs::{RecipeBug, RecipeBugs};
pub use election::ElectionError;
pub use etcd_discovery::{EtcdDiscoverer, EtcdRegistration};
pub use etcd_election::{EtcdElection, EtcdLeaderObserver, EtcdLeadership};
pub use etcd_mutex::{EtcdMutex, EtcdMutexGuard};
pub use etcd_pubsub::{EtcdPublisher, EtcdSubscriber, Message, PubSubError};
pub use etcd_session::{EtcdSession, KEEP_ALIVE_PROCESS};
pub use fenced_resource::{
    FencedResource, Fencing, ResourceClient, ResourceFrame, ResourceUnavailable,
};
pub use lock::LockError;
pub use membership::DiscoveryError;
pub use zk_barrier::{BarrierError, ZkDoubleBarrier};
pub use zk_config::{ConfigError, ZkConfig};
pub use zk_counter::{CounterError, ZkCounter};
pub use zk_discovery::{ZkDiscoverer, ZkRegistration};
pub use zk_election::{ZkElection, ZkLeaderObserver, ZkLeadership};
pub use zk_herd_lock::{ZkHerdLock, ZkLockGuard};
pub use zk_line::CarriedJoin;
pub use zk_queue::{QueueError, UnsettledTake, ZkQueue};
pub use zk_queue_lock::ZkQueueLock;
pub use zk_rendezvous::{RendezvousError, ZkRendezvous};
pub use zk_rw_lock::ZkRwLock;
