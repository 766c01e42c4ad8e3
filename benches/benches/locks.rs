//! The standard lock scenario, one seed per iteration, per store: 5 servers, 16 clients,
//! 60 simulated seconds of the queue lock (ZAB store) or the etcd mutex (Raft store) under
//! the `_faults` swarm (partitions, loss, latency, server crashes and pauses), then the
//! heal, the liveness phase and every check — a whole `driver::run`, as a sweep runs it.
//!
//! Reported: simulated seconds per wall second and seeds per wall second, and beside them
//! raw madsim's typed-message round trips per wall second, measured interleaved in the same
//! process. Absolute rates move from machine to machine; their quotient, simulated
//! milliseconds per raw round trip's wall time, compares across machines. Target: 1,500×
//! faster than real time on the quiet development machine, where raw madsim runs about
//! 480k round trips per wall second: about 3.1 simulated ms per raw round trip.

use coordsim_benches::{raw_madsim, standard_lock};
use criterion::Criterion;
use scenarios::{Scenario, driver};
use sim::Seed;
use std::time::{Duration, Instant};

/// Raw madsim round trips per measurement (as the transport, Raft and ZAB benches run).
const RAW_ROUND_TRIPS: u64 = 2_000;
/// Seeds per store in each interleaved round.
const SEEDS_PER_ROUND: u64 = 10;
/// Interleaved rounds, so that machine noise hits the stores and raw madsim alike. 50 seeds
/// per store in all, about 2 s each: 15 (session 8) left the figure a few percent apart
/// from one run to the next.
const ROUNDS: u64 = 5;

/// Runs one seed; its simulated length and how many client operations completed in it.
fn one_seed(scenario: &Scenario, seed: u64) -> (Duration, u64) {
    let outcome = driver::run(scenario, Seed::new(seed));
    assert!(outcome.is_clean(), "{outcome}");
    (
        Duration::from_millis(outcome.metrics.ended_at_ms),
        outcome.metrics.acknowledged,
    )
}

/// Raw madsim round trips per wall second, over 5 runs.
fn raw_round_trips_per_second() -> f64 {
    raw_madsim::messages_per_second(RAW_ROUND_TRIPS, 5) / 2.0
}

/// One store's total over the interleaved rounds.
#[derive(Default)]
struct Measured {
    simulated: Duration,
    wall: Duration,
    seeds: u64,
    /// Client operations acknowledged: a model change that makes a simulated second cheaper
    /// by doing less in it shows here.
    acknowledged: u64,
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
    group.bench_function("raw_madsim_round_trips", |b| {
        b.iter(|| raw_madsim::round_trips(RAW_ROUND_TRIPS))
    });
    group.finish();
    criterion.final_summary();

    let mut measured: [Measured; 2] = Default::default();
    let mut raw_per_second = 0.0;
    for round in 0..ROUNDS {
        raw_per_second += raw_round_trips_per_second();
        for (scenario, total) in scenarios.iter().zip(&mut measured) {
            let first_seed = 100 + round * SEEDS_PER_ROUND;
            let start = Instant::now();
            for seed in first_seed..first_seed + SEEDS_PER_ROUND {
                let (simulated, acknowledged) = one_seed(scenario, seed);
                total.simulated += simulated;
                total.acknowledged += acknowledged;
            }
            total.wall += start.elapsed();
            total.seeds += SEEDS_PER_ROUND;
        }
    }
    let raw_per_second = raw_per_second / ROUNDS as f64;
    println!(
        "interleaved, {ROUNDS} rounds: raw madsim {raw_per_second:.0} round trips per wall second"
    );
    for (scenario, total) in scenarios.iter().zip(&measured) {
        let wall_s = total.wall.as_secs_f64();
        let rate = total.simulated.as_secs_f64() / wall_s;
        println!(
            "{}: {} seeds in {wall_s:.2} s: {rate:.0} simulated seconds per wall second \
             (target >= 1500 on a machine with raw madsim at 480k), {:.2} seeds per wall \
             second; {:.2} simulated ms per raw madsim round trip (target >= 3.1); \
             {:.0} operations acknowledged per wall second ({:.1} per simulated second)",
            scenario.name,
            total.seeds,
            total.seeds as f64 / wall_s,
            1_000.0 * rate / raw_per_second,
            total.acknowledged as f64 / wall_s,
            total.acknowledged as f64 / total.simulated.as_secs_f64()
        );
    }
}
