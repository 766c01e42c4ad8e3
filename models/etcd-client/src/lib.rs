//! A drop-in for [`etcd-client`](https://docs.rs/etcd-client/0.21.1) 0.21.1 backed by coordsim's
//! Raft store: the same names, types and errors, so code written against etcd-client compiles
//! unchanged and runs inside a coordsim world, every call an operation in the run's history.
//!
//! WORK IN PROGRESS (issue 25): `Client::connect`, `put`/`get`/`delete` and the `KvClient`
//! only; `GetOptions` is the model's (its builders take `String` keys, etcd-client's take
//! bytes). Not yet: `txn`, `compact`, the lease, watch, lock and election clients,
//! `tonic::Status` in `Error::GRpcStatus`, the re-export of the real crate outside
//! `--cfg madsim`, and the check that one user module compiles both ways.

#[cfg(madsim)]
mod sim;
#[cfg(madsim)]
pub use crate::sim::*;
