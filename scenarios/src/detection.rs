//! The known-bug zoo's detection rule, in one place for `coordsim zoo` and for the
//! known-bug test (`scenarios/tests/known_bugs.rs`): a row of the known-bug table
//! ([`KnownBugCase`]) is caught when, running its scenario with its variant on over the
//! seeds in order, some seed's run is caught by the row's check
//! ([`KnownBugCase::caught_in`]); the search stops there. A seed that failed before it in
//! another way (another check, a stall, a crash, the time limit) does not stop the search:
//! the row is still caught, and says which seed failed first. A row whose runs fail only in
//! other ways is not caught.

use crate::{
    KnownBugCase, Scenario,
    sweep::{SeedFailure, run_seed},
};
use sim::{Seed, report::FailureReport};

/// What the search over a row's seeds found.
#[derive(Debug)]
pub enum Detection {
    /// The row's check caught a run.
    Caught {
        /// The detecting run (its outcome without the history).
        detecting: Box<SeedFailure>,
        /// Seeds run, up to and including the detecting one.
        seeds_run: u64,
        /// The first run that failed before it in another way, if any.
        earlier_failure: Option<Box<SeedFailure>>,
    },
    /// Runs failed, but never by the row's check.
    OnlyOtherFailures {
        /// The first of them.
        first: Box<SeedFailure>,
    },
    /// No run failed.
    Missed,
}

impl Detection {
    /// Whether the row's check caught a run.
    pub fn is_caught(&self) -> bool {
        matches!(self, Detection::Caught { .. })
    }
}

/// Runs `buggy` (the row's scenario with its variant on) with each of `seeds` in order,
/// as every sweep runs a seed ([`run_seed`]; `report` says how to replay a seed), until
/// the row's check catches a run. The failures kept hold no history.
pub fn detect(
    case: &KnownBugCase,
    buggy: &Scenario,
    seeds: impl IntoIterator<Item = Seed>,
    report: impl Fn(Seed) -> FailureReport,
) -> Detection {
    let mut earlier_failure: Option<Box<SeedFailure>> = None;
    for (index, seed) in seeds.into_iter().enumerate() {
        let Some(mut failure) = run_seed(buggy, seed, report(seed), &buggy.name, |_| {}).failure
        else {
            continue;
        };
        failure.outcome.history = None;
        if case.caught_in(&failure.outcome) {
            return Detection::Caught {
                detecting: Box::new(failure),
                seeds_run: index as u64 + 1,
                earlier_failure,
            };
        }
        if earlier_failure.is_none() {
            earlier_failure = Some(Box::new(failure));
        }
    }
    match earlier_failure {
        Some(first) => Detection::OnlyOtherFailures { first },
        None => Detection::Missed,
    }
}
