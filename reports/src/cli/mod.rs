//! The layer under the commands: the one error type, the arguments that vary a scenario
//! (store, known-bug variants), the loaders of scenarios, plans and histories, and how a
//! run's outcome is printed and turned into an exit code. Commands import from here, never
//! from `main.rs` or from one another.

mod load;
mod print;
mod variant;

pub use load::{load_scenario, open_file, read_file, read_plan};
pub use print::{Outputs, execute, outcome_json, report, violations_left_out};
pub use variant::{StoreChoice, VariantArgs};

use scenarios::{Failure, Outcome};
use std::{path::Path, process::ExitCode};

/// A failure to report on one line; the process exits with `code`.
#[derive(Debug)]
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

    /// The line to print (after `error: `).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The process's exit code.
    pub fn code(&self) -> u8 {
        self.code
    }
}

/// Writes `text` to `path`; a failure is bad input (exit 2) naming the path.
pub fn write(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text)
        .map_err(|error| CliError::bad_input(format!("cannot write {}: {error}", path.display())))
}

/// How a run ended, as the process's exit code: 0 clean, 1 safety, 3 liveness, 4 crash,
/// 5 time limit (2 is bad input).
pub fn exit_code(outcome: &Outcome) -> ExitCode {
    ExitCode::from(failure_code(outcome.failure.as_ref()))
}

/// The exit code of a run that ended in `failure` (`None`: clean).
pub fn failure_code(failure: Option<&Failure>) -> u8 {
    match failure {
        None => 0,
        Some(Failure::Safety) => 1,
        Some(Failure::Liveness { .. }) => 3,
        Some(Failure::Crash { .. }) => 4,
        Some(Failure::TimeLimit { .. }) => 5,
    }
}
