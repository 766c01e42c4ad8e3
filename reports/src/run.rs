//! `coordsim run`: one run of a scenario (a catalogue name or a TOML/JSON file) with a seed,
//! through the run driver: every option, the plan it followed, the faults that fired, the
//! checks' verdicts, the metrics and the history digest.

use crate::CliError;
use clap::Args;
use scenarios::{Failure, Outcome, Scenario, catalogue, driver};
use sim::{Seed, fault::FaultPlan};
use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

#[derive(Args, Debug)]
#[command(after_help = "\
Exit codes: 0 clean, 1 safety violation, 2 bad input, 3 liveness failure, 4 a model \
panicked, 5 the run reached its time limit.

Examples:
  coordsim run --scenario raft_leader_killer --seed 7 --plan-out plan.json
  coordsim run --scenario raft_leader_killer --seed 7 --plan plan.json   # same history digest
  coordsim run --scenario my-scenario.toml --seed 0x2a --json")]
pub struct RunArgs {
    /// A catalogue scenario's name, or a scenario file (.toml or .json).
    #[arg(long, value_name = "NAME|FILE")]
    scenario: String,
    /// The seed: decimal or 0x hex.
    #[arg(long, default_value = "0", env = sim::env::SEED)]
    seed: Seed,
    /// Follow this JSON fault plan instead of the scenario's fault source.
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
    /// Write the plan the run followed here (JSON), to replay it with --plan.
    #[arg(long, value_name = "FILE")]
    plan_out: Option<PathBuf>,
    /// Write the history (JSON lines) here.
    #[arg(long, value_name = "FILE")]
    history_out: Option<PathBuf>,
    /// Print the outcome as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    let mut scenario = load_scenario(&args.scenario)?;
    if let Some(path) = &args.plan {
        scenario = scenario.with_plan(read_plan(path)?);
        scenario
            .validate()
            .map_err(|error| CliError::bad_input(format!("{}: {error}", path.display())))?;
    }
    let replay = format!(
        "cargo run --release -p coordsim -- run --scenario {} --seed {}",
        args.scenario, args.seed
    );
    execute(
        &scenario,
        args.seed,
        &replay,
        &Outputs {
            plan: args.plan_out.as_deref(),
            history: args.history_out.as_deref(),
            json: args.json,
        },
    )
}

/// A catalogue scenario by name, or a scenario file.
pub fn load_scenario(name_or_file: &str) -> Result<Scenario, CliError> {
    if let Some(scenario) = catalogue::get(name_or_file) {
        return Ok(scenario);
    }
    let path = Path::new(name_or_file);
    if !path.exists() {
        let names: Vec<String> = catalogue::all().into_iter().map(|s| s.name).collect();
        return Err(CliError::bad_input(format!(
            "no scenario `{name_or_file}` (expected a scenario file or one of: {})",
            names.join(", ")
        )));
    }
    Scenario::load(path).map_err(|error| CliError::bad_input(error.to_string()))
}

/// A JSON fault plan from `path`.
pub fn read_plan(path: &Path) -> Result<FaultPlan, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| CliError::bad_input(format!("cannot read {}: {error}", path.display())))?;
    serde_json::from_str(&text).map_err(|error| {
        CliError::bad_input(format!(
            "{}:{}: expected a fault plan ({{\"faults\": [{{\"at_ms\": …, \"fault\": …}}]}}): {error}",
            path.display(),
            error.line()
        ))
    })
}

/// Where a run's outputs go.
pub struct Outputs<'a> {
    /// The plan followed, as JSON.
    pub plan: Option<&'a Path>,
    /// The history, as JSON lines.
    pub history: Option<&'a Path>,
    /// The outcome as JSON on stdout instead of text.
    pub json: bool,
}

/// Runs `scenario` with `seed`, prints the outcome, writes the outputs; the exit code says
/// how the run ended.
pub fn execute(
    scenario: &Scenario,
    seed: Seed,
    replay: &str,
    outputs: &Outputs<'_>,
) -> Result<ExitCode, CliError> {
    let outcome = driver::run(scenario, seed);
    if outputs.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&outcome).expect("an outcome serializes")
        );
    } else {
        println!("scenario:        {scenario}");
        println!("{outcome}");
        println!("replay with:     {replay}");
    }
    if let Some(path) = outputs.plan {
        let json = serde_json::to_string_pretty(&outcome.fault_plan).expect("a plan serializes");
        write(path, &json)?;
        eprintln!("plan written to {}", path.display());
    }
    if let (Some(path), Some(history)) = (outputs.history, &outcome.history) {
        write(path, &history.to_json_lines())?;
        eprintln!("history written to {}", path.display());
    }
    Ok(exit_code(&outcome))
}

/// Writes `text` to `path`; a failure is bad input (exit 2), naming the path.
pub(crate) fn write(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text)
        .map_err(|error| CliError::bad_input(format!("cannot write {}: {error}", path.display())))
}

/// The exit code of a run that ended as `outcome` did.
pub(crate) fn exit_code(outcome: &Outcome) -> ExitCode {
    ExitCode::from(match outcome.failure {
        None => 0,
        Some(Failure::Safety) => 1,
        Some(Failure::Liveness { .. }) => 3,
        Some(Failure::Crash { .. }) => 4,
        Some(Failure::TimeLimit { .. }) => 5,
    })
}
