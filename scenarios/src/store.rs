//! Which store a run starts: its own module, because the scenario, its workload and the
//! known-bug table all name it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which store the run starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Store {
    /// The Raft store (etcd-like).
    Raft,
    /// The ZAB store (ZooKeeper-like).
    Zab,
    /// The demo's replicated ledger: servers that append and sync, no consensus. It
    /// exercises the world, not a protocol, and gets no protocol checks.
    Ledger,
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Store::Raft => "raft",
            Store::Zab => "zab",
            Store::Ledger => "ledger",
        })
    }
}
