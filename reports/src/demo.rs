//! `coordsim demo`: the catalogue's `ledger` scenario (a replicated ledger under faults)
//! through the run driver: the options it ran with, the plan it followed, the faults that
//! fired, what the operations came to, and the history digest.

use crate::CliError;
use clap::{Args, ValueEnum};
use scenarios::{Failure, Scenario, catalogue, driver, workload::Workload};
use sim::{
    Seed,
    fault::{FaultPlan, FaultSource},
    history::Event,
};
use std::{path::PathBuf, process::ExitCode};

#[derive(Args, Debug)]
#[command(after_help = "\
Exit codes: 0 clean, 1 safety violation, 2 bad input, 3 liveness failure, 4 a model \
panicked, 5 the run reached its time limit.

Example: coordsim demo --seed 0x2a --plan-out plan.json && coordsim demo --seed 0x2a --plan plan.json")]
pub struct DemoArgs {
    /// The seed: decimal or 0x hex.
    #[arg(long, default_value = "42", env = sim::env::SEED)]
    seed: Seed,
    /// Number of servers.
    #[arg(long, default_value_t = 3)]
    servers: usize,
    /// Number of clients.
    #[arg(long, default_value_t = 3)]
    clients: usize,
    /// Appends per client during the fault phase.
    #[arg(long, default_value_t = 50)]
    appends: u32,
    /// Where faults come from.
    #[arg(long, value_enum, default_value_t = FaultChoice::Swarm)]
    faults: FaultChoice,
    /// A JSON fault plan to follow instead (see the README for the format).
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
    /// Write the plan the run followed here (JSON), to replay it with --plan.
    #[arg(long, value_name = "FILE")]
    plan_out: Option<PathBuf>,
    /// Write the history (JSON lines) here.
    #[arg(long, value_name = "FILE")]
    history_out: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum FaultChoice {
    /// No faults.
    None,
    /// A plan generated from the seed.
    Swarm,
}

pub fn run(args: DemoArgs) -> Result<ExitCode, CliError> {
    let mut scenario: Scenario = catalogue::get("ledger").expect("the catalogue has the demo");
    scenario.servers = args.servers;
    scenario.clients = args.clients;
    if let Workload::Ledger(appends) = &mut scenario.workload {
        appends.appends_per_client = args.appends;
    }
    if let Some(path) = &args.plan {
        let text = std::fs::read_to_string(path).map_err(|error| {
            CliError::bad_input(format!("cannot read {}: {error}", path.display()))
        })?;
        let plan: FaultPlan = serde_json::from_str(&text).map_err(|error| {
            CliError::bad_input(format!(
                "{}: line {}: expected a fault plan ({{\"faults\": [{{\"at_ms\": …, \"fault\": …}}]}}): {error}",
                path.display(),
                error.line()
            ))
        })?;
        scenario = scenario.with_plan(plan);
    } else if let FaultChoice::None = args.faults {
        scenario.faults = FaultSource::None;
    }
    scenario
        .validate()
        .map_err(|error| CliError::bad_input(format!("invalid demo: {error}")))?;
    println!("scenario:        {scenario}");
    let outcome = driver::run(&scenario, args.seed);
    println!("{outcome}");
    if let Some(history) = &outcome.history {
        let boots = history
            .records()
            .iter()
            .filter(|r| matches!(&r.event, Event::Note { text } if text.contains(" boot ")))
            .count();
        println!("server boots:    {boots}");
    }
    println!(
        "replay with:     cargo run --release -p coordsim -- demo --seed {}",
        args.seed
    );
    if let Some(path) = &args.plan_out {
        let json = serde_json::to_string_pretty(&outcome.fault_plan).expect("a plan serializes");
        std::fs::write(path, json).map_err(|error| {
            CliError::bad_input(format!("cannot write {}: {error}", path.display()))
        })?;
        println!("plan written to {}", path.display());
    }
    if let (Some(path), Some(history)) = (&args.history_out, &outcome.history) {
        std::fs::write(path, history.to_json_lines()).map_err(|error| {
            CliError::bad_input(format!("cannot write {}: {error}", path.display()))
        })?;
        println!("history written to {}", path.display());
    }
    Ok(ExitCode::from(match outcome.failure {
        None => 0,
        Some(Failure::Safety) => 1,
        Some(Failure::Liveness { .. }) => 3,
        Some(Failure::Crash { .. }) => 4,
        Some(Failure::TimeLimit { .. }) => 5,
    }))
}
