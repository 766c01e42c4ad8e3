//! The stores and their clients.
//!
//! - [`raft`]: the Raft consensus core (sans-IO) and its driver.
#![deny(missing_docs)]

pub mod raft;
