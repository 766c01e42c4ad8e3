//! `coordsim zoo`: the whole known-bug zoo in one command. For every row of the known-bug
//! table (`scenarios::known_bug_table`): the row's scenario with its variant on, seed after
//! seed from 0 within the row's bound, until the row's check fires; that run's fault plan
//! shrunk (`scenarios::shrink`) for the same check; and for every distinct scenario of the
//! rows, the correct model (every variant off) over `--seeds` seeds, where any failure at
//! all is a false alarm. Every run goes through the one driver; the jobs run on the worker
//! pool of `scenarios::sweep::in_parallel`. Wall times are measured here, around the runs,
//! and appear only in this report (never in an outcome or a digest).

use crate::{
    cli::CliError,
    sweep::{Progress, Units},
};
use clap::Args;
use scenarios::{
    KnownBugCase, Outcome, ReplayCommand, Scenario, catalogue, detection, known_bug_table,
    scenario::Store,
    shrink::{self, ShrinkConfig, ShrinkStop, ShrinkTarget},
    sweep::{SeedFailure, in_parallel, run_seed},
};
use serde::Serialize;
use sim::{Seed, fault::FaultPlan, report::FailureReport};
use std::{
    num::NonZeroUsize,
    path::PathBuf,
    process::ExitCode,
    sync::atomic::AtomicBool,
    time::{Duration, Instant},
};
use tabled::{builder::Builder, settings::Style};

/// False-alarm seeds per scenario when `--seeds` is not given: small enough for CI.
const DEFAULT_FALSE_ALARM_SEEDS: u64 = 10;

/// The exit code when a variant is not caught by its check or a false alarm happens.
const ZOO_FAILED_CODE: u8 = 1;

/// The bound on a shrunk plan's faults, shown in the summary.
const SHRUNK_FAULTS_TARGET: usize = 10;

#[derive(Args, Debug)]
#[command(after_help = "\
Detection: for each row of the known-bug table, the row's scenario runs with the row's \
variant on over seeds 0, 1, 2, … up to the row's seed bound, in order, until the row's check \
fires: `seeds` is how many seeds that took (the failing seed's index + 1), `detect s` the \
wall time from the row's first run to the end of the detecting one, `total s` that and the \
shrink together. This is the rule of \
`scenarios::detection`, which the known-bug test (scenarios/tests/known_bugs.rs) uses too. \
If an earlier seed failed in another way (another check, a liveness stall, a crash, the \
time limit), the row still counts as caught (`yes*`: a note under the table says which seed \
failed first and how); a variant whose runs fail only in other ways is not caught (`NO*`). \
The detecting run's fault plan is then shrunk for the row's check (as `coordsim replay \
--shrink` does, within --shrink-runs runs and --shrink-simulated-s seconds of simulated time \
for all its runs together): `shrunk` is its faults before → after.

The table fits 160 columns; --json has every row in full (scenario, source, store, shrunk \
plans, each shrink's runs, simulated time and why it stopped).

False alarms: every distinct scenario of the rows, with every variant off, over seeds 0 to \
--seeds − 1 (default 10); any failure of any kind is a false alarm.

Everything but the wall times is the same for any --jobs. Exit codes: 0 every variant \
caught by its check and no false alarm; 1 otherwise (after the tables); 2 bad input.

Examples:
  coordsim zoo
  coordsim zoo --seeds 1000 --json zoo.json
  coordsim zoo --only zab. --only recipe.no_fencing --seeds 3 --jobs 2")]
pub struct ZooArgs {
    /// Seeds per scenario for the false-alarm runs (every variant off): seeds 0 to N−1.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_FALSE_ALARM_SEEDS,
          value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Jobs at once (default: one per core). Only the wall times depend on it.
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
    /// Write every row, the options and the summary here as JSON (shrunk plans included).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Only the variants whose name contains PATTERN (repeatable: any of them); the false
    /// alarms run on those variants' scenarios.
    #[arg(long, value_name = "PATTERN")]
    only: Vec<String>,
    /// The most runs one shrink may make.
    #[arg(long, value_name = "N", default_value_t = ShrinkConfig::default().max_runs,
          value_parser = clap::value_parser!(u32).range(1..))]
    shrink_runs: u32,
    /// The most simulated time one shrink's runs may reach together, seconds.
    #[arg(long, value_name = "S",
          default_value_t = ShrinkConfig::default().max_simulated_ms / 1_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    shrink_simulated_s: u64,
}

/// How the search for a variant's detection ended.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
enum Detection {
    /// The row's check fired within the bound.
    Caught {
        /// The first seed where the check fired.
        seed: Seed,
        /// Seeds run up to and including it.
        seeds_run: u64,
        /// Wall time from the first run to the end of the detecting one.
        wall_s: f64,
        /// The detecting run's plan, shrunk.
        shrink: Shrunk,
        /// The first seed that failed before the detecting one, in another way, if any:
        /// the variant shows itself to other checks too.
        earlier_failure: Option<OtherFailure>,
    },
    /// Seeds within the bound failed, but never by the row's check.
    OnlyOtherChecks {
        /// The first of them.
        first: OtherFailure,
    },
    /// No seed within the bound failed at all.
    Missed,
}

/// A run of the variant that failed, but not by the row's check.
#[derive(Clone, Debug, Serialize)]
struct OtherFailure {
    /// The seed.
    seed: Seed,
    /// How it failed: the checks that fired, or the failure kind.
    failed_with: String,
}

impl Shrunk {
    /// Wall time of the shrink (0 for one that could not start).
    fn wall_s(&self) -> f64 {
        match self {
            Shrunk::Done { wall_s, .. } => *wall_s,
            Shrunk::Failed { .. } => 0.0,
        }
    }
}

/// A shrink of a detecting run's plan.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
enum Shrunk {
    /// The shrinker's report, in short.
    Done {
        /// Faults in the plan the detecting run followed.
        original_faults: usize,
        /// Faults in the shrunk plan.
        shrunk_faults: usize,
        /// Runs the shrinker made.
        runs_tried: u32,
        /// The simulated time those runs reached, added up, milliseconds.
        simulated_ms: u64,
        /// Why it stopped.
        stopped: ShrinkStop,
        /// Wall time of the shrink.
        wall_s: f64,
        /// The shrunk plan (`coordsim run --plan` reads it).
        plan: FaultPlan,
    },
    /// The shrinker could not start (the detecting run did not replay the same way).
    Failed {
        /// Why.
        error: String,
    },
}

/// One row of the known-bug table and what the zoo found.
#[derive(Clone, Debug, Serialize)]
struct VariantRow {
    variant: String,
    source: String,
    store: Store,
    scenario: String,
    /// The check that must fire.
    check: String,
    /// The row's seed bound: seeds 0 to bound − 1 are searched.
    seed_bound: u64,
    detection: Detection,
    /// The command that replays the detecting (or first failing) run and shrinks it.
    replay: Option<String>,
}

impl VariantRow {
    fn caught(&self) -> bool {
        matches!(self.detection, Detection::Caught { .. })
    }
}

/// One false-alarm run that failed.
#[derive(Clone, Debug, Serialize)]
struct FalseAlarm {
    seed: Seed,
    /// The failure, in words.
    failure: String,
    /// The checks that fired, if any.
    checks: Vec<String>,
    replay: String,
}

/// A scenario with every variant off, over the false-alarm seeds.
#[derive(Clone, Debug, Serialize)]
struct FalseAlarmRow {
    scenario: String,
    store: Store,
    /// The variants of the table shown in this scenario.
    variants: Vec<String>,
    seeds: u64,
    false_alarms: Vec<FalseAlarm>,
    /// Wall time of its runs, added up.
    runs_wall_s: f64,
}

/// The options the zoo ran with.
#[derive(Serialize)]
struct Options {
    /// False-alarm seeds per scenario (seeds 0 to N − 1).
    false_alarm_seeds: u64,
    only: Vec<String>,
    shrink_runs: u32,
    shrink_simulated_s: u64,
}

/// The zoo in numbers.
#[derive(Serialize)]
struct Summary {
    variants: usize,
    caught: usize,
    /// Caught variants of which an earlier seed failed in another way first.
    caught_after_other_failures: usize,
    /// Variants whose runs failed, but never by their check.
    only_other_checks: usize,
    missed: usize,
    false_alarm_runs: u64,
    false_alarms: usize,
    detection_wall_median_s: Option<f64>,
    detection_wall_max_s: Option<f64>,
    /// The longest a caught variant took, detection and shrink together, and which.
    total_wall_max: Option<(String, f64)>,
    shrunk_faults_max: Option<usize>,
    /// Every variant caught by its check and no false alarm.
    passed: bool,
}

#[derive(Serialize)]
struct ZooReport<'a> {
    options: &'a Options,
    variants: &'a [VariantRow],
    false_alarms: &'a [FalseAlarmRow],
    summary: &'a Summary,
    /// Wall time of the whole command.
    wall_s: f64,
}

/// One unit of work for the pool.
enum Job {
    /// Search the row's seeds for its check, and shrink.
    Detect(usize),
    /// Run a scenario (index into the false-alarm rows) with every variant off.
    Correct { row: usize, seed: Seed },
}

/// What a job came to.
enum Done {
    Detected(Box<VariantRow>),
    Ran {
        alarm: Option<FalseAlarm>,
        wall: Duration,
    },
}

impl Done {
    fn is_problem(&self) -> bool {
        match self {
            Done::Detected(row) => !row.caught(),
            Done::Ran { alarm, .. } => alarm.is_some(),
        }
    }
}

pub fn run(args: ZooArgs) -> Result<ExitCode, CliError> {
    let started = Instant::now();
    let cases = selected_cases(&args.only)?;
    if let Some(path) = &args.json {
        std::fs::File::create(path).map_err(|error| {
            CliError::bad_input(format!("cannot write {}: {error}", path.display()))
        })?;
    }
    let scenarios = scenarios_of(&cases)?;
    let mut correct = false_alarm_rows(&cases, &scenarios, args.seeds);
    let correct_scenarios: Vec<Scenario> = correct
        .iter()
        .map(|row| catalogue::get(&row.scenario).expect("found above"))
        .collect();
    let mut jobs: Vec<Job> = (0..cases.len()).map(Job::Detect).collect();
    for row in 0..correct.len() {
        jobs.extend((0..args.seeds).map(|seed| Job::Correct {
            row,
            seed: Seed::new(seed),
        }));
    }
    let threads = args
        .jobs
        .map(|jobs| usize::try_from(jobs).unwrap_or(usize::MAX))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let threads = NonZeroUsize::new(threads).unwrap_or(NonZeroUsize::MIN);
    let shrink_config = ShrinkConfig {
        max_runs: args.shrink_runs,
        max_simulated_ms: args.shrink_simulated_s.saturating_mul(1_000),
        ..ShrinkConfig::default()
    };
    println!(
        "zoo: {} variants of the known-bug table (each over its seed bound); false alarms: {} \
         scenarios with every variant off, seeds 0–{} each",
        cases.len(),
        correct.len(),
        args.seeds - 1
    );
    let mut progress = Progress::new(
        "zoo",
        Units {
            done: "jobs",
            problems: "problems",
        },
        jobs.len() as u64,
        threads,
    );
    let never = AtomicBool::new(false);
    let results = in_parallel(
        jobs.len(),
        threads,
        &never,
        |index| match jobs[index] {
            Job::Detect(case) => Done::Detected(Box::new(detect(
                &cases[case],
                &scenarios[case],
                &shrink_config,
            ))),
            Job::Correct { row, seed } => {
                let (alarm, wall) = run_correct(&correct_scenarios[row], seed);
                Done::Ran { alarm, wall }
            }
        },
        |done| progress.done(done.is_problem()),
    );
    progress.finish();
    let mut variants: Vec<VariantRow> = Vec::new();
    for ((_, done), job) in results.into_iter().zip(&jobs) {
        match (done, job) {
            (Done::Detected(row), _) => variants.push(*row),
            (Done::Ran { alarm, wall }, Job::Correct { row, .. }) => {
                correct[*row].runs_wall_s += wall.as_secs_f64();
                correct[*row].false_alarms.extend(alarm);
            }
            (Done::Ran { .. }, Job::Detect(_)) => unreachable!("a detection job detects"),
        }
    }
    report(&args, &variants, &correct, threads, started)
}

/// The catalogue scenario of each case.
fn scenarios_of(cases: &[KnownBugCase]) -> Result<Vec<Scenario>, CliError> {
    cases
        .iter()
        .map(|case| {
            catalogue::get(case.scenario).ok_or_else(|| {
                CliError::bad_input(format!(
                    "the known-bug table names `{}`, which is no catalogue scenario",
                    case.scenario
                ))
            })
        })
        .collect()
}

/// One false-alarm row per distinct scenario of `cases`, in the order the table first
/// names them, each to run over `seeds` seeds with every variant off.
fn false_alarm_rows(
    cases: &[KnownBugCase],
    scenarios: &[Scenario],
    seeds: u64,
) -> Vec<FalseAlarmRow> {
    let mut correct: Vec<FalseAlarmRow> = Vec::new();
    for (case, scenario) in cases.iter().zip(scenarios) {
        match correct.iter_mut().find(|row| row.scenario == case.scenario) {
            Some(row) => row.variants.push(case.bug.name().to_string()),
            None => correct.push(FalseAlarmRow {
                scenario: case.scenario.to_string(),
                store: scenario.store,
                variants: vec![case.bug.name().to_string()],
                seeds,
                false_alarms: Vec::new(),
                runs_wall_s: 0.0,
            }),
        }
    }
    correct
}

/// Prints the tables, the problems and the summary, writes the JSON report if asked; the
/// exit code (whether every variant was caught and no correct run alarmed).
fn report(
    args: &ZooArgs,
    variants: &[VariantRow],
    correct: &[FalseAlarmRow],
    threads: NonZeroUsize,
    started: Instant,
) -> Result<ExitCode, CliError> {
    let summary = summarize(variants, correct);
    println!();
    println!("{}", variant_table(variants));
    println!();
    println!("{}", false_alarm_table(correct));
    println!();
    print_problems(variants, correct);
    print_summary(&summary, correct.len(), args.seeds);
    let options = Options {
        false_alarm_seeds: args.seeds,
        only: args.only.clone(),
        shrink_runs: args.shrink_runs,
        shrink_simulated_s: args.shrink_simulated_s,
    };
    let wall_s = started.elapsed().as_secs_f64();
    eprintln!("zoo: {wall_s:.1} s of wall time on {threads} threads");
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&ZooReport {
            options: &options,
            variants,
            false_alarms: correct,
            summary: &summary,
            wall_s,
        })
        .expect("the zoo's report serializes");
        crate::cli::write(path, &(json + "\n"))?;
        eprintln!("zoo report written to {}", path.display());
    }
    Ok(if summary.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ZOO_FAILED_CODE)
    })
}

/// The table's rows whose variant's name contains one of `patterns` (all rows without
/// any); a pattern that matches no row is bad input.
fn selected_cases(patterns: &[String]) -> Result<Vec<KnownBugCase>, CliError> {
    let table = known_bug_table();
    for pattern in patterns {
        if !table
            .iter()
            .any(|case| case.bug.name().contains(pattern.as_str()))
        {
            return Err(CliError::bad_input(format!(
                "--only `{pattern}` matches no variant of the known-bug table (expected part \
                 of a variant's name: {})",
                scenarios::suggest::expected(
                    pattern,
                    table.iter().map(|case| case.bug.name()),
                    "`coordsim list`"
                )
            )));
        }
    }
    Ok(table
        .into_iter()
        .filter(|case| {
            patterns.is_empty()
                || patterns
                    .iter()
                    .any(|pattern| case.bug.name().contains(pattern.as_str()))
        })
        .collect())
}

/// Runs `scenario` with `seed` as every sweep does ([`run_seed`]: a failing run's history is
/// kept where `COORDSIM_HISTORY_DIR` says); the failure, if the run failed, without its
/// history.
fn run_one(scenario: &Scenario, seed: Seed, replay: String) -> Option<SeedFailure> {
    let report = FailureReport::new(seed, scenario.name.clone()).with_command(replay);
    let mut failure = run_seed(scenario, seed, report, &scenario.name, |_| {}).failure?;
    failure.outcome.history = None;
    Some(failure)
}

/// How a failed run failed, in a few words: the checks that fired, or the failure kind.
fn failed_with(failure: &SeedFailure) -> String {
    let fired = failure.checks_fired();
    match &failure.outcome.failure {
        Some(_) if !fired.is_empty() => fired.join(", "),
        Some(kind) => kind.kind().to_string(),
        None => "nothing".into(),
    }
}

/// Searches the row's seeds, in order, for its check; shrinks the detecting run.
fn detect(case: &KnownBugCase, scenario: &Scenario, config: &ShrinkConfig) -> VariantRow {
    let buggy = scenario.clone().with_bugs([case.bug]);
    let name = case.bug.name();
    let replay = |seed: Seed, shrink: bool| {
        let command = ReplayCommand::new("replay")
            .option("--scenario", case.scenario)
            .option("--bug", name)
            .seed(seed);
        match (shrink, case.shrink_check()) {
            (true, Some(check)) => command.argument("--shrink").option("--shrink-check", check),
            (true, None) => command.argument("--shrink"),
            (false, _) => command,
        }
        .to_string()
    };
    let started = Instant::now();
    let seeds = (0..case.seeds).map(Seed::new);
    let found = detection::detect(case, &buggy, seeds, |seed| {
        FailureReport::new(seed, case.scenario).with_command(replay(seed, false))
    });
    let wall = started.elapsed();
    let other = |failure: &SeedFailure| OtherFailure {
        seed: failure.outcome.seed,
        failed_with: failed_with(failure),
    };
    let (detection, replay) = match found {
        detection::Detection::Caught {
            detecting,
            seeds_run,
            earlier_failure,
        } => (
            Detection::Caught {
                seed: detecting.outcome.seed,
                seeds_run,
                wall_s: wall.as_secs_f64(),
                shrink: shrink_detecting(case, &buggy, &detecting.outcome, config),
                earlier_failure: earlier_failure.as_deref().map(other),
            },
            Some(replay(detecting.outcome.seed, true)),
        ),
        detection::Detection::OnlyOtherFailures { first } => (
            Detection::OnlyOtherChecks {
                first: other(&first),
            },
            Some(replay(first.outcome.seed, false)),
        ),
        detection::Detection::Missed => (Detection::Missed, None),
    };
    VariantRow {
        variant: name.to_string(),
        source: case.source.to_string(),
        store: scenario.store,
        scenario: case.scenario.to_string(),
        check: case.check.to_string(),
        seed_bound: case.seeds,
        detection,
        replay,
    }
}

/// Shrinks the plan of `outcome`, a run of `buggy` where the row's check fired.
fn shrink_detecting(
    case: &KnownBugCase,
    buggy: &Scenario,
    outcome: &Outcome,
    config: &ShrinkConfig,
) -> Shrunk {
    let started = Instant::now();
    let report = ShrinkTarget::of(outcome, case.shrink_check())
        .and_then(|target| shrink::shrink(buggy, outcome.seed, outcome, &target, config));
    match report {
        Ok(report) => Shrunk::Done {
            original_faults: report.original.faults,
            shrunk_faults: report.shrunk.faults,
            runs_tried: report.runs_tried,
            simulated_ms: report.simulated_ms,
            stopped: report.stopped,
            wall_s: started.elapsed().as_secs_f64(),
            plan: report.plan,
        },
        Err(error) => Shrunk::Failed {
            error: error.to_string(),
        },
    }
}

/// One run of the correct model; the false alarm if it failed, and its wall time.
fn run_correct(scenario: &Scenario, seed: Seed) -> (Option<FalseAlarm>, Duration) {
    let started = Instant::now();
    let replay = ReplayCommand::run(&scenario.name).seed(seed).to_string();
    let failure = run_one(scenario, seed, replay.clone());
    let wall = started.elapsed();
    let alarm = failure.map(|failure| FalseAlarm {
        seed,
        failure: failure
            .outcome
            .failure
            .as_ref()
            .map_or_else(String::new, ToString::to_string),
        checks: failure
            .checks_fired()
            .into_iter()
            .map(String::from)
            .collect(),
        replay,
    });
    (alarm, wall)
}

fn summarize(variants: &[VariantRow], correct: &[FalseAlarmRow]) -> Summary {
    let mut walls: Vec<f64> = Vec::new();
    let mut shrunk_faults_max: Option<usize> = None;
    let mut total_wall_max: Option<(String, f64)> = None;
    for row in variants {
        if let Detection::Caught { wall_s, shrink, .. } = &row.detection {
            walls.push(*wall_s);
            let total_s = wall_s + shrink.wall_s();
            if total_wall_max
                .as_ref()
                .is_none_or(|(_, max)| total_s > *max)
            {
                total_wall_max = Some((row.variant.clone(), total_s));
            }
            if let Shrunk::Done { shrunk_faults, .. } = shrink {
                shrunk_faults_max = shrunk_faults_max.max(Some(*shrunk_faults));
            }
        }
    }
    walls.sort_by(f64::total_cmp);
    let median = match walls.len() {
        0 => None,
        n if n % 2 == 1 => Some(walls[n / 2]),
        n => Some((walls[n / 2 - 1] + walls[n / 2]) / 2.0),
    };
    let caught = variants.iter().filter(|row| row.caught()).count();
    let caught_after_other_failures = variants
        .iter()
        .filter(|row| {
            matches!(
                row.detection,
                Detection::Caught {
                    earlier_failure: Some(_),
                    ..
                }
            )
        })
        .count();
    let only_other_checks = variants
        .iter()
        .filter(|row| matches!(row.detection, Detection::OnlyOtherChecks { .. }))
        .count();
    let false_alarms: usize = correct.iter().map(|row| row.false_alarms.len()).sum();
    Summary {
        variants: variants.len(),
        caught,
        caught_after_other_failures,
        only_other_checks,
        missed: variants.len() - caught - only_other_checks,
        false_alarm_runs: correct.iter().map(|row| row.seeds).sum(),
        false_alarms,
        detection_wall_median_s: median,
        detection_wall_max_s: walls.last().copied(),
        total_wall_max,
        shrunk_faults_max,
        passed: caught == variants.len() && false_alarms == 0,
    }
}

/// The variants' table, in Markdown, narrow enough for a terminal of 160 columns
/// (the row's source and store, and how an earlier seed failed, are in `--json` and in the
/// notes under the table).
fn variant_table(variants: &[VariantRow]) -> String {
    let mut builder = Builder::default();
    builder.push_record([
        "variant",
        "expected check",
        "caught",
        "seeds",
        "detect s",
        "total s",
        "shrunk",
    ]);
    for row in variants {
        let (caught, seeds, wall, total, shrunk) = match &row.detection {
            Detection::Caught {
                seeds_run,
                wall_s,
                shrink,
                earlier_failure,
                ..
            } => (
                match earlier_failure {
                    None => "yes",
                    Some(_) => "yes*",
                },
                format!("{seeds_run} of {}", row.seed_bound),
                format!("{wall_s:.2}"),
                format!("{:.2}", wall_s + shrink.wall_s()),
                match shrink {
                    Shrunk::Done {
                        original_faults,
                        shrunk_faults,
                        ..
                    } => format!("{original_faults} → {shrunk_faults}"),
                    Shrunk::Failed { .. } => "failed".to_string(),
                },
            ),
            Detection::OnlyOtherChecks { .. } => (
                "NO*",
                format!("– of {}", row.seed_bound),
                "–".into(),
                "–".into(),
                "–".into(),
            ),
            Detection::Missed => (
                "NO",
                format!("– of {}", row.seed_bound),
                "–".into(),
                "–".into(),
                "–".into(),
            ),
        };
        builder.push_record([
            row.variant.clone(),
            row.check.clone(),
            caught.to_string(),
            seeds,
            wall,
            total,
            shrunk,
        ]);
    }
    let mut table = builder.build().with(Style::markdown()).to_string();
    let notes: Vec<String> = variants
        .iter()
        .filter_map(|row| match &row.detection {
            Detection::Caught {
                earlier_failure: Some(OtherFailure { seed, failed_with }),
                ..
            } => Some(format!(
                "* {}: seed {seed} failed first, with {failed_with}",
                row.variant
            )),
            Detection::OnlyOtherChecks { first } => Some(format!(
                "* {}: only other checks fired ({} at seed {})",
                row.variant, first.failed_with, first.seed
            )),
            _ => None,
        })
        .collect();
    for note in notes {
        table.push('\n');
        table.push_str(&note);
    }
    table
}

/// The false alarms' table, in Markdown.
fn false_alarm_table(correct: &[FalseAlarmRow]) -> String {
    let mut builder = Builder::default();
    builder.push_record([
        "scenario (every variant off)",
        "store",
        "seeds",
        "false alarms",
    ]);
    for row in correct {
        builder.push_record([
            row.scenario.clone(),
            row.store.to_string(),
            row.seeds.to_string(),
            row.false_alarms.len().to_string(),
        ]);
    }
    builder.build().with(Style::markdown()).to_string()
}

/// Each variant not caught and each false alarm, with the command that replays it.
fn print_problems(variants: &[VariantRow], correct: &[FalseAlarmRow]) {
    for row in variants {
        match &row.detection {
            Detection::Caught {
                shrink: Shrunk::Failed { error },
                ..
            } => println!("{}: the shrink failed: {error}", row.variant),
            Detection::Caught { .. } => {}
            Detection::OnlyOtherChecks { first } => println!(
                "{}: NOT CAUGHT by {}: it never fired within {} seeds; seed {} failed with {} \
                 first; replay with: {}",
                row.variant,
                row.check,
                row.seed_bound,
                first.seed,
                first.failed_with,
                row.replay.as_deref().unwrap_or("-")
            ),
            Detection::Missed => println!(
                "{}: MISSED: none of the first {} seeds of `{}` failed",
                row.variant, row.seed_bound, row.scenario
            ),
        }
    }
    for row in correct {
        for alarm in &row.false_alarms {
            println!(
                "FALSE ALARM: `{}` seed {} with every variant off: {}{}; replay with: {}",
                row.scenario,
                alarm.seed,
                alarm.failure,
                if alarm.checks.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", alarm.checks.join(", "))
                },
                alarm.replay
            );
        }
    }
}

fn print_summary(summary: &Summary, scenarios: usize, seeds: u64) {
    println!(
        "caught: {} of {} variants by their check ({} of them after an earlier seed failed \
         in another way; {} failed only in other ways; {} missed)",
        summary.caught,
        summary.variants,
        summary.caught_after_other_failures,
        summary.only_other_checks,
        summary.missed
    );
    println!(
        "false alarms: {} in {} runs ({scenarios} scenarios × {seeds} seeds, every variant off)",
        summary.false_alarms, summary.false_alarm_runs
    );
    if let Some(faults) = summary.shrunk_faults_max {
        println!(
            "shrunk plans: at most {faults} faults ({})",
            if faults <= SHRUNK_FAULTS_TARGET {
                format!("every one within {SHRUNK_FAULTS_TARGET}")
            } else {
                format!("OVER {SHRUNK_FAULTS_TARGET}")
            }
        );
    }
    if let (Some(median), Some(max)) = (
        summary.detection_wall_median_s,
        summary.detection_wall_max_s,
    ) {
        println!("wall time to first detection: median {median:.2} s, max {max:.2} s");
    }
    if let Some((variant, total_s)) = &summary.total_wall_max {
        println!("wall time per variant, detection and shrink: max {total_s:.2} s ({variant})");
    }
}
