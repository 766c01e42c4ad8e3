//! `coordsim compare-locks`: herd-style against queue-style lock latency. The ZooKeeper herd
//! lock (every waiter watches the one lock node) and queue lock (each waiter watches its
//! predecessor) on the ZAB store, and etcd's mutex on the Raft store, each with several
//! client counts over the same seeds (and, with faults, the same fault plans), through the
//! one run driver. Every figure is read from the runs' histories ([`measure`]); every run
//! is judged by its checks, and a failed one is reported with the command that replays it.

mod measure;
mod plot;
mod report;

use crate::cli::{CliError, StoreChoice};
use clap::{Args, ValueEnum};
use measure::RunFigures;
use report::Row;
use scenarios::{
    Outcome, ReplayCommand, Scenario, catalogue, driver, scenario::Store, sweep, workload::Workload,
};
use serde::Serialize;
use sim::{FaultCounts, Seed, World, fault::FaultPlan, fault::FaultSource};
use std::{
    collections::BTreeSet,
    num::NonZeroUsize,
    path::{Path, PathBuf},
    process::ExitCode,
    sync::atomic::AtomicBool,
    time::Instant,
};

#[derive(Args, Debug)]
#[command(after_help = "\
The defaults (3 locks × clients 2, 8, 32 × seeds 0–9: 90 runs) take about 10 s of wall time \
with a release build on 2 busy cores. More clients are reachable by flag (--clients \
2,8,32,64,128) but slower (a 128-client herd-lock run takes about 20 s), and from 64 \
clients on, the ZooKeeper locks' runs may exhaust zk.linearizable's search budget on the \
lock's path (inconclusive), which fails them: at 64 the herd lock's on 5 of seeds 0–9, at \
128 both ZooKeeper locks' on seed 1. With --faults default the 32-client herd lock's did on \
5 of seeds 0–39 (none of 0–9).

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
    #[arg(long, value_delimiter = ',', value_parser = client_count, default_value = "2,8,32")]
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

/// One run to make.
struct Job {
    /// Index of its row.
    row: usize,
    seed: Seed,
    scenario: Scenario,
}

/// A row's lock and client count, before it has figures.
struct RowKey {
    store: Store,
    lock: scenarios::workload::LockRecipe,
    base: String,
    clients: usize,
}

/// A run that failed, as the report and the JSON show it.
#[derive(Serialize)]
struct FailedRun {
    scenario: String,
    clients: usize,
    seed: Seed,
    failure: String,
    replay: String,
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
    /// The plot's caption: how many seeds each point pools, and the faults.
    fn caption(&self) -> String {
        let seeds = match (self.seeds.first(), self.seeds.last()) {
            (Some(first), Some(last)) if self.seeds.len() > 1 => {
                format!(
                    "{} seeds ({}–{})",
                    self.seeds.len(),
                    first.value(),
                    last.value()
                )
            }
            (Some(only), _) => format!("1 seed ({})", only.value()),
            _ => "no seeds".to_string(),
        };
        let faults = match self.faults {
            FaultsChoice::None => "no faults".to_string(),
            FaultsChoice::Default => {
                format!("faults: one plan per seed and client count, from `{PLAN_SCENARIO}`")
            }
        };
        format!("{seeds} per point, bands from the least to the greatest per-seed value; {faults}")
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    options: &'a Options,
    rows: &'a [Row],
    failed_runs: &'a [&'a FailedRun],
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
    let (keys, jobs, options) = plan_runs(&stores, &clients, &seeds, args.faults)?;
    let jobs_at_once = args
        .jobs
        .map(|jobs| usize::try_from(jobs).unwrap_or(usize::MAX))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .min(jobs.len().max(1));
    let started = Instant::now();
    let ran = run_jobs(&jobs, jobs_at_once);
    let wall_s = started.elapsed().as_secs_f64();

    let mut measured: Vec<Vec<(RunFigures, FaultCounts)>> =
        keys.iter().map(|_| Vec::new()).collect();
    let mut failures: Vec<(FailedRun, Outcome)> = Vec::new();
    for (job, result) in jobs.iter().zip(ran) {
        match result {
            Ran::Clean(figures, counts) => measured[job.row].push((figures, counts)),
            Ran::Failed(outcome) => {
                failures.push((failed_run(job, &keys[job.row], &outcome), outcome));
            }
        }
    }
    let rows: Vec<Row> = keys
        .iter()
        .zip(&measured)
        .map(|(key, runs)| Row::of((key.store, key.lock, &key.base), key.clients, runs))
        .collect();

    let mut locks: Vec<String> = Vec::new();
    for key in &keys {
        let label = report::lock_label(key.store, key.lock);
        if !locks.contains(&label) {
            locks.push(label);
        }
    }
    println!(
        "compare-locks: {}; clients {}; seeds {}–{} ({} per lock and client count); faults: {}",
        locks.join(", "),
        join(&clients),
        seeds.first().map_or(0, |seed| seed.value()),
        seeds.last().map_or(0, |seed| seed.value()),
        seeds.len(),
        options.plan_source
    );
    println!();
    println!("{}", report::table(&rows));
    println!();
    println!("{NOTES}");
    if !failures.is_empty() {
        println!(
            "{} of {} runs failed (reported below) and are left out of the figures.",
            failures.len(),
            jobs.len()
        );
    }
    eprintln!(
        "{} runs, {jobs_at_once} at once, in {wall_s:.1} s of wall time",
        jobs.len()
    );
    let failed_runs: Vec<&FailedRun> = failures.iter().map(|(failed, _)| failed).collect();
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&JsonReport {
            options: &options,
            rows: &rows,
            failed_runs: &failed_runs,
        })
        .expect("the report serializes");
        crate::cli::write(path, &json)?;
        eprintln!("rows written to {}", path.display());
    }
    if let Some(path) = &args.svg {
        let caption = options.caption();
        crate::cli::write(
            path,
            &plot::svg(&rows, &caption).map_err(CliError::bad_input)?,
        )?;
        eprintln!("plot written to {}", path.display());
    }
    for (failed, outcome) in &failures {
        println!();
        println!(
            "FAILED: `{}` with {} clients, seed {}: {}",
            failed.scenario, failed.clients, failed.seed, failed.failure
        );
        println!("{outcome}");
        println!("replay with:     {}", failed.replay);
    }
    Ok(match failures.first() {
        Some((_, outcome)) => crate::cli::exit_code(outcome),
        None => ExitCode::SUCCESS,
    })
}

/// What the columns mean, under the table.
const NOTES: &str = "\
Latencies in simulated milliseconds. Each cell: all seeds' runs together (a percentile over \
every sample, a ratio of totals), then in brackets the least and greatest per-seed value.
acquire: request → acquired (waits that gave up are left out; the JSON counts them). hand-off: a release → the next acquisition by anyone, for \
releases with someone waiting. notifications / release: watch notifications that reached \
waiters per release that woke any (recipe.herd_effect's count). messages / acquisition: \
every message on the wire in the run, servers' heartbeats and replication included. \
acquisitions / s: per simulated second of the workload phase (the fault phase and the recovery under load, before every client's final turn).";

fn join(values: &[usize]) -> String {
    values
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn cannot_write(path: &Path, error: std::io::Error) -> CliError {
    CliError::bad_input(format!("cannot write {}: {error}", path.display()))
}

/// The rows, the runs (row by row, seed by seed) and the options they make.
fn plan_runs(
    stores: &BTreeSet<Store>,
    clients: &[usize],
    seeds: &[Seed],
    faults: FaultsChoice,
) -> Result<(Vec<RowKey>, Vec<Job>, Options), CliError> {
    let suffix = match faults {
        FaultsChoice::None => "",
        FaultsChoice::Default => "_faults",
    };
    let with_clients = |name: &str, count: usize| -> Result<Scenario, CliError> {
        let mut scenario = catalogue::get(name)
            .unwrap_or_else(|| panic!("the catalogue has the lock scenario `{name}`"));
        scenario.name = format!("{name}_{count}_clients");
        scenario.clients = count;
        scenario
            .validate()
            .map_err(|error| CliError::bad_input(format!("{} clients: {error}", count)))?;
        Ok(scenario)
    };
    // One plan per seed and client count, the same for every lock. The `_faults`
    // scenarios share their fault source and world, so each would generate this very plan
    // from the seed; following it explicitly makes that so whatever the catalogue says.
    let mut plans: Vec<Vec<FaultPlan>> = Vec::new();
    let mut plan_summaries = Vec::new();
    let fault_source = match faults {
        FaultsChoice::None => FaultSource::None,
        FaultsChoice::Default => {
            catalogue::get(PLAN_SCENARIO)
                .expect("the catalogue has the plans' scenario")
                .faults
        }
    };
    if faults == FaultsChoice::Default {
        for &count in clients {
            let scenario = with_clients(PLAN_SCENARIO, count)?;
            let mut per_seed = Vec::new();
            for &seed in seeds {
                let plan = World::new(seed, scenario.world_config())
                    .map_err(|error| CliError::bad_input(error.to_string()))?
                    .fault_plan()
                    .clone();
                plan_summaries.push(PlanSummary {
                    clients: count,
                    seed,
                    faults: plan.faults.len(),
                });
                per_seed.push(plan);
            }
            plans.push(per_seed);
        }
    }
    let mut keys = Vec::new();
    let mut jobs = Vec::new();
    for name in LOCK_SCENARIOS {
        let base = format!("{name}{suffix}");
        for (clients_index, &count) in clients.iter().enumerate() {
            let scenario = with_clients(&base, count)?;
            if !stores.contains(&scenario.store) {
                continue;
            }
            let Workload::Locks(locks) = &scenario.workload else {
                panic!("`{base}` runs the lock workload");
            };
            keys.push(RowKey {
                store: scenario.store,
                lock: locks.recipe,
                base: base.clone(),
                clients: count,
            });
            for (seed_index, &seed) in seeds.iter().enumerate() {
                let scenario = match faults {
                    FaultsChoice::None => scenario.clone(),
                    FaultsChoice::Default => scenario
                        .clone()
                        .with_plan(plans[clients_index][seed_index].clone()),
                };
                jobs.push(Job {
                    row: keys.len() - 1,
                    seed,
                    scenario,
                });
            }
        }
    }
    let plan_source = match faults {
        FaultsChoice::None => "none".to_string(),
        FaultsChoice::Default => format!(
            "default: one plan per seed and client count, generated from `{PLAN_SCENARIO}`'s \
             fault source and followed by every lock"
        ),
    };
    let options = Options {
        stores: stores.iter().copied().collect(),
        clients: clients.to_vec(),
        seeds: seeds.to_vec(),
        faults,
        fault_source,
        plan_source,
        plans: plan_summaries,
    };
    Ok((keys, jobs, options))
}

/// How a run went: clean, with its figures and the faults that fired, or failed.
enum Ran {
    Clean(RunFigures, FaultCounts),
    Failed(Outcome),
}

/// Runs every job, `at_once` at a time on their own threads; the results in job order,
/// whatever the order they finished in.
fn run_jobs(jobs: &[Job], at_once: usize) -> Vec<Ran> {
    let never = AtomicBool::new(false);
    let at_once = NonZeroUsize::new(at_once).unwrap_or(NonZeroUsize::MIN);
    let ran = sweep::in_parallel(
        jobs.len(),
        at_once,
        &never,
        |index| {
            let job = &jobs[index];
            let mut outcome = driver::run(&job.scenario, job.seed);
            match (&outcome.failure, outcome.history.take()) {
                (None, Some(history)) => Ran::Clean(
                    RunFigures::of(&history, outcome.fault_counts.messages_sent),
                    outcome.fault_counts,
                ),
                _ => Ran::Failed(outcome),
            }
        },
        |_| {},
    );
    ran.into_iter().map(|(_, ran)| ran).collect()
}

/// A failed run's report: its scenario is written to a file that `coordsim run` replays.
fn failed_run(job: &Job, key: &RowKey, outcome: &Outcome) -> FailedRun {
    let directory = std::env::temp_dir().join("coordsim-compare-locks");
    let file = directory.join(format!(
        "{}-seed-{}.json",
        job.scenario.name,
        job.seed.value()
    ));
    let written = std::fs::create_dir_all(&directory)
        .and_then(|()| std::fs::write(&file, job.scenario.to_string()));
    let replay = match written {
        Ok(()) => ReplayCommand::run(&file.display().to_string())
            .seed(job.seed)
            .to_string(),
        Err(error) => format!(
            "(could not write {}: {error}) {} with FILE holding: {}",
            file.display(),
            ReplayCommand::run("FILE").seed(job.seed),
            job.scenario
        ),
    };
    FailedRun {
        scenario: job.scenario.name.clone(),
        clients: key.clients,
        seed: job.seed,
        failure: outcome
            .failure
            .as_ref()
            .map_or_else(|| "no history".to_string(), ToString::to_string),
        replay,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
