//! A drop-in for [`etcd-client`](https://docs.rs/etcd-client/0.21.1) 0.21.1 backed by coordsim's
//! Raft store: the same names, types and errors, so code written against etcd-client compiles
//! unchanged and runs inside a coordsim world, every call an operation in the run's history.
//!
//! WORK IN PROGRESS (issue 25).

#[cfg(madsim)]
mod sim;
#[cfg(madsim)]
pub use crate::sim::*;

// Outside simulation the crate is the real client: one `Cargo.toml` line serves tests and
// production.
#[cfg(not(madsim))]
pub use real_etcd_client::*;
