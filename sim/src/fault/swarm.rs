//! Swarm testing: each seed switches a random subset of fault kinds on and schedules them
//! at random times, so that rare combinations get explored.

use super::FaultWorld;
use super::{Fault, FaultKind, FaultPlan, PartitionShape, ScheduledFault, Target};
use crate::{config_error::ConfigError, node::NodeId, ratio::Ratio};
use rand::{Rng, seq::SliceRandom};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

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
            mean_interval_ms: 1_000,
            max_unavailable_servers: None,
            client_faults: ClientFaults::Excluded,
            kinds: Vec::new(),
        }
    }
}

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
                "heal_all (the world heals everything at the end of the fault phase; do not list it)",
            ));
        }
        Ok(())
    }

    /// Generates a plan for `config` whose faults fire (and end) within the first
    /// `phase_ms`, from the `faults` stream `rng`. The world heals everything at the end of
    /// the phase; the plan does not.
    pub fn generate(
        &self,
        config: &dyn FaultWorld,
        phase_ms: u64,
        rng: &mut ChaCha8Rng,
    ) -> FaultPlan {
        Generator::new(self, config, phase_ms, rng).run()
    }
}

struct Generator<'a> {
    swarm: &'a SwarmConfig,
    phase_ms: u64,
    config: &'a dyn FaultWorld,
    rng: &'a mut ChaCha8Rng,
    faults: Vec<ScheduledFault>,
    /// Per node: the time until which it is crashed or paused.
    unavailable_until: Vec<(NodeId, u64)>,
    partition_until: u64,
    latency_until: u64,
    clogged_until: Vec<((NodeId, NodeId), u64)>,
}

impl<'a> Generator<'a> {
    fn new(
        swarm: &'a SwarmConfig,
        config: &'a dyn FaultWorld,
        phase_ms: u64,
        rng: &'a mut ChaCha8Rng,
    ) -> Self {
        Self {
            swarm,
            phase_ms,
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
        self.faults.push(ScheduledFault::at(at_ms, fault));
    }

    /// `fault` at `at_ms` until `until_ms`, when its inverse fires.
    fn push_span(&mut self, at_ms: u64, fault: Fault, until_ms: u64) {
        self.faults
            .push(ScheduledFault::at(at_ms, fault).lasting(until_ms.saturating_sub(at_ms).max(1)));
    }

    fn targets(&self) -> Vec<NodeId> {
        let servers = (0..self.config.servers()).map(NodeId::server);
        match self.swarm.client_faults {
            ClientFaults::Excluded => servers.collect(),
            ClientFaults::Included => servers
                .chain((0..self.config.clients()).map(NodeId::client))
                .collect(),
        }
    }

    fn duration(&mut self, now: u64, min_factor: u64, max_factor: u64) -> u64 {
        let mean = self.swarm.mean_interval_ms;
        let duration = self
            .rng
            .gen_range(mean * min_factor / 2..=mean * max_factor);
        duration.clamp(1, self.phase_ms.saturating_sub(now).max(1))
    }

    fn run(mut self) -> FaultPlan {
        let candidates: Vec<FaultKind> = if self.swarm.kinds.is_empty() {
            FaultKind::FAULTS.to_vec()
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
            let phase = self.phase_ms;
            self.push_span(
                0,
                Fault::Loss {
                    rate: Ratio::new(percent, 100),
                },
                phase,
            );
        }
        if enabled.contains(&FaultKind::Duplication) {
            let percent = self.rng.gen_range(1..=10);
            let phase = self.phase_ms;
            self.push_span(
                0,
                Fault::Duplication {
                    rate: Ratio::new(percent, 100),
                },
                phase,
            );
        }
        let timed: Vec<FaultKind> = enabled
            .iter()
            .copied()
            .filter(|k| !matches!(k, FaultKind::Loss | FaultKind::Duplication))
            .collect();
        let phase = self.phase_ms;
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
        self.faults.sort_by_key(|f| f.at_ms);
        FaultPlan {
            enabled_kinds: enabled,
            faults: self.faults,
        }
    }

    /// Adds a fault of `kind` at `now` (with its inverse, for the kinds that have one) to
    /// the plan, unless one of its kind is still in force there or the world is too small
    /// for it.
    ///
    /// Long on purpose: one match, one arm per fault kind, each drawing from the nemesis
    /// stream in a fixed order (splitting it must not reorder a draw: every plan would
    /// change).
    fn schedule(&mut self, kind: FaultKind, now: u64) {
        let servers: Vec<NodeId> = (0..self.config.servers()).map(NodeId::server).collect();
        match kind {
            FaultKind::Partition => {
                if self.partition_until > now {
                    return;
                }
                let mut shapes = vec![PartitionShape::IsolateLeader];
                if servers.len() >= 2 {
                    shapes.push(PartitionShape::Halves);
                    let node = *servers.choose(self.rng).expect("servers");
                    shapes.push(PartitionShape::IsolateNode { node: node.into() });
                }
                if servers.len() >= 3 {
                    shapes.push(PartitionShape::MajorityRing);
                    shapes.push(PartitionShape::Bridge);
                }
                if self.swarm.client_faults == ClientFaults::Included && self.config.clients() > 0 {
                    let node = NodeId::client(self.rng.gen_range(0..self.config.clients()));
                    shapes.push(PartitionShape::IsolateNode { node: node.into() });
                }
                let shape = shapes.choose(self.rng).expect("shapes").clone();
                let until = now + self.duration(now, 2, 5);
                self.partition_until = until;
                self.push_span(now, Fault::Partition { shape }, until);
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
                self.push_span(now, Fault::Clog { from, to }, until);
            }
            FaultKind::Latency => {
                if self.latency_until > now {
                    return;
                }
                let until = now + self.duration(now, 1, 3);
                self.latency_until = until;
                let min_us = self.config.configured_latency_us().0;
                let max_us = self.rng.gen_range(20_000..=200_000).max(min_us);
                self.push_span(now, Fault::Latency { min_us, max_us }, until);
            }
            FaultKind::Crash | FaultKind::Pause => {
                let max_servers = self
                    .swarm
                    .max_unavailable_servers
                    .unwrap_or((self.config.servers().saturating_sub(1)) / 2);
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
                let node = Target::Node(node);
                let fault = if kind == FaultKind::Crash {
                    Fault::Crash { node }
                } else {
                    Fault::Pause { node }
                };
                self.push_span(now, fault, until);
            }
            FaultKind::ClockStep => {
                let node = *self.targets().choose(self.rng).expect("targets");
                let magnitude = self.rng.gen_range(1..=2_000);
                let delta_ms = if self.rng.gen_bool(0.5) {
                    magnitude
                } else {
                    -magnitude
                };
                self.push(
                    now,
                    Fault::ClockStep {
                        node: node.into(),
                        delta_ms,
                    },
                );
            }
            FaultKind::ClockDrift => {
                let node = *self.targets().choose(self.rng).expect("targets");
                let magnitude = self.rng.gen_range(1_000..=100_000);
                let drift_ppm = if self.rng.gen_bool(0.5) {
                    magnitude
                } else {
                    -magnitude
                };
                self.push(
                    now,
                    Fault::ClockDrift {
                        node: node.into(),
                        drift_ppm,
                    },
                );
            }
            FaultKind::Loss | FaultKind::Duplication | FaultKind::HealAll => {}
        }
    }
}
