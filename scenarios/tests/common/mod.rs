#![allow(dead_code)] // each test file uses some of these
//! What the scenario suites share: the one sweep a suite runs ([`sweep_outcomes`] and, built
//! on it, [`sweep`], [`sweep_clean`] and [`sweep_counting`]), and detection and exercise
//! rates asserted as far as the seeds a test runs can show them, so that a test holds for
//! whatever seeds it runs (`COORDSIM_SEEDS`, `COORDSIM_SEED_BASE`, `COORDSIM_SEED`).
//!
//! A rate is measured once over many seeds (the test's doc says where and how many), and a
//! bound below it is asserted through [`fewest`]: the fewest runs of a sweep in which the
//! thing must happen but for a one-in-a-million chance. A long sweep then asserts nearly
//! the measured rate; one pinned seed promises nothing.

use scenarios::{
    Outcome, Scenario, catalogue,
    sweep::{Sweep, SweepSummary},
};
use sim::history::History;
use std::{fmt, time::Instant};

/// This test target's name, for the command that replays a failing seed: `mod common` is
/// compiled into each suite, so it is always the suite's own (no constant to copy wrong).
pub const TARGET: &str = env!("CARGO_CRATE_NAME");

/// The catalogue scenario `name` (a test naming one that does not exist panics, naming it).
pub fn catalogued(name: &str) -> Scenario {
    catalogue::get(name).unwrap_or_else(|| panic!("no catalogue scenario `{name}`"))
}

/// The suites' one sweep: `scenario` over `seeds` seeds for the test `test` of this
/// target, each run's outcome shown to `inspect`. It asserts nothing itself (each test
/// says what it expects); [`Sweep`] reports every failing seed, and every panic of
/// `inspect`, with the seed and the command that replays it.
pub fn sweep_outcomes(
    scenario: Scenario,
    test: &str,
    seeds: u64,
    inspect: impl FnMut(&Outcome),
) -> SweepSummary {
    let started = Instant::now();
    let summary = Sweep::new(scenario, "scenarios", TARGET, test, seeds).run_inspecting(inspect);
    println!(
        "{test}: {} seeds of `{}` in {:.1} s",
        summary.seeds.len(),
        summary.scenario,
        started.elapsed().as_secs_f64()
    );
    summary
}

/// [`sweep_outcomes`], showing `inspect` each run's history.
pub fn sweep(
    scenario: Scenario,
    test: &str,
    seeds: u64,
    mut inspect: impl FnMut(&History),
) -> SweepSummary {
    sweep_outcomes(scenario, test, seeds, |outcome| inspect(history(outcome)))
}

/// [`sweep`], asserting every run clean and every fault kind the scenario turns on fired
/// (what most suites require before they read what the runs did).
pub fn sweep_clean(
    scenario: Scenario,
    test: &str,
    seeds: u64,
    inspect: impl FnMut(&History),
) -> SweepSummary {
    let summary = sweep(scenario, test, seeds, inspect);
    summary.assert_clean();
    summary.assert_faults_fired();
    summary
}

/// [`sweep`], adding up with `count` what each run's history exercised, so that a green
/// sweep is seen not to be a vacuous one: the summary and the tally (printed).
pub fn sweep_counting<Tally: Default + fmt::Debug>(
    scenario: Scenario,
    test: &str,
    seeds: u64,
    mut count: impl FnMut(&mut Tally, &History),
) -> (SweepSummary, Tally) {
    let mut tally = Tally::default();
    let summary = sweep(scenario, test, seeds, |history| count(&mut tally, history));
    println!(
        "{} over {} seeds exercised {tally:?}",
        summary.scenario,
        summary.seeds.len()
    );
    (summary, tally)
}

/// A sweep's run's history: the driver keeps it for every run a sweep inspects.
pub fn history(outcome: &Outcome) -> &History {
    outcome
        .history
        .as_ref()
        .expect("the driver keeps the history")
}

/// The chance, at most, that a rate assertion fails on seeds where the rate holds.
pub const SHORTFALL_CHANCE: f64 = 1e-6;

/// The fewest of `runs` runs in which something of probability `rate` per run happens,
/// but for a chance under [`SHORTFALL_CHANCE`]: the largest `k` with P(X < k) at most that,
/// X binomial(`runs`, `rate`). It is 0 for a sweep too short to promise any (one pinned
/// seed), so a rate is asserted only as far as the seeds run can show it.
pub fn fewest(runs: usize, rate: f64) -> usize {
    // The binomial probabilities, in logarithms (`(1 - rate)^runs` underflows for long
    // sweeps): ln P(X = 0) = runs ln(1 - rate), then P(X = k + 1) / P(X = k) =
    // (runs - k) / (k + 1) * rate / (1 - rate).
    let mut ln_probability = runs as f64 * (1.0 - rate).ln();
    let mut below = 0.0; // P(X < k)
    let mut k = 0;
    while k < runs {
        let at_k = ln_probability.exp();
        if below + at_k > SHORTFALL_CHANCE {
            break;
        }
        below += at_k;
        ln_probability += ((runs - k) as f64 / (k + 1) as f64).ln() + (rate / (1.0 - rate)).ln();
        k += 1;
    }
    k
}

/// Asserts that `what` happened in at least [`fewest`]`(runs, rate)` of `runs` runs, where
/// `rate` is a bound below the rate measured over many seeds (`measured`, said in the
/// message).
pub fn assert_rate(what: &str, happened: usize, runs: usize, rate: f64, measured: &str) {
    let least = fewest(runs, rate);
    assert!(
        happened >= least,
        "{what} in {happened} of {runs} runs; expected at least {least} (the chance of fewer \
         is under {SHORTFALL_CHANCE} at a rate of {rate}; measured: {measured})"
    );
}

/// [`fewest`] against hand-computed tails (called by a test of each file that uses it).
pub fn check_fewest() {
    // One pinned seed promises nothing; P(X = 0) = 0.8^62 ≈ 1e-6: 62 runs at 20% promise one.
    assert_eq!(fewest(1, 0.5), 0);
    assert_eq!(fewest(61, 0.2), 0);
    assert_eq!(fewest(63, 0.2), 1);
    // A certain event happens every time; 2000 runs at 90% (mean 1800, sd 13.4) promise
    // about 1800 - 4.75 sd.
    assert_eq!(fewest(10, 1.0 - 1e-12), 10);
    let many = fewest(2000, 0.9);
    assert!((1730..1745).contains(&many), "{many}");
}
