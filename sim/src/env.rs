//! Every environment variable coordsim reads, with its default.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `COORDSIM_SEED` | unset | run seed-sweeping tests (and `coordsim` commands that take `--seed`) with exactly this seed, decimal or `0x` hex |
//! | `COORDSIM_SEEDS` | per test, small (see each suite) | how many seeds a seed-sweeping test runs |
//! | `COORDSIM_SEED_BASE` | `0` | the first seed of a sweep; seed *i* is `BASE + i` |
//! | `COORDSIM_HISTORY_DIR` | unset | a directory where seed sweeps write the history of every failing run (`<test>-<seed>.jsonl`, for `coordsim check-history`) |
//! | `COORDSIM_JEPSEN_LOGS` | unset | a copy of Porcupine's `test_data/jepsen/`; the ignored test `verdicts_agree_with_porcupine_on_its_jepsen_etcd_logs` (checks, `--ignored`) checks every `etcd_NNN.log` in it against Porcupine's verdicts |
//!
//! madsim's own variables (`MADSIM_TEST_SEED` and friends) are not used: coordsim builds
//! its runtimes itself, from the run's [`Seed`].

use crate::seed::Seed;
use std::fmt;

/// Name of the variable that pins one seed.
pub const SEED: &str = "COORDSIM_SEED";
/// Name of the variable that sets how many seeds a sweep runs.
pub const SEEDS: &str = "COORDSIM_SEEDS";
/// Name of the variable that sets a sweep's first seed.
pub const SEED_BASE: &str = "COORDSIM_SEED_BASE";
/// Name of the variable naming where sweeps write failing runs' histories.
pub const HISTORY_DIR: &str = "COORDSIM_HISTORY_DIR";

/// Where sweeps write failing runs' histories, if anywhere.
pub fn history_dir() -> Option<std::path::PathBuf> {
    read(HISTORY_DIR).map(std::path::PathBuf::from)
}

/// An environment variable with a value of the wrong form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvError {
    /// The variable.
    pub variable: &'static str,
    /// What is wrong and what was expected.
    pub problem: String,
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "environment variable {}: {}",
            self.variable, self.problem
        )
    }
}

impl std::error::Error for EnvError {}

fn read(variable: &'static str) -> Option<String> {
    std::env::var(variable)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

fn parse_seed(variable: &'static str, text: &str) -> Result<Seed, EnvError> {
    text.parse()
        .map_err(|error: crate::SeedParseError| EnvError {
            variable,
            problem: error.to_string(),
        })
}

/// The seeds a sweeping test should run: just `COORDSIM_SEED` if it is set, otherwise
/// `COORDSIM_SEEDS` (default `default_count`) seeds from `COORDSIM_SEED_BASE` (default 0).
pub fn sweep_seeds(default_count: u64) -> Result<Vec<Seed>, EnvError> {
    if let Some(text) = read(SEED) {
        return Ok(vec![parse_seed(SEED, &text)?]);
    }
    let count = match read(SEEDS) {
        Some(text) => text.trim().parse::<u64>().map_err(|_| EnvError {
            variable: SEEDS,
            problem: format!("`{text}` is not a count (expected an unsigned integer, e.g. 500)"),
        })?,
        None => default_count,
    };
    let base = match read(SEED_BASE) {
        Some(text) => parse_seed(SEED_BASE, &text)?,
        None => Seed::new(0),
    };
    Ok((0..count).map(|index| base.offset(index)).collect())
}

/// [`sweep_seeds`] for tests: a malformed variable fails the test with a one-line message.
pub fn test_seeds(default_count: u64) -> Vec<Seed> {
    sweep_seeds(default_count).unwrap_or_else(|error| panic!("{error}"))
}
