//! The ZooKeeper recipes (Curator's and the ZooKeeper recipes'), on [`crate::zk::ZkClient`].

pub(super) mod barrier;
pub(super) mod config;
pub(super) mod contender;
pub(super) mod counter;
pub(super) mod discovery;
pub(super) mod election;
pub(super) mod held;
pub(super) mod herd_lock;
pub(super) mod line;
pub(super) mod paths;
pub(super) mod queue;
pub(super) mod queue_lock;
pub(super) mod rendezvous;
pub(super) mod rw_lock;
