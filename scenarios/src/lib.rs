//! Scenarios and everything that runs them: the [`Scenario`] type (serde, from TOML or JSON
//! files), the [`catalogue`] of named scenarios, the [`workload`]s, the one run [`driver`]
//! and its [`Outcome`], the one [`sweep`], the [`KnownBug`] type, the [`shrink`]er of a
//! failing run's fault plan, and fault-plan
//! [`strategies`] for proptest, and the [`allocator`] runs are made with.
//!
//! The judges live in the `checks` crate (`scenarios/checks`), which reads only recorded
//! histories and does not depend on `models`.
#![deny(missing_docs)]

pub mod allocator;
pub mod catalogue;
pub mod detection;
pub mod driver;
pub mod evidence;
mod known_bug;
mod outcome;
pub mod replay_command;
pub mod scenario;
pub mod shrink;
mod store;
pub mod strategies;
pub mod suggest;
pub mod sweep;
mod worker_pool;
pub mod workload;

pub use known_bug::{KnownBug, KnownBugCase, UnknownBug, table as known_bug_table};
pub use outcome::{
    CheckTally, Failure, Metrics, Outcome, VIOLATIONS_SHOWN_PER_CHECK, ViolationRecord,
};
pub use replay_command::ReplayCommand;
pub use scenario::{Scenario, ScenarioError, SkippedCheck};
