//! Faults, their targets, partition shapes, and fault plans: explicit, generated from the
//! seed ("swarm"), or directed (leader killer, cut-off leader, flapping follower, paused
//! client, quorum restart, crash on rejoin), every one of them plain data that replays and shrinks.

mod directed;
mod plan;
mod swarm;
mod target;
mod world;

pub use directed::{
    CutOffLeader, FlappingFollower, LeaderKiller, PauseClients, PausedClient, QuorumRestart,
    RejoinCrash,
};
pub use plan::{FaultPlan, FaultSource, ScheduledFault};
pub use swarm::{ClientFaults, SwarmConfig};
pub use target::{Target, TargetParseError};
pub use world::FaultWorld;

use crate::{
    config_error::{ConfigError, check_drift, check_probability, check_range_us},
    node::NodeId,
    ratio::Ratio,
};
use rand::seq::SliceRandom;
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
        /// The node (or a role resolved when the fault fires).
        node: Target,
    },
    /// Start a crashed node again from its durable state.
    Restart {
        /// The node (or a role resolved when the fault fires).
        node: Target,
    },
    /// Stop the node's tasks and timers while the world goes on (a GC pause).
    Pause {
        /// The node (or a role resolved when the fault fires).
        node: Target,
    },
    /// Let a paused node run again.
    Resume {
        /// The node (or a role resolved when the fault fires).
        node: Target,
    },
    /// Move the node's local clock (negative: backwards).
    ClockStep {
        /// The node (or a role resolved when the fault fires).
        node: Target,
        /// How far to move it, milliseconds.
        delta_ms: i64,
    },
    /// Make the node's local clock run fast or slow from now on.
    ClockDrift {
        /// The node (or a role resolved when the fault fires).
        node: Target,
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

    /// Whether this fault undoes others (a heal, an unclog, a restart, a resume, a drift
    /// back to zero, a heal-all) rather than being one.
    pub fn is_inverse(&self) -> bool {
        matches!(
            self,
            Fault::Heal
                | Fault::Unclog { .. }
                | Fault::Restart { .. }
                | Fault::Resume { .. }
                | Fault::HealAll
                | Fault::ClockDrift { drift_ppm: 0, .. }
        )
    }

    /// The one node the fault is about, as written (a node or a role): the node a crash,
    /// pause, clock fault or its inverse acts on, or the node a partition cuts off.
    pub fn subject(&self) -> Option<&Target> {
        match self {
            Fault::Crash { node }
            | Fault::Restart { node }
            | Fault::Pause { node }
            | Fault::Resume { node }
            | Fault::ClockStep { node, .. }
            | Fault::ClockDrift { node, .. } => Some(node),
            Fault::Partition { shape } => shape.subject(),
            _ => None,
        }
    }

    /// The nodes the fault names outright (not roles).
    fn nodes(&self) -> Vec<NodeId> {
        let mut nodes: Vec<NodeId> = self.subject().and_then(Target::node).into_iter().collect();
        match self {
            Fault::Partition { shape } => nodes.extend(shape.nodes()),
            Fault::Clog { from, to } | Fault::Unclog { from, to } => nodes.extend([*from, *to]),
            _ => {}
        }
        nodes
    }

    /// Whether the fault has an inverse that a span (`for_ms`) can fire: [`Fault::inverse`]
    /// is `Some` exactly for these.
    pub fn has_inverse(&self) -> bool {
        !matches!(
            self,
            Fault::Heal
                | Fault::Unclog { .. }
                | Fault::Restart { .. }
                | Fault::Resume { .. }
                | Fault::ClockStep { .. }
                | Fault::HealAll
        )
    }

    /// The fault that undoes this one after a span (`for_ms` in a plan), with the subject
    /// already resolved to `subject`; `config` gives the network conditions to restore.
    /// `None` for faults that have no inverse (a clock step, a heal, an inverse itself).
    pub fn inverse(&self, subject: Option<NodeId>, config: &dyn FaultWorld) -> Option<Fault> {
        let node = || Target::Node(subject.expect("a resolved subject"));
        match self {
            Fault::Partition { .. } => Some(Fault::Heal),
            Fault::Clog { from, to } => Some(Fault::Unclog {
                from: *from,
                to: *to,
            }),
            Fault::Crash { .. } => Some(Fault::Restart { node: node() }),
            Fault::Pause { .. } => Some(Fault::Resume { node: node() }),
            Fault::ClockDrift { .. } => Some(Fault::ClockDrift {
                node: node(),
                drift_ppm: 0,
            }),
            Fault::Loss { .. } => Some(Fault::Loss {
                rate: config.configured_loss(),
            }),
            Fault::Duplication { .. } => Some(Fault::Duplication {
                rate: config.configured_duplication(),
            }),
            Fault::Latency { .. } => Some(Fault::Latency {
                min_us: config.configured_latency_us().0,
                max_us: config.configured_latency_us().1,
            }),
            Fault::Heal
            | Fault::Unclog { .. }
            | Fault::Restart { .. }
            | Fault::Resume { .. }
            | Fault::ClockStep { .. }
            | Fault::HealAll => None,
        }
    }

    /// Checks the fault against the world it will run in.
    pub fn validate(&self, field: &str, config: &dyn FaultWorld) -> Result<(), ConfigError> {
        for node in self.nodes() {
            if !config.contains(node) {
                return Err(ConfigError::new(
                    field,
                    format!(
                        "names unknown node {node} (the world has s1..s{} and {})",
                        config.servers(),
                        if config.clients() == 0 {
                            "no clients".to_string()
                        } else {
                            format!("c1..c{}", config.clients())
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

impl FaultKind {
    /// The kinds that are faults (everything but `HealAll`), in a fixed order.
    pub const FAULTS: [FaultKind; 9] = [
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

    /// Every kind, `HealAll` last, in a fixed order (for listings).
    pub const ALL: [FaultKind; 10] = {
        let mut all = [FaultKind::HealAll; 10];
        let mut index = 0;
        while index < Self::FAULTS.len() {
            all[index] = Self::FAULTS[index];
            index += 1;
        }
        all
    };

    /// The name scenario files and plans use (`clock_step`).
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Partition => "partition",
            FaultKind::Clog => "clog",
            FaultKind::Loss => "loss",
            FaultKind::Latency => "latency",
            FaultKind::Duplication => "duplication",
            FaultKind::Crash => "crash",
            FaultKind::Pause => "pause",
            FaultKind::ClockStep => "clock_step",
            FaultKind::ClockDrift => "clock_drift",
            FaultKind::HealAll => "heal_all",
        }
    }

    /// What a fault of this kind does to the world, and what undoes it.
    pub fn describe(self) -> &'static str {
        match self {
            FaultKind::Partition => {
                "cut the network by a shape (halves, isolate a node or the leader, strand, \
                 majority ring, bridge, groups); undone by heal"
            }
            FaultKind::Clog => "stop one direction of one link; undone by unclog",
            FaultKind::Loss => "drop datagrams at a rate; undone by the configured rate",
            FaultKind::Latency => {
                "delay messages by a range of latencies; undone by the configured range"
            }
            FaultKind::Duplication => {
                "deliver datagrams twice at a rate; undone by the configured rate"
            }
            FaultKind::Crash => {
                "kill a node: unsynced disk writes and all volatile state lost; undone by restart"
            }
            FaultKind::Pause => {
                "stop a node's tasks while the world goes on (a GC pause); undone by resume"
            }
            FaultKind::ClockStep => "jump a node's local clock forward or back",
            FaultKind::ClockDrift => {
                "make a node's local clock run fast or slow; undone by no drift"
            }
            FaultKind::HealAll => {
                "heal every partition, clog, network condition, crashed and paused node and \
                 clock drift at once"
            }
        }
    }
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
        /// The node (or a role resolved when the partition fires).
        node: Target,
    },
    /// The server that most recently became leader (per the history), cut off from all.
    IsolateLeader,
    /// A node together with some others (clients, typically) cut off from everyone else:
    /// the stranded side can talk among itself. A leader stranded with the clients keeps
    /// taking writes it cannot commit; a leader stranded with one client serves it alone.
    Strand {
        /// The node (or a role resolved when the partition fires).
        node: Target,
        /// Nodes stranded with it.
        with: Vec<NodeId>,
    },
    /// The leader and as many other servers as keep it a minority, cut off from the other
    /// servers (clients reach both sides): the minority side has the old leader.
    LeaderMinority,
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
    fn subject(&self) -> Option<&Target> {
        match self {
            PartitionShape::IsolateNode { node } | PartitionShape::Strand { node, .. } => {
                Some(node)
            }
            _ => None,
        }
    }

    /// Whether resolving the shape needs the current leader.
    pub(crate) fn needs_leader(&self) -> bool {
        matches!(
            self,
            PartitionShape::IsolateLeader | PartitionShape::LeaderMinority
        )
    }

    fn nodes(&self) -> Vec<NodeId> {
        match self {
            PartitionShape::Groups { groups } => groups.iter().flatten().copied().collect(),
            PartitionShape::Strand { with, .. } => with.clone(),
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
    /// `subject` is what the shape's node resolved to, `leader` the current leader (for the
    /// shapes built around it). An error says why the shape cannot apply (a bridge needs
    /// three servers; no leader is known).
    pub(crate) fn resolve(
        &self,
        servers: &[NodeId],
        all_nodes: &[NodeId],
        subject: Option<NodeId>,
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
            PartitionShape::IsolateNode { .. } => {
                let node = subject.ok_or("the node to isolate did not resolve")?;
                let others: Vec<NodeId> =
                    all_nodes.iter().copied().filter(|n| *n != node).collect();
                cut_between(&mut links, &[node], &others);
            }
            PartitionShape::Strand { with, .. } => {
                let node = subject.ok_or("the node to strand did not resolve")?;
                let mut stranded = vec![node];
                stranded.extend(with.iter().copied().filter(|n| *n != node));
                let others: Vec<NodeId> = all_nodes
                    .iter()
                    .copied()
                    .filter(|n| !stranded.contains(n))
                    .collect();
                cut_between(&mut links, &stranded, &others);
            }
            PartitionShape::LeaderMinority => {
                let leader = leader.ok_or("no leader is known")?;
                if servers.len() < 3 {
                    return Err("a leader minority needs at least three servers");
                }
                let mut others: Vec<NodeId> =
                    servers.iter().copied().filter(|n| *n != leader).collect();
                others.shuffle(rng);
                let minority = (servers.len() - 1) / 2;
                let (with_leader, majority) = others.split_at(minority - 1);
                let mut minority_side = vec![leader];
                minority_side.extend_from_slice(with_leader);
                cut_between(&mut links, &minority_side, majority);
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
            PartitionShape::Strand { node, with } => {
                let with: Vec<String> = with.iter().map(ToString::to_string).collect();
                write!(f, "strand {node} with [{}]", with.join(","))
            }
            PartitionShape::LeaderMinority => write!(f, "leader minority"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WorldConfig;
    use rand::SeedableRng;

    fn servers(n: usize) -> Vec<NodeId> {
        (0..n).map(NodeId::server).collect()
    }

    #[test]
    fn every_fault_kind_is_listed_once_under_its_serde_name() {
        let mut listed = FaultKind::ALL.to_vec();
        listed.sort();
        listed.dedup();
        assert_eq!(listed.len(), FaultKind::ALL.len());
        for kind in FaultKind::ALL {
            let serde_name = serde_json::to_value(kind).unwrap();
            assert_eq!(serde_name.as_str(), Some(kind.name()));
            assert!(!kind.describe().is_empty());
        }
        assert!(
            FaultKind::FAULTS
                .iter()
                .all(|kind| FaultKind::ALL.contains(kind))
        );
    }

    #[test]
    fn has_inverse_says_which_faults_inverse_undoes() {
        let s1 = Target::Node(NodeId::server(0));
        let faults = [
            Fault::Partition {
                shape: PartitionShape::Halves,
            },
            Fault::Heal,
            Fault::Clog {
                from: NodeId::server(0),
                to: NodeId::server(1),
            },
            Fault::Unclog {
                from: NodeId::server(0),
                to: NodeId::server(1),
            },
            Fault::Loss {
                rate: Ratio::new(1, 10),
            },
            Fault::Latency {
                min_us: 1,
                max_us: 2,
            },
            Fault::Duplication {
                rate: Ratio::new(1, 10),
            },
            Fault::Crash { node: s1.clone() },
            Fault::Restart { node: s1.clone() },
            Fault::Pause { node: s1.clone() },
            Fault::Resume { node: s1.clone() },
            Fault::ClockStep {
                node: s1.clone(),
                delta_ms: 5,
            },
            Fault::ClockDrift {
                node: s1,
                drift_ppm: 50,
            },
            Fault::HealAll,
        ];
        let kinds: BTreeSet<FaultKind> = faults.iter().map(Fault::kind).collect();
        assert_eq!(kinds.len(), FaultKind::ALL.len(), "one fault of every kind");
        let config = WorldConfig::default();
        for fault in &faults {
            let inverse = fault.inverse(Some(NodeId::server(0)), &config);
            assert_eq!(fault.has_inverse(), inverse.is_some(), "{fault}");
        }
    }

    #[test]
    fn majority_ring_gives_every_server_a_distinct_majority() {
        for n in [3, 4, 5, 7] {
            let nodes = servers(n);
            let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
            let links = PartitionShape::MajorityRing
                .resolve(&nodes, &nodes, None, None, &mut rng)
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
            .resolve(&nodes, &nodes, None, None, &mut rng)
            .unwrap();
        // 2 × 3 nodes, both directions.
        assert_eq!(halves.len(), 12);
        let bridge = PartitionShape::Bridge
            .resolve(&nodes, &nodes, None, None, &mut rng)
            .unwrap();
        // 2 × 2 nodes, both directions; the bridge keeps every link.
        assert_eq!(bridge.len(), 8);
        let cut: BTreeSet<NodeId> = bridge.iter().flat_map(|(a, b)| [*a, *b]).collect();
        assert_eq!(cut.len(), 4);
        assert!(
            PartitionShape::Bridge
                .resolve(&servers(2), &servers(2), None, None, &mut rng)
                .is_err()
        );
        assert!(
            PartitionShape::IsolateLeader
                .resolve(&nodes, &nodes, None, None, &mut rng)
                .is_err()
        );
    }

    #[test]
    fn plans_round_trip_through_json() {
        let plan = FaultPlan::new(vec![
            ScheduledFault::at(
                100,
                Fault::Partition {
                    shape: PartitionShape::IsolateNode {
                        node: NodeId::server(0).into(),
                    },
                },
            ),
            ScheduledFault::at(
                50,
                Fault::Crash {
                    node: Target::Leader,
                },
            )
            .lasting(300)
            .named("first"),
            ScheduledFault::at(
                200,
                Fault::Loss {
                    rate: Ratio::new(1, 10),
                },
            ),
            ScheduledFault::at(
                400,
                Fault::Pause {
                    node: Target::Label("first".into()),
                },
            ),
        ]);
        assert_eq!(plan.faults[0].at_ms, 50, "plans are sorted by time");
        let json = serde_json::to_string(&plan).unwrap();
        assert!(
            json.contains(r#""fault":"crash","node":"leader","for_ms":300,"as":"first""#),
            "{json}"
        );
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
            ScheduledFault::at(
                1,
                Fault::Crash {
                    node: NodeId::server(0).into(),
                },
            ),
            ScheduledFault::at(
                2,
                Fault::Crash {
                    node: NodeId::server(7).into(),
                },
            ),
        ]);
        let error = plan.validate("faults.plan", &config).unwrap_err();
        assert_eq!(error.field, "faults.plan[1]");
        assert!(error.problem.contains("s8"), "{error}");
        let plan = FaultPlan::new(vec![ScheduledFault::at(
            1,
            Fault::Loss {
                rate: Ratio::new(2, 1),
            },
        )]);
        assert_eq!(
            plan.validate("faults.plan", &config).unwrap_err().field,
            "faults.plan[0]"
        );
        // A span on a fault without an inverse, and a name no earlier fault gave.
        let step = FaultPlan::new(vec![
            ScheduledFault::at(
                1,
                Fault::ClockStep {
                    node: Target::Leader,
                    delta_ms: 5,
                },
            )
            .lasting(10),
        ]);
        let error = step.validate("faults.plan", &config).unwrap_err();
        assert_eq!(error.field, "faults.plan[0].for_ms");
        let dangling = FaultPlan::new(vec![ScheduledFault::at(
            1,
            Fault::Restart {
                node: Target::Label("victim".into()),
            },
        )]);
        let error = dangling.validate("faults.plan", &config).unwrap_err();
        assert!(error.problem.contains("$victim"), "{error}");
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
        let phase_ms = 20_000;
        crate::report::for_each_seed(
            0..50,
            crate::this_test!("fault::tests::swarm_plans_pair_faults_and_end_healed"),
            |seed| {
                let seed = seed.value();
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let plan = swarm.generate(&config, phase_ms, &mut rng);
                plan.validate("plan", &config).unwrap();
                assert!(!plan.enabled_kinds.is_empty());
                assert!(
                    plan.end_ms() <= phase_ms,
                    "seed {seed}: ends after the phase"
                );
                assert!(
                    plan.faults.iter().all(|f| f.fault != Fault::HealAll),
                    "the world heals at the end of the phase, not the plan"
                );
                // Never more than a minority of servers unavailable at once.
                let downs: Vec<(u64, u64, NodeId)> = plan
                    .faults
                    .iter()
                    .filter_map(|scheduled| match &scheduled.fault {
                        Fault::Crash { node } | Fault::Pause { node } => Some((
                            scheduled.at_ms,
                            scheduled.end_ms(),
                            node.node().expect("swarm plans name nodes"),
                        )),
                        _ => None,
                    })
                    .collect();
                for &(at, _, node) in &downs {
                    let down_now: Vec<NodeId> = downs
                        .iter()
                        .filter(|(from, until, _)| *from <= at && at < *until)
                        .map(|(_, _, node)| *node)
                        .collect();
                    assert_eq!(
                        down_now.iter().filter(|n| **n == node).count(),
                        1,
                        "seed {seed}: {node} faulted twice"
                    );
                    assert!(
                        down_now.iter().filter(|n| n.is_server()).count() <= 2,
                        "seed {seed}"
                    );
                }
                // Same seed, same plan.
                let mut again = ChaCha8Rng::seed_from_u64(seed);
                assert_eq!(swarm.generate(&config, phase_ms, &mut again), plan);
            },
        );
    }
}

#[cfg(test)]
mod directed_tests {
    use super::*;
    use crate::config::WorldConfig;
    use rand::SeedableRng;

    fn config(servers: usize, clients: usize) -> WorldConfig {
        WorldConfig {
            servers,
            clients,
            ..WorldConfig::default()
        }
    }

    #[test]
    fn directed_generators_aim_at_roles_and_stay_within_the_phase() {
        let five = config(5, 2);
        let phase_ms = 8_000;
        crate::report::for_each_seed(
            0..20,
            crate::this_test!(
                "fault::directed_tests::directed_generators_aim_at_roles_and_stay_within_the_phase"
            ),
            |seed| {
                let seed = seed.value();
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let killer = LeaderKiller::default().generate(&five, phase_ms, &mut rng);
                killer.validate("plan", &five).unwrap();
                assert!(killer.end_ms() < phase_ms);
                assert!(
                    killer.faults.iter().any(
                        |f| matches!(&f.fault, Fault::Crash { node } if *node == Target::Leader)
                    ),
                    "seed {seed}: the leader killer never aims at the leader:\n{killer}"
                );
                // Every crash comes back: each carries its span.
                assert!(killer.faults.iter().all(|f| f.for_ms.is_some()));
            },
        );
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let cut = CutOffLeader {
            leader_drift_ppm: -500_000,
            ..CutOffLeader::default()
        }
        .generate(&five, phase_ms, &mut rng);
        cut.validate("plan", &five).unwrap();
        assert!(cut.faults.len() >= 6, "{cut}");
        // Clients joining a leader cut off alone: the same leader, stranded again with them.
        let joining = CutOffLeader {
            clients_join_after_ms: 500,
            with_clients: 2,
            ..CutOffLeader::default()
        };
        let join = joining.generate(&five, phase_ms, &mut rng);
        join.validate("plan", &five).unwrap();
        for pair in join.faults.chunks(2) {
            let [alone, with] = pair else {
                panic!("cuts come in pairs:\n{join}")
            };
            assert!(
                matches!(&alone.fault, Fault::Partition { shape: PartitionShape::Strand { node: Target::Leader, with } } if with.is_empty())
            );
            let label = alone.label.clone().expect("the cut-off leader is named");
            assert_eq!(with.at_ms, alone.at_ms + 500);
            assert_eq!(with.fault.subject(), Some(&Target::Label(label)));
            assert_eq!(with.end_ms(), with.at_ms, "the first cut's heal ends both");
        }
        assert!(
            CutOffLeader {
                clients_join_after_ms: 1_200,
                ..CutOffLeader::default()
            }
            .validate("faults")
            .is_err()
        );
        let flap = FlappingFollower::default().generate(&five, phase_ms, &mut rng);
        flap.validate("plan", &five).unwrap();
        assert_eq!(
            flap.faults[0].fault.subject(),
            Some(&Target::Follower),
            "{flap}"
        );
        assert_eq!(
            flap.faults[1].fault.subject(),
            Some(&Target::Label("flapper".into()))
        );
        let pauses = PauseClients::default().generate(&five, phase_ms, &mut rng);
        pauses.validate("plan", &five).unwrap();
        assert!(!pauses.faults.is_empty());
    }

    #[test]
    fn quorum_restarts_crash_every_server_and_keep_the_leader_down_a_round_longer() {
        let three = config(3, 2);
        let restart = QuorumRestart::default();
        let phase_ms = 8_000;
        crate::report::for_each_seed(
            0..20,
            crate::this_test!(
                "fault::directed_tests::quorum_restarts_crash_every_server_and_keep_the_leader_down_a_round_longer"
            ),
            |seed| {
                let seed = seed.value();
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let plan = restart.generate(&three, phase_ms, &mut rng);
                plan.validate("plan", &three).unwrap();
                assert!(plan.end_ms() < phase_ms, "seed {seed}:\n{plan}");
                let leaders: Vec<&ScheduledFault> = plan
                    .faults
                    .iter()
                    .filter(|f| f.fault.subject() == Some(&Target::Leader))
                    .collect();
                assert!(leaders.len() >= 3, "seed {seed}: few rounds:\n{plan}");
                for (round, leader) in leaders.iter().enumerate() {
                    // Every server crashes with the leader, and comes back after the outage.
                    let everyone: Vec<&ScheduledFault> = plan
                        .faults
                        .iter()
                        .filter(|f| {
                            f.at_ms == leader.at_ms && f.fault.subject() != Some(&Target::Leader)
                        })
                        .collect();
                    assert_eq!(everyone.len(), 3, "seed {seed}:\n{plan}");
                    assert!(everyone.iter().all(|f| f.for_ms == Some(restart.down_ms)));
                    // The leader comes back with the next round's quorum (the last with its own).
                    let back = leaders
                        .get(round + 1)
                        .map_or(leader.at_ms, |next| next.at_ms)
                        + restart.down_ms;
                    assert_eq!(leader.end_ms(), back, "seed {seed}:\n{plan}");
                    assert!(
                        (restart.min_up_ms..=restart.max_up_ms).contains(
                            &(leader.at_ms
                                - round
                                    .checked_sub(1)
                                    .map_or(0, |r| leaders[r].at_ms + restart.down_ms))
                        ),
                        "seed {seed}: the spell up is out of range:\n{plan}"
                    );
                }
            },
        );
        let two = config(2, 1);
        assert!(restart.validate("faults", &two).is_err());
        assert!(RejoinCrash::default().validate("faults", &two).is_err());
        let backwards = QuorumRestart {
            min_up_ms: 500,
            max_up_ms: 100,
            ..restart
        };
        assert!(backwards.validate("faults", &three).is_err());
    }

    #[test]
    fn rejoin_crashes_stall_the_other_followers_and_crash_leader_and_joiner_after_the_restart() {
        let three = config(3, 3);
        let rejoin = RejoinCrash::default();
        let phase_ms = 20_000;
        crate::report::for_each_seed(
            0..20,
            crate::this_test!(
                "fault::directed_tests::rejoin_crashes_stall_the_other_followers_and_crash_leader_and_joiner_after_the_restart"
            ),
            |seed| {
                let seed = seed.value();
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let plan = rejoin.generate(&three, phase_ms, &mut rng);
                plan.validate("plan", &three).unwrap();
                assert!(plan.end_ms() < phase_ms, "seed {seed}:\n{plan}");
                // Rounds of five: the joiner down, the other follower named, stalled, then the
                // leader and the joiner crash.
                assert!(plan.faults.len() >= 5 * 5, "seed {seed}:\n{plan}");
                for round in plan.faults.chunks(5) {
                    let [down, named, stall, leader, joiner] = [0, 1, 2, 3, 4].map(|i| &round[i]);
                    let restart = down.end_ms();
                    assert!(matches!(
                        down.fault,
                        Fault::Crash {
                            node: Target::Follower
                        }
                    ));
                    assert!(
                        matches!(
                            named.fault,
                            Fault::Pause {
                                node: Target::Follower
                            }
                        ) && named.for_ms == Some(1)
                            && named.at_ms == down.at_ms,
                        "seed {seed}:\n{plan}"
                    );
                    let other = Target::Label(named.label.clone().unwrap());
                    assert_eq!(stall.fault, Fault::Pause { node: other });
                    let (stall_min, stall_max) = rejoin.stall_after_ms;
                    assert!((restart + stall_min..=restart + stall_max).contains(&stall.at_ms));
                    assert_eq!(
                        leader.fault,
                        Fault::Crash {
                            node: Target::Leader
                        }
                    );
                    let (crash_min, crash_max) = rejoin.crash_after_ms;
                    assert!((restart + crash_min..=restart + crash_max).contains(&leader.at_ms));
                    assert!(stall.end_ms() > leader.at_ms, "stalled through the crash");
                    assert_eq!(
                        joiner.fault,
                        Fault::Crash {
                            node: Target::Label(down.label.clone().unwrap())
                        }
                    );
                    assert_eq!(joiner.at_ms, leader.at_ms);
                    assert!(
                        joiner.end_ms() < leader.end_ms(),
                        "the old leader comes back last"
                    );
                }
            },
        );
        let late_stall = RejoinCrash {
            stall_after_ms: (10, 60),
            ..rejoin
        };
        assert!(late_stall.validate("faults", &three).is_err());
    }
}
