//! The Raft store's scenarios: the Raft core under faults (`raft`), and the etcd store above
//! it (`store`: leases, watches, compaction, transactions).

pub(super) mod raft;
pub(super) mod store;
