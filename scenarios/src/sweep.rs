//! Seed sweeps: run a scenario over many seeds, check every run, report failures with the
//! command that replays them.
//!
//! ```no_run
//! # use scenarios::sweep::Sweep;
//! # fn run(seed: sim::Seed) -> sim::RunOutcome { unimplemented!() }
//! let summary = Sweep::new("scenarios", "raft_safety", "raft_cluster_stays_safe", 20)
//!     .run(run, |outcome| scenarios::checkers::checks::run(checks::protocol::CHECKS, &outcome.history, &checks::CheckContext::default()));
//! summary.assert_clean();
//! assert!(summary.fault_totals.crashes > 0, "the faults never fired");
//! ```

use checks::Violation;
use sim::{FaultCounts, RunOutcome, Seed, report::FailureReport};
use std::fmt;

/// A sweep: which test it belongs to (for the replay command) and how many seeds by default.
#[derive(Clone, Debug)]
pub struct Sweep {
    package: String,
    test_target: String,
    test_name: String,
    default_seeds: u64,
}

/// One seed's failure.
#[derive(Debug)]
pub struct SeedFailure {
    /// The seed.
    pub seed: Seed,
    /// What was violated.
    pub violations: Vec<Box<dyn Violation>>,
    /// The history digest of the failing run (a replay must reproduce it).
    pub history_digest: sim::digest::Digest,
    /// How to replay it.
    pub report: FailureReport,
}

impl fmt::Display for SeedFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.report)?;
        writeln!(f, "history digest: {}", self.history_digest)?;
        for violation in &self.violations {
            writeln!(
                f,
                "  violated {} [{}]: {violation}",
                violation.property(),
                violation.reference()
            )?;
        }
        Ok(())
    }
}

/// What a sweep found.
#[derive(Debug, Default)]
pub struct SweepSummary {
    /// Seeds run.
    pub seeds: Vec<Seed>,
    /// Seeds whose run violated something.
    pub failures: Vec<SeedFailure>,
    /// Faults fired over all runs.
    pub fault_totals: FaultCounts,
}

impl SweepSummary {
    /// Panics with every failure report if any seed failed.
    pub fn assert_clean(&self) {
        if self.failures.is_empty() {
            return;
        }
        let reports: Vec<String> = self.failures.iter().map(ToString::to_string).collect();
        panic!(
            "{} of {} seeds violated a property:\n{}",
            self.failures.len(),
            self.seeds.len(),
            reports.join("\n")
        );
    }

    /// Whether some seed violated `property`.
    pub fn found(&self, property: &str) -> bool {
        self.failures
            .iter()
            .any(|failure| failure.violations.iter().any(|v| v.property() == property))
    }

    /// The first failure that violated `property`.
    pub fn first_violation_of(&self, property: &str) -> Option<&SeedFailure> {
        self.failures
            .iter()
            .find(|failure| failure.violations.iter().any(|v| v.property() == property))
    }
}

impl Sweep {
    /// Writes a failing run's history where `COORDSIM_HISTORY_DIR` says, if set (a problem
    /// writing it is printed, not fatal: the failure report matters more).
    fn keep_history(&self, seed: Seed, outcome: &RunOutcome) {
        let Some(directory) = sim::env::history_dir() else {
            return;
        };
        let path = directory.join(format!("{}-{seed}.jsonl", self.test_name));
        let written = std::fs::create_dir_all(&directory)
            .and_then(|()| std::fs::write(&path, outcome.history.to_json_lines()));
        match written {
            Ok(()) => eprintln!("history of the failing run: {}", path.display()),
            Err(error) => eprintln!("could not write {}: {error}", path.display()),
        }
    }

    /// A sweep for the test `test_name` in `package`'s integration-test target `test_target`,
    /// running `default_seeds` seeds unless `COORDSIM_SEEDS`/`COORDSIM_SEED` say otherwise.
    pub fn new(package: &str, test_target: &str, test_name: &str, default_seeds: u64) -> Self {
        Self {
            package: package.into(),
            test_target: test_target.into(),
            test_name: test_name.into(),
            default_seeds,
        }
    }

    /// Runs every seed and checks every run. A sweep does not stop at the first failure: the
    /// summary shows how often a property broke.
    pub fn run(
        &self,
        run: impl Fn(Seed) -> RunOutcome,
        check: impl Fn(&RunOutcome) -> Vec<Box<dyn Violation>>,
    ) -> SweepSummary {
        let mut summary = SweepSummary {
            seeds: sim::env::test_seeds(self.default_seeds),
            ..SweepSummary::default()
        };
        for &seed in &summary.seeds {
            let outcome = run(seed);
            summary.fault_totals.accumulate(&outcome.fault_counts);
            let violations = check(&outcome);
            if !violations.is_empty() {
                self.keep_history(seed, &outcome);
                summary.failures.push(SeedFailure {
                    seed,
                    violations,
                    history_digest: outcome.history_digest(),
                    report: FailureReport::for_test(
                        seed,
                        &self.package,
                        &self.test_target,
                        &self.test_name,
                    ),
                });
            }
        }
        summary
    }
}
