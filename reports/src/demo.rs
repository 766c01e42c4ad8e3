//! `coordsim demo`: the replicated-ledger workload in a world with faults.

use crate::CliError;
use clap::{Args, ValueEnum};
use sim::{
    Seed, World,
    demo::{DemoWorkload, ledger_scenario},
    fault::{ClientFaults, FaultPlan, SwarmConfig},
    history::{Event, OpResult},
};
use std::path::PathBuf;

#[derive(Args, Debug)]
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
    /// Appends per client.
    #[arg(long, default_value_t = 50)]
    appends: u32,
    /// Where faults come from.
    #[arg(long, value_enum, default_value_t = FaultChoice::Swarm)]
    faults: FaultChoice,
    /// A JSON fault plan to follow instead (see the README for the format).
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
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

pub fn run(args: DemoArgs) -> Result<(), CliError> {
    let mut builder = World::builder()
        .seed(args.seed)
        .servers(args.servers)
        .clients(args.clients);
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
        builder = builder.fault_plan(plan);
    } else if let FaultChoice::Swarm = args.faults {
        builder = builder.swarm_faults(SwarmConfig {
            fault_phase_ms: 10_000,
            mean_interval_ms: 500,
            client_faults: ClientFaults::Included,
            ..SwarmConfig::default()
        });
    }
    let world = builder
        .build()
        .map_err(|error| CliError::bad_input(error.to_string()))?
        .described_as(
            "demo",
            format!(
                "cargo run --release -p coordsim -- demo --seed {}",
                args.seed
            ),
        );
    let workload = DemoWorkload {
        appends_per_client: args.appends,
    };
    let outcome = world.run(move |sim| ledger_scenario(sim, workload));
    println!("{outcome}");
    let operations = outcome.history.operations();
    let count = |predicate: fn(&OpResult) -> bool| {
        operations
            .iter()
            .filter(|op| op.completion.is_some_and(|(_, result)| predicate(result)))
            .count()
    };
    println!(
        "operations:      {} invoked: {} ok, {} failed, {} unknown, {} never completed",
        operations.len(),
        count(|r| matches!(r, OpResult::Ok { .. })),
        count(|r| matches!(r, OpResult::Fail { .. })),
        count(|r| matches!(r, OpResult::Unknown { .. })),
        operations
            .iter()
            .filter(|op| op.completion.is_none())
            .count()
    );
    let boots = outcome
        .history
        .records()
        .iter()
        .filter(|r| matches!(&r.event, Event::Note { text } if text.contains(" boot ")))
        .count();
    println!("server boots:    {boots}");
    println!(
        "replay with:     cargo run --release -p coordsim -- demo --seed {}",
        args.seed
    );
    if let Some(path) = &args.history_out {
        std::fs::write(path, outcome.history.to_json_lines()).map_err(|error| {
            CliError::bad_input(format!("cannot write {}: {error}", path.display()))
        })?;
        println!("history written to {}", path.display());
    }
    Ok(())
}
