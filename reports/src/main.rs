//! `coordsim`: run the simulated world and its checks from the command line.
//!
//! Bad input (an unknown command, a seed that is not a number, a malformed plan file,
//! impossible sizes) is reported on one line naming what was expected, with exit code 2.

mod check_history;
mod compare_locks;
mod demo;
mod run;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Deterministic simulation testbed for distributed coordination.
#[derive(Parser, Debug)]
#[command(name = "coordsim", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the demo workload (a replicated ledger) in a world with faults, and print the run.
    Demo(demo::DemoArgs),
    /// Run one scenario (a catalogue name or a TOML/JSON file) with one seed, and judge it.
    Run(run::RunArgs),
    /// Check a recorded history for linearizability (exit 0: linearizable, 1: violation,
    /// 2: unknown or bad input).
    CheckHistory(check_history::CheckHistoryArgs),
    /// Compare herd-style and queue-style lock latency: the ZooKeeper herd and queue locks
    /// and etcd's mutex, over client counts and seeds (a table, JSON and an SVG plot).
    CompareLocks(compare_locks::CompareLocksArgs),
}

/// A failure to report on one line; the process exits with `code`.
pub struct CliError {
    message: String,
    code: u8,
}

impl CliError {
    /// Bad input: exit code 2.
    pub fn bad_input(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: 2,
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            use clap::error::ErrorKind;
            if matches!(
                error.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = error.print();
                return ExitCode::SUCCESS;
            }
            let rendered = error.render().to_string();
            let first_line = rendered
                .lines()
                .next()
                .unwrap_or("error: invalid arguments");
            eprintln!("{first_line} (see `coordsim --help`)");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Run(args) => run::run(args),
        Command::CheckHistory(args) => check_history::run(args),
        Command::CompareLocks(args) => compare_locks::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", error.message);
            ExitCode::from(error.code)
        }
    }
}
