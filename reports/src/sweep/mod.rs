//! `coordsim sweep`: one scenario over many seeds on every core, through the one driver
//! (`scenarios::sweep::Parallel`), with a progress bar, a stop at the first failure (or
//! not), Ctrl-C that keeps what finished, shards for fanning a sweep out across machines,
//! and `coordsim sweep merge` that puts the shards' results back together.

use crate::cli::{CliError, VariantArgs, load_scenario};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use scenarios::{
    ReplayCommand, Scenario,
    sweep::{OnFailure, Parallel, SeedFailure},
};
use serde::{Deserialize, Serialize};
use sim::{Seed, env::JOB_COMPLETION_INDEX, report::FailureReport};
use std::{
    fmt,
    io::IsTerminal,
    num::NonZeroUsize,
    path::PathBuf,
    process::ExitCode,
    str::FromStr,
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

mod merge;
pub(crate) mod reader;
mod results;

use results::{INTERRUPTED_CODE, ResultsWriter, SweepHeader, SweepTally};

/// How often, at most, plain progress lines are printed when stderr is not a terminal.
const PLAIN_PROGRESS_EVERY: Duration = Duration::from_secs(5);

#[derive(Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "\
Seeds: seed i of the sweep is FROM + i, for i in 0..SEEDS. With --shard K/M this process \
runs the seeds whose index i has i mod M == K (round robin, so every shard gets early and \
late seeds alike); K may be `env`, read from JOB_COMPLETION_INDEX (a Kubernetes Indexed \
Job's pod index). Runs come back sorted by seed, so the output does not depend on --jobs.

Stops at the first failure (no new seed starts; the running ones finish and are reported) \
unless --keep-going. Ctrl-C does the same and marks the results interrupted; a second \
Ctrl-C quits at once. Progress goes to stderr: a bar on a terminal, otherwise a line every \
few seconds.

Exit codes: as `coordsim run`'s for the first failing seed (1 safety violation, 3 liveness \
failure, 4 a model panicked, 5 time limit), 0 if every seed ran clean and showed its evidence, 7 if every seed ran clean \
but a check the scenario relies on judged nothing in any seed or a mark it declares was \
reached in none (the tables say which), 2 bad input, 130 interrupted by Ctrl-C before any \
seed failed.

Examples:
  coordsim sweep --scenario raft_swarm_3 --seeds 200 --keep-going --out raft.json
  coordsim sweep --scenario zk_queue_lock_expiry --seeds 50 --bug recipe.no_fencing
  coordsim sweep --scenario raft_swarm_5 --seeds 1000 --shard 2/4 --out shard-2.json
  coordsim sweep --scenario raft_swarm_5 --seeds 1000 --shard env/4 --out shard.json  # Indexed Job
  coordsim sweep merge shard-*.json --out raft_swarm_5.json"
)]
pub struct SweepArgs {
    #[command(subcommand)]
    merge: Option<SweepCommand>,
    /// A catalogue scenario's name, or a scenario file (.toml or .json).
    #[arg(long, value_name = "NAME|FILE", required = true)]
    scenario: Option<String>,
    /// How many seeds the sweep covers (all shards together).
    #[arg(long, env = sim::env::SEEDS, required = true)]
    seeds: Option<u64>,
    /// The first seed: decimal or 0x hex.
    #[arg(long, default_value = "0", env = sim::env::SEED_BASE)]
    from: Seed,
    /// Threads (default: the available cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Run only shard K of M (`K/M`, 0 <= K < M); `env/M` reads K from JOB_COMPLETION_INDEX.
    #[arg(long, value_name = "K/M")]
    shard: Option<ShardArg>,
    /// Run every seed instead of stopping at the first failure.
    #[arg(long)]
    keep_going: bool,
    /// Write the results here as JSON: the scenario, its digest, the seed range, the shard,
    /// whether Ctrl-C interrupted it, and every finished run's outcome, sorted by seed.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    #[command(flatten)]
    variant: VariantArgs,
}

#[derive(Subcommand, Debug)]
enum SweepCommand {
    /// Merge the results of a sweep's shards into one (same scenario digest and seed range;
    /// every seed once), print its summary, and write it with --out.
    #[command(after_help = "\
Exit codes: as `coordsim sweep`'s for the merged runs' first failure; 2 if the files do \
not make one sweep (a different scenario digest or seed range, a seed missing or \
duplicated: the line names them) or cannot be read.

Example: coordsim sweep merge shard-0.json shard-1.json shard-2.json shard-3.json --out all.json")]
    Merge(MergeArgs),
}

#[derive(Args, Debug)]
struct MergeArgs {
    /// The shards' result files (`coordsim sweep --out`).
    #[arg(required = true, value_name = "FILES")]
    files: Vec<PathBuf>,
    /// Write the merged results here (the same JSON as one sweep over all the seeds).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// `--shard K/M`, K possibly from the environment.
#[derive(Clone, Debug)]
struct ShardArg {
    index: ShardIndex,
    count: u64,
}

#[derive(Clone, Debug)]
enum ShardIndex {
    Given(u64),
    FromJobCompletionIndex,
}

impl FromStr for ShardArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let expected = "expected K/M with 0 <= K < M, or env/M (e.g. 2/4)";
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}`: {expected}"))?;
        let count: u64 = count
            .trim()
            .parse()
            .ok()
            .filter(|count| *count > 0)
            .ok_or_else(|| format!("`{text}`: {expected}"))?;
        let index = match index.trim() {
            "env" => ShardIndex::FromJobCompletionIndex,
            given => ShardIndex::Given(
                given
                    .parse()
                    .ok()
                    .filter(|index| *index < count)
                    .ok_or_else(|| format!("`{text}`: {expected}"))?,
            ),
        };
        Ok(ShardArg { index, count })
    }
}

impl ShardArg {
    fn resolve(&self) -> Result<Shard, CliError> {
        let index = match self.index {
            ShardIndex::Given(index) => index,
            ShardIndex::FromJobCompletionIndex => {
                let text = std::env::var(JOB_COMPLETION_INDEX).map_err(|_| {
                    CliError::bad_input(format!(
                        "--shard env/{}: {JOB_COMPLETION_INDEX} is not set (expected a \
                         Kubernetes Indexed Job's pod, or --shard K/{})",
                        self.count, self.count
                    ))
                })?;
                text.trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|index| *index < self.count)
                    .ok_or_else(|| {
                        CliError::bad_input(format!(
                            "--shard env/{}: {JOB_COMPLETION_INDEX}=`{text}` (expected an \
                             index from 0 to {})",
                            self.count,
                            self.count - 1
                        ))
                    })?
            }
        };
        Ok(Shard {
            index,
            count: self.count,
        })
    }
}

/// One shard of a sweep: the seeds whose index `i` has `i % count == index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Shard {
    index: u64,
    count: u64,
}

/// The seeds a sweep covers: `from`, `from + 1`, …, `count` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct SeedRange {
    from: Seed,
    count: u64,
}

impl SeedRange {
    /// The index of `seed` in the range, if it is in it.
    fn index_of(&self, seed: Seed) -> Option<u64> {
        let index = seed.value().wrapping_sub(self.from.value());
        (index < self.count).then_some(index)
    }

    /// The seeds of `shard` (all of them without one).
    fn seeds(&self, shard: Option<Shard>) -> Vec<Seed> {
        (0..self.count)
            .filter(|index| shard.is_none_or(|shard| index % shard.count == shard.index))
            .map(|index| self.from.offset(index))
            .collect()
    }
}

/// Set by Ctrl-C or by a failure: start no new seed.
static STOP: AtomicBool = AtomicBool::new(false);
/// Set by Ctrl-C.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

pub fn run(args: SweepArgs) -> Result<ExitCode, CliError> {
    if let Some(SweepCommand::Merge(merge_args)) = args.merge {
        return merge::merge(&merge_args);
    }
    let name = args.scenario.as_deref().expect("clap requires --scenario");
    let count = args.seeds.expect("clap requires --seeds");
    if count == 0 {
        return Err(CliError::bad_input(
            "--seeds 0 (expected at least one seed)",
        ));
    }
    let stores = args.variant.stores();
    if stores.len() > 1 {
        return Err(CliError::bad_input(
            "--store: a sweep runs on one store (expected --store zab or --store raft; \
             `coordsim run --store zab,raft` compares one seed on both)",
        ));
    }
    let store = stores.first().copied();
    let scenario = VariantArgs::apply(&load_scenario(name)?, store, &args.variant.known_bugs()?)?;
    let jobs = match args.jobs {
        Some(jobs) => NonZeroUsize::new(jobs)
            .ok_or_else(|| CliError::bad_input("--jobs 0 (expected at least one thread)"))?,
        None => std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN),
    };
    let shard = args.shard.as_ref().map(ShardArg::resolve).transpose()?;
    let range = SeedRange {
        from: args.from,
        count,
    };
    let seeds = range.seeds(shard);
    let replay = |subcommand: &'static str, seed: Seed| {
        args.variant
            .add_flags(
                ReplayCommand::new(subcommand).option("--scenario", name),
                store,
            )
            .seed(seed)
    };
    print_header(&scenario, range, shard, seeds.len(), args.keep_going);
    stop_on_ctrl_c()?;
    let mut progress = Progress::new(
        &format!("sweep {}", scenario.name),
        Units::SEEDS,
        seeds.len() as u64,
        jobs,
    );
    let mut tally = SweepTally::new(&scenario.marks);
    let mut failures: Vec<SeedFailure> = Vec::new();
    let header = SweepHeader {
        scenario: &scenario.name,
        scenario_digest: scenario.digest(),
        seeds: range,
        shard,
        declared_marks: &scenario.marks,
    };
    let mut writer = args
        .out
        .as_deref()
        .map(|path| ResultsWriter::create(path, &header))
        .transpose()?;
    // A write that fails stops the sweep; the error is returned once the running seeds end.
    let mut write_error: Option<CliError> = None;
    Parallel {
        scenario: &scenario,
        seeds: &seeds,
        jobs,
        on_failure: if args.keep_going {
            OnFailure::KeepGoing
        } else {
            OnFailure::Stop
        },
        stop: &STOP,
        label: &scenario.name,
    }
    .run(
        &|seed| {
            FailureReport::new(seed, scenario.name.clone())
                .with_command(replay("run", seed).to_string())
        },
        |run| progress.done(run.failure.is_some()),
        |run| {
            tally.add(&run.outcome);
            if let (Some(out), None) = (writer.as_mut(), &write_error)
                && let Err(error) = out.add(&run.outcome)
            {
                STOP.store(true, Ordering::SeqCst);
                write_error = Some(error);
            }
            // Failures are few, and their histories are needed for the report below.
            failures.extend(run.failure);
        },
    );
    progress.finish();
    if let Some(error) = write_error {
        return Err(error);
    }
    let interrupted = INTERRUPTED.load(Ordering::SeqCst);
    for failure in &failures {
        println!("\n{failure}");
        println!(
            "replay and check its digest: {}",
            replay("replay", failure.outcome.seed)
        );
    }
    tally.print(seeds.len(), interrupted);
    if let Some(writer) = writer {
        writer.finish(interrupted, &tally.evidence)?;
    }
    Ok(tally.exit_code(interrupted))
}

/// What the sweep runs: the scenario in full, its seeds and whether it stops at the first
/// failure.
fn print_header(
    scenario: &Scenario,
    range: SeedRange,
    shard: Option<Shard>,
    shard_seeds: usize,
    keep_going: bool,
) {
    println!(
        "sweep of `{}` (digest {}): {} seeds from {}{}, {}",
        scenario.name,
        scenario.digest(),
        range.count,
        range.from,
        shard.map_or_else(String::new, |shard| format!(
            ", shard {}/{}: {} of them",
            shard.index, shard.count, shard_seeds
        )),
        if keep_going {
            "every seed"
        } else {
            "stopping at the first failure"
        }
    );
    println!("scenario: {scenario}");
}

/// Ctrl-C starts no new seed (the running ones finish); a second one quits at once.
fn stop_on_ctrl_c() -> Result<(), CliError> {
    ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            eprintln!("interrupted again: quitting without waiting");
            std::process::exit(i32::from(INTERRUPTED_CODE));
        }
        STOP.store(true, Ordering::SeqCst);
        eprintln!(
            "interrupted: no new seed starts; the running ones finish (Ctrl-C again to quit now)"
        );
    })
    .map_err(|error| CliError::bad_input(format!("cannot handle Ctrl-C: {error}")))
}

/// Progress on stderr: a bar on a terminal, plain lines otherwise. `coordsim sweep` counts
/// seeds and failures; `coordsim zoo` counts its jobs and the problems they found.
pub(crate) struct Progress {
    name: String,
    units: Units,
    total: u64,
    done: u64,
    failures: u64,
    started: Instant,
    bar: Option<ProgressBar>,
    last_line: Instant,
    line_every_seeds: u64,
}

/// What a [`Progress`] counts, and what it calls the bad ones.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Units {
    /// What is done one by one (`seeds`).
    pub(crate) done: &'static str,
    /// What can go wrong in one (`failures`).
    pub(crate) problems: &'static str,
}

impl Units {
    /// A sweep's: seeds, and the failures among them.
    const SEEDS: Units = Units {
        done: "seeds",
        problems: "failures",
    };
}

impl Progress {
    /// Progress of `name` (`sweep NAME: …`, on `jobs` threads) over `total` units.
    pub(crate) fn new(name: &str, units: Units, total: u64, jobs: NonZeroUsize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(&format!(
                    "{{bar:40}} {{pos}}/{{len}} {}, {{msg}}, {{rate}}, {{eta}} left",
                    units.done
                ))
                .expect("a valid template")
                // indicatif's own `{per_sec}` prints four decimals (`44.9302/s`).
                .with_key(
                    "rate",
                    |state: &indicatif::ProgressState, out: &mut dyn fmt::Write| {
                        let _ = write!(out, "{}/s", rate(state.per_sec()));
                    },
                ),
            );
            bar.set_message(format!("0 {}", units.problems));
            bar.enable_steady_tick(Duration::from_millis(500));
            bar
        });
        if bar.is_none() {
            eprintln!("{name}: {total} {} on {jobs} threads", units.done);
        }
        Self {
            name: name.into(),
            units,
            total,
            done: 0,
            failures: 0,
            started: Instant::now(),
            bar,
            last_line: Instant::now(),
            line_every_seeds: total.div_ceil(10).max(1),
        }
    }

    /// One more unit done; `problem` if it went wrong.
    pub(crate) fn done(&mut self, problem: bool) {
        self.done += 1;
        if problem {
            self.failures += 1;
        }
        match &self.bar {
            Some(bar) => {
                bar.inc(1);
                bar.set_message(format!("{} {}", self.failures, self.units.problems));
            }
            None => {
                if self.last_line.elapsed() >= PLAIN_PROGRESS_EVERY
                    || self.done.is_multiple_of(self.line_every_seeds)
                {
                    self.last_line = Instant::now();
                    eprintln!("{self}");
                }
            }
        }
    }

    /// Clears the bar and prints how it went.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let seconds = self.started.elapsed().as_secs_f64();
        let Units { done, problems } = self.units;
        eprintln!(
            "{}: {} of {} {done} in {seconds:.1} s ({} {done}/s), {} {problems}",
            self.name,
            self.done,
            self.total,
            rate(self.done as f64 / seconds.max(1e-9)),
            self.failures
        );
    }
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.started.elapsed().as_secs_f64();
        let rate_per_s = self.done as f64 / seconds.max(1e-9);
        let left = (self.total - self.done) as f64 / rate_per_s.max(1e-9);
        let Units { done, problems } = self.units;
        write!(
            f,
            "{}: {}/{} {done}, {} {problems}, {} {done}/s, about {left:.0} s left",
            self.name,
            self.done,
            self.total,
            self.failures,
            rate(rate_per_s)
        )
    }
}

/// A rate with three significant digits or so: `44.9`, `0.53`, `1208`; more digits than
/// that are noise from one run's wall time.
fn rate(per_s: f64) -> String {
    match per_s.abs() {
        r if r >= 100.0 => format!("{per_s:.0}"),
        r if r >= 1.0 => format!("{per_s:.1}"),
        _ => format!("{per_s:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::rate;

    #[test]
    fn rates_print_with_three_significant_digits_or_so() {
        assert_eq!(rate(44.9302), "44.9");
        assert_eq!(rate(1208.4), "1208");
        assert_eq!(rate(0.5312), "0.53");
        assert_eq!(rate(3.0), "3.0");
    }
}
