//! ZAB, the ZooKeeper atomic broadcast protocol, as a sans-IO core plus a storage adapter.
//!
//! [`ZabCore`] is one server: fast leader election over datagrams, then discovery,
//! synchronization and broadcast with the elected leader over FIFO connections (see
//! `leader.rs` for the step-by-step walk-through). It replicates the transactions of a
//! [`StateMachine`] and applies them, committed, in zxid order. Everything that touches the
//! world goes out as an [`Effect`]; time and durability come in as inputs.
//!
//! References: Junqueira, Reed & Serafini, "Zab: High-performance broadcast for
//! primary-backup systems" (DSN 2011); Medeiros, "ZooKeeper's atomic broadcast protocol:
//! Theory and practice" (2012); ZooKeeper's `FastLeaderElection`, `Leader`, `Learner`.

mod config;
mod core;
mod effect;
mod election;
mod follower;
mod leader;
mod message;
mod role;
mod state_machine;
pub mod storage;
mod zxid;

pub use config::{ConfigError, KnownBugs, UnknownBug, ZabBug, ZabConfig};
pub use core::{LinkDirection, PersistentState, ProposeError, ZabCore};
pub use effect::{Effect, Link, PersistToken, Serving, Write};
pub use leader::LeadershipCheck;
pub use message::{AckKind, LogEntry, Notification, PeerMessage, PeerState, SyncMode, Vote};
pub use state_machine::StateMachine;
pub use zxid::Zxid;
