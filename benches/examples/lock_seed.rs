//! Runs one seed of the standard lock scenario on one store and prints its history digest
//! and simulated length: a deterministic unit of work to profile, e.g.
//! `valgrind --tool=callgrind target/<profile>/examples/lock_seed zab 1`.
//!
//! Arguments: the store (`zab`: the queue lock, or `raft`: etcd's mutex), the seed, and
//! optionally a file to write the run's history to (JSON lines).

use coordsim_benches::standard_lock;
use scenarios::driver;
use sim::Seed;
use std::process::ExitCode;

/// The catalogue scenario the standard scenario is built on for `store`, the seed and
/// the history file, if one is asked for.
fn parse(arguments: &[String]) -> Option<(&'static str, u64, Option<&str>)> {
    let (store, seed, history_file) = match arguments {
        [store, seed] => (store, seed, None),
        [store, seed, history_file] => (store, seed, Some(history_file.as_str())),
        _ => return None,
    };
    Some((
        standard_lock::base_of(store)?,
        seed.parse().ok()?,
        history_file,
    ))
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let Some((base, seed, history_file)) = parse(&arguments) else {
        eprintln!("expected a store (zab or raft), a seed (a u64) and optionally a history file");
        return ExitCode::from(2);
    };
    let outcome = driver::run(&standard_lock::scenario(base), Seed::new(seed));
    println!(
        "{} seed {seed}: history digest {}, {} simulated ms, clean: {}",
        outcome.scenario,
        outcome
            .history_digest
            .map_or("none".to_string(), |digest| digest.to_string()),
        outcome.metrics.ended_at_ms,
        outcome.is_clean()
    );
    if let Some(path) = history_file {
        let lines = outcome
            .history
            .as_ref()
            .map_or_else(String::new, |history| history.to_json_lines());
        if let Err(error) = std::fs::write(path, lines) {
            eprintln!("could not write the history to {path}: {error}");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
