//! The one sweep: a scenario over many seeds, each run through the one driver, failures
//! reported with the scenario in full and the command that replays them. [`Sweep`] runs
//! the seeds a test asks for on every core and keeps them, in seed order, on the test's
//! thread; [`Parallel`] runs them across threads and can stop, for `coordsim sweep`; both
//! run through the one worker pool and keep each seed as [`run_seed`] does.
//!
//! ```no_run
//! use scenarios::{catalogue, sweep::Sweep};
//! use sim::fault::FaultKind;
//! let scenario = catalogue::get("raft_swarm_3").unwrap();
//! let summary = Sweep::new(scenario, "scenarios", "raft_safety", "three_servers", 50).run();
//! summary.assert_clean();
//! summary.assert_fired(&[FaultKind::Crash, FaultKind::Partition]);
//! ```

pub use crate::worker_pool::{in_parallel, in_parallel_in_order};
use crate::{driver, evidence::Evidence, outcome::Outcome, scenario::Scenario};
use sim::{
    FaultCounts, Seed,
    fault::FaultKind,
    report::{FailureReport, panic_message},
};
use std::{
    fmt,
    num::NonZeroUsize,
    sync::atomic::{AtomicBool, Ordering},
};

/// A sweep: a scenario, the test it belongs to (for the replay command), and how many
/// seeds it runs by default (`COORDSIM_SEEDS` / `COORDSIM_SEED` say otherwise).
#[derive(Clone, Debug)]
pub struct Sweep {
    scenario: Scenario,
    package: String,
    test_target: String,
    test_name: String,
    default_seeds: u64,
}

/// One seed's failure.
#[derive(Debug)]
pub struct SeedFailure {
    /// The run.
    pub outcome: Outcome,
    /// How to replay it.
    pub report: FailureReport,
    /// The scenario, as the file that reproduces it.
    pub scenario: String,
}

impl SeedFailure {
    /// The names of the checks that fired in the run, each once, in the order reported.
    pub fn checks_fired(&self) -> Vec<&str> {
        let mut fired: Vec<&str> = Vec::new();
        for violation in &self.outcome.violations {
            if !fired.contains(&violation.check.as_str()) {
                fired.push(&violation.check);
            }
        }
        fired
    }
}

impl fmt::Display for SeedFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.report)?;
        writeln!(f, "scenario: {}", self.scenario)?;
        write!(f, "{}", self.outcome)
    }
}

/// What a sweep found.
#[derive(Debug, Default)]
pub struct SweepSummary {
    /// The scenario's name.
    pub scenario: String,
    /// Seeds run.
    pub seeds: Vec<Seed>,
    /// The runs that failed (with their histories).
    pub failures: Vec<SeedFailure>,
    /// Every run's outcome, without its history.
    pub outcomes: Vec<Outcome>,
    /// Faults fired over all runs.
    pub fault_totals: FaultCounts,
    /// Whether the sweep ran its default seeds (not one pinned by `COORDSIM_SEED`).
    pub sweeping: bool,
    /// The fault kinds the scenario turns on.
    pub enabled_kinds: Vec<FaultKind>,
    /// The test that ran the sweep (package, test target, test name): its replay lines.
    test: (String, String, String),
    /// The coverage marks the scenario declares.
    pub declared_marks: Vec<sim::coverage::Mark>,
}

impl SweepSummary {
    /// How much each check judged and which marks were reached, over the sweep's runs.
    pub fn evidence(&self) -> Evidence {
        Evidence::of(&self.outcomes, &self.declared_marks)
    }

    /// Panics with every failure report if any seed failed (a violation, a liveness stall,
    /// a crash or a run that reached its time limit), or if a check the scenario relies on
    /// judged nothing in every seed ([`SweepSummary::vacuous_everywhere`]).
    pub fn assert_clean(&self) {
        self.assert_evidence();
        if self.failures.is_empty() {
            return;
        }
        let reports: Vec<String> = self.failures.iter().map(ToString::to_string).collect();
        panic!(
            "{} of {} seeds of `{}` failed:\n{}",
            self.failures.len(),
            self.seeds.len(),
            self.scenario,
            reports.join("\n\n")
        );
    }

    /// Panics if a check the scenario relies on judged nothing in every seed, or a mark it
    /// declares was reached in none ([`Evidence::problems`]). With one pinned seed
    /// (`COORDSIM_SEED`, a replay) this only prints what it would have said: one seed need
    /// not reach everything.
    pub fn assert_evidence(&self) {
        let problems = self.evidence().problems();
        if problems.is_empty() {
            return;
        }
        let first = self.seeds.first().copied().unwrap_or_default();
        let message = format!(
            "`{}` over {} seeds from {first}: {}. Replay the first seed: {}",
            self.scenario,
            self.seeds.len(),
            problems.join("; "),
            self.replay(first).command.unwrap_or_default()
        );
        if self.sweeping {
            panic!("{message}");
        }
        println!("(one pinned seed: not failed) {message}");
    }

    /// The report of `seed` of this sweep, with the line that replays it
    /// ([`FailureReport::for_test`]).
    pub fn replay(&self, seed: Seed) -> FailureReport {
        let (package, target, name) = &self.test;
        FailureReport::for_test(seed, package, target, name)
    }

    /// Panics unless each fault kind the scenario turns on fired, by its own counter,
    /// somewhere in the sweep (see [`SweepSummary::assert_fired`]).
    pub fn assert_faults_fired(&self) {
        self.assert_fired(&self.enabled_kinds);
    }

    /// Panics unless the check `check` judged something in every seed: a clean verdict from a
    /// check that judged nothing is no evidence (user-code tests ask this of the checks they
    /// rely on).
    pub fn assert_judged(&self, check: &str) {
        for outcome in &self.outcomes {
            let judged = outcome
                .checks
                .iter()
                .find(|tally| tally.check == check)
                .map_or(0, |tally| tally.judged);
            assert!(
                judged > 0,
                "{check} judged nothing in seed {} of `{}` (the run itself was {})\n{}",
                outcome.seed,
                self.scenario,
                verdict_of(outcome),
                self.replay(outcome.seed)
            );
        }
    }

    /// Panics unless each fault kind fired, by its own counter, somewhere in the sweep. With
    /// one pinned seed (whose swarm may switch only some kinds on), at least one of them must.
    pub fn assert_fired(&self, kinds: &[FaultKind]) {
        if kinds.is_empty() {
            return;
        }
        let totals = &self.fault_totals;
        if !self.sweeping {
            assert!(
                kinds.iter().any(|kind| totals.fired(*kind) > 0),
                "none of {kinds:?} fired: {totals}"
            );
            return;
        }
        for kind in kinds {
            assert!(
                totals.fired(*kind) > 0,
                "{kind:?} never fired over {} seeds of `{}`: {totals}",
                self.seeds.len(),
                self.scenario
            );
        }
    }

    /// Panics unless every failed seed failed by violations of the check `check` only (no
    /// other check, no liveness stall, crash or time limit); how many seeds it fired in. For
    /// sweeps that expect one property to break, as believed exclusion does when holders
    /// are paused past their sessions.
    pub fn assert_only_violations_of(&self, check: &str) -> usize {
        for failure in &self.failures {
            let fired = failure.checks_fired();
            assert!(
                !fired.is_empty() && fired.iter().all(|fired| *fired == check),
                "{}: only `{check}` may fire, got {fired:?} ({:?})\n{}",
                failure.report,
                failure.outcome.failure,
                failure.scenario
            );
        }
        self.failures.len()
    }

    /// How many seeds the check `check` fired in.
    pub fn seeds_where_fired(&self, check: &str) -> usize {
        self.failures
            .iter()
            .filter(|failure| failure.checks_fired().contains(&check))
            .count()
    }

    /// The failures whose violations include `property`.
    pub fn violations_of<'a>(&'a self, property: &'a str) -> impl Iterator<Item = &'a SeedFailure> {
        self.failures
            .iter()
            .filter(move |failure| failure.outcome.violated(property))
    }
}

impl Sweep {
    /// A sweep of `scenario` for the test `test_name` in `package`'s test target
    /// `test_target`, running `default_seeds` seeds unless the environment says otherwise.
    pub fn new(
        scenario: Scenario,
        package: &str,
        test_target: &str,
        test_name: &str,
        default_seeds: u64,
    ) -> Self {
        Self {
            scenario,
            package: package.into(),
            test_target: test_target.into(),
            test_name: test_name.into(),
            default_seeds,
        }
    }

    /// Runs every seed. A sweep does not stop at the first failure: the summary shows how
    /// often the scenario failed, and how.
    pub fn run(&self) -> SweepSummary {
        self.run_inspecting(|_| {})
    }

    /// [`Sweep::run`], showing `inspect` every outcome with its history first (to count
    /// what the runs exercised).
    pub fn run_inspecting(&self, mut inspect: impl FnMut(&Outcome)) -> SweepSummary {
        let seeds = sim::env::test_seeds(self.default_seeds);
        let mut summary = SweepSummary {
            scenario: self.scenario.name.clone(),
            sweeping: std::env::var(sim::env::SEED).is_err(),
            enabled_kinds: self.scenario.faults.kinds(),
            declared_marks: self.scenario.marks.clone(),
            ..SweepSummary::default()
        };
        // Every option of the run, before it starts (shown with the output of a failing test).
        println!(
            "sweep of {} seeds from {}: {}",
            seeds.len(),
            seeds.first().copied().unwrap_or_default(),
            self.scenario
        );
        let report = |seed: Seed| {
            FailureReport::for_test(seed, &self.package, &self.test_target, &self.test_name)
        };
        // The seeds are independent, so they run on every core; their outcomes are kept in
        // seed order on this thread, so `inspect`, the summary and every line printed are as
        // if the seeds had run one after another (and a failed `inspect` stops the rest).
        let never_stop = AtomicBool::new(false);
        in_parallel_in_order(
            seeds.len(),
            std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN),
            &never_stop,
            |index| run_driver(&self.scenario, &report(seeds[index])),
            |_| {},
            |index, outcome| {
                let run = keep_run(
                    &self.scenario,
                    outcome,
                    report(seeds[index]),
                    &self.test_name,
                    &mut inspect,
                );
                summary.fault_totals.accumulate(&run.outcome.fault_counts);
                summary.failures.extend(run.failure);
                summary.outcomes.push(run.outcome);
            },
        );
        summary.test = (
            self.package.clone(),
            self.test_target.clone(),
            self.test_name.clone(),
        );
        summary.seeds = seeds;
        summary
    }

    /// The scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }
}

/// One seed's run as a sweep keeps it: the outcome without its history, and, if the run
/// failed, the failure with the history.
#[derive(Debug)]
pub struct SeedRun {
    /// The outcome (its history dropped).
    pub outcome: Outcome,
    /// The failure, if the run was not clean.
    pub failure: Option<SeedFailure>,
}

/// Runs `scenario` with `seed` through the one driver and keeps it as every sweep does: the
/// outcome without its history, and for a failed run a [`SeedFailure`] with the history,
/// `report` (how to replay it) and the scenario in full. `inspect` sees the outcome with
/// its history first; if `inspect` panics (a test's assertion about the run), the panic
/// goes on with the seed and the command that replays it (`report`) added to its message,
/// and the run's history is kept as a failed run's is. A failed run's history is written
/// where `COORDSIM_HISTORY_DIR` says (as `<label>-<seed>.jsonl`), if it is set.
pub fn run_seed(
    scenario: &Scenario,
    seed: Seed,
    report: FailureReport,
    label: &str,
    inspect: impl FnOnce(&Outcome),
) -> SeedRun {
    debug_assert_eq!(report.seed, seed, "the report replays the seed run");
    let outcome = run_driver(scenario, &report);
    keep_run(scenario, outcome, report, label, inspect)
}

/// The run of `report`'s seed through the one driver, with its history; replayed by the
/// report's command if it has one.
fn run_driver(scenario: &Scenario, report: &FailureReport) -> Outcome {
    match &report.command {
        Some(command) => driver::run_replayed_by(scenario, report.seed, command),
        None => driver::run(scenario, report.seed),
    }
}

/// A run's verdict in a few words: `clean`, or `FAILED, ` and how.
fn verdict_of(outcome: &Outcome) -> String {
    match &outcome.failure {
        None => "clean".to_string(),
        Some(failure) => format!("FAILED, {failure}"),
    }
}

/// Keeps a finished run as [`run_seed`] says: `inspect` sees it with its history, and the
/// history goes unless the run failed.
fn keep_run(
    scenario: &Scenario,
    mut outcome: Outcome,
    report: FailureReport,
    label: &str,
    inspect: impl FnOnce(&Outcome),
) -> SeedRun {
    let seed = outcome.seed;
    let inspected = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inspect(&outcome)));
    if let Err(panic) = inspected {
        if let Some(history) = &outcome.history {
            keep_history(label, seed, history);
        }
        panic!(
            "{}\n(asserted about the run of seed {seed}; the run itself was {})\n{report}",
            panic_message(panic.as_ref()),
            verdict_of(&outcome)
        );
    }
    let history = outcome.history.take();
    if outcome.is_clean() {
        return SeedRun {
            outcome,
            failure: None,
        };
    }
    if let Some(history) = &history {
        keep_history(label, seed, history);
    }
    let mut kept = outcome.clone();
    kept.history = history;
    SeedRun {
        outcome,
        failure: Some(SeedFailure {
            outcome: kept,
            report,
            scenario: scenario.to_string(),
        }),
    }
}

/// Writes a failing run's history where `COORDSIM_HISTORY_DIR` says, if set (a problem
/// writing it is printed, not fatal: the failure report matters more).
fn keep_history(label: &str, seed: Seed, history: &sim::history::History) {
    let Some(directory) = sim::env::history_dir() else {
        return;
    };
    let path = directory.join(format!("{label}-{seed}.jsonl"));
    let written = std::fs::create_dir_all(&directory)
        .and_then(|()| std::fs::write(&path, history.to_json_lines()));
    match written {
        Ok(()) => eprintln!("history of the failing run: {}", path.display()),
        Err(error) => eprintln!("could not write {}: {error}", path.display()),
    }
}

/// What a [`Parallel`] sweep does when a seed fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFailure {
    /// Start no new seed; the seeds already running finish and are reported.
    Stop,
    /// Run every seed.
    KeepGoing,
}

/// The sweep of [`Sweep`] across threads, for the `coordsim sweep` command: the seeds run
/// on `jobs` threads through [`run_seed`], taken in order, and come back sorted by seed, so
/// a sweep that runs every seed gives the same runs for any number of jobs. It can stop:
/// at the first failure ([`OnFailure::Stop`]) or when the caller's `stop` flag is set (say,
/// on Ctrl-C); either way no new seed starts and the ones running finish.
///
/// With [`OnFailure::Stop`], every seed below the lowest failing one has run whatever the
/// number of jobs (seeds are taken in order and running ones finish), so the first failure
/// is the same for any `jobs`; only how many seeds past it finished depends on it.
pub struct Parallel<'a> {
    /// The scenario.
    pub scenario: &'a Scenario,
    /// The seeds, in the order they start.
    pub seeds: &'a [Seed],
    /// Threads.
    pub jobs: NonZeroUsize,
    /// Stop at the first failure or go on.
    pub on_failure: OnFailure,
    /// Set by the caller (or by a failure, with [`OnFailure::Stop`]): start no new seed.
    pub stop: &'a AtomicBool,
    /// The label of failing runs' histories under `COORDSIM_HISTORY_DIR`.
    pub label: &'a str,
}

impl Parallel<'_> {
    /// Runs the seeds; `report` says how to replay a failed seed. `on_done` sees each run
    /// as it finishes (in finishing order: for progress), then `in_order` takes it in seed
    /// order; both on the calling thread. No run is kept here: a sweep of any number of
    /// seeds holds only the few the worker pool's reorder window allows.
    pub fn run(
        &self,
        report: &(dyn Fn(Seed) -> FailureReport + Sync),
        on_done: impl FnMut(&SeedRun),
        mut in_order: impl FnMut(SeedRun),
    ) {
        in_parallel_in_order(
            self.seeds.len(),
            self.jobs,
            self.stop,
            |index| {
                let seed = self.seeds[index];
                let run = run_seed(self.scenario, seed, report(seed), self.label, |_| {});
                // Before this thread takes another seed: with one job, none starts after the
                // first failure.
                if run.failure.is_some() && self.on_failure == OnFailure::Stop {
                    self.stop.store(true, Ordering::SeqCst);
                }
                run
            },
            on_done,
            |_, run| in_order(run),
        );
    }
}
