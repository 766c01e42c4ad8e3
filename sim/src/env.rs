//! Every environment variable coordsim reads, with its default.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `COORDSIM_SEED` | unset | run seed-sweeping tests, and `coordsim` commands that take `--seed`, with exactly this seed (decimal or `0x` hex) |
//! | `COORDSIM_SEEDS` | per suite (small, so `cargo test` stays well under 10 minutes on 2 cores) | how many seeds each seed-sweeping test runs, e.g. `COORDSIM_SEEDS=2000 cargo test --release --workspace`; `coordsim sweep --seeds` when the flag is not given |
//! | `COORDSIM_SEED_BASE` | `0` | first seed of a sweep (seed *i* is base + *i*), to split a big sweep across machines; `coordsim sweep --from` when the flag is not given |
//! | `COORDSIM_HISTORY_DIR` | unset | a directory where seed sweeps (the tests' and `coordsim sweep`) write the history of every failing run (`<test or scenario>-<seed>.jsonl`), to inspect with `coordsim check-history` |
//! | `COORDSIM_TIMELINE_DIR` | unset | a directory where a user-code test (`coordsim::testing`) writes the HTML timeline of every failing seed (`<test>-<seed>.html`) |
//! | `COORDSIM_TRACE_DIR` | unset | a directory where a user-code test writes the JSON trace (outcome and every history record) of every failing seed (`<test>-<seed>.json`) |
//! | `COORDSIM_SHRINK_DIR` | unset | a directory where a user-code test writes the shrunk fault plan of every failing seed (`<test>-<seed>-shrunk-plan.json`), after up to 100 re-runs of it |
//! | `COORDSIM_JEPSEN_LOGS` | unset | a copy of Porcupine's `test_data/jepsen/`, for the ignored test that compares our verdicts with Porcupine's (see *Linearizability* in `scenarios/checks/README.md`) |
//! | `JOB_COMPLETION_INDEX` | unset | set by a Kubernetes Indexed Job in each of its pods: `coordsim sweep --shard env/M` runs shard number `$JOB_COMPLETION_INDEX` of M |
//! | `MADSIM_TEST_SEED`, `MADSIM_TEST_NUM` | unset | not read by coordsim: madsim reads them (a seed, and how many seeds from it) only in functions marked `#[madsim::test]` or `#[madsim::main]`, and coordsim has none; every run builds its madsim runtime from the run's own seed, so use `COORDSIM_SEED` / `COORDSIM_SEEDS` |
//!
//! The command reference shows this same table (`reports/README.md`, *Environment variables*);
//! change both (a test below keeps them equal).

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
/// Name of the variable naming where a user-code test writes failing seeds' timelines.
pub const TIMELINE_DIR: &str = "COORDSIM_TIMELINE_DIR";
/// Name of the variable naming where a user-code test writes failing seeds' traces.
pub const TRACE_DIR: &str = "COORDSIM_TRACE_DIR";
/// Name of the variable naming where a user-code test writes failing seeds' shrunk plans.
pub const SHRINK_DIR: &str = "COORDSIM_SHRINK_DIR";
/// Name of the variable a Kubernetes Indexed Job sets to each pod's index, read by
/// `coordsim sweep --shard env/M`.
pub const JOB_COMPLETION_INDEX: &str = "JOB_COMPLETION_INDEX";

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

pub(crate) fn read(variable: &'static str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    /// The rows of the first Markdown table in `text` (lines starting with `|`, with an
    /// optional `//! ` before them).
    fn table_rows(text: &str) -> Vec<&str> {
        text.lines()
            .map(|line| line.trim_start_matches("//!").trim())
            .skip_while(|line| !line.starts_with("| variable |"))
            .take_while(|line| line.starts_with('|'))
            .collect()
    }

    #[test]
    fn the_readme_shows_this_modules_table_of_variables() {
        let here = table_rows(include_str!("env.rs"));
        let readme = table_rows(include_str!("../../reports/README.md"));
        assert!(here.len() > 5, "{here:?}");
        for variable in [
            super::SEED,
            super::SEEDS,
            super::SEED_BASE,
            super::HISTORY_DIR,
        ] {
            assert!(
                here.iter()
                    .any(|row| row.contains(&format!("`{variable}`"))),
                "{variable} is not in the table"
            );
        }
        assert!(
            here.iter()
                .any(|row| row.contains(super::JOB_COMPLETION_INDEX))
        );
        assert_eq!(
            here, readme,
            "reports/README.md's table of variables differs from sim/src/env.rs's"
        );
    }
}
