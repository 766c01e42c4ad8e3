//! Testing your own code: run it on every client node of a simulated ZooKeeper or etcd
//! cluster, under the faults you choose, over seeds, judged by coordsim's checks.
//!
//! Your code is an `async` closure that gets a [`UserNode`] and runs until it is stopped;
//! its store operations (through the models' clients) are in the run's history, so the
//! store's checks (`etcd.linearizable`, `zk.linearizable`, the lease and watch checks) judge
//! them, and what it records about its locks and elections ([`UserNode::lock`],
//! [`UserNode::election`]) is judged by the recipe checks it names.
//!
//! ```no_run
//! use coordsim::testing::{Store, UserCode, UserTest};
//!
//! #[test]
//! fn my_lock_is_exclusive() {
//!     let code = UserCode::new("my-lock", Store::Raft, |node| async move {
//!         let lock = node.lock("job");
//!         // ... take the lock with your client, then:
//!         // lock.acquired(token); work; lock.released(token);
//!         # let _ = lock;
//!     })
//!     .with_check("recipe.mutual_exclusion");
//!     UserTest::new(code)
//!         .for_test(coordsim::this_test!("my_lock_is_exclusive"))
//!         .run()
//!         .expect("a valid scenario")
//!         .assert_clean();
//! }
//! ```
//!
//! [`LockComparison`] puts your locks through `coordsim compare-locks`' measurements and
//! prints the same table (acquisition and hand-off latency, watch notifications per release,
//! messages per acquisition) for each client count.
//!
//! A failing seed is printed with its violations and the one line that replays it
//! (`COORDSIM_SEED=… cargo test -p … --test … NAME`). The same line with
//! [`TIMELINE_DIR`], [`TRACE_DIR`] or [`SHRINK_DIR`] set writes, for each failing seed, the
//! HTML timeline of the run, its JSON trace (outcome and every history record) and the
//! smallest fault plan that still fails the same way.

pub use scenarios::{
    Outcome, Scenario, ScenarioError,
    scenario::{CampaignCheck, Store},
    sweep::{SeedFailure, SweepSummary},
    workload::{
        ElectionBeliefs, FencedResource, LockBeliefs, Resource, ResourceClient,
        ResourceUnavailable, ResourceVerdict, UserCode, UserNode,
    },
};
pub use sim::fault::{
    Fault, FaultKind, FaultPlan, FaultSource, PauseClients, PausedClient, ScheduledFault,
    SwarmConfig, Target,
};
pub use sim::history::recipe::LossReason;

mod compare;

pub use crate::lock_comparison::{Figure, LockName, Row};
pub use compare::{LockComparison, LockComparisonReport};

use scenarios::{
    shrink::{self, ShrinkConfig, ShrinkTarget},
    sweep::Sweep,
};
use std::path::{Path, PathBuf};

/// Where the HTML timeline, the JSON trace and the shrunk fault plan of each failing seed are
/// written, when set (`sim::env` lists every variable coordsim reads).
pub use sim::env::{SHRINK_DIR, TIMELINE_DIR, TRACE_DIR};

/// The most runs one seed's shrinking may take.
pub const SHRINK_RUNS: u32 = 100;

/// A test of user code: the scenario it runs in, the seeds, and the test that replays it.
#[derive(Clone, Debug)]
pub struct UserTest {
    scenario: Scenario,
    test: (String, String, String),
    default_seeds: u64,
}

impl UserTest {
    /// `code` on 3 client nodes against 3 servers of its store, with no faults, over 10
    /// seeds (`COORDSIM_SEEDS` / `COORDSIM_SEED` override them).
    pub fn new(code: UserCode) -> Self {
        Self {
            test: (String::new(), String::new(), code.name().to_string()),
            scenario: Scenario::of_user_code(code, 3, 3),
            default_seeds: 10,
        }
    }

    /// With `servers` servers.
    pub fn servers(mut self, servers: usize) -> Self {
        self.scenario.servers = servers;
        self
    }

    /// With `clients` client nodes, each running the code.
    pub fn clients(mut self, clients: usize) -> Self {
        self.scenario.clients = clients;
        self
    }

    /// With faults from `faults` during the fault phase.
    pub fn faults(mut self, faults: FaultSource) -> Self {
        self.scenario.faults = faults;
        self
    }

    /// With a fault phase of `fault_phase_ms` (default 8 s); the world heals at its end.
    pub fn fault_phase_ms(mut self, fault_phase_ms: u64) -> Self {
        self.scenario.fault_phase_ms = fault_phase_ms;
        self
    }

    /// With the servers' disk syncs taking from `min_us` to `max_us` each (default 100 to
    /// 2,000 µs): slower syncs keep writes in flight longer, so more crashes land between a
    /// write's commit and its reply (the catalogue's `zk_queue_lock_crashes` takes 20,000 to
    /// 40,000 µs).
    pub fn disk_sync_latency_us(mut self, min_us: u64, max_us: u64) -> Self {
        self.scenario.world.disk.sync_latency_min_us = min_us;
        self.scenario.world.disk.sync_latency_max_us = max_us;
        self
    }

    /// With the Raft store's election service doing `check` after a campaign's wait (the
    /// drop-in etcd-client's `ElectionClient::campaign` follows it): by default
    /// [`CampaignCheck::Upstream`], etcd as released, which etcd-io/etcd#11051 reports;
    /// [`CampaignCheck::RecheckOwnKey`] is the open fix, etcd-io/etcd#22387. The one way to
    /// switch it is the scenario's `tuning.campaign_check`, which this sets.
    pub fn campaign_check(mut self, check: CampaignCheck) -> Self {
        self.scenario.tuning.campaign_check = Some(check);
        self
    }

    /// Over `seeds` seeds unless the environment says otherwise.
    pub fn seeds(mut self, seeds: u64) -> Self {
        self.default_seeds = seeds;
        self
    }

    /// Replayed by the test `(package, test target, test name)`: use [`this_test!`](crate::this_test).
    pub fn for_test(mut self, (package, target, name): (&str, &str, &str)) -> Self {
        self.test = (package.into(), target.into(), name.into());
        self
    }

    /// The scenario it runs.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Runs every seed and writes what the environment asks for about each failing one; an
    /// invalid scenario (0 servers, an unknown check or fault role...) runs nothing and is
    /// the error, whose one line says what was expected.
    pub fn run(&self) -> Result<SweepSummary, ScenarioError> {
        self.scenario.validate()?;
        let (package, target, name) = &self.test;
        let summary = Sweep::new(
            self.scenario.clone(),
            package,
            target,
            name,
            self.default_seeds,
        )
        .run();
        for failure in &summary.failures {
            for written in self.write_artifacts(failure) {
                match written {
                    Ok(line) | Err(line) => eprintln!("{line}"),
                }
            }
        }
        if !summary.failures.is_empty() {
            eprintln!(
                "add {TIMELINE_DIR}=DIR, {TRACE_DIR}=DIR or {SHRINK_DIR}=DIR to a replay line \
                 for the timeline, the trace or the shrunk fault plan of that run"
            );
        }
        Ok(summary)
    }

    /// The timeline, trace and shrunk plan of `failure`, each where its variable says.
    fn write_artifacts(&self, failure: &SeedFailure) -> Vec<Result<String, String>> {
        let outcome = &failure.outcome;
        let stem = format!("{}-{}", self.scenario.name, outcome.seed);
        let mut written = Vec::new();
        let history = outcome.history.as_ref();
        if let (Some(dir), Some(history)) = (dir_of(TIMELINE_DIR), history) {
            let path = dir.join(format!("{stem}.html"));
            let title = format!("{} with seed {}", self.scenario.name, outcome.seed);
            let focus = crate::describe::Focus::of(outcome, history);
            let page = crate::timeline::render(
                &title,
                &self.scenario,
                outcome,
                history,
                focus.as_ref(),
                20,
            );
            written.push(
                std::fs::write(&path, page)
                    .map(|()| format!("timeline written to {}", path.display()))
                    .map_err(|error| format!("cannot write {}: {error}", path.display())),
            );
        }
        if let (Some(dir), Some(history)) = (dir_of(TRACE_DIR), history) {
            let path = dir.join(format!("{stem}.json"));
            written.push(
                crate::trace::write(&path, outcome, history)
                    .map(|()| format!("trace written to {}", path.display())),
            );
        }
        if let Some(dir) = dir_of(SHRINK_DIR) {
            written.push(self.shrink(failure, &dir.join(format!("{stem}-shrunk-plan.json"))));
        }
        written
    }

    /// Shrinks the failing run's fault plan and writes it to `path`.
    fn shrink(&self, failure: &SeedFailure, path: &Path) -> Result<String, String> {
        let outcome = &failure.outcome;
        let target = ShrinkTarget::of(outcome, None).map_err(|error| error.to_string())?;
        let config = ShrinkConfig {
            max_runs: SHRINK_RUNS,
            ..ShrinkConfig::default()
        };
        let report = shrink::shrink(&self.scenario, outcome.seed, outcome, &target, &config)
            .map_err(|error| format!("shrinking seed {}: {error}", outcome.seed))?;
        let json = serde_json::to_string_pretty(&report.plan).expect("a plan serializes");
        std::fs::write(path, json)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        Ok(format!(
            "{report}\nshrunk plan written to {}",
            path.display()
        ))
    }
}

/// The folder the variable `name` names, created if missing; `None` if it is unset.
fn dir_of(name: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os(name)?);
    let _ = std::fs::create_dir_all(&dir);
    Some(dir)
}
