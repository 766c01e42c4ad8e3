//! `coordsim check-history FILE`: the linearizability checker on a recorded history.
//!
//! Exit codes: 0 linearizable, 1 not linearizable, 2 unknown (a budget ran out) or bad
//! input (a one-line error naming the line and what was expected). A check that judged no
//! operation is bad input too, never "linearizable": `--model kv` on a ZooKeeper history
//! finds no key-value operation to judge, and says so, naming the model the history has.

use crate::cli::CliError;
use checks::linearizability::{
    CheckOptions, Model, OperationHistory, Report, Verdict, check, html, jepsen, kv, register, zk,
};
use clap::{Args, ValueEnum};
use sim::history::{History, Operation};
use std::{collections::BTreeSet, path::PathBuf, process::ExitCode, time::Duration};

#[derive(Args, Debug)]
#[command(after_help = "\
Exit codes: 0 linearizable, 1 a violation (with the evidence), 2 unknown (the search budget \
or time limit ran out) or bad input, a history with no operation of the model to judge \
included. Every verdict says how many operations it judged.

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
    let text = crate::cli::read_file(&args.file)?;
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
    let judged = match format {
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
            let judged = judge(&model, &history, &options);
            if judged.operations == 0 {
                return Err(CliError::bad_input(format!(
                    "{file}: vacuous: judged 0 operations: the Jepsen log has no completed \
                     register operation (expected `:invoke` and `:ok` lines of reads and writes)"
                )));
            }
            finish(&judged, &args, "register")?;
            judged
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
            let judged = match choice {
                ModelChoice::Kv => {
                    let (model, operations) = kv::from_history(&history);
                    judge(&model, &operations, &options)
                }
                ModelChoice::Register => {
                    let (model, operations) = register::from_history(&history);
                    judge(&model, &operations, &options)
                }
                ModelChoice::Zk => {
                    let (model, operations) = zk::from_history(&history);
                    judge(&model, &operations, &options)
                }
            };
            if judged.operations == 0 {
                return Err(CliError::bad_input(format!(
                    "{file}: vacuous: {}",
                    nothing_judged(&history, choice, &judged.report)
                )));
            }
            finish(&judged, &args, choice.name())?;
            judged
        }
    };
    Ok(match judged.report.verdict {
        Verdict::Ok => ExitCode::SUCCESS,
        Verdict::Violation(_) => ExitCode::from(1),
        Verdict::Unknown(_) => ExitCode::from(2),
    })
}

impl ModelChoice {
    /// Its name, as `--model` takes it.
    fn name(self) -> &'static str {
        match self {
            ModelChoice::Kv => "kv",
            ModelChoice::Register => "register",
            ModelChoice::Zk => "zk",
        }
    }
}

/// How many of the history's operations each model reads, in `ModelChoice` order.
fn count_by_model(history: &History) -> [(usize, ModelChoice); 3] {
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
    counts
}

/// The model the history's operations use (the most frequent one).
fn detect(history: &History) -> Option<ModelChoice> {
    // The most frequent; ties go to the first (`max_by_key` keeps the last of equals).
    count_by_model(history)
        .into_iter()
        .rev()
        .filter(|(count, _)| *count > 0)
        .max_by_key(|(count, _)| *count)
        .map(|(_, choice)| choice)
}

/// Why a check of `history` with `choice` judged no operation, naming what the history has
/// and the `--model` that reads it.
fn nothing_judged(history: &History, choice: ModelChoice, report: &Report) -> String {
    let counts = count_by_model(history);
    let of_choice = counts
        .iter()
        .find(|(_, model)| *model == choice)
        .map_or(0, |(count, _)| *count);
    let model = choice.name();
    if of_choice > 0 {
        let reasons: Vec<String> = report
            .skipped
            .iter()
            .map(|(reason, count)| format!("{count} {reason}"))
            .collect();
        return format!(
            "judged 0 operations: all {of_choice} {model} operations of the history were left \
             out ({}); expected operations that completed, or whose outcome is unknown",
            reasons.join(", ")
        );
    }
    let others: Vec<String> = counts
        .iter()
        .filter(|(count, _)| *count > 0)
        .map(|(count, other)| format!("{count} {} operations", other.name()))
        .collect();
    match detect(history) {
        Some(other) => format!(
            "judged 0 operations: the history has no operations of the {model} model (it has \
             {}); expected --model {}",
            others.join(", "),
            other.name()
        ),
        None => format!(
            "judged 0 operations: the history has no operations of the {model} model, nor of \
             any other (expected a history with `\"model\": \"{model}\"` operations)"
        ),
    }
}

/// A check's report and how many operations it judged.
struct Judged {
    report: Report,
    /// The history's operations searched: those the model reads, less those left out
    /// (skipped) and the reads whose outcome is unknown (they constrain nothing).
    operations: usize,
}

fn judge<M: Model>(
    model: &M,
    history: &OperationHistory<M::Input, M::Output>,
    options: &CheckOptions,
) -> Judged {
    let report = check(model, history, options);
    // Counted by the history's operation ids: the model may split one operation into parts
    // (one per key or path it touches). A read whose outcome is unknown is left out of the
    // search (as `check` does).
    let judged: BTreeSet<u64> = history
        .operations
        .iter()
        .filter(|operation| operation.output().is_some() || !model.is_read_only(&operation.input))
        .map(|operation| operation.id)
        .collect();
    Judged {
        operations: judged.len(),
        report,
    }
}

/// Prints the verdict, the evidence and how much was judged; writes the HTML page if asked.
fn finish(judged: &Judged, args: &CheckHistoryArgs, model_name: &str) -> Result<(), CliError> {
    let report = &judged.report;
    println!("model: {model_name}; file: {}", args.file.display());
    print!("{report}");
    let left_out: usize = report.skipped.values().sum();
    println!(
        "judged: {} {model_name} operations ({left_out} left out)",
        judged.operations
    );
    if let Some(path) = &args.html {
        let title = format!(
            "coordsim check-history {} ({model_name})",
            args.file.display()
        );
        crate::cli::write(path, &html::render(&title, report))?;
        println!("HTML: {}", path.display());
    }
    Ok(())
}
