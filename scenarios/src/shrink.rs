//! Shrinking a failing run's fault schedule: the smallest plan found that still fails the
//! same way, on the same seed.
//!
//! Every candidate is a [`FaultPlan`] run through the one driver ([`driver::run`] with
//! [`Scenario::with_plan`]) on the original seed; a candidate that fails the same way (the
//! [`ShrinkTarget`]) replaces the current plan at once. Four moves, in this order, repeated
//! until none makes the plan smaller or a budget is spent (runs, or simulated time: see
//! [`ShrinkConfig`]):
//!
//! 1. **drop faults**: delta debugging (Zeller's ddmin) over the plan's faults. A fault with
//!    a span (`for_ms`) carries its inverse in the same entry, so the pair goes together; an
//!    explicit inverse (a `restart`, `resume`, `heal`, `unclog` or drift back to 0 written as
//!    its own entry) is paired with the earlier fault it undoes and dropped with it; dropping a
//!    fault named with `as` drops the later faults that target its `$name`. Every candidate
//!    is valid by construction, and [`Scenario::validate`] is asked anyway (an invalid one is
//!    skipped, not run).
//! 2. **close faults**: a fault undone by an explicit inverse entry becomes one fault with a
//!    span, and a fault never undone (it lasts until the fault phase ends) gets a span to
//!    that end, so that the next move can shorten both.
//! 3. **shorten spans**: per fault with a span, a binary search for the shortest `for_ms`
//!    that still fails (to [`ShrinkConfig::resolution_ms`]).
//! 4. **move faults earlier**: per fault, a binary search for the earliest `at_ms` that
//!    still fails, no earlier than the fault before it (so the order, and every `$name`
//!    before its use, stays as it was).
//!
//! For a safety target the candidates are judged by the target's check alone
//! ([`driver::run_judged_by`]; checks only
//! read the history, so this changes no run, only what it costs: the linearizability search
//! on a long history can take seconds where the run takes milliseconds).
//!
//! Plans are compared by [`PlanSize`]: fault count, then open faults, then total span, then
//! the sum of the faults' times. Each move only accepts smaller plans, so the shrunk plan is never larger
//! than the original. Candidates already tried are not run again. The search is sequential
//! and a pure function of its input: the same scenario, seed, target and configuration give
//! the same shrunk plan.
//!
//! A generated plan (swarm, leader killer, …) is shrunk as the explicit plan the run
//! followed (`Outcome::fault_plan`); the shrunk plan has no `enabled_kinds`, and is exactly
//! the JSON that `coordsim run --plan FILE` reads.
//!
//! ```no_run
//! use scenarios::{catalogue, driver, shrink::{self, ShrinkConfig, ShrinkTarget}};
//! use sim::Seed;
//! let scenario = catalogue::get("raft_duplicated_appends")
//!     .unwrap()
//!     .with_bugs(["raft.truncate_on_stale_append".parse().unwrap()]);
//! let seed = Seed::new(3);
//! let outcome = driver::run(&scenario, seed);
//! let target = ShrinkTarget::of(&outcome, Some("protocol.replica_agreement")).unwrap();
//! let report = shrink::shrink(&scenario, seed, &outcome, &target, &ShrinkConfig::default())
//!     .unwrap();
//! println!("{report}");
//! std::fs::write("shrunk.json", serde_json::to_string_pretty(&report.plan).unwrap()).unwrap();
//! ```

use crate::{
    driver,
    outcome::{Failure, Outcome},
    scenario::{Scenario, ScenarioError},
};
use serde::Serialize;
use sim::{
    Seed,
    fault::{Fault, FaultPlan, ScheduledFault, Target},
};
use std::{collections::BTreeMap, fmt};

/// What "fails the same way" means: the same failure kind ([`Failure::kind`]) and, for a
/// safety failure, the same check among those that fired.
///
/// A safety candidate matches if its check fired at all, whatever else fired beside it or
/// before it: a smaller plan often lets fewer checks fire, and the one asked about is the
/// property the shrunk plan must still break. Liveness, crash and time-limit failures match
/// by kind alone (what was pending, a panic's message and the time reached are details of
/// the schedule that shrinking changes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ShrinkTarget {
    /// The failure kind: `safety`, `liveness`, `crash` or `time_limit`.
    pub kind: &'static str,
    /// For a safety failure, the check that must fire (`protocol.replica_agreement`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
}

impl ShrinkTarget {
    /// The target of a failing `outcome`. For a safety failure, `check` names the check that
    /// must keep firing (it must have fired in `outcome`); without it, the first check that
    /// fired (the first violation's). Other kinds take no check.
    pub fn of(outcome: &Outcome, check: Option<&str>) -> Result<Self, ShrinkError> {
        let failure = outcome.failure.as_ref().ok_or(ShrinkError::Clean)?;
        let kind = failure.kind();
        let check = match (failure, check) {
            (Failure::Safety, Some(check)) => {
                if !outcome.violations.iter().any(|v| v.check == check) {
                    return Err(ShrinkError::CheckDidNotFire {
                        check: check.to_string(),
                        fired: checks_fired(outcome),
                    });
                }
                Some(check.to_string())
            }
            (Failure::Safety, None) => outcome.violations.first().map(|v| v.check.clone()),
            (_, Some(check)) => {
                return Err(ShrinkError::CheckOfNonSafetyFailure {
                    check: check.to_string(),
                    kind,
                });
            }
            (_, None) => None,
        };
        Ok(Self { kind, check })
    }

    /// Whether `outcome` fails the same way.
    pub fn matches(&self, outcome: &Outcome) -> bool {
        let Some(failure) = &outcome.failure else {
            return false;
        };
        failure.kind() == self.kind
            && self
                .check
                .as_ref()
                .is_none_or(|check| outcome.violations.iter().any(|v| &v.check == check))
    }

    /// The checks a candidate of `scenario` is judged by: for a safety target, the target's
    /// check alone. Checks are pure functions of the history, so the runs (and their history
    /// digests) are those of `scenario`; the other checks, the linearizability search among
    /// them, can cost far more than the run. Other targets keep every check: a violation
    /// would make a run a safety failure instead.
    fn judging_checks(&self, scenario: &Scenario) -> Vec<&'static checks::Check> {
        let mut every = scenario.check_set();
        if let Some(check) = &self.check {
            every.retain(|known| known.name == check);
        }
        every
    }
}

impl fmt::Display for ShrinkTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.check {
            Some(check) => write!(f, "{} ({check})", self.kind),
            None => f.write_str(self.kind),
        }
    }
}

fn checks_fired(outcome: &Outcome) -> Vec<String> {
    let mut fired: Vec<String> = Vec::new();
    for violation in &outcome.violations {
        if !fired.contains(&violation.check) {
            fired.push(violation.check.clone());
        }
    }
    fired
}

/// [`ShrinkConfig::max_simulated_ms`] by default: one simulated hour.
pub const DEFAULT_MAX_SIMULATED_MS: u64 = 60 * 60 * 1_000;

/// How far a shrink may go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ShrinkConfig {
    /// At most this many runs, the one that confirms the original failure included.
    pub max_runs: u32,
    /// At most this much simulated time, all runs together (each run counts the time it
    /// reached). A budget in simulated time, not wall time, keeps the shrunk plan a pure
    /// function of the input; it bounds what the run count cannot: a liveness failure's
    /// candidates each run to the liveness bound.
    pub max_simulated_ms: u64,
    /// The binary searches on spans and times stop when the failing and the passing value
    /// are this close, milliseconds.
    pub resolution_ms: u64,
}

impl Default for ShrinkConfig {
    fn default() -> Self {
        Self {
            max_runs: 200,
            max_simulated_ms: DEFAULT_MAX_SIMULATED_MS,
            resolution_ms: 10,
        }
    }
}

/// A plan's size, compared in this order: fault count, then the open faults, then the sum
/// of the spans (`for_ms`), then the sum of the faults' times (`at_ms`). Smaller is simpler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct PlanSize {
    /// Entries in the plan (a fault and the inverse its span fires count once).
    pub faults: usize,
    /// Faults that have an inverse but neither a span nor an explicit inverse entry: they
    /// last until the fault phase ends, longer than any span could.
    pub open_faults: usize,
    /// The spans added up, milliseconds.
    pub total_span_ms: u64,
    /// The faults' times added up, milliseconds.
    pub total_at_ms: u64,
}

impl PlanSize {
    /// The size of `plan`.
    pub fn of(plan: &FaultPlan) -> Self {
        Self {
            faults: plan.faults.len(),
            open_faults: units(plan)
                .iter()
                .filter(|unit| is_open(plan, unit))
                .count(),
            total_span_ms: plan.faults.iter().filter_map(|f| f.for_ms).sum(),
            total_at_ms: plan.faults.iter().map(|f| f.at_ms).sum(),
        }
    }
}

impl fmt::Display for PlanSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} faults ({} open), {} ms of spans",
            self.faults, self.open_faults, self.total_span_ms
        )
    }
}

/// Why a shrink stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShrinkStop {
    /// No move made the plan smaller: a local minimum.
    Fixpoint,
    /// The run budget ([`ShrinkConfig::max_runs`]) was spent.
    RunBudget,
    /// The simulated-time budget ([`ShrinkConfig::max_simulated_ms`]) was spent.
    SimulatedTimeBudget,
}

/// What a shrink came to.
#[derive(Clone, Debug, Serialize)]
pub struct ShrinkReport {
    /// How the shrunk plan still fails.
    pub target: ShrinkTarget,
    /// The size of the plan the original run followed.
    pub original: PlanSize,
    /// The size of the shrunk plan.
    pub shrunk: PlanSize,
    /// Runs made through the driver, the confirming run of the original plan included
    /// (candidates tried before, or invalid, are not run and not counted).
    pub runs_tried: u32,
    /// Of those, the runs that failed the same way (the confirming run included).
    pub runs_failed: u32,
    /// The simulated time those runs reached, added up, milliseconds.
    pub simulated_ms: u64,
    /// Why the shrink stopped.
    pub stopped: ShrinkStop,
    /// The shrunk plan: `coordsim run --plan FILE` reads it as serialized.
    pub plan: FaultPlan,
    /// The last failing run, which followed `plan`: replaying the scenario with `plan` on
    /// the same seed gives its history digest. For a safety target it was judged by the
    /// target's check alone, so its violations and check tallies are that check's
    /// (`coordsim run --plan` gives every check's verdict on the same history). Its history
    /// is kept (not serialized).
    pub outcome: Outcome,
}

impl fmt::Display for ShrinkReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "shrunk for:      {}", self.target)?;
        writeln!(f, "faults:          {} -> {}", self.original, self.shrunk)?;
        writeln!(
            f,
            "runs:            {} tried, {} failed the same way, {:.1} s simulated ({})",
            self.runs_tried,
            self.runs_failed,
            self.simulated_ms as f64 / 1_000.0,
            match self.stopped {
                ShrinkStop::Fixpoint => "no move makes the plan smaller",
                ShrinkStop::RunBudget => "the run budget is spent",
                ShrinkStop::SimulatedTimeBudget => "the simulated-time budget is spent",
            }
        )?;
        if let Some(digest) = self.outcome.history_digest {
            writeln!(f, "history digest:  {digest}")?;
        }
        write!(f, "shrunk plan:\n{}", self.plan)
    }
}

/// Why a shrink could not start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShrinkError {
    /// The outcome to shrink is clean.
    Clean,
    /// The check asked for did not fire in the outcome.
    CheckDidNotFire {
        /// The check asked for.
        check: String,
        /// The checks that fired.
        fired: Vec<String>,
    },
    /// A check was named for a failure that is not a safety failure.
    CheckOfNonSafetyFailure {
        /// The check named.
        check: String,
        /// The outcome's failure kind.
        kind: &'static str,
    },
    /// The scenario with the original plan is invalid.
    InvalidPlan(ScenarioError),
    /// Run again with the plan it followed, the original seed did not fail the same way
    /// (the outcome is not of this scenario and seed).
    NotReproduced {
        /// How the run ended instead (`clean` or another failure).
        got: String,
    },
}

impl fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShrinkError::Clean => write!(f, "the run is clean (expected a failing run to shrink)"),
            ShrinkError::CheckDidNotFire { check, fired } => write!(
                f,
                "check `{check}` did not fire in the run (expected one of: {})",
                fired.join(", ")
            ),
            ShrinkError::CheckOfNonSafetyFailure { check, kind } => write!(
                f,
                "check `{check}` named for a {kind} failure (expected no check: only safety \
                 failures have one)"
            ),
            ShrinkError::InvalidPlan(error) => write!(f, "the plan is invalid: {error}"),
            ShrinkError::NotReproduced { got } => write!(
                f,
                "replaying the plan the run followed gave {got} (expected the same failure: \
                 is the outcome of this scenario and seed?)"
            ),
        }
    }
}

impl std::error::Error for ShrinkError {}

/// Shrinks the plan `original` (a failing run of `scenario` with `seed`) followed, for
/// `target`, within `config`'s budget. The first run replays the original plan to confirm
/// the failure.
pub fn shrink(
    scenario: &Scenario,
    seed: Seed,
    original: &Outcome,
    target: &ShrinkTarget,
    config: &ShrinkConfig,
) -> Result<ShrinkReport, ShrinkError> {
    let plan = FaultPlan {
        enabled_kinds: Vec::new(),
        faults: original.fault_plan.faults.clone(),
    };
    let judging = target.judging_checks(scenario);
    let run = |candidate: &Scenario| {
        let replay = driver::replay_command(candidate, seed).to_string();
        driver::run_judged_by(candidate, seed, &replay, &judging)
    };
    let confirming_scenario = scenario.clone().with_plan(plan.clone());
    confirming_scenario
        .validate()
        .map_err(ShrinkError::InvalidPlan)?;
    let confirming = run(&confirming_scenario);
    if !target.matches(&confirming) {
        return Err(ShrinkError::NotReproduced {
            got: confirming
                .failure
                .map_or_else(|| "a clean run".to_string(), |failure| failure.to_string()),
        });
    }
    let confirming_ms = confirming.metrics.ended_at_ms;
    let mut last_failing = confirming;
    let mut runs_failed = 1;
    let mut trial = |candidate: &FaultPlan| {
        let candidate_scenario = scenario.clone().with_plan(candidate.clone());
        if candidate_scenario.validate().is_err() {
            return (Trial::Invalid, 0);
        }
        let outcome = run(&candidate_scenario);
        let simulated_ms = outcome.metrics.ended_at_ms;
        if target.matches(&outcome) {
            runs_failed += 1;
            last_failing = outcome;
            (Trial::Fails, simulated_ms)
        } else {
            (Trial::Passes, simulated_ms)
        }
    };
    let mut search = Search::new(config, scenario.fault_phase_ms, &mut trial);
    search.known_failing(&plan, confirming_ms);
    let Searched {
        plan: shrunk,
        runs: runs_tried,
        simulated_ms,
        stopped,
    } = search.run(plan.clone());
    let outcome = last_failing;
    debug_assert_eq!(
        outcome.fault_plan, shrunk,
        "the last failing run is of the shrunk plan"
    );
    Ok(ShrinkReport {
        target: target.clone(),
        original: PlanSize::of(&plan),
        shrunk: PlanSize::of(&shrunk),
        runs_tried,
        runs_failed,
        simulated_ms,
        stopped,
        plan: shrunk,
        outcome,
    })
}

/// What one candidate came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trial {
    /// It fails the same way: it replaces the current plan.
    Fails,
    /// It does not.
    Passes,
    /// It is no valid plan for the scenario; it was not run.
    Invalid,
}

/// The search, over any test of a plan (the driver's runs, or a synthetic predicate in the
/// unit tests). Every `Fails` replaces the current plan, so the last failing trial is always
/// of the current plan.
struct Search<'a> {
    config: &'a ShrinkConfig,
    /// When the fault phase ends: an open fault lasts until then.
    fault_phase_ms: u64,
    /// Runs a candidate: what it came to and the simulated time it reached, ms.
    trial: &'a mut dyn FnMut(&FaultPlan) -> (Trial, u64),
    /// Every candidate tried, by its JSON: what it came to.
    tried: BTreeMap<String, Trial>,
    runs: u32,
    simulated_ms: u64,
}

/// What a search came to: the shrunk plan, the runs made, the simulated time they reached
/// (ms, added up), and why it stopped.
#[derive(Clone, Debug, PartialEq)]
struct Searched {
    plan: FaultPlan,
    runs: u32,
    simulated_ms: u64,
    stopped: ShrinkStop,
}

impl<'a> Search<'a> {
    fn new(
        config: &'a ShrinkConfig,
        fault_phase_ms: u64,
        trial: &'a mut dyn FnMut(&FaultPlan) -> (Trial, u64),
    ) -> Self {
        Self {
            config,
            fault_phase_ms,
            trial,
            tried: BTreeMap::new(),
            runs: 0,
            simulated_ms: 0,
        }
    }

    /// Records `plan` as tried and failing, by a run made outside the search that reached
    /// `simulated_ms`.
    fn known_failing(&mut self, plan: &FaultPlan, simulated_ms: u64) {
        let key = serde_json::to_string(plan).expect("a plan serializes");
        self.tried.insert(key, Trial::Fails);
        self.runs += 1;
        self.simulated_ms += simulated_ms;
    }

    /// The budget spent, if one is.
    fn spent(&self) -> Option<ShrinkStop> {
        if self.runs >= self.config.max_runs {
            Some(ShrinkStop::RunBudget)
        } else if self.simulated_ms >= self.config.max_simulated_ms {
            Some(ShrinkStop::SimulatedTimeBudget)
        } else {
            None
        }
    }

    fn out_of_budget(&self) -> bool {
        self.spent().is_some()
    }

    /// Tests `plan`, once: a plan tried before gets its earlier verdict without a run, and
    /// past the budget every plan passes.
    fn test(&mut self, plan: &FaultPlan) -> Trial {
        let key = serde_json::to_string(plan).expect("a plan serializes");
        if let Some(trial) = self.tried.get(&key) {
            return *trial;
        }
        if self.out_of_budget() {
            return Trial::Passes;
        }
        let (trial, simulated_ms) = (self.trial)(plan);
        if trial != Trial::Invalid {
            self.runs += 1;
            self.simulated_ms += simulated_ms;
        }
        self.tried.insert(key, trial);
        trial
    }

    /// Shrinks `plan` (known to fail) until a fixpoint or a budget is spent.
    fn run(mut self, mut plan: FaultPlan) -> Searched {
        loop {
            let before = PlanSize::of(&plan);
            plan = self.drop_faults(plan);
            plan = self.close_faults(plan);
            plan = self.shorten_spans(plan);
            plan = self.move_earlier(plan);
            let after = PlanSize::of(&plan);
            debug_assert!(after <= before);
            let stopped = match self.spent() {
                Some(budget) => budget,
                None if after == before => ShrinkStop::Fixpoint,
                None => continue,
            };
            return Searched {
                plan,
                runs: self.runs,
                simulated_ms: self.simulated_ms,
                stopped,
            };
        }
    }

    /// Move 1: ddmin over the plan's units (a fault with the explicit inverse paired with
    /// it), each candidate closed over `$name` dependencies.
    fn drop_faults(&mut self, mut plan: FaultPlan) -> FaultPlan {
        let mut units = units(&plan);
        // The cheapest candidate first: no fault at all.
        if !units.is_empty() {
            let empty = FaultPlan::default();
            if self.test(&empty) == Trial::Fails {
                return empty;
            }
        }
        let mut granularity = 2;
        while units.len() >= 2 && !self.out_of_budget() {
            let chunks = split(&units, granularity);
            let mut reduced = false;
            // Reduce to a chunk, then to a complement (with two chunks, the same thing).
            for chunk in &chunks {
                let (candidate, kept) = keep_units(&plan, chunk);
                if self.test(&candidate) == Trial::Fails {
                    units = renumber(&kept, chunk);
                    plan = candidate;
                    granularity = 2;
                    reduced = true;
                    break;
                }
            }
            if !reduced && granularity > 2 {
                for index in 0..chunks.len() {
                    let complement: Vec<Vec<usize>> = chunks
                        .iter()
                        .enumerate()
                        .filter(|(other, _)| *other != index)
                        .flat_map(|(_, chunk)| chunk.iter().cloned())
                        .collect();
                    let (candidate, kept) = keep_units(&plan, &complement);
                    if self.test(&candidate) == Trial::Fails {
                        units = renumber(&kept, &complement);
                        plan = candidate;
                        granularity = (granularity - 1).max(2);
                        reduced = true;
                        break;
                    }
                }
            }
            if !reduced {
                if granularity >= units.len() {
                    break;
                }
                granularity = (granularity * 2).min(units.len());
            }
        }
        plan
    }

    /// Move 2: every fault that has an inverse but no span gets one, so that move 3 can
    /// shorten it. A fault paired with its explicit inverse entry becomes one entry whose
    /// span ends where the inverse was (one fault fewer); an open fault, which lasts until
    /// the fault phase ends, gets a span to that end (one open fault fewer). Each
    /// candidate is run like any other: the span's inverse acts on the node the fault
    /// resolved, which an explicit inverse written for a role may not have.
    fn close_faults(&mut self, mut plan: FaultPlan) -> FaultPlan {
        let mut index = 0;
        while index < plan.faults.len() && !self.out_of_budget() {
            let unit = units(&plan).into_iter().find(|unit| unit[0] == index);
            let closed = match unit.as_deref() {
                Some([fault, inverse]) if plan.faults[*fault].for_ms.is_none() => {
                    let span_ms = plan.faults[*inverse].at_ms - plan.faults[*fault].at_ms;
                    let mut candidate = plan.clone();
                    candidate.faults.remove(*inverse);
                    (span_ms > 0).then(|| {
                        candidate.faults[*fault].for_ms = Some(span_ms);
                        candidate
                    })
                }
                Some(unit) if is_open(&plan, unit) => {
                    let span_ms = self.fault_phase_ms.saturating_sub(plan.faults[index].at_ms);
                    (span_ms > 0).then(|| {
                        let mut candidate = plan.clone();
                        candidate.faults[index].for_ms = Some(span_ms);
                        candidate
                    })
                }
                _ => None,
            };
            if let Some(candidate) = closed
                && self.test(&candidate) == Trial::Fails
            {
                plan = candidate;
            }
            index += 1;
        }
        plan
    }

    /// Move 3: per fault with a span, the shortest span that still fails.
    fn shorten_spans(&mut self, mut plan: FaultPlan) -> FaultPlan {
        for index in 0..plan.faults.len() {
            let Some(span_ms) = plan.faults[index].for_ms else {
                continue;
            };
            plan = self.bisect(plan, 1, span_ms, |plan, span_ms| {
                plan.faults[index].for_ms = Some(span_ms)
            });
        }
        plan
    }

    /// Move 4: per fault, the earliest time that still fails, no earlier than the fault
    /// before it.
    fn move_earlier(&mut self, mut plan: FaultPlan) -> FaultPlan {
        for index in 0..plan.faults.len() {
            let earliest_ms = index.checked_sub(1).map_or(0, |i| plan.faults[i].at_ms);
            let at_ms = plan.faults[index].at_ms;
            plan = self.bisect(plan, earliest_ms, at_ms, |plan, at_ms| {
                plan.faults[index].at_ms = at_ms
            });
        }
        plan
    }

    /// A binary search for the smallest value in `low..=high` (`high` is `plan`'s and
    /// fails) at which `plan` with `set(value)` still fails, to the configured resolution
    /// (`low` itself is tried first).
    /// Every failing value tried replaces the plan.
    fn bisect(
        &mut self,
        mut plan: FaultPlan,
        mut low: u64,
        mut high: u64,
        set: impl Fn(&mut FaultPlan, u64),
    ) -> FaultPlan {
        let resolution_ms = self.config.resolution_ms.max(1);
        // The extreme first: often it is the answer (a fault at the start, the shortest span).
        if low < high && !self.out_of_budget() {
            let mut candidate = plan.clone();
            set(&mut candidate, low);
            if self.test(&candidate) == Trial::Fails {
                return candidate;
            }
            low += 1;
        }
        while low < high && high - low >= resolution_ms && !self.out_of_budget() {
            let middle = low + (high - low) / 2;
            let mut candidate = plan.clone();
            set(&mut candidate, middle);
            if self.test(&candidate) == Trial::Fails {
                plan = candidate;
                high = middle;
            } else {
                low = middle + 1;
            }
        }
        plan
    }
}

/// The plan's units, each a list of fault indices that go together: a fault, and the
/// explicit inverses paired with it. An explicit inverse (`restart`, `resume`, `unclog`,
/// `heal`, a drift back to 0) pairs with the latest earlier fault without a span that it
/// undoes (same kind, same node or link as written) and not paired yet; one with nothing to
/// undo, and `heal_all`, are units of their own.
fn units(plan: &FaultPlan) -> Vec<Vec<usize>> {
    let mut units: Vec<Vec<usize>> = Vec::new();
    // Per unit: whether its first fault still waits for its explicit inverse.
    let mut open: Vec<bool> = Vec::new();
    for (index, scheduled) in plan.faults.iter().enumerate() {
        let undone = (0..units.len()).rev().find(|&unit| {
            let first = &plan.faults[units[unit][0]];
            open[unit] && first.for_ms.is_none() && undoes(&scheduled.fault, &first.fault)
        });
        match undone {
            Some(unit) => {
                units[unit].push(index);
                open[unit] = false;
            }
            None => {
                units.push(vec![index]);
                open.push(!scheduled.fault.is_inverse());
            }
        }
    }
    units
}

/// Whether `unit` (of [`units`]) is one fault that has an inverse but neither a span nor
/// an explicit inverse entry: it lasts until the fault phase ends.
fn is_open(plan: &FaultPlan, unit: &[usize]) -> bool {
    let [fault] = unit else {
        return false;
    };
    let fault = &plan.faults[*fault];
    fault.for_ms.is_none() && fault.fault.has_inverse() && !fault.fault.is_inverse()
}

/// Whether `inverse` undoes `fault` (written as separate plan entries).
fn undoes(inverse: &Fault, fault: &Fault) -> bool {
    match (inverse, fault) {
        (Fault::Heal, Fault::Partition { .. }) => true,
        (Fault::Restart { node: a }, Fault::Crash { node: b })
        | (Fault::Resume { node: a }, Fault::Pause { node: b }) => a == b,
        (
            Fault::Unclog { from, to },
            Fault::Clog {
                from: clog_from,
                to: clog_to,
            },
        ) => from == clog_from && to == clog_to,
        (
            Fault::ClockDrift {
                node: a,
                drift_ppm: 0,
            },
            Fault::ClockDrift { node: b, drift_ppm },
        ) => a == b && *drift_ppm != 0,
        _ => false,
    }
}

/// `units` split into `count` chunks of near-equal size, in order.
fn split(units: &[Vec<usize>], count: usize) -> Vec<Vec<Vec<usize>>> {
    let count = count.min(units.len()).max(1);
    let mut chunks = Vec::with_capacity(count);
    let mut start = 0;
    for chunk in 0..count {
        let end = start + (units.len() - start) / (count - chunk);
        chunks.push(units[start..end].to_vec());
        start = end;
    }
    chunks
}

/// The plan with only the faults of `units`, less every fault that targets a `$name` no
/// kept earlier fault names (dropping a namer drops what depends on it); and the indices
/// (into `plan`) of the faults kept.
fn keep_units(plan: &FaultPlan, units: &[Vec<usize>]) -> (FaultPlan, Vec<usize>) {
    let mut wanted: Vec<usize> = units.iter().flatten().copied().collect();
    wanted.sort_unstable();
    let mut names: Vec<&str> = Vec::new();
    let mut kept = Vec::new();
    for index in wanted {
        let scheduled = &plan.faults[index];
        if let Some(Target::Label(name)) = scheduled.fault.subject()
            && !names.contains(&name.as_str())
        {
            continue;
        }
        if let Some(label) = &scheduled.label {
            names.push(label);
        }
        kept.push(index);
    }
    let faults: Vec<ScheduledFault> = kept.iter().map(|&i| plan.faults[i].clone()).collect();
    (
        FaultPlan {
            enabled_kinds: Vec::new(),
            faults,
        },
        kept,
    )
}

/// `units` (indices into the old plan) as indices into the new plan that kept the old
/// faults `kept`, in order; units left empty are gone.
fn renumber(kept: &[usize], units: &[Vec<usize>]) -> Vec<Vec<usize>> {
    units
        .iter()
        .map(|unit| {
            unit.iter()
                .filter_map(|old| kept.iter().position(|k| k == old))
                .collect::<Vec<usize>>()
        })
        .filter(|unit| !unit.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::{
        NodeId,
        fault::{PartitionShape, ScheduledFault},
    };

    fn step(at_ms: u64, delta_ms: i64) -> ScheduledFault {
        ScheduledFault::at(
            at_ms,
            Fault::ClockStep {
                node: NodeId::server(0).into(),
                delta_ms,
            },
        )
    }

    fn has_step(plan: &FaultPlan, delta_ms: i64) -> bool {
        plan.faults
            .iter()
            .any(|f| matches!(f.fault, Fault::ClockStep { delta_ms: d, .. } if d == delta_ms))
    }

    /// Runs the search with `predicate` as the test (true: fails the same way); the shrunk
    /// plan, the runs counted, why it stopped.
    fn search(
        plan: &FaultPlan,
        config: &ShrinkConfig,
        predicate: impl FnMut(&FaultPlan) -> bool,
    ) -> (FaultPlan, u32, ShrinkStop) {
        let searched = search_costing(plan, config, SYNTHETIC_FAULT_PHASE_MS, 0, predicate);
        (searched.plan, searched.runs, searched.stopped)
    }

    /// A synthetic fault phase, longer than every synthetic plan.
    const SYNTHETIC_FAULT_PHASE_MS: u64 = 60_000;

    /// [`search`], each run reaching `run_ms` of simulated time, with the fault phase
    /// ending at `fault_phase_ms`.
    fn search_costing(
        plan: &FaultPlan,
        config: &ShrinkConfig,
        fault_phase_ms: u64,
        run_ms: u64,
        mut predicate: impl FnMut(&FaultPlan) -> bool,
    ) -> Searched {
        assert!(predicate(plan), "the synthetic original must fail");
        let mut trial = |candidate: &FaultPlan| {
            let trial = if predicate(candidate) {
                Trial::Fails
            } else {
                Trial::Passes
            };
            (trial, run_ms)
        };
        let mut search = Search::new(config, fault_phase_ms, &mut trial);
        search.known_failing(plan, run_ms);
        search.run(plan.clone())
    }

    #[test]
    fn ddmin_finds_the_two_faults_that_matter_among_twelve() {
        let plan = FaultPlan::new((1..=12).map(|i| step(i * 500, i as i64)).collect());
        let (shrunk, runs, stopped) = search(&plan, &ShrinkConfig::default(), |plan| {
            has_step(plan, 4) && has_step(plan, 9)
        });
        // Both kept, alone, and moved to the start (the second no earlier than the first).
        assert_eq!(shrunk, FaultPlan::new(vec![step(0, 4), step(0, 9)]));
        assert_eq!(stopped, ShrinkStop::Fixpoint);
        assert!(runs < 60, "{runs} runs");
    }

    #[test]
    fn a_plan_that_fails_without_faults_shrinks_to_none() {
        let plan = FaultPlan::new((1..=5).map(|i| step(i * 100, i as i64)).collect());
        let (shrunk, runs, _) = search(&plan, &ShrinkConfig::default(), |_| true);
        assert!(shrunk.faults.is_empty());
        // The confirming run, the empty plan, then one more round that finds nothing.
        assert_eq!(runs, 2);
    }

    #[test]
    fn explicit_inverses_pair_with_the_fault_they_undo() {
        let s1 = Target::Node(NodeId::server(0));
        let s2 = Target::Node(NodeId::server(1));
        let plan = FaultPlan::new(vec![
            ScheduledFault::at(100, Fault::Crash { node: s1.clone() }),
            ScheduledFault::at(150, Fault::Pause { node: s2.clone() }),
            ScheduledFault::at(200, Fault::Crash { node: s2.clone() }).lasting(50),
            ScheduledFault::at(300, Fault::Resume { node: s2.clone() }),
            ScheduledFault::at(400, Fault::Restart { node: s1.clone() }),
            ScheduledFault::at(500, Fault::Restart { node: s1.clone() }),
            ScheduledFault::at(
                600,
                Fault::Partition {
                    shape: PartitionShape::Halves,
                },
            ),
            ScheduledFault::at(700, Fault::HealAll),
            ScheduledFault::at(800, Fault::Heal),
        ]);
        // The second restart of s1 has no crash left to undo; the crash of s2 with a span
        // carries its own restart.
        assert_eq!(
            units(&plan),
            vec![
                vec![0, 4],
                vec![1, 3],
                vec![2],
                vec![5],
                vec![6, 8],
                vec![7]
            ]
        );
        // Whatever survives, a crash of s1 never loses its restart, nor a restart its crash.
        let config = ShrinkConfig {
            resolution_ms: 1_000,
            ..ShrinkConfig::default()
        };
        let (shrunk, _, _) = search(&plan, &config, |candidate| {
            let crashes = candidate
                .faults
                .iter()
                .filter(|f| f.fault == Fault::Crash { node: s1.clone() })
                .count();
            // A crash with a span carries its restart.
            let restarts = candidate
                .faults
                .iter()
                .filter(|f| {
                    f.fault == Fault::Restart { node: s1.clone() }
                        || (f.fault == Fault::Crash { node: s1.clone() } && f.for_ms.is_some())
                })
                .count();
            assert!(restarts >= crashes, "a crash of s1 lost its restart");
            crashes == 1
        });
        // The crash kept, with its restart folded into its span (move 2).
        assert_eq!(shrunk.faults.len(), 1, "{shrunk}");
        assert_eq!(shrunk.faults[0].fault, Fault::Crash { node: s1 });
        assert!(shrunk.faults[0].for_ms.is_some(), "{shrunk}");
    }

    #[test]
    fn dropping_a_named_fault_drops_the_faults_that_target_its_name() {
        let strand = ScheduledFault::at(
            100,
            Fault::Partition {
                shape: PartitionShape::IsolateLeader,
            },
        )
        .lasting(400);
        let named = ScheduledFault::at(
            200,
            Fault::Pause {
                node: Target::Leader,
            },
        )
        .lasting(300)
        .named("old");
        let crash_old = ScheduledFault::at(
            600,
            Fault::Crash {
                node: Target::Label("old".into()),
            },
        )
        .lasting(100);
        let plan = FaultPlan::new(vec![
            strand.clone(),
            named.clone(),
            step(300, 7),
            crash_old.clone(),
        ]);
        let config = ShrinkConfig {
            resolution_ms: 1_000,
            ..ShrinkConfig::default()
        };
        let dangling = |candidate: &FaultPlan| {
            let named = candidate.faults.iter().any(|f| f.label.is_some());
            let uses = candidate
                .faults
                .iter()
                .any(|f| matches!(f.fault.subject(), Some(Target::Label(_))));
            uses && !named
        };
        // The crash of `$old` matters: its namer stays.
        let (shrunk, _, _) = search(&plan, &config, |candidate| {
            assert!(!dangling(candidate), "a `$old` without its namer was tried");
            candidate.faults.iter().any(|f| f.fault == crash_old.fault)
        });
        assert_eq!(shrunk.faults.len(), 2);
        assert_eq!(shrunk.faults[0].label.as_deref(), Some("old"));
        assert_eq!(shrunk.faults[1].fault, crash_old.fault);
        // Only the clock step matters: the namer goes, and its dependent with it.
        let (shrunk, _, _) = search(&plan, &config, |candidate| {
            assert!(!dangling(candidate), "a `$old` without its namer was tried");
            has_step(candidate, 7)
        });
        assert_eq!(shrunk, FaultPlan::new(vec![step(0, 7)]));
    }

    #[test]
    fn spans_shrink_to_the_resolution_of_the_shortest_that_fails() {
        let partition = ScheduledFault::at(
            1_000,
            Fault::Partition {
                shape: PartitionShape::Halves,
            },
        )
        .lasting(5_000);
        let plan = FaultPlan::new(vec![partition, step(2_000, 1)]);
        let config = ShrinkConfig {
            max_runs: 200,
            resolution_ms: 10,
            ..ShrinkConfig::default()
        };
        let (shrunk, _, stopped) = search(&plan, &config, |candidate| {
            candidate
                .faults
                .iter()
                .any(|f| f.for_ms.is_some_and(|span| span >= 700) && f.at_ms >= 250)
        });
        assert_eq!(stopped, ShrinkStop::Fixpoint);
        assert_eq!(shrunk.faults.len(), 1);
        let span_ms = shrunk.faults[0].for_ms.expect("a span");
        assert!((700..710).contains(&span_ms), "{span_ms}");
        let at_ms = shrunk.faults[0].at_ms;
        assert!((250..260).contains(&at_ms), "{at_ms}");
        assert!(PlanSize::of(&shrunk) < PlanSize::of(&plan));
    }

    #[test]
    fn the_budget_stops_the_search_and_the_search_is_deterministic() {
        let plan = FaultPlan::new((1..=12).map(|i| step(i * 500, i as i64)).collect());
        let config = ShrinkConfig {
            max_runs: 5,
            resolution_ms: 10,
            ..ShrinkConfig::default()
        };
        let predicate = |plan: &FaultPlan| has_step(plan, 4) && has_step(plan, 9);
        let first = search(&plan, &config, predicate);
        assert_eq!(first.1, 5);
        assert_eq!(first.2, ShrinkStop::RunBudget);
        assert!(PlanSize::of(&first.0) <= PlanSize::of(&plan));
        assert_eq!(search(&plan, &config, predicate), first);
        let unlimited = ShrinkConfig::default();
        assert_eq!(
            search(&plan, &unlimited, predicate),
            search(&plan, &unlimited, predicate)
        );
    }

    fn crash(at_ms: u64, server: usize) -> ScheduledFault {
        ScheduledFault::at(
            at_ms,
            Fault::Crash {
                node: NodeId::server(server).into(),
            },
        )
    }

    fn restart(at_ms: u64, server: usize) -> ScheduledFault {
        ScheduledFault::at(
            at_ms,
            Fault::Restart {
                node: NodeId::server(server).into(),
            },
        )
    }

    /// How long the crash of `server` lasts in `plan`: its span, or until its restart.
    fn crash_span_ms(plan: &FaultPlan, server: usize) -> Option<u64> {
        let crashes = |f: &&ScheduledFault| {
            f.fault
                == Fault::Crash {
                    node: NodeId::server(server).into(),
                }
        };
        let crash = plan.faults.iter().find(crashes)?;
        crash.for_ms.or_else(|| {
            plan.faults
                .iter()
                .find(|f| {
                    f.fault
                        == Fault::Restart {
                            node: NodeId::server(server).into(),
                        }
                })
                .map(|restart| restart.at_ms - crash.at_ms)
        })
    }

    #[test]
    fn a_fault_and_its_explicit_inverse_become_one_fault_with_a_span_that_shrinks() {
        // Fails while s1 is down at least 300 ms (written as crash … restart).
        let plan = FaultPlan::new(vec![crash(1_000, 0), restart(3_000, 0)]);
        let (shrunk, _, stopped) = search(&plan, &ShrinkConfig::default(), |candidate| {
            crash_span_ms(candidate, 0).is_some_and(|span_ms| span_ms >= 300)
        });
        assert_eq!(stopped, ShrinkStop::Fixpoint);
        assert_eq!(shrunk.faults.len(), 1, "{shrunk}");
        let span_ms = shrunk.faults[0].for_ms.expect("closed into a span");
        assert!((300..310).contains(&span_ms), "{span_ms}");
        assert!(PlanSize::of(&shrunk) < PlanSize::of(&plan));
    }

    #[test]
    fn an_open_fault_gets_a_span_to_the_fault_phase_end_then_shrinks() {
        // A crash never undone lasts until the fault phase ends (60 s here); it fails while
        // s1 is down at least 2 s.
        let plan = FaultPlan::new(vec![crash(500, 0)]);
        let open = PlanSize::of(&plan);
        assert_eq!(open.open_faults, 1);
        let (shrunk, _, _) = search(&plan, &ShrinkConfig::default(), |candidate| {
            let crashed = !candidate.faults.is_empty();
            crashed
                && crash_span_ms(candidate, 0)
                    .unwrap_or(SYNTHETIC_FAULT_PHASE_MS)
                    .ge(&2_000)
        });
        let span_ms = shrunk.faults[0].for_ms.expect("closed into a span");
        assert!((2_000..2_010).contains(&span_ms), "{span_ms}");
        assert_eq!(PlanSize::of(&shrunk).open_faults, 0);
        assert!(PlanSize::of(&shrunk) < open);
        // A fault without an inverse (a clock step) is never open.
        assert_eq!(
            PlanSize::of(&FaultPlan::new(vec![step(0, 5)])).open_faults,
            0
        );
    }

    #[test]
    fn the_simulated_time_budget_stops_the_search() {
        let plan = FaultPlan::new((1..=12).map(|i| step(i * 500, i as i64)).collect());
        let config = ShrinkConfig {
            max_simulated_ms: 10_000,
            ..ShrinkConfig::default()
        };
        let predicate = |plan: &FaultPlan| has_step(plan, 4) && has_step(plan, 9);
        // Each run reaches 3 s: the fourth run spends the budget.
        let searched = search_costing(&plan, &config, SYNTHETIC_FAULT_PHASE_MS, 3_000, predicate);
        assert_eq!(searched.stopped, ShrinkStop::SimulatedTimeBudget);
        assert_eq!(searched.runs, 4);
        assert_eq!(searched.simulated_ms, 12_000);
        // Free runs never spend it.
        let free = search_costing(&plan, &config, SYNTHETIC_FAULT_PHASE_MS, 0, predicate);
        assert_eq!(free.stopped, ShrinkStop::Fixpoint);
    }

    #[test]
    fn plan_sizes_order_by_faults_then_spans_then_times() {
        let long = FaultPlan::new(vec![step(0, 1).lasting(900)]);
        let short_late = FaultPlan::new(vec![step(5_000, 1).lasting(100)]);
        let two = FaultPlan::new(vec![step(0, 1), step(0, 2)]);
        assert!(PlanSize::of(&short_late) < PlanSize::of(&long));
        assert!(PlanSize::of(&long) < PlanSize::of(&two));
        assert_eq!(
            PlanSize::of(&two),
            PlanSize {
                faults: 2,
                open_faults: 0,
                total_span_ms: 0,
                total_at_ms: 0
            }
        );
    }
}
