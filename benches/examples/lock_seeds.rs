//! Runs seeds `first..first + count` of the standard lock scenario on one store in one
//! process and prints the simulated and wall time: for comparing two builds side by side
//! (`farm-bench --vs`), which a single seed is too short and too noisy for.
//!
//! Arguments: the store (`zab` or `raft`), the first seed and the number of seeds.

use coordsim_benches::standard_lock;
use scenarios::driver;
use sim::Seed;
use std::{process::ExitCode, time::Instant};

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match arguments.as_slice() {
        [store, first, count] => standard_lock::base_of(store)
            .zip(first.parse::<u64>().ok().zip(count.parse::<u64>().ok())),
        _ => None,
    };
    let Some((base, (first, count))) = parsed else {
        eprintln!("expected a store (zab or raft), a first seed and a number of seeds (u64s)");
        return ExitCode::from(2);
    };
    let scenario = standard_lock::scenario(base);
    let start = Instant::now();
    let (mut simulated_ms, mut acknowledged) = (0, 0);
    for seed in first..first + count {
        let outcome = driver::run(&scenario, Seed::new(seed));
        if !outcome.is_clean() {
            eprintln!("{outcome}");
            return ExitCode::FAILURE;
        }
        simulated_ms += outcome.metrics.ended_at_ms;
        acknowledged += outcome.metrics.acknowledged;
    }
    let wall_ms = start.elapsed().as_secs_f64() * 1000.0;
    println!(
        "{} seeds {first}..{}: {simulated_ms} simulated ms in {wall_ms:.0} wall ms: {:.0}x; \
         {acknowledged} operations acknowledged, {:.0} per wall second",
        scenario.name,
        first + count,
        simulated_ms as f64 / wall_ms,
        acknowledged as f64 * 1000.0 / wall_ms
    );
    ExitCode::SUCCESS
}
