//! Comparing your own locks as `coordsim compare-locks` compares coordsim's: each lock with
//! several client counts over the same seeds (and, with faults, the same fault plan per
//! seed and client count), every run judged by its checks, and the same table — acquisition
//! and hand-off latency, watch notifications per release, messages per acquisition —
//! computed by the same code ([`crate::lock_comparison`]) from what your code records
//! through [`UserNode::lock`](super::UserNode::lock).

use super::{FaultSource, Scenario, ScenarioError, UserCode};
use crate::lock_comparison::{ComparedLock, Comparison, Job, LockName, Plan, Row, fault_plans};
use sim::{FaultCounts, Seed, report::FailureReport};
use std::fmt;

/// A comparison of user locks: each lock's code with each client count over the same
/// seeds, measured and tabled as `coordsim compare-locks` does for coordsim's own locks.
///
/// Each lock is [`UserCode`] that records its beliefs through [`UserNode::lock`]
/// (`requested`, `woken` when a watch wakes it, `acquired`, `released`): the figures come
/// from those records, from the store's operations in the history, and from the world's
/// message counter.
///
/// ```no_run
/// use coordsim::testing::{LockComparison, Store, UserCode};
///
/// #[test]
/// fn my_queue_lock_wakes_one_waiter_per_release() {
///     let herd = UserCode::new("my-herd-lock", Store::Zab, |node| async move {
///         let lock = node.lock("job");
///         // ... wait with your client; lock.requested(), lock.woken(watched),
///         // lock.acquired(token), lock.released(token) as it goes.
///         # let _ = lock;
///     })
///     .with_check("recipe.mutual_exclusion");
///     # let queue = herd.clone();
///     let report = LockComparison::new()
///         .lock("herd", herd)
///         .lock("queue", queue)
///         .clients([2, 8])
///         .seeds(2)
///         .for_test(coordsim::this_test!("my_queue_lock_wakes_one_waiter_per_release"))
///         .run()
///         .expect("valid locks and client counts");
///     println!("{report}"); // the table `coordsim compare-locks` prints
///     report.assert_clean();
///     let per_release = |lock, clients| report.notifications_per_release(lock, clients);
///     assert!(per_release("queue", 8) < per_release("herd", 8));
/// }
/// ```
///
/// A failed run is reported with its seed and the line that replays it
/// (`COORDSIM_SEED=… cargo test …`, which reruns the comparison with that one seed), and is
/// left out of the figures.
#[derive(Clone, Debug)]
pub struct LockComparison {
    locks: Vec<(String, UserCode)>,
    clients: Vec<usize>,
    servers: usize,
    faults: FaultSource,
    default_seeds: u64,
    test: (String, String, String),
}

impl Default for LockComparison {
    fn default() -> Self {
        Self::new()
    }
}

impl LockComparison {
    /// No locks yet; clients 2, 8 and 32 (`compare-locks` adds 128), 3 servers, no faults, 10
    /// seeds (`COORDSIM_SEEDS` / `COORDSIM_SEED` override them).
    pub fn new() -> Self {
        Self {
            locks: Vec::new(),
            clients: vec![2, 8, 32],
            servers: 3,
            faults: FaultSource::None,
            default_seeds: 10,
            test: Default::default(),
        }
    }

    /// With the lock `code`, named `name` in the table (its rows come in the order the locks
    /// were added).
    pub fn lock(mut self, name: impl Into<String>, code: UserCode) -> Self {
        self.locks.push((name.into(), code));
        self
    }

    /// With these client counts (each client node runs the lock's code), in rising order.
    pub fn clients(mut self, clients: impl IntoIterator<Item = usize>) -> Self {
        self.clients = clients.into_iter().collect();
        self.clients.sort_unstable();
        self.clients.dedup();
        self
    }

    /// With `servers` servers.
    pub fn servers(mut self, servers: usize) -> Self {
        self.servers = servers;
        self
    }

    /// With faults from `faults`: one plan per seed and client count, generated from the
    /// first lock's scenario and followed by every lock.
    pub fn faults(mut self, faults: FaultSource) -> Self {
        self.faults = faults;
        self
    }

    /// Over `seeds` seeds unless the environment says otherwise.
    pub fn seeds(mut self, seeds: u64) -> Self {
        self.default_seeds = seeds;
        self
    }

    /// Replayed by the test `(package, test target, test name)`: use
    /// [`this_test!`](crate::this_test).
    pub fn for_test(mut self, (package, target, name): (&str, &str, &str)) -> Self {
        self.test = (package.into(), target.into(), name.into());
        self
    }

    /// Makes every run (on every core) and measures them. No locks, no client counts, or a
    /// lock whose scenario is invalid (an unknown check, 0 servers, ...) runs nothing and is
    /// the error, whose one line says what was expected.
    pub fn run(&self) -> Result<LockComparisonReport, ScenarioError> {
        let locks = self.compared_locks()?;
        let seeds = sim::env::test_seeds(self.default_seeds);
        let plans = match self.faults {
            FaultSource::None => None,
            _ => Some(fault_plans(&locks[0].scenario, &self.clients, &seeds).map_err(bad)?),
        };
        let plan = Plan::new(&locks, &self.clients, &seeds, plans.as_deref()).map_err(bad)?;
        let at_once = std::thread::available_parallelism().map_or(1, usize::from);
        let (package, target, name) = &self.test;
        let comparison = plan.run(at_once, |job: &Job| {
            FailureReport::for_test(job.seed, package, target, name)
                .command
                .unwrap_or_default()
        });
        let faults = match self.faults {
            FaultSource::None => "none".to_string(),
            _ => format!(
                "one plan per seed and client count, generated from `{}`'s fault source and \
                 followed by every lock",
                locks[0].scenario.name
            ),
        };
        Ok(LockComparisonReport {
            comparison,
            faults,
            fault_kinds: self.faults.kinds(),
            seeds,
        })
    }

    /// Each lock's scenario, validated with every client count.
    fn compared_locks(&self) -> Result<Vec<ComparedLock>, ScenarioError> {
        if self.locks.is_empty() {
            return Err(bad(
                "no locks to compare (expected at least one `.lock(name, code)`)",
            ));
        }
        if self.clients.is_empty() || self.clients.contains(&0) {
            return Err(bad(format!(
                "client counts {:?}: expected at least one, each at least 1",
                self.clients
            )));
        }
        let mut locks = Vec::new();
        for (name, code) in &self.locks {
            let mut scenario = Scenario::of_user_code(code.clone(), self.servers, self.clients[0]);
            scenario.faults = self.faults.clone();
            for &clients in &self.clients {
                let mut sized = scenario.clone();
                sized.clients = clients;
                sized.validate()?;
            }
            locks.push(ComparedLock {
                name: LockName::User(name.clone()),
                scenario,
            });
        }
        Ok(locks)
    }
}

fn bad(problem: impl Into<String>) -> ScenarioError {
    ScenarioError {
        file: None,
        line: None,
        field: String::new(),
        problem: problem.into(),
    }
}

/// What a [`LockComparison`] found: a row per lock and client count, and the failed runs.
/// Its `Display` is what `coordsim compare-locks` prints.
#[derive(Debug)]
pub struct LockComparisonReport {
    comparison: Comparison,
    faults: String,
    fault_kinds: Vec<sim::fault::FaultKind>,
    seeds: Vec<Seed>,
}

impl LockComparisonReport {
    /// The rows, lock by lock, client count by client count.
    pub fn rows(&self) -> &[Row] {
        &self.comparison.rows
    }

    /// The row of the lock named `lock` with `clients` clients.
    pub fn row(&self, lock: &str, clients: usize) -> Option<&Row> {
        self.rows()
            .iter()
            .find(|row| row.lock == LockName::User(lock.into()) && row.clients == clients)
    }

    /// The lock's watch notifications per release that woke any, over every seed (0 if
    /// no release woke anyone); panics, naming it, if there is no such row.
    pub fn notifications_per_release(&self, lock: &str, clients: usize) -> f64 {
        self.row(lock, clients)
            .unwrap_or_else(|| panic!("no row for `{lock}` with {clients} clients:\n{self}"))
            .notifications_per_release
            .all_seeds
            .unwrap_or(0.0)
    }

    /// The table alone, as `coordsim compare-locks` prints it.
    pub fn table(&self) -> String {
        self.comparison.table()
    }

    /// The plot `coordsim compare-locks --svg` writes, for these rows.
    pub fn svg(&self) -> Result<String, String> {
        let faults = if self.fault_kinds.is_empty() {
            "no faults".to_string()
        } else {
            format!("faults: {}", self.faults)
        };
        self.comparison.svg(&self.comparison.caption(&faults))
    }

    /// Panics, with the report (each failed run's seed and replay line), unless every run
    /// was clean, every row acquired the lock in each of its runs, and each fault kind
    /// turned on fired.
    pub fn assert_clean(&self) {
        assert!(
            self.comparison.failures.is_empty(),
            "{} of {} runs failed:\n{self}",
            self.comparison.failures.len(),
            self.comparison.runs
        );
        for row in self.rows() {
            // A seed that acquired nothing has a rate of 0: the least per-seed rate says
            // whether every run made progress.
            assert!(
                row.runs == self.seeds.len() && row.acquisitions_per_s.seed_min > Some(0.0),
                "`{}` with {} clients made no progress in some run ({} acquisitions in {} \
                 runs):\n{self}",
                row.lock,
                row.clients,
                row.acquisitions,
                row.runs
            );
        }
        let mut totals = FaultCounts::default();
        for row in self.rows() {
            totals.accumulate(&row.fault_counts);
        }
        for kind in &self.fault_kinds {
            assert!(
                totals.fired(*kind) > 0,
                "{kind:?} never fired in the comparison: {totals}"
            );
        }
    }
}

impl fmt::Display for LockComparisonReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.comparison.text("lock comparison", &self.faults))
    }
}
