//! Coordination recipes, written against the two stores' clients the way real libraries
//! are (Curator and the ZooKeeper recipes; etcd's `concurrency` package), and the fenced
//! resource their critical sections write to.
//!
//! Every recipe records what its client believes (`sim::history::recipe`): when it asked
//! for a lock, got it (with its fencing token), let it go, or learned it had lost it. The
//! checkers compare those beliefs on the global clock.

mod bugs;
mod etcd_mutex;
mod fenced_resource;
mod lock;
mod zk_barrier;
mod zk_config;
mod zk_counter;
mod zk_herd_lock;
mod zk_paths;
mod zk_queue;
mod zk_queue_lock;

pub use bugs::{RecipeBug, RecipeBugs};
pub use etcd_mutex::{EtcdMutex, EtcdMutexGuard, EtcdSession, KEEP_ALIVE_PROCESS};
pub use fenced_resource::{
    FencedResource, Fencing, ResourceClient, ResourceFrame, ResourceUnavailable,
};
pub use lock::LockError;
pub use zk_barrier::{BarrierError, ZkDoubleBarrier};
pub use zk_config::{ConfigError, ZkConfig};
pub use zk_counter::{CounterError, ZkCounter};
pub use zk_herd_lock::{ZkHerdLock, ZkLockGuard};
pub use zk_queue::{QueueError, ZkQueue};
pub use zk_queue_lock::ZkQueueLock;
