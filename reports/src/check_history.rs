//! `coordsim check-history FILE`: the linearizability checker on a recorded history.
//!
//! Exit codes: 0 linearizable, 1 not linearizable, 2 unknown (a budget ran out) or bad
//! input (a one-line error naming the line and what was expected).

use crate::CliError;
use checks::linearizability::{
    CheckOptions, Model, OperationHistory, Report, Verdict, check, html, jepsen, kv, register, zk,
};
use clap::{Args, ValueEnum};
use sim::history::{History, Operation};
use std::{path::PathBuf, process::ExitCode, time::Duration};

#[derive(Args, Debug)]
#[command(after_help = "\
Exit codes: 0 linearizable, 1 a violation (with the evidence), 2 unknown (the search budget \
or time limit ran out) or bad input.

Examples:
  coordsim run --scenario raft_swarm_3 --seed 4 --history-out h.jsonl
  coordsim check-history h.jsonl
  coordsim check-history etcd_002.log --html evidence.html   # a Jepsen etcd log")]
pub struct CheckHistoryArgs {
    /// The history: coordsim JSON lines (`demo --history-out`, suites) or a Jepsen etcd log.
    file: PathBuf,
    /// The sequential specification; by default, the one the history's operations use.
    #[arg(long, value_enum)]
    model: Option<ModelChoice>,
    /// The file's format.
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    format: Format,
    /// Write the evidence of a violation (and the verdict) as an HTML page here.
    #[arg(long, value_name = "OUT")]
    html: Option<PathBuf>,
    /// Threads checking partitions in parallel.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Search steps allowed per partition before the verdict is unknown.
    #[arg(long, default_value_t = CheckOptions::default().max_steps_per_partition)]
    max_steps: u64,
    /// Wall-clock limit for the whole check, in milliseconds (none by default).
    #[arg(long, value_name = "MS")]
    time_limit_ms: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ModelChoice {
    /// etcd's key-value API (get, put, delete, transactions; revisions).
    Kv,
    /// A register per key (read, write, compare-and-set).
    Register,
    /// ZooKeeper's znode operations (writes, and reads after a sync).
    Zk,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Jepsen if the first line is a `jepsen.util` log line, else coordsim.
    Auto,
    /// coordsim history: JSON lines, or a JSON array, of records.
    Coordsim,
    /// A Jepsen etcd test log, as in Porcupine's test data.
    JepsenEtcd,
}

pub fn run(args: CheckHistoryArgs) -> Result<ExitCode, CliError> {
    let text = std::fs::read_to_string(&args.file).map_err(|error| {
        CliError::bad_input(format!("cannot read {}: {error}", args.file.display()))
    })?;
    if args.jobs == 0 {
        return Err(CliError::bad_input("--jobs: expected at least 1"));
    }
    let mut options = CheckOptions::default()
        .with_jobs(args.jobs)
        .with_max_steps_per_partition(args.max_steps);
    if let Some(limit) = args.time_limit_ms {
        options = options.with_time_limit(Duration::from_millis(limit));
    }
    let format = match args.format {
        Format::Auto if jepsen::looks_like_jepsen_log(&text) => Format::JepsenEtcd,
        Format::Auto => Format::Coordsim,
        other => other,
    };
    let file = args.file.display().to_string();
    let report = match format {
        Format::JepsenEtcd => {
            if args
                .model
                .is_some_and(|model| model != ModelChoice::Register)
            {
                return Err(CliError::bad_input(
                    "--model: a Jepsen etcd log holds register operations (expected --model register)",
                ));
            }
            let (model, history) = jepsen::read_etcd_log(&text)
                .map_err(|error| CliError::bad_input(format!("{file}: {error}")))?;
            finish(&model, &history, &options, &args, "register")?
        }
        _ => {
            let history = History::from_json(&text)
                .map_err(|error| CliError::bad_input(format!("{file}: {error}")))?;
            let choice = match args.model {
                Some(choice) => choice,
                None => detect(&history).ok_or_else(|| {
                    CliError::bad_input(format!(
                        "{file}: no key-value, register or znode operations to check (expected a \
                         history with `\"model\": \"kv\"`, `\"register\"` or `\"zk\"` operations, or --model)"
                    ))
                })?,
            };
            match choice {
                ModelChoice::Kv => {
                    let (model, history) = kv::from_history(&history);
                    finish(&model, &history, &options, &args, "kv")?
                }
                ModelChoice::Register => {
                    let (model, history) = register::from_history(&history);
                    finish(&model, &history, &options, &args, "register")?
                }
                ModelChoice::Zk => {
                    let (model, history) = zk::from_history(&history);
                    finish(&model, &history, &options, &args, "zk")?
                }
            }
        }
    };
    Ok(match report.verdict {
        Verdict::Ok => ExitCode::SUCCESS,
        Verdict::Violation(_) => ExitCode::from(1),
        Verdict::Unknown(_) => ExitCode::from(2),
    })
}

/// The model the history's operations use (the most frequent one).
fn detect(history: &History) -> Option<ModelChoice> {
    let mut counts = [
        (0usize, ModelChoice::Kv),
        (0, ModelChoice::Register),
        (0, ModelChoice::Zk),
    ];
    for record in history.operations() {
        match record.operation {
            Operation::Kv(_) => counts[0].0 += 1,
            Operation::Register(_) => counts[1].0 += 1,
            Operation::Zk(_) => counts[2].0 += 1,
            Operation::Other { .. } => {}
        }
    }
    // The most frequent; ties go to the first (`max_by_key` keeps the last of equals).
    counts
        .into_iter()
        .rev()
        .filter(|(count, _)| *count > 0)
        .max_by_key(|(count, _)| *count)
        .map(|(_, choice)| choice)
}

fn finish<M: Model>(
    model: &M,
    history: &OperationHistory<M::Input, M::Output>,
    options: &CheckOptions,
    args: &CheckHistoryArgs,
    model_name: &str,
) -> Result<Report, CliError> {
    let report = check(model, history, options);
    println!("model: {model_name}; file: {}", args.file.display());
    print!("{report}");
    if let Some(path) = &args.html {
        let title = format!(
            "coordsim check-history {} ({model_name})",
            args.file.display()
        );
        std::fs::write(path, html::render(&title, &report)).map_err(|error| {
            CliError::bad_input(format!("cannot write {}: {error}", path.display()))
        })?;
        println!("HTML: {}", path.display());
    }
    Ok(report)
}
