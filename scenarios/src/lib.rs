//! Workloads, checkers and the seed-sweeping suites.
//!
//! Checkers ([`checkers`]) are pure functions of a recorded [`sim::history::History`]: they
//! never look inside the models, so a model bug cannot leak into the oracle. Each checks one
//! property and returns typed violations that cite where the property comes from.
//! [`sweep`] runs a scenario over many seeds and turns violations into failure reports with
//! the exact command that replays them.
#![deny(missing_docs)]

pub mod checkers;
pub mod etcd_workload;
pub mod kv_history;
pub mod lease_history;
pub mod linearizability;
pub mod strategies;
pub mod sweep;
mod violation;

pub use violation::Violation;
