//! Directed plan generators: nemeses aimed at a role (the leader, a follower, a client),
//! generated from the seed's `faults` stream before the run, as plain plans whose targets
//! resolve when each fault fires. They replace nemeses that used to act from code, so their
//! runs replay from the printed plan and shrink like any other.

use super::{Fault, FaultPlan, PartitionShape, ScheduledFault, Target};
use crate::{
    config::{ConfigError, WorldConfig},
    node::NodeId,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Crash the leader again and again, as the "Figure 8" tests of MIT 6.824 do: after a random
/// delay, either strand the leader with every client (it keeps taking writes it cannot
/// commit) and then crash it, or crash it outright, or crash a follower. At most a minority
/// of servers is down at once; each crash lasts a random span (a single server is crashed
/// and restarted in turn).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LeaderKiller {
    /// Longest wait between rounds, and longest stranding before the crash, milliseconds.
    pub max_delay_ms: u64,
    /// Percent of rounds that crash the leader outright.
    pub leader_percent: u32,
    /// Percent of rounds that strand the leader with the clients, then crash it.
    pub strand_leader_percent: u32,
}

impl Default for LeaderKiller {
    fn default() -> Self {
        Self {
            max_delay_ms: 200,
            leader_percent: 30,
            strand_leader_percent: 50,
        }
    }
}

impl LeaderKiller {
    pub(super) fn validate(&self, field: &str, config: &WorldConfig) -> Result<(), ConfigError> {
        if self.max_delay_ms == 0 {
            return Err(ConfigError::new(
                format!("{field}.max_delay_ms"),
                "0 ms (expected a positive delay)",
            ));
        }
        if self.leader_percent + self.strand_leader_percent > 100 {
            return Err(ConfigError::new(
                format!("{field}.leader_percent"),
                format!(
                    "{} + strand_leader_percent {} is over 100 (expected percentages of rounds)",
                    self.leader_percent, self.strand_leader_percent
                ),
            ));
        }
        let _ = config;
        Ok(())
    }

    pub(super) fn generate(
        &self,
        config: &WorldConfig,
        phase_ms: u64,
        rng: &mut ChaCha8Rng,
    ) -> FaultPlan {
        let minority = (config.servers.saturating_sub(1)) / 2;
        let max_delay = self.max_delay_ms;
        let clients: Vec<NodeId> = (0..config.clients).map(NodeId::client).collect();
        let mut faults = Vec::new();
        // End times of the crashes in force, to keep at most a minority down.
        let mut down_until: Vec<u64> = Vec::new();
        let mut now = 0;
        let mut round = 0;
        loop {
            now += rng.gen_range(1..=max_delay);
            let down_ms = rng.gen_range(max_delay..=4 * max_delay);
            if now + down_ms >= phase_ms {
                break;
            }
            if minority == 0 {
                // A single server (or two): crash one and bring it back before the next.
                faults.push(
                    ScheduledFault::at(
                        now,
                        Fault::Crash {
                            node: NodeId::server(0).into(),
                        },
                    )
                    .lasting(down_ms),
                );
                now += down_ms;
                continue;
            }
            down_until.retain(|until| *until > now);
            if down_until.len() >= minority {
                continue;
            }
            round += 1;
            let roll = rng.gen_range(0..100);
            let stranded_ms = rng.gen_range(1..=max_delay);
            if roll < self.strand_leader_percent && now + stranded_ms + down_ms < phase_ms {
                let label = format!("stranded{round}");
                faults.push(
                    ScheduledFault::at(
                        now,
                        Fault::Partition {
                            shape: PartitionShape::Strand {
                                node: Target::Leader,
                                with: clients.clone(),
                            },
                        },
                    )
                    .lasting(stranded_ms)
                    .named(label.clone()),
                );
                // Crashed as the partition heals (plan faults fire before spans' inverses
                // at the same instant).
                faults.push(
                    ScheduledFault::at(
                        now + stranded_ms,
                        Fault::Crash {
                            node: Target::Label(label),
                        },
                    )
                    .lasting(down_ms),
                );
                down_until.push(now + stranded_ms + down_ms);
            } else {
                let node = if roll < self.strand_leader_percent + self.leader_percent {
                    Target::Leader
                } else {
                    Target::Follower
                };
                faults.push(ScheduledFault::at(now, Fault::Crash { node }).lasting(down_ms));
                down_until.push(now + down_ms);
            }
        }
        FaultPlan::new(faults)
    }
}

/// Every `interval_ms`, strand the current leader with the first `with_clients` clients for
/// `duration_ms` (those clients can then reach only it), optionally with its clock drifting
/// meanwhile: a deposed leader that keeps serving its clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CutOffLeader {
    /// Time between cuts, milliseconds.
    pub interval_ms: u64,
    /// How long each cut lasts, milliseconds.
    pub duration_ms: u64,
    /// Clients (the first ones) cut off with the leader.
    pub with_clients: usize,
    /// Drift of the cut-off leader's clock while it is cut off, ppm (negative: slow).
    pub leader_drift_ppm: i32,
}

impl Default for CutOffLeader {
    fn default() -> Self {
        Self {
            interval_ms: 600,
            duration_ms: 1_200,
            with_clients: 1,
            leader_drift_ppm: 0,
        }
    }
}

impl CutOffLeader {
    pub(super) fn validate(&self, field: &str) -> Result<(), ConfigError> {
        if self.interval_ms == 0 || self.duration_ms == 0 {
            return Err(ConfigError::new(
                format!("{field}.interval_ms"),
                "0 ms (expected positive interval_ms and duration_ms)",
            ));
        }
        crate::config::check_drift(
            &format!("{field}.leader_drift_ppm"),
            i64::from(self.leader_drift_ppm),
        )
    }

    pub(super) fn generate(
        &self,
        config: &WorldConfig,
        phase_ms: u64,
        _rng: &mut ChaCha8Rng,
    ) -> FaultPlan {
        let with: Vec<NodeId> = (0..self.with_clients.min(config.clients))
            .map(NodeId::client)
            .collect();
        let mut faults = Vec::new();
        let mut now = self.interval_ms;
        let mut round = 0;
        while now + self.duration_ms < phase_ms {
            round += 1;
            let label = format!("cut{round}");
            faults.push(
                ScheduledFault::at(
                    now,
                    Fault::Partition {
                        shape: PartitionShape::Strand {
                            node: Target::Leader,
                            with: with.clone(),
                        },
                    },
                )
                .lasting(self.duration_ms)
                .named(label.clone()),
            );
            if self.leader_drift_ppm != 0 {
                faults.push(
                    ScheduledFault::at(
                        now,
                        Fault::ClockDrift {
                            node: Target::Label(label),
                            drift_ppm: self.leader_drift_ppm,
                        },
                    )
                    .lasting(self.duration_ms),
                );
            }
            now += self.duration_ms + self.interval_ms;
        }
        FaultPlan::new(faults)
    }
}

/// Once the first leader is elected (after `start_ms`), isolate one follower for `cut_ms`,
/// let it back for `reconnect_ms`, `rounds` times: a flapping link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FlappingFollower {
    /// When the first cut happens, milliseconds (leave time for the first election).
    pub start_ms: u64,
    /// How long each cut lasts, milliseconds.
    pub cut_ms: u64,
    /// How long the follower is back between cuts, milliseconds.
    pub reconnect_ms: u64,
    /// Number of cuts.
    pub rounds: u32,
}

impl Default for FlappingFollower {
    fn default() -> Self {
        Self {
            start_ms: 1_000,
            cut_ms: 1_500,
            reconnect_ms: 500,
            rounds: 5,
        }
    }
}

impl FlappingFollower {
    pub(super) fn validate(&self, field: &str, config: &WorldConfig) -> Result<(), ConfigError> {
        if config.servers < 2 {
            return Err(ConfigError::new(
                field,
                format!(
                    "{} server(s) (expected at least two: a leader and a follower)",
                    config.servers
                ),
            ));
        }
        if self.cut_ms == 0 || self.rounds == 0 {
            return Err(ConfigError::new(
                format!("{field}.cut_ms"),
                "expected positive cut_ms and rounds",
            ));
        }
        Ok(())
    }

    pub(super) fn generate(
        &self,
        _config: &WorldConfig,
        phase_ms: u64,
        _rng: &mut ChaCha8Rng,
    ) -> FaultPlan {
        let mut faults = Vec::new();
        let mut now = self.start_ms;
        for round in 0..self.rounds {
            if now + self.cut_ms >= phase_ms {
                break;
            }
            let node = if round == 0 {
                Target::Follower
            } else {
                Target::Label("flapper".into())
            };
            let mut cut = ScheduledFault::at(
                now,
                Fault::Partition {
                    shape: PartitionShape::IsolateNode { node },
                },
            )
            .lasting(self.cut_ms);
            if round == 0 {
                cut = cut.named("flapper");
            }
            faults.push(cut);
            now += self.cut_ms + self.reconnect_ms;
        }
        FaultPlan::new(faults)
    }
}

/// Every `interval_ms`, pause a random client for `pause_ms` — longer than its session
/// timeout or lease TTL, so that it comes back to find its session expired (a GC pause).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PauseClients {
    /// Time between pauses, milliseconds.
    pub interval_ms: u64,
    /// How long each pause lasts, milliseconds.
    pub pause_ms: u64,
}

impl Default for PauseClients {
    fn default() -> Self {
        Self {
            interval_ms: 1_000,
            pause_ms: 3_000,
        }
    }
}

impl PauseClients {
    pub(super) fn validate(&self, field: &str, config: &WorldConfig) -> Result<(), ConfigError> {
        if config.clients == 0 {
            return Err(ConfigError::new(
                field,
                "0 clients (expected at least one client to pause)",
            ));
        }
        if self.pause_ms == 0 || self.interval_ms == 0 {
            return Err(ConfigError::new(
                format!("{field}.pause_ms"),
                "expected positive pause_ms and interval_ms",
            ));
        }
        Ok(())
    }

    pub(super) fn generate(
        &self,
        config: &WorldConfig,
        phase_ms: u64,
        rng: &mut ChaCha8Rng,
    ) -> FaultPlan {
        let mut faults = Vec::new();
        let mut now = self.interval_ms;
        while now + self.pause_ms < phase_ms && config.clients > 0 {
            let client = NodeId::client(rng.gen_range(0..config.clients));
            faults.push(
                ScheduledFault::at(
                    now,
                    Fault::Pause {
                        node: client.into(),
                    },
                )
                .lasting(self.pause_ms),
            );
            now += self.pause_ms + self.interval_ms;
        }
        FaultPlan::new(faults)
    }
}
