//! `Scenario`: everything about a run except its seed, as data (TOML or JSON).
//!
//! ```toml
//! name = "kv_under_swarm"
//! store = "raft"                 # raft | zab | ledger
//! servers = 5
//! observers = 0                  # zab: the last N servers observe (vote in nothing)
//! clients = 2
//! fault_phase_ms = 8000          # faults fire in this phase; then the world heals
//! recovery_ms = 3000             # after the heal, the workers go on this long
//! liveness_bound_ms = 15000      # then the workload must finish within this
//! bugs = ["raft.volatile_vote"]  # known-bug variants switched on
//! checks = ["etcd.lease_not_expired_early"]  # checks beyond the store's and the workload's
//! # Taking away a check the store or the workload brings needs a reason, which every
//! # outcome prints:
//! # skip_checks = [{ check = "etcd.linearizable", reason = "..." }]
//!
//! [workload]
//! kind = "kv_mix"                # kv_mix (raft) | zk_mix (zab) | ledger (ledger)
//! keys = 4
//!
//! [faults.swarm]                 # or plan, leader_killer, cut_off_leader, ...
//! mean_interval_ms = 400
//! kinds = ["partition", "crash", "pause"]
//! ```
//!
//! [`Scenario::load`] reads a file and reports a bad one on one line naming the file, the
//! line, the field and what was expected.

pub use crate::store::Store;
use crate::{
    known_bug::KnownBug,
    workload::{KvMix, LedgerAppends, Workload, ZkMix},
};
use serde::{Deserialize, Serialize};
use sim::{
    WorldConfig,
    config::{ClockConfig, DiskConfig, NetworkConfig},
    digest::{Digest, StableHasher},
    fault::FaultSource,
};
use std::{fmt, path::Path, time::Duration};

/// The world around the store: network, disks, clocks at the start of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorldSettings {
    /// Latency, loss and duplication.
    pub network: NetworkConfig,
    /// Disk sync latency.
    pub disk: DiskConfig,
    /// Initial clock offsets and drift.
    pub clocks: ClockConfig,
}

pub use models::etcd::CampaignCheck;

/// Store timing the scenarios tune (everything else keeps the model's defaults).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tuning {
    /// Raft: entries per AppendEntries (1 makes replication slow and uneven).
    pub max_entries_per_append: Option<usize>,
    /// Raft: each server snapshots its state machine and compacts its log once this many
    /// entries were applied since its last snapshot; a follower that lags behind a leader's
    /// snapshot is sent it whole (InstallSnapshot). Unset: no snapshots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_threshold: Option<u64>,
    /// Raft: the election timeout range, milliseconds.
    pub election_timeout_ms: Option<(u64, u64)>,
    /// Raft store: how often the leader checkpoints remaining lease TTLs through the log,
    /// milliseconds (a new leader starts each lease from its last checkpoint). Only leases
    /// with a longer TTL are checkpointed. Unset: etcd's default, 5 minutes, so none of a
    /// few seconds is.
    pub lease_checkpoint_interval_ms: Option<u64>,
    /// ZAB: how many transactions behind a follower may be for a DIFF (else SNAP).
    pub diff_window: Option<usize>,
    /// ZAB: ZooKeeper's `syncLimit`, in ticks.
    pub sync_limit_ticks: Option<u32>,
    /// ZooKeeper store: the width of each parent's sequence counter, which names sequential
    /// nodes (`models::zk::SequenceWidth`), from 4 to 32 bits (unset: 32, ZooKeeper's own).
    /// A narrower counter wraps to negative names within a run — at 6 bits after 32 creates
    /// and deletes under one parent, and again every 64 — so that a recipe's ordering of
    /// sequential nodes is tested across the wrap, as ZooKeeper's reaches it only after 2^31.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence_counter_bits: Option<u32>,
    /// Raft store: what the election service's `Campaign` does after its wait
    /// ([`CampaignCheck`]; unset: `upstream`, etcd's behaviour, which
    /// etcd-io/etcd#11051 reports; `recheck_own_key`: the open fix etcd-io/etcd#22387). The
    /// drop-in etcd-client's `ElectionClient` follows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign_check: Option<CampaignCheck>,
}

/// A run, described as data: store, sizes, workload, faults, known bugs, checks, bounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name, for reports and replay commands.
    pub name: String,
    /// What the scenario is for, in a sentence.
    #[serde(default)]
    pub description: String,
    /// The store.
    pub store: Store,
    /// Servers, `s1..sN`.
    pub servers: usize,
    /// ZAB store: how many of the servers, the last ones, are observers (ZooKeeper's
    /// `LearnerType.OBSERVER`): with `servers = 5` and `observers = 2`, `s1..s3` vote and
    /// `s4..s5` observe — they serve clients, learn committed transactions from the leader
    /// and count in no election or quorum. 0 (the default) is an ensemble of voters only.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub observers: usize,
    /// Client nodes, `c1..cM`.
    pub clients: usize,
    /// What the clients do.
    pub workload: Workload,
    /// Where faults come from.
    #[serde(default)]
    pub faults: FaultSource,
    /// Known-bug variants switched on.
    #[serde(default)]
    pub bugs: Vec<KnownBug>,
    /// Checks to run besides those every scenario of its store and workload runs, by name
    /// (`checks::by_name`). The store's checks and the workload's ([`Workload::checks`])
    /// always run; `default` names them and adds nothing.
    #[serde(default = "default_checks")]
    pub checks: Vec<String>,
    /// The coverage marks ([`sim::coverage::Mark`]) this scenario exists to reach: a sweep
    /// of it fails when one of them was reached in no seed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<sim::coverage::Mark>,
    /// Checks of the store or the workload this scenario does not run, each with the
    /// reason, which every outcome prints. The only way to take a check away.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip_checks: Vec<SkippedCheck>,
    /// Faults fire during this phase; at its end the world heals everything.
    pub fault_phase_ms: u64,
    /// After the heal, the workers keep going this long (recovery under load) before they
    /// stop and the final reads begin.
    #[serde(default)]
    pub recovery_ms: u64,
    /// After the recovery, the workload must finish (final reads, audits) within this bound.
    pub liveness_bound_ms: u64,
    /// The run stops here, milliseconds (default: the fault phase, the recovery and the
    /// liveness bound, plus 30 s for the workload to wind down). A run that reaches it has
    /// failed (`time_limit`); it is never clean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_ms: Option<u64>,
    /// The world's initial conditions.
    #[serde(default)]
    pub world: WorldSettings,
    /// Store timing.
    #[serde(default)]
    pub tuning: Tuning,
}

/// A check a scenario does not run, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkippedCheck {
    /// The check's name (`recipe.herd_effect`).
    pub check: String,
    /// Why this scenario cannot or need not run it, for the reader of its outcomes.
    pub reason: String,
}

impl fmt::Display for SkippedCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} skipped: {}", self.check, self.reason)
    }
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

fn default_checks() -> Vec<String> {
    vec!["default".into()]
}

/// A scenario that cannot be: one line naming where and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file, if the scenario came from one.
    pub file: Option<String>,
    /// The line in it, if known.
    pub line: Option<usize>,
    /// The field, dotted (`faults.swarm.kinds[2]`).
    pub field: String,
    /// What is wrong and what was expected.
    pub problem: String,
}

impl ScenarioError {
    fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            file: None,
            line: None,
            field: field.into(),
            problem: problem.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: ")?,
            (Some(file), None) => write!(f, "{file}: ")?,
            _ => {}
        }
        if self.field.is_empty() {
            write!(f, "{}", self.problem)
        } else {
            write!(f, "`{}`: {}", self.field, self.problem)
        }
    }
}

impl std::error::Error for ScenarioError {}

/// The time limit of a run: the fault phase, the liveness bound, and a margin for the
/// workload to wind down. A run that reaches it failed (`TimeLimit`), it is never clean.
const TIME_LIMIT_MARGIN: Duration = Duration::from_secs(30);

impl Scenario {
    /// Reads a scenario from a `.toml` or `.json` file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| ScenarioError {
            file: Some(file.clone()),
            ..ScenarioError::new("", format!("cannot read it: {error}"))
        })?;
        let format = if path.extension().is_some_and(|ext| ext == "json") {
            Format::Json
        } else {
            Format::Toml
        };
        Self::parse(&text, format).map_err(|error| ScenarioError {
            file: Some(file),
            ..error
        })
    }

    /// Parses and validates a scenario written in `format`.
    pub fn parse(text: &str, format: Format) -> Result<Self, ScenarioError> {
        let scenario: Scenario = match format {
            Format::Json => {
                let mut deserializer = serde_json::Deserializer::from_str(text);
                serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
                    let line = error.inner().line();
                    ScenarioError {
                        line: (line > 0).then_some(line),
                        ..ScenarioError::new(
                            field_of(error.path()),
                            crate::suggest::shorten_serde_message(&json_problem(error.inner())),
                        )
                    }
                })?
            }
            Format::Toml => {
                let deserializer =
                    toml::Deserializer::parse(text).map_err(|error| ScenarioError {
                        line: error.span().map(|span| line_of(text, span.start)),
                        ..ScenarioError::new("", error.message().trim().to_string())
                    })?;
                serde_path_to_error::deserialize(deserializer).map_err(|error| ScenarioError {
                    line: error.inner().span().map(|span| line_of(text, span.start)),
                    ..ScenarioError::new(
                        field_of(error.path()),
                        crate::suggest::shorten_serde_message(error.inner().message().trim()),
                    )
                })?
            }
        };
        let line_of_field = |field: &str| {
            let key = field.rsplit('.').next().unwrap_or(field);
            let key = key.split('[').next().unwrap_or(key);
            text.lines()
                .position(|line| {
                    let line = line.trim_start().trim_start_matches('"');
                    line.starts_with(key)
                })
                .map(|index| index + 1)
        };
        scenario.validate().map_err(|error| ScenarioError {
            line: line_of_field(&error.field),
            ..error
        })?;
        Ok(scenario)
    }

    /// Checks what serde cannot: sizes, bounds, that the workload, bugs and checks belong to
    /// the store, and the world (faults included) the scenario implies.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.validate_shape()?;
        self.validate_names()?;
        self.validate_settings()
    }

    /// The liveness bound, the observers, the clients, and the workload's store.
    fn validate_shape(&self) -> Result<(), ScenarioError> {
        if self.liveness_bound_ms == 0 {
            return Err(ScenarioError::new(
                "liveness_bound_ms",
                "0 ms (expected a positive bound for the liveness phase)",
            ));
        }
        if self.observers > 0 && self.store != Store::Zab {
            return Err(ScenarioError::new(
                "observers",
                format!(
                    "{} on the {} store (expected 0: only the zab store has observers)",
                    self.observers, self.store
                ),
            ));
        }
        if self.observers > 0 && self.observers >= self.servers {
            return Err(ScenarioError::new(
                "observers",
                format!(
                    "{} of {} servers (expected at least one voting server: at most {} observers)",
                    self.observers,
                    self.servers,
                    self.servers.saturating_sub(1)
                ),
            ));
        }
        if self.workload.store() != self.store {
            return Err(ScenarioError::new(
                "workload.kind",
                format!(
                    "`{}` runs on the {} store, not on {} (expected a workload of the {} store)",
                    self.workload.kind(),
                    self.workload.store(),
                    self.store,
                    self.store
                ),
            ));
        }
        if self.clients == 0 && self.store != Store::Ledger {
            return Err(ScenarioError::new(
                "clients",
                "0 (expected at least one client node to run the workload)",
            ));
        }
        Ok(())
    }

    /// The known bugs, checks and skipped checks it names: each exists and belongs to it.
    fn validate_names(&self) -> Result<(), ScenarioError> {
        for (index, bug) in self.bugs.iter().enumerate() {
            if !bug.runs_on(self.store) {
                return Err(ScenarioError::new(
                    format!("bugs[{index}]"),
                    format!(
                        "`{bug}` is not a variant of anything that runs on the {} store",
                        self.store
                    ),
                ));
            }
        }
        for (index, name) in self.checks.iter().enumerate() {
            if name != "default" && checks::by_name(name).is_none() {
                return Err(ScenarioError::new(
                    format!("checks[{index}]"),
                    format!(
                        "unknown check `{name}` (expected `default` or a check: {})",
                        crate::suggest::expected(
                            name,
                            checks::all().map(|check| check.name),
                            "`coordsim list`"
                        )
                    ),
                ));
            }
        }
        let brought = self.brought_checks();
        for (index, skipped) in self.skip_checks.iter().enumerate() {
            if !brought.iter().any(|check| check.name == skipped.check)
                && !self.checks.contains(&skipped.check)
            {
                return Err(ScenarioError::new(
                    format!("skip_checks[{index}].check"),
                    format!(
                        "`{}` is not among this scenario's checks (expected one of: {})",
                        skipped.check,
                        brought
                            .iter()
                            .map(|check| check.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            if skipped.reason.trim().is_empty() {
                return Err(ScenarioError::new(
                    format!("skip_checks[{index}].reason"),
                    format!(
                        "empty (expected why `{}` does not apply to this scenario: every \
                         outcome prints it)",
                        skipped.check
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The fault source, the tuning, the workload's own settings and the world.
    fn validate_settings(&self) -> Result<(), ScenarioError> {
        if let FaultSource::Swarm(swarm) = &self.faults
            && let Some(max) = swarm.max_unavailable_servers
            && max > self.servers
        {
            return Err(ScenarioError::new(
                "faults.swarm.max_unavailable_servers",
                format!(
                    "{max} servers down at once, of {} (expected at most the servers there are)",
                    self.servers
                ),
            ));
        }
        if self.tuning.snapshot_threshold == Some(0) {
            return Err(ScenarioError::new(
                "tuning.snapshot_threshold",
                "0 (expected at least 1 applied entry between snapshots, or no setting)",
            ));
        }
        if let Some(bits) = self.tuning.sequence_counter_bits
            && models::zk::SequenceWidth::new(bits).is_none()
        {
            return Err(ScenarioError::new(
                "tuning.sequence_counter_bits",
                format!(
                    "{bits} (expected a counter width from {} to 32 bits)",
                    models::zk::SequenceWidth::MIN_BITS
                ),
            ));
        }
        self.workload
            .validate(self.servers, self.clients)
            .map_err(|problem| ScenarioError::new("workload", problem))?;
        self.world_config()
            .validate()
            .map_err(|error| ScenarioError::new(error.field, error.problem))?;
        // Faults fire in the fault phase, then the world heals (a plan of a generator or a
        // shrink is within it by construction; one written by hand may not be).
        if let FaultSource::Plan(plan) = &self.faults {
            plan.validate_within_phase("faults.plan", self.fault_phase_ms)
                .map_err(|error| ScenarioError::new(error.field, error.problem))?;
        }
        Ok(())
    }

    /// The world this scenario runs in.
    pub fn world_config(&self) -> WorldConfig {
        let limit =
            Duration::from_millis(self.fault_phase_ms + self.recovery_ms + self.liveness_bound_ms)
                + TIME_LIMIT_MARGIN;
        WorldConfig {
            servers: self.servers,
            clients: self.clients,
            resources: self.workload.resources(),
            network: self.world.network.clone(),
            disk: self.world.disk.clone(),
            clocks: self.world.clocks.clone(),
            faults: self.faults.clone(),
            fault_phase_ms: self.fault_phase_ms,
            time_limit_ms: self
                .time_limit_ms
                .unwrap_or_else(|| u64::try_from(limit.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    /// The ZooKeeper store's sequence counter width: `tuning.sequence_counter_bits`, or
    /// ZooKeeper's 32 bits.
    pub(crate) fn sequence_width(&self) -> models::zk::SequenceWidth {
        self.tuning
            .sequence_counter_bits
            .and_then(models::zk::SequenceWidth::new)
            .unwrap_or_default()
    }

    /// The checks every scenario of this store and workload runs: the store's set, then
    /// the workload's own ([`Workload::checks`]), each once.
    fn brought_checks(&self) -> Vec<&'static checks::Check> {
        let store: Vec<&'static checks::Check> = match self.store {
            Store::Raft => checks::protocol::CHECKS
                .iter()
                .chain(checks::etcd::CHECKS)
                .collect(),
            Store::Zab => checks::protocol::CHECKS
                .iter()
                .chain(checks::zk::CHECKS)
                .collect(),
            Store::Ledger => Vec::new(),
        };
        let workload = self
            .workload
            .checks()
            .into_iter()
            .map(|name| checks::by_name(name).expect("a workload names known checks"));
        let mut brought: Vec<&'static checks::Check> = Vec::new();
        for check in store.into_iter().chain(workload) {
            if !brought.iter().any(|known| known.name == check.name) {
                brought.push(check);
            }
        }
        brought
    }

    /// The checks this scenario runs: the store's and the workload's, then the named ones,
    /// less those in `skip_checks`.
    pub fn check_set(&self) -> Vec<&'static checks::Check> {
        let mut selected = self.brought_checks();
        for name in &self.checks {
            if let Some(check) = checks::by_name(name)
                && !selected.iter().any(|known| known.name == check.name)
            {
                selected.push(check);
            }
        }
        selected.retain(|check| !self.skip_checks.iter().any(|s| s.check == check.name));
        selected
    }

    /// The checks of [`Scenario::check_set`] this scenario relies on: each must judge
    /// something in some seed of a sweep, or the sweep fails (a check that judged nothing
    /// anywhere has shown nothing). They are the workload's checks, the checks the scenario
    /// names, the consensus checks of its store (every run elects leaders and applies
    /// entries), and with observers the observer check. The store's other checks run on
    /// every history and report what they judged; nothing in the workload promises them
    /// material, so judging nothing is reported, not failed.
    pub fn relied_on(&self) -> Vec<&'static str> {
        let consensus = [
            "protocol.leader_uniqueness",
            "protocol.term_monotonicity",
            "protocol.replica_agreement",
            "protocol.applied_in_order",
        ];
        let mut names: Vec<&'static str> = Vec::new();
        if self.store != Store::Ledger {
            names.extend(consensus);
        }
        if self.observers > 0 {
            names.push("protocol.observers_never_count");
        }
        names.extend(self.workload.checks());
        names.extend(
            self.checks
                .iter()
                .filter_map(|name| checks::by_name(name))
                .map(|check| check.name),
        );
        self.check_set()
            .into_iter()
            .map(|check| check.name)
            .filter(|name| names.contains(name))
            .collect()
    }

    /// The liveness bound this scenario's workload needs with its clients, where the
    /// workload can say: the lock workload's phase is one turn per lock-taking process, in
    /// a row, after the workers' last waits (`scenarios/src/workload/shared/lock_liveness.rs`
    /// derives it). `None` for the other workloads.
    pub fn liveness_needed_ms(&self) -> Option<u64> {
        match &self.workload {
            Workload::Locks(locks) => {
                let clients = u64::try_from(self.clients).unwrap_or(u64::MAX);
                let processes = clients.saturating_mul(u64::from(locks.processes_per_client));
                Some(locks.liveness_needed_ms(processes, &self.world))
            }
            _ => None,
        }
    }

    /// A stable digest of the whole description, so a report can say which scenario ran.
    pub fn digest(&self) -> Digest {
        let mut hasher = StableHasher::new();
        serde_json::to_writer(&mut hasher, self).expect("a scenario serializes");
        hasher.finish()
    }

    /// This scenario on `store`: its workload mapped by [`Workload::on_store`] (the
    /// other store's recipe of the same thing), checks named for the other store's group
    /// (`zk.*`, `etcd.*`) replaced by `default` (the new store's set), everything else —
    /// name, sizes, faults, bugs, bounds, world — kept, so the same seed runs the same
    /// fault plan. The result is validated (a known-bug variant of the old store fails
    /// here). A workload with no counterpart is an error naming the workloads that have one.
    pub fn on_store(&self, store: Store) -> Result<Scenario, ScenarioError> {
        if store == self.store {
            return Ok(self.clone());
        }
        let workload = self.workload.on_store(store).ok_or_else(|| {
            ScenarioError::new(
                "workload.kind",
                format!(
                    "`{}` of scenario `{}` runs only on the {} store (expected a workload \
                     that runs on both: {})",
                    self.workload_name(),
                    self.name,
                    self.store,
                    Workload::ON_BOTH_STORES
                ),
            )
        })?;
        let other_group = match self.store {
            Store::Raft => Some("etcd."),
            Store::Zab => Some("zk."),
            Store::Ledger => None,
        };
        let mut checks: Vec<String> = Vec::new();
        for name in &self.checks {
            let name = match other_group {
                Some(group) if name.starts_with(group) => "default",
                _ => name.as_str(),
            };
            if !checks.iter().any(|known| known == name) {
                checks.push(name.to_string());
            }
        }
        let moved = Scenario {
            description: format!(
                "{} [on the {store} store: {}]",
                self.description,
                Scenario {
                    workload: workload.clone(),
                    ..self.clone()
                }
                .workload_name()
            ),
            store,
            workload,
            checks,
            skip_checks: Vec::new(),
            ..self.clone()
        };
        // Skips of checks the moved scenario does not run (the old store's group, a check
        // of the old recipe only) go with them.
        let runs = moved.check_set();
        let moved = Scenario {
            skip_checks: self
                .skip_checks
                .iter()
                .filter(|skipped| runs.iter().any(|check| check.name == skipped.check))
                .cloned()
                .collect(),
            ..moved
        };
        moved.validate()?;
        Ok(moved)
    }

    /// The workload's kind, with its recipe where it has one (`locks (zk_herd_lock)`).
    fn workload_name(&self) -> String {
        let recipe = match &self.workload {
            Workload::Locks(locks) => serde_json::to_value(locks.recipe).ok(),
            Workload::Elections(elections) => serde_json::to_value(elections.recipe).ok(),
            Workload::Discovery(discovery) => serde_json::to_value(discovery.recipe).ok(),
            _ => None,
        };
        match recipe.as_ref().and_then(|value| value.as_str()) {
            Some(recipe) => format!("{} ({recipe})", self.workload.kind()),
            None => self.workload.kind().to_string(),
        }
    }

    /// The scenario every catalogue scenario starts from: the store's mixed workload (kv
    /// mix, ZooKeeper mix, ledger appends), no faults, no known bugs, the default checks, an
    /// 8 s fault phase and a 20 s liveness bound.
    pub(crate) fn base(
        name: &str,
        description: &str,
        store: Store,
        servers: usize,
        clients: usize,
    ) -> Scenario {
        let workload = match store {
            Store::Raft => Workload::KvMix(KvMix::default()),
            Store::Zab => Workload::ZkMix(ZkMix::default()),
            Store::Ledger => Workload::Ledger(LedgerAppends::default()),
        };
        Scenario {
            name: name.into(),
            description: description.into(),
            store,
            servers,
            observers: 0,
            clients,
            workload,
            faults: FaultSource::None,
            bugs: Vec::new(),
            checks: vec!["default".into()],
            skip_checks: Vec::new(),
            marks: Vec::new(),
            fault_phase_ms: 8_000,
            recovery_ms: 0,
            liveness_bound_ms: 20_000,
            time_limit_ms: None,
            world: WorldSettings::default(),
            tuning: Tuning::default(),
        }
    }

    /// A scenario that runs the user's `code` on `clients` client nodes, against `servers`
    /// servers of the store it names: no faults (set them with [`Scenario::with_plan`] or
    /// the `faults` field), the store's checks and the code's, and the catalogue's phase
    /// lengths (an 8 s fault phase, a 20 s liveness bound). Its name is the code's.
    pub fn of_user_code(code: crate::workload::UserCode, servers: usize, clients: usize) -> Self {
        let mut scenario = Scenario::base(
            code.name(),
            "the user's own code, on every client node",
            code.store(),
            servers,
            clients,
        );
        scenario.workload = Workload::User(code);
        scenario
    }

    /// This scenario with `bugs` switched on instead of its own.
    pub fn with_bugs(mut self, bugs: impl IntoIterator<Item = KnownBug>) -> Self {
        self.bugs = bugs.into_iter().collect();
        self
    }

    /// This scenario running the check `name` as well, even if it skipped it: a test
    /// that shows a skipped check fire (paused holders break believed exclusion).
    pub fn with_check(mut self, name: &str) -> Self {
        self.skip_checks.retain(|skipped| skipped.check != name);
        if !self.checks.iter().any(|known| known == name) {
            self.checks.push(name.to_string());
        }
        self
    }

    /// This scenario with a `bits`-bit ZooKeeper sequence counter (`tuning.
    /// sequence_counter_bits`), which wraps within the run, and without
    /// `recipe.no_lost_wakeup`, which cannot order a line across the wrap and so would judge
    /// nothing: the skip and its reason go into every outcome.
    pub fn with_sequence_counter_bits(mut self, bits: u32) -> Self {
        self.tuning.sequence_counter_bits = Some(bits);
        let check = "recipe.no_lost_wakeup";
        if self.check_set().iter().any(|known| known.name == check) {
            self.skip_checks.push(SkippedCheck {
                check: check.into(),
                reason: format!(
                    "the {bits}-bit sequence counter wraps within the run, and a line is not \
                     ordered across the wrap (mutual exclusion and the herd bound judge it)"
                ),
            });
        }
        self
    }

    /// This scenario following `plan` instead of its own fault source.
    pub fn with_plan(mut self, plan: sim::fault::FaultPlan) -> Self {
        self.faults = FaultSource::Plan(plan);
        self
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every option of the run, as TigerBeetle's simulator prints them: the scenario
        // in full, as the file that reproduces it.
        let json = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        write!(f, "{json}")
    }
}

/// A scenario file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// TOML.
    Toml,
    /// JSON.
    Json,
}

fn field_of(path: &serde_path_to_error::Path) -> String {
    let text = path.to_string();
    if text == "." { String::new() } else { text }
}

fn json_problem(error: &serde_json::Error) -> String {
    // serde_json appends " at line L column C"; the line is reported apart.
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(position) => text[..position].to_string(),
        None => text,
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}
