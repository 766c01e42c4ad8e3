//! The lock comparison, shared by `coordsim compare-locks` (coordsim's own lock recipes) and
//! [`crate::testing::LockComparison`] (the user's locks): one way to plan the runs (each
//! lock with several client counts over the same seeds and, with faults, the same fault
//! plans), run them through the one run driver, measure them from their histories
//! ([`measure`]) and render the table ([`report`]) and the plot ([`plot`]). Every run is
//! judged by its checks; a failed one is reported with the line that replays it and left
//! out of the figures.

mod measure;
mod plot;
mod report;

pub use report::{Figure, LockName, Row};

use measure::RunFigures;
use scenarios::{Outcome, Scenario, driver, scenario::Store, sweep};
use serde::Serialize;
use sim::{FaultCounts, Seed, World, fault::FaultPlan};
use std::{
    collections::{BTreeMap, BTreeSet},
    num::NonZeroUsize,
    sync::atomic::AtomicBool,
};

/// A lock to compare: its name in the rows, and the scenario its runs start from (each row
/// sets the client count).
#[derive(Clone, Debug)]
pub struct ComparedLock {
    /// Its name in the rows.
    pub name: LockName,
    /// The scenario its runs start from.
    pub scenario: Scenario,
}

/// One run to make.
#[derive(Clone, Debug)]
pub struct Job {
    /// Index of its row.
    row: usize,
    /// The seed.
    pub seed: Seed,
    /// The scenario, with the row's client count (and the seed's fault plan, if any).
    pub scenario: Scenario,
}

/// A row's lock and client count, before it has figures.
#[derive(Clone, Debug)]
struct RowKey {
    store: Store,
    lock: LockName,
    base: String,
    clients: usize,
    liveness_bound_ms: u64,
}

/// The runs to make: rows lock by lock, client count by client count; jobs row by row,
/// seed by seed.
#[derive(Clone, Debug)]
pub struct Plan {
    keys: Vec<RowKey>,
    jobs: Vec<Job>,
    clients: Vec<usize>,
    seeds: Vec<Seed>,
}

/// `scenario` with `clients` clients, named after them, validated (`Err`: the one line of
/// bad input, naming the client count). Its liveness bound is raised, if need be, to what
/// its workload needs with that many clients ([`Scenario::liveness_needed_ms`]: the lock
/// workload's final turns come one after the other, so their time grows with the clients);
/// it is never lowered below the scenario's own.
pub fn with_clients(mut scenario: Scenario, clients: usize) -> Result<Scenario, String> {
    scenario.name = format!("{}_{clients}_clients", scenario.name);
    scenario.clients = clients;
    if let Some(needed_ms) = scenario.liveness_needed_ms() {
        scenario.liveness_bound_ms = scenario.liveness_bound_ms.max(needed_ms);
    }
    scenario
        .validate()
        .map_err(|error| format!("{clients} clients: {error}"))?;
    Ok(scenario)
}

/// The fault plan `scenario`'s fault source generates for each client count (outer) and
/// seed (inner): the one plan every lock follows for that seed and client count.
pub fn fault_plans(
    scenario: &Scenario,
    clients: &[usize],
    seeds: &[Seed],
) -> Result<Vec<Vec<FaultPlan>>, String> {
    let mut plans = Vec::new();
    for &count in clients {
        let scenario = with_clients(scenario.clone(), count)?;
        let mut per_seed = Vec::new();
        for &seed in seeds {
            let world = World::new(seed, scenario.world_config()).map_err(|e| e.to_string())?;
            per_seed.push(world.fault_plan().clone());
        }
        plans.push(per_seed);
    }
    Ok(plans)
}

impl Plan {
    /// Every lock with every client count over every seed; with `plans` (from
    /// [`fault_plans`], for the same client counts and seeds), each run follows its seed's
    /// and client count's plan.
    pub fn new(
        locks: &[ComparedLock],
        clients: &[usize],
        seeds: &[Seed],
        plans: Option<&[Vec<FaultPlan>]>,
    ) -> Result<Self, String> {
        let mut keys = Vec::new();
        let mut jobs = Vec::new();
        for lock in locks {
            for (clients_index, &count) in clients.iter().enumerate() {
                let scenario = with_clients(lock.scenario.clone(), count)?;
                keys.push(RowKey {
                    store: scenario.store,
                    lock: lock.name.clone(),
                    base: lock.scenario.name.clone(),
                    clients: count,
                    liveness_bound_ms: scenario.liveness_bound_ms,
                });
                for (seed_index, &seed) in seeds.iter().enumerate() {
                    let scenario = match plans {
                        None => scenario.clone(),
                        Some(plans) => scenario
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
        Ok(Self {
            keys,
            jobs,
            clients: clients.to_vec(),
            seeds: seeds.to_vec(),
        })
    }

    /// How many runs it makes.
    pub fn runs(&self) -> usize {
        self.jobs.len()
    }

    /// Makes every run, `at_once` at a time on their own threads (the results are the same
    /// whatever it is); `replay` gives the line that replays a failed job.
    pub fn run(&self, at_once: usize, replay: impl Fn(&Job) -> String) -> Comparison {
        let ran = run_jobs(&self.jobs, at_once);
        let mut measured: Vec<Vec<(RunFigures, FaultCounts)>> =
            self.keys.iter().map(|_| Vec::new()).collect();
        let mut failures = Vec::new();
        for (job, result) in self.jobs.iter().zip(ran) {
            match result {
                Ran::Clean(figures, counts) => measured[job.row].push((figures, counts)),
                Ran::Failed(outcome) => {
                    let failed = FailedRun {
                        scenario: job.scenario.name.clone(),
                        clients: self.keys[job.row].clients,
                        seed: job.seed,
                        failure: outcome
                            .failure
                            .as_ref()
                            .map_or_else(|| "no history".to_string(), ToString::to_string),
                        replay: replay(job),
                    };
                    failures.push((failed, outcome));
                }
            }
        }
        let rows = self
            .keys
            .iter()
            .zip(&measured)
            .map(|(key, runs)| {
                let lock = (key.store, &key.lock, key.base.as_str());
                Row::of(lock, key.clients, key.liveness_bound_ms, runs)
            })
            .collect();
        Comparison {
            rows,
            failures,
            runs: self.jobs.len(),
            clients: self.clients.clone(),
            seeds: self.seeds.clone(),
        }
    }
}

/// A run that failed, as the report and the JSON show it.
#[derive(Clone, Debug, Serialize)]
pub struct FailedRun {
    /// Its scenario's name (`zk_herd_lock_8_clients`).
    pub scenario: String,
    /// Its client count.
    pub clients: usize,
    /// Its seed.
    pub seed: Seed,
    /// What failed, in one line.
    pub failure: String,
    /// The line that replays it.
    pub replay: String,
}

/// The comparison's results: a row per lock and client count, and the failed runs.
#[derive(Debug)]
pub struct Comparison {
    /// One per lock and client count, in the plan's order.
    pub rows: Vec<Row>,
    /// The runs that failed (left out of the rows), with their outcomes.
    pub failures: Vec<(FailedRun, Outcome)>,
    /// Runs made.
    pub runs: usize,
    clients: Vec<usize>,
    seeds: Vec<Seed>,
}

impl Comparison {
    /// What `coordsim compare-locks` prints: a line saying what ran (starting with
    /// `title`, ending with `faults`), the table, what its columns mean, and each failed run
    /// with its outcome and the line that replays it.
    pub fn text(&self, title: &str, faults: &str) -> String {
        let mut locks: Vec<String> = Vec::new();
        for row in &self.rows {
            let label = row.label();
            if !locks.contains(&label) {
                locks.push(label);
            }
        }
        let mut text = format!(
            "{title}: {}; clients {}; seeds {}–{} ({} per lock and client count); faults: \
             {faults}\n{}\n\n{}\n\n{NOTES}\n",
            locks.join(", "),
            join(&self.clients),
            self.seeds.first().map_or(0, |seed| seed.value()),
            self.seeds.last().map_or(0, |seed| seed.value()),
            self.seeds.len(),
            liveness_bounds(&self.rows),
            report::table(&self.rows),
        );
        if !self.failures.is_empty() {
            text.push_str(&format!(
                "{} of {} runs failed (reported below) and are left out of the figures.\n",
                self.failures.len(),
                self.runs
            ));
        }
        for (failed, outcome) in &self.failures {
            text.push_str(&format!(
                "\nFAILED: `{}` with {} clients, seed {}: {}\n{outcome}\nreplay with:     {}\n",
                failed.scenario, failed.clients, failed.seed, failed.failure, failed.replay
            ));
        }
        text
    }

    /// The rows as a Markdown table.
    pub fn table(&self) -> String {
        report::table(&self.rows)
    }

    /// The plot (hand-off latency and notifications per release against clients) as SVG,
    /// with `caption` under it.
    pub fn svg(&self, caption: &str) -> Result<String, String> {
        plot::svg(&self.rows, caption)
    }

    /// The plot's caption: how many seeds each point pools, then `faults` in words.
    pub fn caption(&self, faults: &str) -> String {
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
        format!("{seeds} per point, bands from the least to the greatest per-seed value; {faults}")
    }
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

/// The liveness bounds the rows' runs had, in one line: `liveness bound (simulated): 30.0 s
/// at 2, 8 clients; 62.4 s at 256 clients; ...`.
fn liveness_bounds(rows: &[Row]) -> String {
    // Bound → client counts, both in rising order; a count whose locks' bounds differ
    // appears under each.
    let mut clients_by_bound: BTreeMap<u64, BTreeSet<usize>> = BTreeMap::new();
    for row in rows {
        clients_by_bound
            .entry(row.liveness_bound_ms)
            .or_default()
            .insert(row.clients);
    }
    let bounds: Vec<String> = clients_by_bound
        .iter()
        .map(|(bound_ms, clients)| {
            let clients: Vec<usize> = clients.iter().copied().collect();
            format!(
                "{:.1} s at {} clients",
                *bound_ms as f64 / 1_000.0,
                join(&clients)
            )
        })
        .collect();
    format!(
        "liveness bound (simulated): {}; each run's scenario's own, raised where a catalogue \
         lock's final turns, one per client and one after the other, need more",
        bounds.join("; ")
    )
}

fn join(values: &[usize]) -> String {
    values
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
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
