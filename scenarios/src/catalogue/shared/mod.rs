//! The recipes whose workloads run on both stores, each file building both stores' scenarios
//! from the same helpers: the locks (the ZooKeeper herd, queue and read/write locks beside
//! etcd's mutex), the elections and service discovery.

pub(super) mod discovery;
pub(super) mod elections;
pub(super) mod locks;
