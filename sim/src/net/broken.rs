//! Why a connection broke: its own module because the connections that break and the world
//! state that breaks them (on a partition or crash) both name it.

use crate::node::NodeId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a connection broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum BreakReason {
    /// A partition or clog cut the link between the ends.
    Partitioned,
    /// One end's node crashed.
    Crashed {
        /// The node that crashed.
        node: NodeId,
    },
    /// One end closed (or dropped) the connection.
    Closed {
        /// The node that closed it.
        by: NodeId,
    },
}

/// The connection is broken; nothing more can be sent or received on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionBroken {
    /// Why.
    pub reason: BreakReason,
}

impl fmt::Display for ConnectionBroken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            BreakReason::Partitioned => write!(f, "connection broken by a partition"),
            BreakReason::Crashed { node } => write!(f, "connection broken: {node} crashed"),
            BreakReason::Closed { by } => write!(f, "connection closed by {by}"),
        }
    }
}
