//! Runs conformance probes (see `models/conformance/README.md`) against the models: each
//! probe in a fresh one-server world, configured as the Debian server the probe was recorded
//! against, every step on its client's node, each answer rendered as the recorder renders the
//! real server's.
//!
//! The answers are compared by [`probe_format::Step::compare`]; `tests/probes.rs` runs every
//! probe file.

mod etcd;
mod judge;
mod render;
mod zk;

pub use judge::{Judgement, Tally, judge, judge_committed, probe_files, probes_dir};

use probe_format::{Probe, Store};

/// The seed every probe runs with. A probe is a sequence of single steps with nothing racing,
/// so its answers should not depend on the seed; `tests/probes.rs` runs a second seed to show
/// that they do not.
pub const PROBE_SEED: u64 = 1;

/// The model's answer to each of `probe`'s steps, in order. `Err` if the world did not run to
/// the end (a model that hangs or panics on a step).
pub fn run(probe: &Probe, seed: u64) -> Result<Vec<Vec<String>>, String> {
    match probe.store {
        Store::Zk => zk::run(probe, seed),
        Store::Etcd => etcd::run(probe, seed),
    }
}
