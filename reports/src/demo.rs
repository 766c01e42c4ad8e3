//! `coordsim demo`: the catalogue's `ledger` scenario (a replicated ledger under faults)
//! through the run driver: the options it ran with, the plan it followed, the faults that
//! fired, what the operations came to, and the history digest.

use crate::cli::CliError;
use clap::{Args, ValueEnum};
use scenarios::{ReplayCommand, Scenario, catalogue, workload::Workload};
use sim::{Seed, fault::FaultSource};
use std::{path::PathBuf, process::ExitCode};

const DEFAULT_SERVERS: usize = 3;
const DEFAULT_CLIENTS: usize = 3;
const DEFAULT_APPENDS: u32 = 50;

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
    #[arg(long, default_value_t = DEFAULT_SERVERS)]
    servers: usize,
    /// Number of clients (at least 1).
    #[arg(long, default_value_t = DEFAULT_CLIENTS)]
    clients: usize,
    /// Appends per client during the fault phase.
    #[arg(long, default_value_t = DEFAULT_APPENDS)]
    appends: u32,
    /// Where faults come from.
    #[arg(long, value_enum, default_value_t = FaultChoice::Swarm)]
    faults: FaultChoice,
    /// A JSON fault plan to follow instead (see scenarios/README.md for the format).
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
    // The ledger store takes no clients in other scenarios, but the demo with none would
    // make no progress and fail its liveness bound: say so before running.
    if args.clients == 0 {
        return Err(CliError::bad_input(
            "--clients: 0 (expected at least 1: the demo's clients make its appends)",
        ));
    }
    let mut scenario: Scenario = catalogue::get("ledger").expect("the catalogue has the demo");
    scenario.servers = args.servers;
    scenario.clients = args.clients;
    if let Workload::Ledger(appends) = &mut scenario.workload {
        appends.appends_per_client = args.appends;
    }
    if let Some(path) = &args.plan {
        scenario = scenario.with_plan(crate::cli::read_plan(path)?);
    } else if let FaultChoice::None = args.faults {
        scenario.faults = FaultSource::None;
    }
    scenario
        .validate()
        .map_err(|error| CliError::bad_input(format!("invalid demo: {error}")))?;
    crate::cli::execute(
        &scenario,
        args.seed,
        &replay_command(&args),
        &crate::cli::Outputs {
            plan: args.plan_out.as_deref(),
            history: args.history_out.as_deref(),
            json: false,
        },
    )
}

/// The `demo` command that replays this run: the seed, and every option not at its
/// default.
fn replay_command(args: &DemoArgs) -> ReplayCommand {
    let mut command = ReplayCommand::new("demo");
    if args.servers != DEFAULT_SERVERS {
        command = command.option("--servers", args.servers);
    }
    if args.clients != DEFAULT_CLIENTS {
        command = command.option("--clients", args.clients);
    }
    if args.appends != DEFAULT_APPENDS {
        command = command.option("--appends", args.appends);
    }
    if let Some(path) = &args.plan {
        command = command.option("--plan", path.display());
    } else if let FaultChoice::None = args.faults {
        command = command.option("--faults", "none");
    }
    command.seed(args.seed)
}
