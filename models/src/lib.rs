//! The stores and their clients. (Filled in by the Raft, ZAB and recipe issues.)
#![deny(missing_docs)]

pub mod zab;
pub mod zk;
