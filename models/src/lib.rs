//! The stores and their clients.
//!
//! - [`raft`]: the Raft consensus core (sans-IO) and its driver.
//! - [`etcd`]: the etcd-like store on Raft: MVCC, leases, watches, server and client.
#![deny(missing_docs)]

pub mod etcd;
mod local_queue;
pub mod raft;
