//! What faults need to know of the world they fall on: its size, and the network conditions
//! an inverse restores. A trait, implemented by [`WorldConfig`](crate::WorldConfig), so that
//! the faults do not import the world's config, which holds them (its `faults` field).

use crate::{node::NodeId, ratio::Ratio};

/// The world as the faults see it.
pub trait FaultWorld {
    /// How many servers (`s1..`).
    fn servers(&self) -> usize;
    /// How many clients (`c1..`).
    fn clients(&self) -> usize;
    /// Whether `node` exists in this world.
    fn contains(&self, node: NodeId) -> bool;
    /// The configured probability that a datagram is lost.
    fn configured_loss(&self) -> Ratio;
    /// The configured probability that a datagram is delivered twice.
    fn configured_duplication(&self) -> Ratio;
    /// The configured one-way latency range, microseconds.
    fn configured_latency_us(&self) -> (u64, u64);
}
