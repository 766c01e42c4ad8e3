//! The stores and their clients.
//!
//! - [`raft`]: the Raft consensus core (sans-IO) and its driver.
//! - [`etcd`]: the etcd-like store on Raft: MVCC, leases, watches, server and client.
//! - [`zab`]: the ZAB atomic broadcast core (sans-IO) and its storage adapter.
//! - [`zk`]: the ZooKeeper-like store on ZAB: znode tree, sessions, watches, server, driver
//!   and client.
//! - [`recipes`]: locks and service discovery on both stores, pub/sub on etcd (and, to
//!   come, the other coordination recipes), and the fenced resource locks protect.
//! - [`ledger`]: a toy replicated ledger (no consensus) that exercises the world, for the
//!   `coordsim demo` command and the determinism tests.
#![deny(missing_docs)]

pub mod etcd;
pub mod ledger;
mod local_queue;
pub mod raft;
pub mod recipes;
pub mod zab;
pub mod zk;
