//! The seeded world every coordsim run lives in.
//!
//! A [`World`] is built from a [`Seed`] and a [`WorldConfig`]; it creates named server
//! nodes (`s1..sN`) and client nodes (`c1..cM`) on a madsim runtime, runs a scenario to
//! completion or to a simulated-time limit, and returns a [`RunOutcome`]: the history, the
//! fault plan that was used, and how many faults actually fired.
//!
//! What the world offers a node program ([`NodeContext`]):
//! - **Transport** with typed payloads: [`net::DatagramNetwork`] (loss, delay, reordering,
//!   duplication) and [`net::StreamNetwork`] (FIFO connections that break, visibly to both
//!   ends, on a partition or crash).
//! - **Disk** ([`disk::Disk`]): durable state that survives crash/restart; writes are
//!   volatile until synced.
//! - **Clock** ([`clock::Clock`]): a local clock with its own offset and drift; timers run on it.
//! - **Randomness**: named ChaCha streams derived from the seed ([`Seed::stream`]).
//!
//! Faults go through one [`Nemesis`] API with symmetric verbs and are scheduled by a
//! [`fault::FaultPlan`] (explicit, or generated from the seed: "swarm").
#![deny(missing_docs)]

#[cfg(not(madsim))]
compile_error!(
    "coordsim must be built in madsim's simulation mode: build from the repository root \
     (its .cargo/config.toml sets `--cfg madsim`), or add `--cfg madsim` to RUSTFLAGS"
);

pub mod clock;
pub mod config;
mod config_error;
pub mod coverage;
pub mod digest;
pub mod disk;
pub mod env;
pub mod fault;
mod fault_counts;
pub mod history;
mod nemesis;
pub mod net;
mod node;
mod ratio;
pub mod report;
mod seed;
mod shared;
pub mod signal;
pub mod time;
mod world;

pub use config::{ConfigError, WorldConfig};
pub use fault_counts::FaultCounts;
pub use nemesis::Nemesis;
pub use node::{NodeId, NodeIdParseError, NodeKind};
pub use ratio::{Ratio, RatioParseError};
pub use seed::{Seed, SeedParseError};
pub use signal::Signal;
pub use world::{
    HistoryRecorder, NodeContext, RunEnd, RunOutcome, Sim, World, WorldBuilder, live_worlds,
};

/// Tasks on simulated nodes.
pub mod task {
    pub use madsim::task::{JoinError, JoinHandle, spawn, spawn_local, yield_now};
}
