//! Fault plans: what fires when, with spans and named targets, and where plans come from.

use super::FaultWorld;
use super::{
    CutOffLeader, Fault, FaultKind, FlappingFollower, LeaderKiller, PauseClients, QuorumRestart,
    RejoinCrash, SwarmConfig, Target,
};
use crate::config_error::ConfigError;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::{collections::BTreeSet, fmt};

/// A fault and when it fires. In JSON:
/// `{"at_ms": 100, "fault": "crash", "node": "leader", "for_ms": 800, "as": "victim"}`.
///
/// With `for_ms`, the fault's inverse fires that much later on the node the fault resolved
/// to (restart after a crash, resume after a pause, heal after a partition, the configured
/// network conditions back after a loss, latency or duplication change, no drift after a
/// drift): one entry, so shrinking drops or shortens the pair together. With `as`, later
/// faults can name the node this one resolved to as `$name`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledFault {
    /// Simulated time of the fault, milliseconds since the world started.
    pub at_ms: u64,
    /// The fault.
    #[serde(flatten)]
    pub fault: Fault,
    /// How long until its inverse fires, milliseconds (none: it stays until undone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_ms: Option<u64>,
    /// A name for the node the fault resolved to, for later faults' `$name` targets.
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl ScheduledFault {
    /// `fault` at `at_ms`, with no span and no name.
    pub fn at(at_ms: u64, fault: Fault) -> Self {
        Self {
            at_ms,
            fault,
            for_ms: None,
            label: None,
        }
    }

    /// With its inverse `for_ms` later.
    pub fn lasting(mut self, for_ms: u64) -> Self {
        self.for_ms = Some(for_ms);
        self
    }

    /// Naming the node it resolves to.
    pub fn named(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// When its effect ends: its time plus its span.
    pub fn end_ms(&self) -> u64 {
        self.at_ms.saturating_add(self.for_ms.unwrap_or(0))
    }
}

impl fmt::Display for ScheduledFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {:>7} ms: {}", self.at_ms, self.fault)?;
        if let Some(for_ms) = self.for_ms {
            write!(f, " for {for_ms} ms")?;
        }
        if let Some(label) = &self.label {
            write!(f, " as ${label}")?;
        }
        Ok(())
    }
}

/// A schedule of faults. Generated plans list every fault explicitly, so a printed plan can
/// be saved and re-run without the seed's generator.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultPlan {
    /// For a generated plan: the fault kinds the seed switched on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enabled_kinds: Vec<super::FaultKind>,
    /// The faults, in the order they fire.
    pub faults: Vec<ScheduledFault>,
}

impl FaultPlan {
    /// An explicit plan (sorted by time; faults at the same time keep their order).
    pub fn new(faults: Vec<ScheduledFault>) -> Self {
        let mut plan = Self {
            enabled_kinds: Vec::new(),
            faults,
        };
        plan.faults.sort_by_key(|scheduled| scheduled.at_ms);
        plan
    }

    /// Checks every fault against the world: nodes exist, magnitudes are sane, spans are
    /// only on faults that have an inverse, and every `$name` was named by an earlier fault.
    pub fn validate(&self, field: &str, config: &dyn FaultWorld) -> Result<(), ConfigError> {
        let mut names = BTreeSet::new();
        for (index, scheduled) in self.faults.iter().enumerate() {
            let field = format!("{field}[{index}]");
            scheduled.fault.validate(&field, config)?;
            if let Some(Target::Label(name)) = scheduled.fault.subject()
                && !names.contains(name)
            {
                return Err(ConfigError::new(
                    field,
                    format!("targets `${name}`, which no earlier fault named with `as`"),
                ));
            }
            if let Some(for_ms) = scheduled.for_ms {
                if !scheduled.fault.has_inverse() {
                    return Err(ConfigError::new(
                        format!("{field}.for_ms"),
                        format!(
                            "`{}` has no inverse to fire after a span (expected no for_ms)",
                            scheduled.fault
                        ),
                    ));
                }
                if for_ms == 0 {
                    return Err(ConfigError::new(
                        format!("{field}.for_ms"),
                        "0 ms (expected a positive span)",
                    ));
                }
            }
            if let Some(label) = &scheduled.label {
                if scheduled.fault.subject().is_none() {
                    return Err(ConfigError::new(
                        format!("{field}.as"),
                        format!("`{}` acts on no single node to name", scheduled.fault),
                    ));
                }
                names.insert(label.clone());
            }
        }
        Ok(())
    }

    /// Checks that every fault fires within a fault phase of `phase_ms` and that its span
    /// ends by then, when the world heals. (A raw world stretches its phase to the plan's
    /// end; a scenario's phase is a promise — recovery and the liveness bound are measured
    /// from it — so a fault after it would fire after the heal, or push the run into its
    /// time limit.)
    pub fn validate_within_phase(&self, field: &str, phase_ms: u64) -> Result<(), ConfigError> {
        for (index, scheduled) in self.faults.iter().enumerate() {
            let field = format!("{field}[{index}]");
            if scheduled.at_ms >= phase_ms {
                return Err(ConfigError::new(
                    format!("{field}.at_ms"),
                    format!(
                        "{} ms is not within the fault phase of {phase_ms} ms (expected a time \
                         below {phase_ms}: the world heals then)",
                        scheduled.at_ms
                    ),
                ));
            }
            if let Some(for_ms) = scheduled.for_ms
                && scheduled.end_ms() > phase_ms
            {
                return Err(ConfigError::new(
                    format!("{field}.for_ms"),
                    format!(
                        "{for_ms} ms from {} ms ends at {} ms, after the fault phase of \
                         {phase_ms} ms (expected a span that ends by {phase_ms} ms, or none: \
                         the heal undoes the fault)",
                        scheduled.at_ms,
                        scheduled.end_ms()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// When the last fault's effect ends (its time plus its span), milliseconds.
    pub fn end_ms(&self) -> u64 {
        self.faults
            .iter()
            .map(ScheduledFault::end_ms)
            .max()
            .unwrap_or(0)
    }
}

impl fmt::Display for FaultPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.enabled_kinds.is_empty() {
            let kinds: Vec<String> = self
                .enabled_kinds
                .iter()
                .map(|k| format!("{k:?}").to_lowercase())
                .collect();
            writeln!(f, "enabled fault kinds: {}", kinds.join(", "))?;
        }
        for scheduled in &self.faults {
            writeln!(f, "  {scheduled}")?;
        }
        Ok(())
    }
}

/// Where a run's faults come from. Every source turns into a [`FaultPlan`] before the run
/// (generated ones from the seed's `faults` stream), and the run follows only that plan, so
/// the plan a run printed replays it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultSource {
    /// No faults.
    #[default]
    None,
    /// An explicit schedule.
    Plan(FaultPlan),
    /// A schedule generated from the seed: random fault kinds at random times.
    Swarm(SwarmConfig),
    /// Crash the leader again and again (some after stranding it with the clients).
    LeaderKiller(LeaderKiller),
    /// Cut the leader off, with some clients, again and again.
    CutOffLeader(CutOffLeader),
    /// Isolate one follower and let it back, again and again.
    FlappingFollower(FlappingFollower),
    /// Pause clients past their session timeout or lease TTL.
    PauseClients(PauseClients),
    /// Crash every server, bring back a quorum without the last leader.
    QuorumRestart(QuorumRestart),
    /// Crash the leader and a follower just as the follower rejoins, the others stalled.
    RejoinCrash(RejoinCrash),
}

impl FaultSource {
    /// Checks the source's parameters (field names under `field`).
    pub fn validate(&self, field: &str, config: &dyn FaultWorld) -> Result<(), ConfigError> {
        match self {
            FaultSource::None => Ok(()),
            FaultSource::Plan(plan) => plan.validate(&format!("{field}.plan"), config),
            FaultSource::Swarm(swarm) => swarm.validate(&format!("{field}.swarm")),
            FaultSource::LeaderKiller(killer) => {
                killer.validate(&format!("{field}.leader_killer"), config)
            }
            FaultSource::CutOffLeader(cut) => cut.validate(&format!("{field}.cut_off_leader")),
            FaultSource::FlappingFollower(flap) => {
                flap.validate(&format!("{field}.flapping_follower"), config)
            }
            FaultSource::PauseClients(pause) => {
                pause.validate(&format!("{field}.pause_clients"), config)
            }
            FaultSource::QuorumRestart(restart) => {
                restart.validate(&format!("{field}.quorum_restart"), config)
            }
            FaultSource::RejoinCrash(rejoin) => {
                rejoin.validate(&format!("{field}.rejoin_crash"), config)
            }
        }
    }

    /// The fault kinds this source turns on (for a swarm, the kinds a seed may pick from;
    /// for a plan, the kinds of its faults, inverses not counted): what a sweep over it
    /// must see fire, each by its own counter.
    pub fn kinds(&self) -> Vec<FaultKind> {
        let mut kinds: Vec<FaultKind> = match self {
            FaultSource::None => Vec::new(),
            FaultSource::Plan(plan) => plan
                .faults
                .iter()
                .filter(|scheduled| !scheduled.fault.is_inverse())
                .map(|scheduled| scheduled.fault.kind())
                .collect(),
            FaultSource::Swarm(swarm) if swarm.kinds.is_empty() => FaultKind::FAULTS.to_vec(),
            FaultSource::Swarm(swarm) => swarm.kinds.clone(),
            FaultSource::LeaderKiller(killer) => {
                let mut kinds = vec![FaultKind::Crash];
                if killer.strand_leader_percent > 0 {
                    kinds.push(FaultKind::Partition);
                }
                kinds
            }
            FaultSource::CutOffLeader(cut) => {
                let mut kinds = vec![FaultKind::Partition];
                if cut.leader_drift_ppm != 0 {
                    kinds.push(FaultKind::ClockDrift);
                }
                kinds
            }
            FaultSource::FlappingFollower(_) => vec![FaultKind::Partition],
            FaultSource::PauseClients(_) => vec![FaultKind::Pause],
            FaultSource::QuorumRestart(_) => vec![FaultKind::Crash],
            FaultSource::RejoinCrash(_) => vec![FaultKind::Crash, FaultKind::Pause],
        };
        kinds.sort();
        kinds.dedup();
        kinds
    }

    /// The plan: the explicit one, or one generated for `config` over a fault phase of
    /// `phase_ms` from the `faults` stream `rng`.
    pub fn plan(&self, config: &dyn FaultWorld, phase_ms: u64, rng: &mut ChaCha8Rng) -> FaultPlan {
        match self {
            FaultSource::None => FaultPlan::default(),
            FaultSource::Plan(plan) => plan.clone(),
            FaultSource::Swarm(swarm) => swarm.generate(config, phase_ms, rng),
            FaultSource::LeaderKiller(killer) => killer.generate(config, phase_ms, rng),
            FaultSource::CutOffLeader(cut) => cut.generate(config, phase_ms, rng),
            FaultSource::FlappingFollower(flap) => flap.generate(config, phase_ms, rng),
            FaultSource::PauseClients(pause) => pause.generate(config, phase_ms, rng),
            FaultSource::QuorumRestart(restart) => restart.generate(config, phase_ms, rng),
            FaultSource::RejoinCrash(rejoin) => rejoin.generate(config, phase_ms, rng),
        }
    }
}
