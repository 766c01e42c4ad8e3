//! Failure reports: the seed, the scenario, and the exact command that replays the run;
//! and [`for_each_seed`], for a test that loops over seeds itself.

use crate::seed::Seed;
use std::fmt;

/// `(package, test target, test name)` of the calling test, for the line that replays it
/// ([`FailureReport::for_test`], [`for_each_seed`], `coordsim::testing::UserTest::for_test`).
/// `this_test!("my_test")` in an integration test `tests/locks.rs` of package `my-service`
/// gives `("my-service", "locks", "my_test")`.
#[macro_export]
macro_rules! this_test {
    ($name:expr) => {
        (env!("CARGO_PKG_NAME"), env!("CARGO_CRATE_NAME"), $name)
    };
}

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

    /// A report whose replay command re-runs one cargo test with this seed: of the
    /// integration test `test_target`, or of the package's library (`--lib`) when
    /// `test_target` is the library's crate name (the package's with `-` as `_`), as
    /// [`this_test!`] gives it in a unit test.
    pub fn for_test(seed: Seed, package: &str, test_target: &str, test_name: &str) -> Self {
        let target = if test_target == package.replace('-', "_") {
            "--lib".to_string()
        } else {
            format!("--test {test_target}")
        };
        Self::new(seed, test_name).with_command(format!(
            "COORDSIM_SEED={seed} cargo test -p {package} {target} -- --exact {test_name}"
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

/// Runs `body` once for each seed of a test that loops over its own list of seeds: `seeds`,
/// or only `COORDSIM_SEED` if it is set (so the replay line runs exactly the failing seed).
/// A panic in `body` (a failed assertion about that seed's run) goes on with its message
/// followed by the seed and the line that replays it, [`FailureReport::for_test`] of `test`
/// (use [`this_test!`]). Seed sweeps over a scenario (`scenarios::sweep`) print the same line.
pub fn for_each_seed(
    seeds: impl IntoIterator<Item = u64>,
    (package, test_target, test_name): (&str, &str, &str),
    body: impl FnMut(Seed),
) {
    let seeds: Vec<Seed> = match crate::env::read(crate::env::SEED) {
        Some(_) => crate::env::test_seeds(1),
        None => seeds.into_iter().map(Seed::new).collect(),
    };
    run_each(seeds, (package, test_target, test_name), body);
}

/// [`for_each_seed`] over exactly `seeds`.
fn run_each(
    seeds: Vec<Seed>,
    (package, test_target, test_name): (&str, &str, &str),
    mut body: impl FnMut(Seed),
) {
    for seed in seeds {
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(seed)));
        if let Err(panic) = ran {
            let report = FailureReport::for_test(seed, package, test_target, test_name);
            panic!("{}\n{report}", panic_message(panic.as_ref()));
        }
    }
}

/// A panic's message (a `panic!` with arguments carries a `String`, one without a `&str`).
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(ToString::to_string))
        .unwrap_or_else(|| "a panic without a message".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_seed_panics_with_the_line_that_replays_it() {
        let mut ran = Vec::new();
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let seeds = [1, 2, 3].map(Seed::new).to_vec();
            run_each(seeds, ("my-crate", "locks", "my_test"), |seed| {
                ran.push(seed.value());
                assert!(seed.value() != 2, "seed 2 breaks");
            });
        }))
        .expect_err("seed 2 fails the test");
        let message = panic_message(panic.as_ref());
        assert_eq!(ran, vec![1, 2], "the first failing seed stops the test");
        assert!(message.starts_with("seed 2 breaks"), "{message}");
        assert!(
            message.ends_with(
                "REPRODUCE WITH: COORDSIM_SEED=0x2 cargo test -p my-crate --test locks \
                 -- --exact my_test"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_unit_test_is_replayed_through_its_library() {
        let (package, target, _) = crate::this_test!("report::tests::this");
        assert_eq!((package, target), ("sim", "sim"));
        let report = FailureReport::for_test(Seed::new(5), "my-crate", "my_crate", "m::tests::t");
        assert_eq!(
            report.command.as_deref(),
            Some("COORDSIM_SEED=0x5 cargo test -p my-crate --lib -- --exact m::tests::t")
        );
    }
}
