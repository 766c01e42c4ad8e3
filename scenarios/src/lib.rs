//! Workloads, fault-plan strategies and the seed-sweeping suites.
//!
//! The judges live in the `checks` crate (`scenarios/checks`), which reads only recorded
//! histories and does not depend on `models`. [`sweep`] runs a scenario over many seeds and
//! turns violations into failure reports with the exact command that replays them.
#![deny(missing_docs)]

pub mod etcd_workload;
pub mod strategies;
pub mod sweep;
