//! The standard lock scenario, one seed per iteration, per store: 5 servers, 16 clients,
//! 60 simulated seconds of the queue lock (ZAB store) or the etcd mutex (Raft store) under
//! the `_faults` swarm (partitions, loss, latency, server crashes and pauses), then the
//! heal, the liveness phase and every check — a whole `driver::run`, as a sweep runs it.
//!
//! Reported: simulated seconds per wall second and seeds per wall second. Target: at least
//! 1,000× faster than real time.

use coordsim_benches::standard_lock;
use criterion::Criterion;
use scenarios::{Scenario, driver};
use sim::Seed;
use std::time::{Duration, Instant};

/// Runs one seed; its simulated length.
fn one_seed(scenario: &Scenario, seed: u64) -> Duration {
    let outcome = driver::run(scenario, Seed::new(seed));
    assert!(outcome.is_clean(), "{outcome}");
    Duration::from_millis(outcome.metrics.ended_at_ms)
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let scenarios = standard_lock::BASES.map(standard_lock::scenario);
    let mut group = criterion.benchmark_group("standard_lock_scenario");
    group.sample_size(10);
    for scenario in &scenarios {
        let mut seed = 0;
        group.bench_function(&scenario.name, |b| {
            b.iter(|| {
                seed += 1;
                one_seed(scenario, seed)
            })
        });
    }
    group.finish();
    criterion.final_summary();

    for scenario in &scenarios {
        let seeds = 5;
        let start = Instant::now();
        let simulated: Duration = (100..100 + seeds)
            .map(|seed| one_seed(scenario, seed))
            .sum();
        let wall = start.elapsed();
        println!(
            "{}: {seeds} seeds in {:.2} s: {:.0} simulated seconds per wall second \
             (target >= 1000), {:.2} seeds per wall second",
            scenario.name,
            wall.as_secs_f64(),
            simulated.as_secs_f64() / wall.as_secs_f64(),
            seeds as f64 / wall.as_secs_f64()
        );
    }
}
