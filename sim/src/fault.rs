//! Faults, partition shapes, and fault plans (explicit or generated from the seed).

use crate::{
    config::{ConfigError, WorldConfig, check_drift, check_probability, check_range_us},
    node::NodeId,
    ratio::Ratio,
};
use rand::{Rng, seq::SliceRandom};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::{collections::BTreeSet, fmt};

/// One fault. Every fault has its inverse (`Partition`/`Heal`, `Clog`/`Unclog`,
/// `Crash`/`Restart`, `Pause`/`Resume`); `HealAll` undoes everything at once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Cut the network into a shape (replacing any earlier partition).
    Partition {
        /// Which links to cut.
        shape: PartitionShape,
    },
    /// Repair the partition (clogged links stay clogged).
    Heal,
    /// Drop everything sent from `from` to `to` (one direction only).
    Clog {
        /// Sender side.
        from: NodeId,
        /// Receiver side.
        to: NodeId,
    },
    /// Undo a [`Fault::Clog`].
    Unclog {
        /// Sender side.
        from: NodeId,
        /// Receiver side.
        to: NodeId,
    },
    /// Set the datagram loss probability.
    Loss {
        /// Probability that a datagram is lost.
        rate: Ratio,
    },
    /// Set the one-way latency range.
    Latency {
        /// Smallest latency, microseconds.
        min_us: u64,
        /// Largest latency, microseconds.
        max_us: u64,
    },
    /// Set the datagram duplication probability.
    Duplication {
        /// Probability that a datagram is delivered twice.
        rate: Ratio,
    },
    /// Kill the node: its tasks stop, unsynced disk writes are lost, its connections break.
    Crash {
        /// The node.
        node: NodeId,
    },
    /// Start a crashed node again from its durable state.
    Restart {
        /// The node.
        node: NodeId,
    },
    /// Stop the node's tasks and timers while the world goes on (a GC pause).
    Pause {
        /// The node.
        node: NodeId,
    },
    /// Let a paused node run again.
    Resume {
        /// The node.
        node: NodeId,
    },
    /// Move the node's local clock (negative: backwards).
    ClockStep {
        /// The node.
        node: NodeId,
        /// How far to move it, milliseconds.
        delta_ms: i64,
    },
    /// Make the node's local clock run fast or slow from now on.
    ClockDrift {
        /// The node.
        node: NodeId,
        /// The new drift, parts per million (positive: fast).
        drift_ppm: i32,
    },
    /// Heal the partition, unclog every link, restore the configured network conditions,
    /// restart crashed nodes, resume paused ones, and stop every clock drifting.
    HealAll,
}

impl Fault {
    /// The kind of fault.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Partition { .. } | Fault::Heal => FaultKind::Partition,
            Fault::Clog { .. } | Fault::Unclog { .. } => FaultKind::Clog,
            Fault::Loss { .. } => FaultKind::Loss,
            Fault::Latency { .. } => FaultKind::Latency,
            Fault::Duplication { .. } => FaultKind::Duplication,
            Fault::Crash { .. } | Fault::Restart { .. } => FaultKind::Crash,
            Fault::Pause { .. } | Fault::Resume { .. } => FaultKind::Pause,
            Fault::ClockStep { .. } => FaultKind::ClockStep,
            Fault::ClockDrift { .. } => FaultKind::ClockDrift,
            Fault::HealAll => FaultKind::HealAll,
        }
    }

    fn nodes(&self) -> Vec<NodeId> {
        match self {
            Fault::Partition { shape } => shape.nodes(),
            Fault::Clog { from, to } | Fault::Unclog { from, to } => vec![*from, *to],
            Fault::Crash { node }
            | Fault::Restart { node }
            | Fault::Pause { node }
            | Fault::Resume { node }
            | Fault::ClockStep { node, .. }
            | Fault::ClockDrift { node, .. } => vec![*node],
            Fault::Heal
            | Fault::Loss { .. }
            | Fault::Latency { .. }
            | Fault::Duplication { .. }
            | Fault::HealAll => Vec::new(),
        }
    }

    /// Checks the fault against the world it will run in.
    pub fn validate(&self, field: &str, config: &WorldConfig) -> Result<(), ConfigError> {
        for node in self.nodes() {
            if !config.contains(node) {
                return Err(ConfigError::new(
                    field,
                    format!(
                        "names unknown node {node} (the world has s1..s{} and {})",
                        config.servers,
                        if config.clients == 0 {
                            "no clients".to_string()
                        } else {
                            format!("c1..c{}", config.clients)
                        }
                    ),
                ));
            }
        }
        match self {
            Fault::Loss { rate } | Fault::Duplication { rate } => check_probability(field, *rate),
            Fault::Latency { min_us, max_us } => check_range_us(field, *min_us, *max_us),
            Fault::ClockDrift { drift_ppm, .. } => check_drift(field, i64::from(*drift_ppm)),
            Fault::ClockStep { delta_ms, .. } if delta_ms.unsigned_abs() > 86_400_000 => Err(
                ConfigError::new(field, format!("a step of {delta_ms} ms is more than a day")),
            ),
            Fault::Clog { from, to } | Fault::Unclog { from, to } if from == to => Err(
                ConfigError::new(field, format!("clogs the link from {from} to itself")),
            ),
            Fault::Partition { shape } => shape.validate(field),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Partition { shape } => write!(f, "partition {shape}"),
            Fault::Heal => write!(f, "heal"),
            Fault::Clog { from, to } => write!(f, "clog {from}->{to}"),
            Fault::Unclog { from, to } => write!(f, "unclog {from}->{to}"),
            Fault::Loss { rate } => write!(f, "loss {rate}"),
            Fault::Latency { min_us, max_us } => write!(f, "latency {min_us}..={max_us}us"),
            Fault::Duplication { rate } => write!(f, "duplication {rate}"),
            Fault::Crash { node } => write!(f, "crash {node}"),
            Fault::Restart { node } => write!(f, "restart {node}"),
            Fault::Pause { node } => write!(f, "pause {node}"),
            Fault::Resume { node } => write!(f, "resume {node}"),
            Fault::ClockStep { node, delta_ms } => write!(f, "clock-step {node} {delta_ms:+}ms"),
            Fault::ClockDrift { node, drift_ppm } => {
                write!(f, "clock-drift {node} {drift_ppm:+}ppm")
            }
            Fault::HealAll => write!(f, "heal-all"),
        }
    }
}

/// Kinds of fault, for swarm selection and reporting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Partitions and heals.
    Partition,
    /// One-way link clogs.
    Clog,
    /// Datagram loss.
    Loss,
    /// Latency spikes.
    Latency,
    /// Datagram duplication.
    Duplication,
    /// Crashes and restarts.
    Crash,
    /// Pauses and resumes.
    Pause,
    /// Clock steps.
    ClockStep,
    /// Clock drift.
    ClockDrift,
    /// Heal everything.
    HealAll,
}

/// How a partition cuts the network. Shapes follow Jepsen's nemeses; the random ones are
/// resolved from the run's `nemesis` stream when they fire, and the history records the
/// exact links that were cut.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "shape", rename_all = "snake_case", deny_unknown_fields)]
pub enum PartitionShape {
    /// Servers split at random into two halves (the larger one a majority).
    Halves,
    /// One node (server or client) cut off from every other node.
    IsolateNode {
        /// The node.
        node: NodeId,
    },
    /// The server that most recently became leader (per the history), cut off from all.
    IsolateLeader,
    /// Servers in a random ring; each receives only from the majority centred on itself,
    /// so every server sees a majority but no two see the same one.
    MajorityRing,
    /// Servers split into two halves joined by one server that talks to both.
    Bridge,
    /// Explicit groups: no traffic between nodes of different groups; nodes in no group are
    /// unaffected.
    Groups {
        /// The groups.
        groups: Vec<Vec<NodeId>>,
    },
}

impl PartitionShape {
    fn nodes(&self) -> Vec<NodeId> {
        match self {
            PartitionShape::IsolateNode { node } => vec![*node],
            PartitionShape::Groups { groups } => groups.iter().flatten().copied().collect(),
            _ => Vec::new(),
        }
    }

    fn validate(&self, field: &str) -> Result<(), ConfigError> {
        if let PartitionShape::Groups { groups } = self {
            let mut seen = BTreeSet::new();
            for node in groups.iter().flatten() {
                if !seen.insert(*node) {
                    return Err(ConfigError::new(
                        field,
                        format!("node {node} appears in more than one partition group"),
                    ));
                }
            }
            if groups.len() < 2 {
                return Err(ConfigError::new(
                    field,
                    "a partition needs at least two groups",
                ));
            }
        }
        Ok(())
    }

    /// The directed links (`from`, `to`) this shape cuts: `to` receives nothing from `from`.
    ///
    /// `leader` is the current leader for [`PartitionShape::IsolateLeader`]. Returns `None`
    /// when the shape cannot apply (a bridge needs three servers; no leader is known).
    pub(crate) fn resolve(
        &self,
        servers: &[NodeId],
        all_nodes: &[NodeId],
        leader: Option<NodeId>,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<(NodeId, NodeId)>, &'static str> {
        let mut links = Vec::new();
        let cut_between = |links: &mut Vec<(NodeId, NodeId)>, a: &[NodeId], b: &[NodeId]| {
            for &x in a {
                for &y in b {
                    links.push((x, y));
                    links.push((y, x));
                }
            }
        };
        match self {
            PartitionShape::Halves => {
                if servers.len() < 2 {
                    return Err("halves need at least two servers");
                }
                let mut order = servers.to_vec();
                order.shuffle(rng);
                let (left, right) = order.split_at(order.len() / 2);
                cut_between(&mut links, left, right);
            }
            PartitionShape::IsolateNode { node } => {
                let others: Vec<NodeId> = all_nodes.iter().copied().filter(|n| n != node).collect();
                cut_between(&mut links, &[*node], &others);
            }
            PartitionShape::IsolateLeader => {
                let leader = leader.ok_or("no leader is known")?;
                let others: Vec<NodeId> =
                    all_nodes.iter().copied().filter(|n| *n != leader).collect();
                cut_between(&mut links, &[leader], &others);
            }
            PartitionShape::MajorityRing => {
                let n = servers.len();
                if n < 3 {
                    return Err("a majority ring needs at least three servers");
                }
                let mut ring = servers.to_vec();
                ring.shuffle(rng);
                let majority = n / 2 + 1;
                let behind = (majority - 1) / 2;
                let ahead = majority - 1 - behind;
                for (position, &receiver) in ring.iter().enumerate() {
                    let visible: BTreeSet<usize> = (0..=behind)
                        .map(|k| (position + n - k) % n)
                        .chain((0..=ahead).map(|k| (position + k) % n))
                        .collect();
                    for (other_position, &sender) in ring.iter().enumerate() {
                        if !visible.contains(&other_position) {
                            links.push((sender, receiver));
                        }
                    }
                }
            }
            PartitionShape::Bridge => {
                if servers.len() < 3 {
                    return Err("a bridge needs at least three servers");
                }
                let mut order = servers.to_vec();
                order.shuffle(rng);
                let rest = &order[1..];
                let (left, right) = rest.split_at(rest.len() / 2);
                cut_between(&mut links, left, right);
            }
            PartitionShape::Groups { groups } => {
                for (i, a) in groups.iter().enumerate() {
                    for b in &groups[i + 1..] {
                        cut_between(&mut links, a, b);
                    }
                }
            }
        }
        links.sort();
        links.dedup();
        Ok(links)
    }
}

impl fmt::Display for PartitionShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartitionShape::Halves => write!(f, "halves"),
            PartitionShape::IsolateNode { node } => write!(f, "isolate {node}"),
            PartitionShape::IsolateLeader => write!(f, "isolate leader"),
            PartitionShape::MajorityRing => write!(f, "majority ring"),
            PartitionShape::Bridge => write!(f, "bridge"),
            PartitionShape::Groups { groups } => {
                let groups: Vec<String> = groups
                    .iter()
                    .map(|g| {
                        g.iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .collect();
                write!(f, "groups [{}]", groups.join(" | "))
            }
        }
    }
}

/// A fault and when it fires. In JSON: `{"at_ms": 100, "fault": "crash", "node": "s1"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledFault {
    /// Simulated time of the fault, milliseconds since the world started.
    pub at_ms: u64,
    /// The fault.
    #[serde(flatten)]
    pub fault: Fault,
}

/// A schedule of faults. Generated plans list every fault explicitly, so a printed plan can
/// be saved and re-run without the seed's generator.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultPlan {
    /// For a generated plan: the fault kinds the seed switched on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enabled_kinds: Vec<FaultKind>,
    /// The faults, in the order they fire.
    pub faults: Vec<ScheduledFault>,
}

impl FaultPlan {
    /// An explicit plan.
    pub fn new(faults: Vec<ScheduledFault>) -> Self {
        let mut plan = Self {
            enabled_kinds: Vec::new(),
            faults,
        };
        plan.faults.sort_by_key(|scheduled| scheduled.at_ms);
        plan
    }

    /// Checks every fault against the world.
    pub fn validate(&self, field: &str, config: &WorldConfig) -> Result<(), ConfigError> {
        for (index, scheduled) in self.faults.iter().enumerate() {
            scheduled
                .fault
                .validate(&format!("{field}[{index}]"), config)?;
        }
        Ok(())
    }

    /// When the last fault fires (the end of the fault phase), milliseconds.
    pub fn end_ms(&self) -> u64 {
        self.faults.iter().map(|f| f.at_ms).max().unwrap_or(0)
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
            writeln!(f, "  at {:>7} ms: {}", scheduled.at_ms, scheduled.fault)?;
        }
        Ok(())
    }
}

/// Whether a generated plan may fault client nodes too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientFaults {
    /// Only servers are crashed, paused, isolated or skewed.
    #[default]
    Excluded,
    /// Clients may be crashed, paused, isolated or skewed as well.
    Included,
}

/// Parameters of a plan generated from the seed ("swarm testing": each seed switches a
/// random subset of fault kinds on, so that rare combinations get explored).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SwarmConfig {
    /// Faults fire during the first `fault_phase_ms`; then everything is healed.
    pub fault_phase_ms: u64,
    /// Mean time between faults, milliseconds.
    pub mean_interval_ms: u64,
    /// At most this many servers are crashed or paused at once (default: a minority).
    pub max_unavailable_servers: Option<usize>,
    /// Whether client nodes are targets too.
    pub client_faults: ClientFaults,
    /// Restrict generation to these kinds (default: all but `HealAll`); the seed then picks
    /// a random non-empty subset of them.
    pub kinds: Vec<FaultKind>,
}

impl Default for SwarmConfig {
    fn default() -> Self {
        Self {
            fault_phase_ms: 20_000,
            mean_interval_ms: 1_000,
            max_unavailable_servers: None,
            client_faults: ClientFaults::Excluded,
            kinds: Vec::new(),
        }
    }
}

const SWARM_KINDS: [FaultKind; 9] = [
    FaultKind::Partition,
    FaultKind::Clog,
    FaultKind::Loss,
    FaultKind::Latency,
    FaultKind::Duplication,
    FaultKind::Crash,
    FaultKind::Pause,
    FaultKind::ClockStep,
    FaultKind::ClockDrift,
];

impl SwarmConfig {
    /// Checks the parameters.
    pub fn validate(&self, field: &str) -> Result<(), ConfigError> {
        if self.mean_interval_ms == 0 {
            return Err(ConfigError::new(
                format!("{field}.mean_interval_ms"),
                "0 ms (expected a positive interval)",
            ));
        }
        if self.kinds.contains(&FaultKind::HealAll) {
            return Err(ConfigError::new(
                format!("{field}.kinds"),
                "heal_all is always scheduled at the end of the fault phase; do not list it",
            ));
        }
        Ok(())
    }

    /// Generates a plan for `config` from the `faults` stream `rng`.
    pub fn generate(&self, config: &WorldConfig, rng: &mut ChaCha8Rng) -> FaultPlan {
        Generator::new(self, config, rng).run()
    }
}

struct Generator<'a> {
    swarm: &'a SwarmConfig,
    config: &'a WorldConfig,
    rng: &'a mut ChaCha8Rng,
    faults: Vec<ScheduledFault>,
    /// Per node: the time until which it is crashed or paused.
    unavailable_until: Vec<(NodeId, u64)>,
    partition_until: u64,
    latency_until: u64,
    clogged_until: Vec<((NodeId, NodeId), u64)>,
}

impl<'a> Generator<'a> {
    fn new(swarm: &'a SwarmConfig, config: &'a WorldConfig, rng: &'a mut ChaCha8Rng) -> Self {
        Self {
            swarm,
            config,
            rng,
            faults: Vec::new(),
            unavailable_until: Vec::new(),
            partition_until: 0,
            latency_until: 0,
            clogged_until: Vec::new(),
        }
    }

    fn push(&mut self, at_ms: u64, fault: Fault) {
        self.faults.push(ScheduledFault { at_ms, fault });
    }

    fn targets(&self) -> Vec<NodeId> {
        let servers = (0..self.config.servers).map(NodeId::server);
        match self.swarm.client_faults {
            ClientFaults::Excluded => servers.collect(),
            ClientFaults::Included => servers
                .chain((0..self.config.clients).map(NodeId::client))
                .collect(),
        }
    }

    fn duration(&mut self, now: u64, min_factor: u64, max_factor: u64) -> u64 {
        let mean = self.swarm.mean_interval_ms;
        let duration = self
            .rng
            .gen_range(mean * min_factor / 2..=mean * max_factor);
        duration.clamp(1, self.swarm.fault_phase_ms.saturating_sub(now).max(1))
    }

    fn run(mut self) -> FaultPlan {
        let candidates: Vec<FaultKind> = if self.swarm.kinds.is_empty() {
            SWARM_KINDS.to_vec()
        } else {
            self.swarm.kinds.clone()
        };
        let mut enabled: Vec<FaultKind> = candidates
            .iter()
            .copied()
            .filter(|_| self.rng.gen_bool(0.5))
            .collect();
        if enabled.is_empty() {
            enabled.push(
                *candidates
                    .choose(self.rng)
                    .expect("candidate kinds are non-empty"),
            );
        }
        enabled.sort();
        enabled.dedup();

        if enabled.contains(&FaultKind::Loss) {
            let percent = self.rng.gen_range(1..=10);
            self.push(
                0,
                Fault::Loss {
                    rate: Ratio::new(percent, 100),
                },
            );
        }
        if enabled.contains(&FaultKind::Duplication) {
            let percent = self.rng.gen_range(1..=10);
            self.push(
                0,
                Fault::Duplication {
                    rate: Ratio::new(percent, 100),
                },
            );
        }
        let timed: Vec<FaultKind> = enabled
            .iter()
            .copied()
            .filter(|k| !matches!(k, FaultKind::Loss | FaultKind::Duplication))
            .collect();
        let phase = self.swarm.fault_phase_ms;
        let mean = self.swarm.mean_interval_ms;
        let mut now = 0u64;
        while !timed.is_empty() {
            now += self.rng.gen_range(mean / 2..=mean + mean / 2).max(1);
            if now >= phase {
                break;
            }
            let kind = *timed.choose(self.rng).expect("non-empty");
            self.schedule(kind, now);
        }
        self.push(phase, Fault::HealAll);
        self.faults.sort_by_key(|f| f.at_ms);
        FaultPlan {
            enabled_kinds: enabled,
            faults: self.faults,
        }
    }

    fn schedule(&mut self, kind: FaultKind, now: u64) {
        let servers: Vec<NodeId> = (0..self.config.servers).map(NodeId::server).collect();
        match kind {
            FaultKind::Partition => {
                if self.partition_until > now {
                    return;
                }
                let mut shapes = vec![PartitionShape::IsolateLeader];
                if servers.len() >= 2 {
                    shapes.push(PartitionShape::Halves);
                    let node = *servers.choose(self.rng).expect("servers");
                    shapes.push(PartitionShape::IsolateNode { node });
                }
                if servers.len() >= 3 {
                    shapes.push(PartitionShape::MajorityRing);
                    shapes.push(PartitionShape::Bridge);
                }
                if self.swarm.client_faults == ClientFaults::Included && self.config.clients > 0 {
                    let node = NodeId::client(self.rng.gen_range(0..self.config.clients));
                    shapes.push(PartitionShape::IsolateNode { node });
                }
                let shape = shapes.choose(self.rng).expect("shapes").clone();
                let until = now + self.duration(now, 2, 5);
                self.partition_until = until;
                self.push(now, Fault::Partition { shape });
                self.push(until, Fault::Heal);
            }
            FaultKind::Clog => {
                if servers.len() < 2 {
                    return;
                }
                let from = *servers.choose(self.rng).expect("servers");
                let to = *servers.choose(self.rng).expect("servers");
                let busy = self
                    .clogged_until
                    .iter()
                    .any(|(link, until)| *link == (from, to) && *until > now);
                if from == to || busy {
                    return;
                }
                let until = now + self.duration(now, 2, 4);
                self.clogged_until.push(((from, to), until));
                self.push(now, Fault::Clog { from, to });
                self.push(until, Fault::Unclog { from, to });
            }
            FaultKind::Latency => {
                if self.latency_until > now {
                    return;
                }
                let until = now + self.duration(now, 1, 3);
                self.latency_until = until;
                let min_us = self.config.network.latency_min_us;
                let max_us = self.rng.gen_range(20_000..=200_000).max(min_us);
                self.push(now, Fault::Latency { min_us, max_us });
                self.push(
                    until,
                    Fault::Latency {
                        min_us,
                        max_us: self.config.network.latency_max_us,
                    },
                );
            }
            FaultKind::Crash | FaultKind::Pause => {
                let max_servers = self
                    .swarm
                    .max_unavailable_servers
                    .unwrap_or((self.config.servers.saturating_sub(1)) / 2);
                let servers_down = self
                    .unavailable_until
                    .iter()
                    .filter(|(node, until)| node.is_server() && *until > now)
                    .count();
                let candidates: Vec<NodeId> = self
                    .targets()
                    .into_iter()
                    .filter(|node| {
                        let down = self
                            .unavailable_until
                            .iter()
                            .any(|(n, until)| n == node && *until > now);
                        !down && (!node.is_server() || servers_down < max_servers)
                    })
                    .collect();
                let Some(&node) = candidates.choose(self.rng) else {
                    return;
                };
                let until = now + self.duration(now, 1, 4);
                self.unavailable_until.push((node, until));
                if kind == FaultKind::Crash {
                    self.push(now, Fault::Crash { node });
                    self.push(until, Fault::Restart { node });
                } else {
                    self.push(now, Fault::Pause { node });
                    self.push(until, Fault::Resume { node });
                }
            }
            FaultKind::ClockStep => {
                let node = *self.targets().choose(self.rng).expect("targets");
                let magnitude = self.rng.gen_range(1..=2_000);
                let delta_ms = if self.rng.gen_bool(0.5) {
                    magnitude
                } else {
                    -magnitude
                };
                self.push(now, Fault::ClockStep { node, delta_ms });
            }
            FaultKind::ClockDrift => {
                let node = *self.targets().choose(self.rng).expect("targets");
                let magnitude = self.rng.gen_range(1_000..=100_000);
                let drift_ppm = if self.rng.gen_bool(0.5) {
                    magnitude
                } else {
                    -magnitude
                };
                self.push(now, Fault::ClockDrift { node, drift_ppm });
            }
            FaultKind::Loss | FaultKind::Duplication | FaultKind::HealAll => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn servers(n: usize) -> Vec<NodeId> {
        (0..n).map(NodeId::server).collect()
    }

    #[test]
    fn majority_ring_gives_every_server_a_distinct_majority() {
        for n in [3, 4, 5, 7] {
            let nodes = servers(n);
            let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
            let links = PartitionShape::MajorityRing
                .resolve(&nodes, &nodes, None, &mut rng)
                .unwrap();
            let mut views = BTreeSet::new();
            for &receiver in &nodes {
                let visible: BTreeSet<NodeId> = nodes
                    .iter()
                    .copied()
                    .filter(|&sender| !links.contains(&(sender, receiver)))
                    .collect();
                assert_eq!(visible.len(), n / 2 + 1, "n={n}");
                assert!(visible.contains(&receiver));
                views.insert(visible);
            }
            assert_eq!(views.len(), n, "views must be distinct for n={n}");
        }
    }

    #[test]
    fn halves_and_bridge_cut_the_expected_links() {
        let nodes = servers(5);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let halves = PartitionShape::Halves
            .resolve(&nodes, &nodes, None, &mut rng)
            .unwrap();
        // 2 × 3 nodes, both directions.
        assert_eq!(halves.len(), 12);
        let bridge = PartitionShape::Bridge
            .resolve(&nodes, &nodes, None, &mut rng)
            .unwrap();
        // 2 × 2 nodes, both directions; the bridge keeps every link.
        assert_eq!(bridge.len(), 8);
        let cut: BTreeSet<NodeId> = bridge.iter().flat_map(|(a, b)| [*a, *b]).collect();
        assert_eq!(cut.len(), 4);
        assert!(
            PartitionShape::Bridge
                .resolve(&servers(2), &servers(2), None, &mut rng)
                .is_err()
        );
        assert!(
            PartitionShape::IsolateLeader
                .resolve(&nodes, &nodes, None, &mut rng)
                .is_err()
        );
    }

    #[test]
    fn plans_round_trip_through_json() {
        let plan = FaultPlan::new(vec![
            ScheduledFault {
                at_ms: 100,
                fault: Fault::Partition {
                    shape: PartitionShape::IsolateNode {
                        node: NodeId::server(0),
                    },
                },
            },
            ScheduledFault {
                at_ms: 50,
                fault: Fault::Crash {
                    node: NodeId::client(1),
                },
            },
            ScheduledFault {
                at_ms: 200,
                fault: Fault::Loss {
                    rate: Ratio::new(1, 10),
                },
            },
        ]);
        assert_eq!(plan.faults[0].at_ms, 50, "plans are sorted by time");
        let json = serde_json::to_string(&plan).unwrap();
        assert!(json.contains(r#""fault":"crash""#), "{json}");
        let back: FaultPlan = serde_json::from_str(&json).unwrap();
        assert_eq!(back, plan);
        let typo = r#"{"faults": [{"at_ms": 1, "fault": "crash", "nod": "s1"}]}"#;
        assert!(serde_json::from_str::<FaultPlan>(typo).is_err());
        let unknown = r#"{"faults": [{"at_ms": 1, "fault": "explode"}]}"#;
        assert!(serde_json::from_str::<FaultPlan>(unknown).is_err());
    }

    #[test]
    fn plan_validation_names_the_bad_fault() {
        let config = WorldConfig {
            servers: 3,
            clients: 1,
            ..WorldConfig::default()
        };
        let plan = FaultPlan::new(vec![
            ScheduledFault {
                at_ms: 1,
                fault: Fault::Crash {
                    node: NodeId::server(0),
                },
            },
            ScheduledFault {
                at_ms: 2,
                fault: Fault::Crash {
                    node: NodeId::server(7),
                },
            },
        ]);
        let error = plan.validate("faults.plan", &config).unwrap_err();
        assert_eq!(error.field, "faults.plan[1]");
        assert!(error.problem.contains("s8"), "{error}");
        let plan = FaultPlan::new(vec![ScheduledFault {
            at_ms: 1,
            fault: Fault::Loss {
                rate: Ratio::new(2, 1),
            },
        }]);
        assert_eq!(
            plan.validate("faults.plan", &config).unwrap_err().field,
            "faults.plan[0]"
        );
    }

    #[test]
    fn swarm_plans_pair_faults_and_end_healed() {
        let config = WorldConfig {
            servers: 5,
            clients: 2,
            ..WorldConfig::default()
        };
        let swarm = SwarmConfig {
            client_faults: ClientFaults::Included,
            ..SwarmConfig::default()
        };
        for seed in 0..50 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let plan = swarm.generate(&config, &mut rng);
            plan.validate("plan", &config).unwrap();
            assert!(!plan.enabled_kinds.is_empty());
            let last = plan.faults.last().unwrap();
            assert_eq!(last.fault, Fault::HealAll);
            assert_eq!(last.at_ms, swarm.fault_phase_ms);
            // Never more than a minority of servers unavailable at once.
            let mut down = BTreeSet::new();
            for scheduled in &plan.faults {
                match scheduled.fault {
                    Fault::Crash { node } | Fault::Pause { node } => {
                        assert!(down.insert(node), "seed {seed}: {node} faulted twice");
                    }
                    Fault::Restart { node } | Fault::Resume { node } => {
                        down.remove(&node);
                    }
                    _ => {}
                }
                assert!(
                    down.iter().filter(|n| n.is_server()).count() <= 2,
                    "seed {seed}"
                );
            }
            // Same seed, same plan.
            let mut again = ChaCha8Rng::seed_from_u64(seed);
            assert_eq!(swarm.generate(&config, &mut again), plan);
        }
    }
}
