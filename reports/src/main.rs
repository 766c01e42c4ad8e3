//! `coordsim`: run the simulated world and its checks from the command line.
//!
//! Bad input (an unknown command, a seed that is not a number, a malformed plan file,
//! impossible sizes) is reported on one line naming what was expected, with exit code 2.

mod check_history;
mod cli;
mod compare_locks;
mod conformance;
mod demo;
mod evidence_table;
mod list;
mod replay;
mod run;
mod sweep;
mod zoo;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// mimalloc, not the system's malloc: a simulated run allocates and frees messages, effects
/// and history records by the hundred thousand (the `locks` bench uses the same allocator,
/// [`scenarios::allocator`]).
#[global_allocator]
static ALLOCATOR: scenarios::allocator::MiMalloc = scenarios::allocator::MiMalloc;

/// Deterministic simulation testbed for distributed coordination.
#[derive(Parser, Debug)]
#[command(name = "coordsim", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the demo workload (a replicated ledger) in a world with faults, and print the run:
    /// the catalogue's `ledger` scenario, its sizes and faults as flags (with none changed,
    /// `coordsim run --scenario ledger` with the same seed is the same run).
    Demo(demo::DemoArgs),
    /// Run one scenario (a catalogue name or a TOML/JSON file) with one seed, and judge it.
    Run(run::RunArgs),
    /// Run one scenario over many seeds on every core; `sweep merge` joins shards' results.
    Sweep(sweep::SweepArgs),
    /// List the catalogue's scenarios, the known-bug variants, the checks and the fault kinds.
    List(list::ListArgs),
    /// Check a recorded history for linearizability (exit 0: linearizable, 1: violation,
    /// 2: unknown or bad input).
    CheckHistory(check_history::CheckHistoryArgs),
    /// Re-run a scenario with a seed, check its history digest (exit 6 if it differs), show
    /// the events around the first violation; write its trace and an HTML timeline.
    Replay(replay::ReplayArgs),
    /// Compare herd-style and queue-style lock latency: the ZooKeeper herd and queue locks
    /// and etcd's mutex, over client counts and seeds (a table, JSON and an SVG plot).
    CompareLocks(compare_locks::CompareLocksArgs),
    /// Run the known-bug zoo: each variant of the known-bug table over its scenario's seeds
    /// until its check fires, the failing plan shrunk, and the correct model for false alarms.
    Zoo(zoo::ZooArgs),
    /// Run the conformance probes against the models: each step's answer against the one
    /// real ZooKeeper 3.8 or etcd 3.4 gave (exit 0: all agree or declare their deviation,
    /// 1: a step differs, 2: a malformed probe file).
    Conformance(conformance::ConformanceArgs),
}

/// Lets a closed pipe end the process as it ends other Unix tools (`coordsim sweep … | head`),
/// silently, instead of the panic of Rust's `println!` on `EPIPE`: Rust ignores `SIGPIPE`
/// by default, so every write to a closed stdout fails, and `println!` panics on failure.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any thread exists; resetting a signal's
    // disposition to its default has no other effect on the process's state.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The error to print instead of clap's when `--seed` was not given and its value came
/// from `COORDSIM_SEED`: clap names the flag, which the user never typed.
fn bad_seed_variable(clap_error: &str) -> Option<String> {
    let value = std::env::var(sim::env::SEED).ok()?;
    let typed_seed = std::env::args().any(|arg| arg == "--seed" || arg.starts_with("--seed="));
    if typed_seed || !clap_error.contains("--seed") {
        return None;
    }
    let error = value.parse::<sim::Seed>().err()?;
    Some(format!(
        "error: invalid value '{value}' in the environment variable {}: {error}",
        sim::env::SEED
    ))
}

fn main() -> ExitCode {
    restore_default_sigpipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            use clap::error::ErrorKind;
            if matches!(
                error.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) {
                let _ = error.print();
                return ExitCode::SUCCESS;
            }
            // `coordsim` (or `coordsim sweep`) with nothing after it: the usage, on stderr,
            // as bad input, so that a script that forgot its arguments does not pass.
            if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                eprint!("{}", error.render());
                return ExitCode::from(2);
            }
            let rendered = error.render().to_string();
            let mut lines = rendered
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty());
            let mut first_line = lines
                .next()
                .unwrap_or("error: invalid arguments")
                .to_string();
            // "the following required arguments were not provided:" names them below.
            if first_line.ends_with(':')
                && let Some(named) = lines.next()
            {
                first_line = format!("{first_line} {named}");
            }
            if let Some(bad_variable) = bad_seed_variable(&first_line) {
                first_line = bad_variable;
            }
            eprintln!("{first_line} (see `coordsim --help`)");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Run(args) => run::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::List(args) => list::run(args),
        Command::CheckHistory(args) => check_history::run(args),
        Command::Replay(args) => replay::run(args),
        Command::CompareLocks(args) => compare_locks::run(args),
        Command::Zoo(args) => zoo::run(args),
        Command::Conformance(args) => conformance::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", error.message());
            ExitCode::from(error.code())
        }
    }
}
