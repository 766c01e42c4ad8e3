//! The etcd recipes (etcd's `concurrency` package and its peers), on
//! [`crate::etcd::EtcdClient`].

pub(super) mod discovery;
pub(super) mod election;
pub(super) mod held;
pub(super) mod keys;
pub(super) mod line;
pub(super) mod mutex;
pub(super) mod pubsub;
pub(super) mod session;
