//! How a run is printed: the outcome as text (violations grouped per check, the first few
//! in full) or as JSON (with an explicit `verdict`), the command that replays it, and the
//! files asked for.

use super::{CliError, exit_code, write};
use scenarios::{Outcome, ReplayCommand, Scenario, driver};
use sim::Seed;
use std::{path::Path, process::ExitCode};

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
    replay: &ReplayCommand,
    outputs: &Outputs<'_>,
) -> Result<ExitCode, CliError> {
    let outcome = driver::run_replayed_by(scenario, seed, &replay.to_string());
    report(scenario, &outcome, replay, outputs)?;
    Ok(exit_code(&outcome))
}

/// Prints `outcome` (text, or JSON if asked) with the command that replays it, and writes
/// the outputs asked for.
pub fn report(
    scenario: &Scenario,
    outcome: &Outcome,
    replay: &ReplayCommand,
    outputs: &Outputs<'_>,
) -> Result<(), CliError> {
    if outputs.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&outcome_json(outcome)).expect("JSON prints")
        );
    } else {
        println!("scenario:        {scenario}");
        println!("{outcome}");
        if let Some(left_out) = violations_left_out(outcome) {
            println!("{left_out}");
        }
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
    Ok(())
}

/// Where the violations the text leaves out are, if it leaves some out.
pub fn violations_left_out(outcome: &Outcome) -> Option<String> {
    let shown = outcome.violations_shown();
    (shown < outcome.violations.len()).then(|| {
        format!(
            "violations:      {shown} of {} shown; all of them in --json, the history in \
             --history-out",
            outcome.violations.len()
        )
    })
}

/// `outcome` as JSON, as `run --json` prints it: the outcome's fields and its `verdict`
/// (`clean`, or `failed: ` and the failure's kind: `safety`, `liveness`, `crash`,
/// `time_limit`), the word the text output's verdict line starts with.
pub fn outcome_json(outcome: &Outcome) -> serde_json::Value {
    let mut json = serde_json::to_value(outcome).expect("an outcome serializes");
    let verdict = match &outcome.failure {
        None => "clean".to_string(),
        Some(failure) => format!("failed: {}", failure.kind()),
    };
    if let serde_json::Value::Object(fields) = &mut json {
        fields.insert("verdict".into(), verdict.into());
    }
    json
}
