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

use probe_format::{Probe, Step, StepKind, Store};
use sim::{RunEnd, Seed, Sim, World};
use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

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

/// A store's way of answering a probe's steps in a world it has started.
pub(crate) trait Stepper {
    /// Runs one step and renders the model's answer.
    fn step(&mut self, step: &Step) -> impl Future<Output = Vec<String>>;
}

/// Runs `probe` in a fresh world of one server and its clients: `start` starts the store
/// and hands back what answers the steps, which then run in order. `Err` if the world did not
/// run to the end (a model that hangs or panics on a step; the panic report names the probe).
pub(crate) fn answer_in_world<T, S, F>(
    probe: &Probe,
    seed: u64,
    start: S,
) -> Result<Vec<Vec<String>>, String>
where
    T: Stepper,
    S: FnOnce(Sim, usize) -> F + 'static,
    F: Future<Output = T> + 'static,
{
    let clients = clients_of(probe);
    let answers = Arc::new(Mutex::new(Vec::new()));
    let sink = answers.clone();
    let steps = probe.steps.clone();
    let outcome = World::builder()
        .seed(Seed::new(seed))
        .servers(1)
        .clients(clients)
        .time_limit(Duration::from_secs(3600))
        .build()
        .map_err(|e| format!("world: {e}"))?
        .described_as(
            format!("conformance probe {}/{}", probe.store.name(), probe.name),
            format!(
                "cargo run --release -p coordsim -- conformance --store {} --seed {seed}",
                probe.store.name()
            ),
        )
        .run(move |sim: Sim| async move {
            let mut stepper = start(sim, clients).await;
            for step in &steps {
                let answer = stepper.step(step).await;
                sink.lock().unwrap().push(answer);
            }
        });
    if !matches!(outcome.end, RunEnd::Completed { .. }) {
        return Err(format!("the world did not run to the end: {outcome}"));
    }
    let answers = std::mem::take(&mut *answers.lock().unwrap());
    if answers.len() != probe.steps.len() {
        return Err(format!(
            "{} of {} steps answered",
            answers.len(),
            probe.steps.len()
        ));
    }
    Ok(answers)
}

/// How many client nodes the probe needs (its highest `cN`).
fn clients_of(probe: &Probe) -> usize {
    probe
        .steps
        .iter()
        .filter_map(|step| match step.kind {
            StepKind::Client { client, .. } => Some(client as usize),
            StepKind::Sleep { .. } => None,
        })
        .max()
        .unwrap_or(1)
}
