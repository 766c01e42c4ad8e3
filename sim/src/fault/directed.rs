//! Directed plan generators: nemeses aimed at a role (the leader, a follower, a client),
//! generated from the seed's `faults` stream before the run, as plain plans whose targets
//! resolve when each fault fires. They replace nemeses that used to act from code, so their
//! runs replay from the printed plan and shrink like any other.

use super::FaultWorld;
use super::{Fault, FaultPlan, PartitionShape, ScheduledFault, Target};
use crate::{config_error::ConfigError, node::NodeId};
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
    pub(super) fn validate(&self, field: &str, config: &dyn FaultWorld) -> Result<(), ConfigError> {
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
        config: &dyn FaultWorld,
        phase_ms: u64,
        rng: &mut ChaCha8Rng,
    ) -> FaultPlan {
        let minority = (config.servers().saturating_sub(1)) / 2;
        let max_delay = self.max_delay_ms;
        let clients: Vec<NodeId> = (0..config.clients()).map(NodeId::client).collect();
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
/// meanwhile: a deposed leader that keeps serving its clients. With `clients_join_after_ms`,
/// the leader is first cut off alone and the clients join it only that much later, after
/// the others have moved on without it: clients that saw the new leader's writes and can
/// then reach only the deposed one.
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
    /// How long after the cut the clients join the cut-off leader, milliseconds (0: they
    /// are cut off with it from the start; else less than `duration_ms`).
    pub clients_join_after_ms: u64,
}

impl Default for CutOffLeader {
    fn default() -> Self {
        Self {
            interval_ms: 600,
            duration_ms: 1_200,
            with_clients: 1,
            leader_drift_ppm: 0,
            clients_join_after_ms: 0,
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
        if self.clients_join_after_ms >= self.duration_ms {
            return Err(ConfigError::new(
                format!("{field}.clients_join_after_ms"),
                format!(
                    "{} ms, not within the cut of duration_ms {} (expected less)",
                    self.clients_join_after_ms, self.duration_ms
                ),
            ));
        }
        crate::config_error::check_drift(
            &format!("{field}.leader_drift_ppm"),
            i64::from(self.leader_drift_ppm),
        )
    }

    pub(super) fn generate(
        &self,
        config: &dyn FaultWorld,
        phase_ms: u64,
        _rng: &mut ChaCha8Rng,
    ) -> FaultPlan {
        let with: Vec<NodeId> = (0..self.with_clients.min(config.clients()))
            .map(NodeId::client)
            .collect();
        let mut faults = Vec::new();
        let mut now = self.interval_ms;
        let mut round = 0;
        while now + self.duration_ms < phase_ms {
            round += 1;
            let label = format!("cut{round}");
            let joining = self.clients_join_after_ms > 0;
            faults.push(
                ScheduledFault::at(
                    now,
                    Fault::Partition {
                        shape: PartitionShape::Strand {
                            node: Target::Leader,
                            with: if joining { Vec::new() } else { with.clone() },
                        },
                    },
                )
                .lasting(self.duration_ms)
                .named(label.clone()),
            );
            if joining {
                // Replaces the first cut; the first cut's heal ends this one too.
                faults.push(ScheduledFault::at(
                    now + self.clients_join_after_ms,
                    Fault::Partition {
                        shape: PartitionShape::Strand {
                            node: Target::Label(label.clone()),
                            with: with.clone(),
                        },
                    },
                ));
            }
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
    pub(super) fn validate(&self, field: &str, config: &dyn FaultWorld) -> Result<(), ConfigError> {
        if config.servers() < 2 {
            return Err(ConfigError::new(
                field,
                format!(
                    "{} server(s) (expected at least two: a leader and a follower)",
                    config.servers()
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
        _config: &dyn FaultWorld,
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
    /// Which client each pause hits.
    pub whom: PausedClient,
}

/// Which client a [`PauseClients`] pause hits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PausedClient {
    /// A client drawn from the seed.
    #[default]
    Any,
    /// The client that holds a lock or leads an election when the pause fires (`holder`):
    /// its session or lease expires while it still believes it holds or leads.
    Holder,
    /// The client that has waited longest for a lock or in a campaign when the pause fires
    /// (`waiter`): its session or lease expires while it waits, and a recipe that does not
    /// look at its own key after the wait (etcd-io/etcd#11051) wakes up believing it holds.
    Waiter,
}

impl Default for PauseClients {
    fn default() -> Self {
        Self {
            interval_ms: 1_000,
            pause_ms: 3_000,
            whom: PausedClient::Any,
        }
    }
}

impl PauseClients {
    pub(super) fn validate(&self, field: &str, config: &dyn FaultWorld) -> Result<(), ConfigError> {
        if config.clients() == 0 {
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
        config: &dyn FaultWorld,
        phase_ms: u64,
        rng: &mut ChaCha8Rng,
    ) -> FaultPlan {
        let mut faults = Vec::new();
        let mut now = self.interval_ms;
        while now + self.pause_ms < phase_ms && config.clients() > 0 {
            let node = match self.whom {
                PausedClient::Any => NodeId::client(rng.gen_range(0..config.clients())).into(),
                PausedClient::Holder => Target::Holder,
                PausedClient::Waiter => Target::Waiter,
            };
            faults.push(ScheduledFault::at(now, Fault::Pause { node }).lasting(self.pause_ms));
            now += self.pause_ms + self.interval_ms;
        }
        FaultPlan::new(faults)
    }
}

/// Crash every server at once and bring back a quorum without the last leader, again and
/// again: after a random spell up, the leader (named) and then every server crash; the
/// others restart after `down_ms` from what their disks hold and elect among themselves,
/// while the old leader stays down until the next round's quorum comes back (the crashes of
/// servers already down are skipped, with their spans). A whole ensemble restarted (a power
/// cut, a rolling restart gone wrong), each new quorum deciding its epoch from its disks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QuorumRestart {
    /// Shortest spell up, from a restart (or the start) to the next crash, milliseconds.
    pub min_up_ms: u64,
    /// Longest spell up, milliseconds.
    pub max_up_ms: u64,
    /// How long the servers stay down, milliseconds.
    pub down_ms: u64,
}

impl Default for QuorumRestart {
    fn default() -> Self {
        Self {
            min_up_ms: 100,
            max_up_ms: 400,
            down_ms: 200,
        }
    }
}

impl QuorumRestart {
    pub(super) fn validate(&self, field: &str, config: &dyn FaultWorld) -> Result<(), ConfigError> {
        if config.servers() < 3 {
            return Err(ConfigError::new(
                field,
                format!(
                    "{} server(s) (expected at least three: the servers but the leader must \
                     be a quorum)",
                    config.servers()
                ),
            ));
        }
        if self.down_ms == 0 || self.min_up_ms == 0 || self.min_up_ms > self.max_up_ms {
            return Err(ConfigError::new(
                format!("{field}.min_up_ms"),
                format!(
                    "up {}..={} ms, down {} ms (expected positive spells, min_up_ms at most \
                     max_up_ms)",
                    self.min_up_ms, self.max_up_ms, self.down_ms
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn generate(
        &self,
        config: &dyn FaultWorld,
        phase_ms: u64,
        rng: &mut ChaCha8Rng,
    ) -> FaultPlan {
        // The rounds' times first: each old leader comes back with the next round's quorum.
        let mut rounds = Vec::new();
        let mut now = 0;
        loop {
            now += rng.gen_range(self.min_up_ms..=self.max_up_ms);
            if now + self.down_ms >= phase_ms {
                break;
            }
            rounds.push(now);
            now += self.down_ms;
        }
        let mut faults = Vec::new();
        for (round, &at) in rounds.iter().enumerate() {
            let back_at = rounds.get(round + 1).unwrap_or(&at) + self.down_ms;
            faults.push(
                ScheduledFault::at(
                    at,
                    Fault::Crash {
                        node: Target::Leader,
                    },
                )
                .lasting(back_at - at)
                .named(format!("leader{}", round + 1)),
            );
            // Then every server, by name: "follower" would spare a restarted former leader
            // that never stepped down (it still counts as leading once the leader is gone).
            // The leader and the last round's leader are down already, and stay down.
            for server in 0..config.servers() {
                faults.push(
                    ScheduledFault::at(
                        at,
                        Fault::Crash {
                            node: NodeId::server(server).into(),
                        },
                    )
                    .lasting(self.down_ms),
                );
            }
        }
        FaultPlan::new(faults)
    }
}

/// A follower crashes and comes back; just as it rejoins, the other followers stall (a
/// pause), and a moment later the leader and the rejoining follower crash together; the
/// stalled followers then resume, the rejoined one restarts, and they elect a leader
/// without the old one, which comes back last. Aimed at the instant a rejoining follower
/// has acknowledged the leader's NEWLEADER but may not yet have made the history it was
/// sent durable, while the leader commits with it (ZOOKEEPER-3911); the offsets are drawn
/// per round around the join time of the world's network and disks.
///
/// The other followers are named (`$otherR_I`) by a 1 ms pause while the rejoining one is
/// down, as "follower" then resolves to them alone (in an ensemble of more than three, the
/// picks may repeat, and a follower left running keeps the history).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RejoinCrash {
    /// Time between rounds (from one round's crash to the next follower's), milliseconds.
    pub interval_ms: u64,
    /// How long the rejoining follower is down, milliseconds.
    pub down_ms: u64,
    /// When the other followers stall, after the restart: shortest and longest, ms.
    pub stall_after_ms: (u64, u64),
    /// When the leader and the rejoining follower crash, after the restart: shortest and
    /// longest, milliseconds (after the stall).
    pub crash_after_ms: (u64, u64),
}

impl Default for RejoinCrash {
    fn default() -> Self {
        Self {
            interval_ms: 800,
            down_ms: 800,
            stall_after_ms: (10, 30),
            crash_after_ms: (50, 90),
        }
    }
}

// After the crash: the stalled followers resume, the rejoined follower restarts, and the
// old leader comes back once they have had time to elect without it.
const REJOIN_RESUME_MS: u64 = 150;
const REJOIN_RESTART_MS: u64 = 300;
const REJOIN_LEADER_DOWN_MS: u64 = 700;

impl RejoinCrash {
    pub(super) fn validate(&self, field: &str, config: &dyn FaultWorld) -> Result<(), ConfigError> {
        if config.servers() < 3 {
            return Err(ConfigError::new(
                field,
                format!(
                    "{} server(s) (expected at least three: a leader, a rejoining follower \
                     and one that stalls)",
                    config.servers()
                ),
            ));
        }
        let (stall, crash) = (self.stall_after_ms, self.crash_after_ms);
        if self.down_ms == 0
            || self.interval_ms == 0
            || stall.0 > stall.1
            || crash.0 > crash.1
            || crash.0 <= stall.1
        {
            return Err(ConfigError::new(
                format!("{field}.crash_after_ms"),
                format!(
                    "stall after {}..={} ms, crash after {}..={} ms (expected ranges, the \
                     crash after the stall, and positive down_ms and interval_ms)",
                    stall.0, stall.1, crash.0, crash.1
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn generate(
        &self,
        config: &dyn FaultWorld,
        phase_ms: u64,
        rng: &mut ChaCha8Rng,
    ) -> FaultPlan {
        let mut faults = Vec::new();
        let mut now = self.interval_ms;
        let mut round = 0;
        loop {
            let restart = now + self.down_ms;
            let stall = restart + rng.gen_range(self.stall_after_ms.0..=self.stall_after_ms.1);
            let crash = restart + rng.gen_range(self.crash_after_ms.0..=self.crash_after_ms.1);
            if crash + REJOIN_LEADER_DOWN_MS >= phase_ms {
                break;
            }
            round += 1;
            let joiner = format!("joiner{round}");
            faults.push(
                ScheduledFault::at(
                    now,
                    Fault::Crash {
                        node: Target::Follower,
                    },
                )
                .lasting(self.down_ms)
                .named(joiner.clone()),
            );
            let others: Vec<String> = (1..config.servers() - 1)
                .map(|index| format!("other{round}_{index}"))
                .collect();
            for other in &others {
                faults.push(
                    ScheduledFault::at(
                        now,
                        Fault::Pause {
                            node: Target::Follower,
                        },
                    )
                    .lasting(1)
                    .named(other.clone()),
                );
            }
            for other in others {
                faults.push(
                    ScheduledFault::at(
                        stall,
                        Fault::Pause {
                            node: Target::Label(other),
                        },
                    )
                    .lasting(crash - stall + REJOIN_RESUME_MS),
                );
            }
            faults.push(
                ScheduledFault::at(
                    crash,
                    Fault::Crash {
                        node: Target::Leader,
                    },
                )
                .lasting(REJOIN_LEADER_DOWN_MS),
            );
            faults.push(
                ScheduledFault::at(
                    crash,
                    Fault::Crash {
                        node: Target::Label(joiner),
                    },
                )
                .lasting(REJOIN_RESTART_MS),
            );
            now = crash + self.interval_ms;
        }
        FaultPlan::new(faults)
    }
}
