//! `coordsim compare-locks`: herd-style against queue-style lock latency. The ZooKeeper herd
//! lock (every waiter watches the one lock node) and queue lock (each waiter watches its
//! predecessor) on the ZAB store, and etcd's mutex on the Raft store, each with several
//! client counts over the same seeds (and, with faults, the same fault plans), through the
//! one run driver. The planning, running, measuring and rendering are the library's
//! (`coordsim::lock_comparison`, shared with `coordsim::testing::LockComparison` for user
//! locks); this module picks the catalogue's locks, the fault plans and the outputs. Every
//! figure is read from the runs' histories; every run is judged by its checks, and a failed
//! one is reported with the command that replays it (its scenario written to a file).

use crate::cli::{CliError, StoreChoice};
use clap::{Args, ValueEnum};
use coordsim::lock_comparison::{ComparedLock, Job, LockName, Plan, Row, fault_plans};
use scenarios::{ReplayCommand, catalogue, scenario::Store, workload::Workload};
use serde::Serialize;
use sim::{Seed, fault::FaultSource};
use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    process::ExitCode,
    time::Instant,
};

#[derive(Args, Debug)]
#[command(after_help = "\
The defaults (3 locks × clients 2, 8, 32, 128 × seeds 0–9: 120 runs) take about 22 s of \
wall time with a release build on 2 busy cores (load 8, 2026-11-27), about 16 s with \
--faults default; every check is conclusive at these sizes (zk.linearizable resolves \
writes whose reply was lost from what the replicas applied, and places no-op observations \
for good). More clients are reachable by flag (--clients 64,128,256 is clean too, with and \
without faults). After the heal every client takes the lock once more, one after the \
other, so the liveness bound grows with the clients: a lock scenario's own (30 s of \
simulated time), raised where the patience and one turn per client (the hold and a \
hand-off at the world's largest latencies) need more: 36.3 s at 128 clients, 62.4 s at \
256. The first line under the title says which bounds the runs had.

Exit codes: 0 every run clean; otherwise the first failed run's (1 safety violation, \
3 liveness failure, 4 a model panicked, 5 time limit), after its report and replay \
command; 2 bad input.

Examples:
  coordsim compare-locks
  coordsim compare-locks --store zab --clients 2,4,8,16 --seeds 5 --svg locks.svg
  coordsim compare-locks --faults default --json locks.json")]
pub struct CompareLocksArgs {
    /// Which stores: zab runs the herd lock and the queue lock, raft etcd's mutex.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "zab,raft")]
    store: Vec<StoreChoice>,
    /// Client counts to compare (each client runs one lock-taking process).
    #[arg(long, value_delimiter = ',', value_parser = client_count, default_value = "2,8,32,128")]
    clients: Vec<usize>,
    /// Seeds per lock and client count (seeds 0 to N−1).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// none: the catalogue's fault-free lock scenarios; default: their `_faults` variants
    /// (partitions, loss, latency, server crashes and pauses), one plan per seed and client
    /// count, the same for every lock.
    #[arg(long, value_enum, default_value_t = FaultsChoice::None)]
    faults: FaultsChoice,
    /// Write the rows and the options as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the plot (hand-off latency and notifications per release against clients) here,
    /// as SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Runs at once (default: one per core). The results are the same whatever it is.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
}

/// Where the runs' faults come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
enum FaultsChoice {
    /// No faults.
    None,
    /// The `_faults` scenarios' source, one plan per seed and client count for every lock.
    Default,
}

/// The catalogue's lock scenarios compared, in the order rows come.
const LOCK_SCENARIOS: [&str; 3] = ["zk_herd_lock", "zk_queue_lock", "etcd_mutex"];

/// The scenario whose fault source generates the one plan per seed and client count that
/// every lock follows with `--faults default`.
const PLAN_SCENARIO: &str = "zk_herd_lock_faults";

fn client_count(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(clients) if clients > 0 => Ok(clients),
        _ => Err(format!(
            "expected a client count of at least 1, got `{text}`"
        )),
    }
}

/// The plan of one seed and client count with `--faults default`.
#[derive(Serialize)]
struct PlanSummary {
    clients: usize,
    seed: Seed,
    /// Faults scheduled.
    faults: usize,
}

/// The options the comparison ran with, for the JSON.
#[derive(Serialize)]
struct Options {
    stores: Vec<Store>,
    clients: Vec<usize>,
    seeds: Vec<Seed>,
    faults: FaultsChoice,
    /// The fault source the plans came from (`none` without faults).
    fault_source: FaultSource,
    /// How the plans were made, in words.
    plan_source: String,
    /// Each plan's size (none without faults).
    plans: Vec<PlanSummary>,
}

impl Options {
    /// The faults, in words, for the plot's caption.
    fn faults_caption(&self) -> String {
        match self.faults {
            FaultsChoice::None => "no faults".to_string(),
            FaultsChoice::Default => {
                format!("faults: one plan per seed and client count, from `{PLAN_SCENARIO}`")
            }
        }
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    options: &'a Options,
    rows: &'a [Row],
    failed_runs: &'a [&'a coordsim::lock_comparison::FailedRun],
}

pub fn run(args: CompareLocksArgs) -> Result<ExitCode, CliError> {
    let stores: BTreeSet<Store> = args.store.iter().map(|choice| choice.store()).collect();
    let clients: Vec<usize> = args
        .clients
        .iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let seeds: Vec<Seed> = (0..args.seeds).map(Seed::new).collect();
    // Find out now that an output cannot be written, not after the runs.
    for path in [&args.json, &args.svg].into_iter().flatten() {
        std::fs::File::create(path).map_err(|error| cannot_write(path, error))?;
    }
    let (plan, options) = plan_runs(&stores, &clients, &seeds, args.faults)?;
    let jobs_at_once = args
        .jobs
        .map(|jobs| usize::try_from(jobs).unwrap_or(usize::MAX))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .min(plan.runs().max(1));
    let started = Instant::now();
    let comparison = plan.run(jobs_at_once, replay_from_file);
    let wall_s = started.elapsed().as_secs_f64();
    print!("{}", comparison.text("compare-locks", &options.plan_source));
    eprintln!(
        "{} runs, {jobs_at_once} at once, in {wall_s:.1} s of wall time",
        comparison.runs
    );
    let failed_runs: Vec<_> = comparison
        .failures
        .iter()
        .map(|(failed, _)| failed)
        .collect();
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&JsonReport {
            options: &options,
            rows: &comparison.rows,
            failed_runs: &failed_runs,
        })
        .expect("the report serializes");
        crate::cli::write(path, &json)?;
        eprintln!("rows written to {}", path.display());
    }
    if let Some(path) = &args.svg {
        let caption = comparison.caption(&options.faults_caption());
        crate::cli::write(
            path,
            &comparison.svg(&caption).map_err(CliError::bad_input)?,
        )?;
        eprintln!("plot written to {}", path.display());
    }
    Ok(match comparison.failures.first() {
        Some((_, outcome)) => crate::cli::exit_code(outcome),
        None => ExitCode::SUCCESS,
    })
}

fn cannot_write(path: &Path, error: std::io::Error) -> CliError {
    CliError::bad_input(format!("cannot write {}: {error}", path.display()))
}

/// The runs (row by row, seed by seed) and the options they make.
fn plan_runs(
    stores: &BTreeSet<Store>,
    clients: &[usize],
    seeds: &[Seed],
    faults: FaultsChoice,
) -> Result<(Plan, Options), CliError> {
    let suffix = match faults {
        FaultsChoice::None => "",
        FaultsChoice::Default => "_faults",
    };
    let catalogued = |name: &str| {
        catalogue::get(name)
            .unwrap_or_else(|| panic!("the catalogue has the lock scenario `{name}`"))
    };
    // One plan per seed and client count, the same for every lock. The `_faults`
    // scenarios share their fault source and world, so each would generate this very plan
    // from the seed; following it explicitly makes that so whatever the catalogue says.
    let (fault_source, plans) = match faults {
        FaultsChoice::None => (FaultSource::None, None),
        FaultsChoice::Default => {
            let scenario = catalogued(PLAN_SCENARIO);
            let plans = fault_plans(&scenario, clients, seeds).map_err(CliError::bad_input)?;
            (scenario.faults, Some(plans))
        }
    };
    let mut locks = Vec::new();
    for name in LOCK_SCENARIOS {
        let scenario = catalogued(&format!("{name}{suffix}"));
        if !stores.contains(&scenario.store) {
            continue;
        }
        let Workload::Locks(workload) = &scenario.workload else {
            panic!("`{}` runs the lock workload", scenario.name);
        };
        locks.push(ComparedLock {
            name: LockName::Recipe(workload.recipe),
            scenario,
        });
    }
    let plan = Plan::new(&locks, clients, seeds, plans.as_deref()).map_err(CliError::bad_input)?;
    let plan_source = match faults {
        FaultsChoice::None => "none".to_string(),
        FaultsChoice::Default => format!(
            "default: one plan per seed and client count, generated from `{PLAN_SCENARIO}`'s \
             fault source and followed by every lock"
        ),
    };
    let plan_summaries = plans
        .iter()
        .flatten()
        .zip(clients)
        .flat_map(|(per_seed, &count)| {
            per_seed
                .iter()
                .zip(seeds)
                .map(move |(plan, &seed)| PlanSummary {
                    clients: count,
                    seed,
                    faults: plan.faults.len(),
                })
        })
        .collect();
    let options = Options {
        stores: stores.iter().copied().collect(),
        clients: clients.to_vec(),
        seeds: seeds.to_vec(),
        faults,
        fault_source,
        plan_source,
        plans: plan_summaries,
    };
    Ok((plan, options))
}

/// The line that replays a failed job: its scenario is written to a file that
/// `coordsim run` replays.
fn replay_from_file(job: &Job) -> String {
    let directory = std::env::temp_dir().join("coordsim-compare-locks");
    let file = directory.join(format!(
        "{}-seed-{}.json",
        job.scenario.name,
        job.seed.value()
    ));
    let written = std::fs::create_dir_all(&directory)
        .and_then(|()| std::fs::write(&file, job.scenario.to_string()));
    match written {
        Ok(()) => ReplayCommand::run(&file.display().to_string())
            .seed(job.seed)
            .to_string(),
        Err(error) => format!(
            "(could not write {}: {error}) {} with FILE holding: {}",
            file.display(),
            ReplayCommand::run("FILE").seed(job.seed),
            job.scenario
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::{World, fault::FaultPlan};

    #[test]
    fn every_lock_would_generate_the_same_plan_from_a_seed() {
        for clients in [2, 8] {
            for seed in (0..3).map(Seed::new) {
                let plans: Vec<FaultPlan> = LOCK_SCENARIOS
                    .iter()
                    .map(|name| {
                        let mut scenario = catalogue::get(&format!("{name}_faults")).unwrap();
                        scenario.clients = clients;
                        World::new(seed, scenario.world_config())
                            .unwrap()
                            .fault_plan()
                            .clone()
                    })
                    .collect();
                assert!(!plans[0].faults.is_empty());
                assert!(plans.iter().all(|plan| *plan == plans[0]), "seed {seed}");
            }
        }
    }
}
