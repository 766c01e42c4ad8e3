//! Raft (Ongaro & Ousterhout, "In Search of an Understandable Consensus Algorithm", 2014, and
//! Ongaro's thesis, 2014) as a sans-IO core plus an async driver for the simulated world.
//!
//! - [`RaftCore`]: a pure state machine. Inputs: `step`, `tick`, `propose`, `read_index`,
//!   `on_persisted`, each with the local time; outputs: ordered [`Effect`]s (`Send`,
//!   `Persist`, `SendAfterPersist`, `Apply`, `ReadReady`, `SetTimer`, …). Elections with
//!   randomized timeouts (the jitter comes in from the driver), PreVote and CheckQuorum with a
//!   leader lease, votes and terms durable before they are acted on, log replication with the
//!   paper's conflict rules, commitment of current-term entries only (a no-op opens each
//!   term), `matchIndex` from the acknowledged request, ReadIndex reads.
//! - [`RaftBug`]: the known-bug variants of scenarios/known-bugs.md, each the real wrong behaviour.

mod config;
mod core;
pub mod driver;
mod effect;
mod election;
mod log;
mod message;
mod reads;
mod replication;
pub(crate) mod timer;
mod types;

pub use config::{RaftBug, RaftConfig, UnknownRaftBug};
pub use core::{ElectionJitter, ProposalSlot, ProposeError, RaftCore, RoleName, ScriptedTimeouts};
pub use effect::{DurableWrite, Effect, Observation};
pub use log::RaftLog;
pub use message::{AppendOutcome, Message};
pub use types::{Entry, EntryPayload, HardState, PersistId, ReadRequestId, Snapshot};

#[cfg(test)]
mod tests;
