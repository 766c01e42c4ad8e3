//! `coordsim replay`: re-runs a scenario with a seed through the run driver, checks that
//! the history digest is the one expected (given, or read from a recorded outcome or sweep
//! results, whose scenario as it ran is the one replayed), prints the outcome and the
//! history records around the first violation, and writes the full trace (JSON) and an
//! HTML timeline of the run.
//!
//! Exit codes: as `coordsim run` for the replayed run (0 clean, 1 safety, 3 liveness,
//! 4 crash, 5 time limit) when it reproduces what was expected (or nothing was expected);
//! 6 when it does not ([`DIGEST_MISMATCH`]), whatever the run came to; 2 bad input.

use crate::cli::{self, CliError, Outputs, VariantArgs, exit_code, load_scenario, read_plan};
use crate::sweep::reader::RunsReader;
use clap::Args;
use coordsim::{
    describe::{Focus, FocusKind, describe_record},
    timeline, trace,
};
use scenarios::{
    Failure, Outcome, ReplayCommand, Scenario, driver,
    shrink::{self, ShrinkConfig, ShrinkTarget},
};
use serde::Deserialize;
use serde_json::Value;
use sim::{Seed, digest::Digest, history::History};
use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

/// The exit code of a replay that did not reproduce the expected history digest (or, for
/// a recorded run that crashed and so has no digest, its crash).
pub const DIGEST_MISMATCH: u8 = 6;

#[derive(Args, Debug)]
#[command(after_help = "\
Exit codes: as `coordsim run` for the replayed run when it reproduces what was expected \
(0 clean, 1 safety violation, 3 liveness failure, 4 a model panicked, 5 time limit), so a \
reproduced failure exits with its own code; 6 the history digest differs from the expected \
one (both are printed); 2 bad input.

With --from, the run follows the fault plan recorded in the outcome (unless --plan is \
given), so a run made with `run --plan` replays too, and the scenario recorded in it, as it \
ran (known-bug variants and store included): if --scenario and the flags describe another, \
one line names the difference. A mismatch names the scenario and seed its digests are of.

--trace writes one JSON object: {\"outcome\": <the outcome, as `run --json` prints it>, \
\"records\": [<every history record, in order>]}.

Examples:
  coordsim run --scenario zk_queue_lock_expiry --seed 3 --json > run.json
  coordsim replay --scenario zk_queue_lock_expiry --seed 3 --from run.json --timeline t.html
  coordsim replay --scenario raft_leader_killer --seed 7 --digest f97684c5b8d4e1af --trace t.json
  coordsim replay --scenario my-scenario.toml --seed 0x2a --from sweep.json --around 40
  coordsim replay --scenario zk_queue_lock_crashes --seed 1 --bug recipe.unprotected_seq_create --shrink")]
pub struct ReplayArgs {
    /// A catalogue scenario's name, or a scenario file (.toml or .json).
    #[arg(long, value_name = "NAME|FILE")]
    scenario: String,
    /// The seed: decimal or 0x hex.
    #[arg(long, env = sim::env::SEED)]
    seed: Seed,
    /// Another store, known bugs: as the run that is replayed had them (one store).
    #[command(flatten)]
    variant: VariantArgs,
    /// Follow this JSON fault plan instead of the scenario's fault source (or the one
    /// recorded in --from).
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
    /// The history digest the replay must reproduce (16 hex digits, as runs print it).
    #[arg(long, value_name = "HEX", value_parser = parse_digest, conflicts_with = "from")]
    digest: Option<Digest>,
    /// The recorded run to reproduce: an outcome as `coordsim run --json` prints it, or
    /// sweep results ({"runs": [outcome, ...]}), from which the run with this seed (and
    /// scenario) is taken.
    #[arg(long, value_name = "FILE")]
    from: Option<PathBuf>,
    /// Write the outcome and the full history here, as one JSON object.
    #[arg(long, value_name = "FILE.json")]
    trace: Option<PathBuf>,
    /// Write a self-contained HTML timeline of the run here.
    #[arg(long, value_name = "FILE.html")]
    timeline: Option<PathBuf>,
    /// How many history records to print on each side of the first violation.
    #[arg(long, value_name = "N", default_value_t = 20)]
    around: usize,
    /// If the run fails, shrink its fault plan: the smallest plan (fewest faults, then
    /// shortest spans, then earliest) that still fails the same way on the same seed, by
    /// delta debugging (drop faults, shorten spans, move them earlier), printed and written
    /// to --shrink-out.
    #[arg(long)]
    shrink: bool,
    /// With --shrink: the check the shrunk plan must still fire (default: the first
    /// violation's check).
    #[arg(long, value_name = "CHECK", requires = "shrink")]
    shrink_check: Option<String>,
    /// With --shrink: the most runs to try.
    #[arg(long, value_name = "N", default_value_t = ShrinkConfig::default().max_runs,
          requires = "shrink")]
    shrink_runs: u32,
    /// With --shrink: the most simulated time the runs may reach together, seconds.
    #[arg(long, value_name = "S",
          default_value_t = ShrinkConfig::default().max_simulated_ms / 1_000,
          value_parser = clap::value_parser!(u64).range(1..), requires = "shrink")]
    shrink_simulated_s: u64,
    /// With --shrink: where to write the shrunk plan (JSON, for `run --plan` and
    /// `replay --plan`).
    #[arg(
        long,
        value_name = "FILE",
        default_value = "shrunk-plan.json",
        requires = "shrink"
    )]
    shrink_out: PathBuf,
}

fn parse_digest(text: &str) -> Result<Digest, String> {
    // Exactly the 16 digits a digest prints as: `+1`, `0x…` or a short prefix would parse
    // as a number but name no digest that was printed.
    if text.len() != 16 || !text.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "`{text}`: expected 16 hex digits, as a run prints its digest"
        ));
    }
    Digest::try_from(text.to_string())
}

/// What the replay must reproduce.
enum Expected {
    /// A history digest.
    Digest(Digest),
    /// The failure of a recorded run that crashed (a crashed run has no history digest).
    Crash(Option<Failure>),
}

pub fn run(args: ReplayArgs) -> Result<ExitCode, CliError> {
    let (scenario, expected) = what_to_replay(&args)?;
    let outcome = driver::run(&scenario, args.seed);
    let command = replay_command(&args, &outcome);
    cli::report(
        &scenario,
        &outcome,
        &command,
        &Outputs {
            plan: None,
            history: None,
            json: false,
        },
    )?;
    // What the digests compared are of, for a mismatch to name.
    let compared = format!(
        "scenario `{}` (digest {}) with seed {}",
        scenario.name,
        scenario.digest(),
        args.seed
    );
    let reproduced = check_reproduced(expected.as_ref(), &outcome, &compared);
    write_outputs(&args, &scenario, &outcome)?;
    if !reproduced {
        return Ok(ExitCode::from(DIGEST_MISMATCH));
    }
    if args.shrink {
        shrink_plan(&args, &scenario, &outcome)?;
    }
    Ok(exit_code(&outcome))
}

/// The scenario to replay (the one given with its flags, or a recorded run's own, with the
/// plan given or recorded) and what the replay must reproduce, with where that was said.
fn what_to_replay(args: &ReplayArgs) -> Result<(Scenario, Option<(Expected, String)>), CliError> {
    let stores = args.variant.stores();
    if stores.len() > 1 {
        return Err(CliError::bad_input(
            "--store: replay takes one store (expected --store zab or --store raft)",
        ));
    }
    let given = VariantArgs::apply(
        &load_scenario(&args.scenario)?,
        stores.first().copied(),
        &args.variant.known_bugs()?,
    )?;
    let recorded = match &args.from {
        Some(path) => Some(recorded_outcome(path, &given.name, args.seed)?),
        None => None,
    };
    let plan = match (&args.plan, &recorded) {
        (Some(path), _) => Some((read_plan(path)?, path.display().to_string())),
        (None, Some(outcome)) => Some((
            outcome.fault_plan.clone(),
            format!("{}: the recorded plan", from_path(args).display()),
        )),
        (None, None) => None,
    };
    // A recorded run is replayed as it ran: its own scenario (known-bug variants, store and
    // all), if the outcome records it; the flags given are only compared with it.
    let mut scenario = match &recorded {
        Some(outcome) => {
            if let Some(line) = scenario_check(&given, outcome, plan.is_some()) {
                println!("scenario check:  {line}");
            }
            match &outcome.scenario_as_run {
                Some(as_run) => (**as_run).clone(),
                None => given,
            }
        }
        None => given,
    };
    if let Some((plan, source)) = plan {
        scenario = scenario.with_plan(plan);
        scenario
            .validate()
            .map_err(|error| CliError::bad_input(format!("{source}: {error}")))?;
    }
    let expected = match (args.digest, &recorded) {
        (Some(digest), _) => Some((Expected::Digest(digest), "given by --digest".to_string())),
        (None, Some(outcome)) => Some((
            match outcome.history_digest {
                Some(digest) => Expected::Digest(digest),
                None => Expected::Crash(outcome.failure.clone()),
            },
            format!("recorded in {}", from_path(args).display()),
        )),
        (None, None) => None,
    };
    Ok((scenario, expected))
}

/// Prints whether the replayed `outcome` reproduced what was `expected` (said where), of
/// `compared`; whether it did (nothing asked for counts as reproduced).
fn check_reproduced(
    expected: Option<&(Expected, String)>,
    outcome: &Outcome,
    compared: &str,
) -> bool {
    match expected {
        None => {
            println!("digest check:    none asked for (give --digest or --from)");
            true
        }
        Some((Expected::Digest(digest), source)) => match outcome.history_digest {
            Some(replayed) if replayed == *digest => {
                println!("digest check:    reproduced: history digest {replayed} as expected");
                true
            }
            Some(replayed) => {
                println!(
                    "digest check:    MISMATCH: expected history digest {digest} ({source}), \
                 replayed {replayed}, of {compared}"
                );
                false
            }
            None => {
                println!(
                    "digest check:    MISMATCH: expected history digest {digest} ({source}), \
                 the replay of {compared} crashed and has none"
                );
                false
            }
        },
        Some((Expected::Crash(failure), source)) => {
            let same = outcome.history_digest.is_none() && outcome.failure == *failure;
            let recorded = failure
                .as_ref()
                .map_or("no failure".to_string(), ToString::to_string);
            if same {
                println!(
                    "digest check:    reproduced the crash: the recorded run has no history \
                 digest ({recorded})"
                );
            } else {
                let replayed = match (&outcome.failure, outcome.history_digest) {
                    (_, Some(digest)) => format!("history digest {digest}"),
                    (Some(failure), None) => failure.to_string(),
                    (None, None) => "no failure".to_string(),
                };
                println!(
                    "digest check:    MISMATCH: expected the crash {source} ({recorded}), \
                 the replay of {compared} came to {replayed}"
                );
            }
            same
        }
    }
}

/// Prints the records around the focus, and writes the trace and the timeline asked for.
fn write_outputs(
    args: &ReplayArgs,
    scenario: &Scenario,
    outcome: &Outcome,
) -> Result<(), CliError> {
    match &outcome.history {
        Some(history) => {
            let focus = Focus::of(outcome, history);
            if let Some(focus) = &focus {
                print_window(history, focus, args.around);
            }
            if let Some(path) = &args.trace {
                trace::write(path, outcome, history).map_err(CliError::bad_input)?;
                eprintln!("trace written to {}", path.display());
            }
            if let Some(path) = &args.timeline {
                let title = format!(
                    "coordsim replay: {} with seed {}",
                    scenario.name, outcome.seed
                );
                let page = timeline::render(
                    &title,
                    scenario,
                    outcome,
                    history,
                    focus.as_ref(),
                    args.around,
                );
                cli::write(path, &page)?;
                eprintln!("timeline written to {}", path.display());
            }
        }
        None if args.trace.is_some() || args.timeline.is_some() => {
            eprintln!("the run crashed and left no history: no trace or timeline written");
        }
        None => {}
    }
    Ok(())
}

/// Shrinks the failing run's plan, prints the result and writes the shrunk plan.
fn shrink_plan(args: &ReplayArgs, scenario: &Scenario, outcome: &Outcome) -> Result<(), CliError> {
    if outcome.is_clean() {
        println!("shrink:          nothing to shrink: the run is clean");
        return Ok(());
    }
    let target = ShrinkTarget::of(outcome, args.shrink_check.as_deref())
        .map_err(|error| CliError::bad_input(format!("--shrink: {error}")))?;
    let config = ShrinkConfig {
        max_runs: args.shrink_runs,
        max_simulated_ms: args.shrink_simulated_s.saturating_mul(1_000),
        ..ShrinkConfig::default()
    };
    let report = shrink::shrink(scenario, args.seed, outcome, &target, &config)
        .map_err(|error| CliError::bad_input(format!("--shrink: {error}")))?;
    println!("{report}");
    let json = serde_json::to_string_pretty(&report.plan).expect("a plan serializes");
    cli::write(&args.shrink_out, &json)?;
    let run_it = args
        .variant
        .add_flags(
            ReplayCommand::run(&args.scenario),
            args.variant.stores().first().copied(),
        )
        .seed(args.seed)
        .option("--plan", args.shrink_out.display());
    println!(
        "shrunk plan written to {}; run it with: {run_it}",
        args.shrink_out.display()
    );
    Ok(())
}

/// How the scenario given on the command line differs from the one `recorded` ran, on one
/// line, or `None` if it does not. With `plan_replaced` (the replay follows the recorded
/// plan or a `--plan`), the fault sources are not compared: the plan replaces both.
fn scenario_check(given: &Scenario, recorded: &Outcome, plan_replaced: bool) -> Option<String> {
    let Some(as_run) = &recorded.scenario_as_run else {
        // An outcome written before outcomes recorded their scenario: only its digest says
        // which scenario ran (a `run --plan` ran the given one with that plan).
        let digests = [
            given.digest(),
            given
                .clone()
                .with_plan(recorded.fault_plan.clone())
                .digest(),
        ];
        return (!digests.contains(&recorded.scenario_digest)).then(|| {
            format!(
                "the given scenario (digest {}) is not the one the recorded run ran (digest \
                 {}), and the outcome does not record its scenario: give the run's own \
                 --scenario, --store and --bug flags",
                digests[0], recorded.scenario_digest
            )
        });
    };
    let fields = |scenario: &Scenario| match serde_json::to_value(scenario) {
        Ok(Value::Object(fields)) => fields,
        _ => unreachable!("a scenario serializes to an object"),
    };
    let (given, as_run) = (fields(given), fields(as_run));
    let mut names: Vec<&String> = given.keys().chain(as_run.keys()).collect();
    names.sort();
    names.dedup();
    let differences: Vec<String> = names
        .into_iter()
        .filter(|name| !(plan_replaced && *name == "faults"))
        .filter(|name| given.get(*name) != as_run.get(*name))
        .map(|name| {
            let show = |value: Option<&Value>| {
                let text = value.map_or_else(|| "none".to_string(), Value::to_string);
                match text.char_indices().nth(60) {
                    Some((cut, _)) => format!("{}…", &text[..cut]),
                    None => text,
                }
            };
            format!(
                "`{name}` recorded {}, given {}",
                show(as_run.get(name)),
                show(given.get(name))
            )
        })
        .collect();
    (!differences.is_empty()).then(|| {
        format!(
            "the given scenario differs from the one the recorded run ran: {}; replaying the \
             recorded one",
            differences.join("; ")
        )
    })
}

fn from_path(args: &ReplayArgs) -> &Path {
    args.from.as_deref().expect("only called with --from")
}

/// The command that replays this run and checks its digest.
fn replay_command(args: &ReplayArgs, outcome: &Outcome) -> ReplayCommand {
    let mut command = args
        .variant
        .add_flags(
            ReplayCommand::new("replay").option("--scenario", &args.scenario),
            args.variant.stores().first().copied(),
        )
        .seed(args.seed);
    if let Some(path) = &args.plan {
        command = command.option("--plan", path.display());
    } else if let Some(path) = &args.from {
        return command.option("--from", path.display());
    }
    if let Some(digest) = outcome.history_digest {
        command = command.option("--digest", digest);
    }
    command
}

/// The run with `seed` of scenario `scenario` in `path`: an outcome (`run --json`) or sweep
/// results (`{"runs": [outcome, ...]}`), read run by run: only the run wanted is kept.
fn recorded_outcome(path: &Path, scenario: &str, seed: Seed) -> Result<Outcome, CliError> {
    let file = path.display();
    let mut reader = RunsReader::open(
        path,
        "expected an outcome as `coordsim run --json` prints it, or sweep results \
         ({\"runs\": [outcome, …]})",
    )?;
    // The run wanted, else the first run with the seed (of another scenario), and the
    // first seeds seen, for the error.
    let mut of_seed: Option<Outcome> = None;
    let mut seeds: Vec<Seed> = Vec::new();
    while let Some(run) = reader.next_run()? {
        if run.seed == seed && (of_seed.is_none() || run.scenario == scenario) {
            let wanted = run.scenario == scenario;
            of_seed = Some(run);
            if wanted {
                break;
            }
        } else if seeds.len() <= SEEDS_LISTED && seeds.last() != Some(&run.seed) {
            seeds.push(run.seed);
        }
    }
    let top = reader.finish()?;
    if !top.has_runs {
        let outcome = Outcome::deserialize(Value::Object(top.fields)).map_err(|error| {
            CliError::bad_input(format!("{file}: expected an outcome: {error}"))
        })?;
        seeds.push(outcome.seed);
        if outcome.seed == seed {
            of_seed = Some(outcome);
        }
    }
    match of_seed {
        Some(outcome) if outcome.scenario == scenario => Ok(outcome),
        Some(other) => Err(CliError::bad_input(format!(
            "{file}: the run with seed {seed} is of scenario `{}`, not `{scenario}` (expected --scenario {})",
            other.scenario, other.scenario
        ))),
        None => Err(CliError::bad_input(format!(
            "{file}: no run with seed {seed} (expected one of the file's seeds: {})",
            listed_seeds(&seeds)
        ))),
    }
}

/// How many of a file's seeds an error lists.
const SEEDS_LISTED: usize = 10;

/// `seeds` for an error: up to [`SEEDS_LISTED`], then `…` if there are more.
fn listed_seeds(seeds: &[Seed]) -> String {
    if seeds.is_empty() {
        return "none, it has no runs".to_string();
    }
    let mut text: Vec<String> = seeds
        .iter()
        .take(SEEDS_LISTED)
        .map(Seed::to_string)
        .collect();
    if seeds.len() > SEEDS_LISTED {
        text.push("…".into());
    }
    text.join(", ")
}

fn print_window(history: &History, focus: &Focus, around: usize) {
    let records = history.records();
    let window = focus.window(records.len(), around);
    println!(
        "events around {}: records {}..{} of {}",
        focus.what,
        window.start,
        window.end,
        records.len()
    );
    for index in window {
        if index == focus.record && focus.kind == FocusKind::Violation {
            println!(">> violation at {} {}", focus.at, "-".repeat(40));
        }
        println!("   {}", describe_record(&records[index]));
        if index == focus.record && focus.kind == FocusKind::EndOfHistory {
            println!(">> the end of the history {}", "-".repeat(40));
        }
    }
}
