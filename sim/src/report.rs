//! Failure reports: the seed, the scenario, and the exact command that replays the run.

use crate::seed::Seed;
use std::fmt;

/// What to print when a run fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureReport {
    /// The seed.
    pub seed: Seed,
    /// The scenario's name.
    pub scenario: String,
    /// The command line that replays this run.
    pub command: Option<String>,
}

impl FailureReport {
    /// A report for `scenario` under `seed`.
    pub fn new(seed: Seed, scenario: impl Into<String>) -> Self {
        Self {
            seed,
            scenario: scenario.into(),
            command: None,
        }
    }

    /// With the command that replays the run.
    pub fn with_command(mut self, command: impl Into<String>) -> Self {
        self.command = Some(command.into());
        self
    }

    /// A report whose replay command re-runs one cargo test with this seed.
    pub fn for_test(seed: Seed, package: &str, test_target: &str, test_name: &str) -> Self {
        Self::new(seed, test_name).with_command(format!(
            "COORDSIM_SEED={seed} cargo test -p {package} --test {test_target} -- --exact {test_name}"
        ))
    }
}

impl fmt::Display for FailureReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "FAILED: scenario `{}` with seed {} ({})",
            self.scenario,
            self.seed,
            self.seed.value()
        )?;
        match &self.command {
            Some(command) => write!(f, "REPRODUCE WITH: {command}"),
            None => write!(
                f,
                "REPRODUCE WITH: the same scenario and seed {}",
                self.seed
            ),
        }
    }
}
