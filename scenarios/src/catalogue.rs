//! The catalogue: named scenarios, from the demo to the directed schedules the known-bug
//! suites use. Each is plain data; `Scenario::load` reads the same from a file.

use crate::{
    scenario::{Scenario, Store, Tuning, WorldSettings},
    workload::{KvLeases, KvMix, LedgerAppends, Workload, ZkMix, ZkWatches},
};
use sim::{
    NodeId, Ratio,
    fault::{
        ClientFaults, CutOffLeader, FaultKind, FaultPlan, FaultSource, FlappingFollower,
        LeaderKiller, PartitionShape, PauseClients, QuorumRestart, RejoinCrash, ScheduledFault,
        SwarmConfig,
    },
};

/// Every scenario of the catalogue.
pub fn all() -> Vec<Scenario> {
    let mut scenarios = vec![ledger()];
    scenarios.extend(raft());
    scenarios.extend(zab());
    scenarios
}

/// The catalogue scenario called `name`.
pub fn get(name: &str) -> Option<Scenario> {
    all().into_iter().find(|scenario| scenario.name == name)
}

fn scenario(
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
        clients,
        workload,
        faults: FaultSource::None,
        bugs: Vec::new(),
        checks: vec!["default".into()],
        fault_phase_ms: 8_000,
        recovery_ms: 0,
        liveness_bound_ms: 20_000,
        time_limit_ms: None,
        world: WorldSettings::default(),
        tuning: Tuning::default(),
    }
}

fn swarm(mean_interval_ms: u64, kinds: &[FaultKind]) -> FaultSource {
    FaultSource::Swarm(SwarmConfig {
        mean_interval_ms,
        kinds: kinds.to_vec(),
        ..SwarmConfig::default()
    })
}

fn slow_disks(world: &mut WorldSettings) {
    world.disk.sync_latency_min_us = 20_000;
    world.disk.sync_latency_max_us = 40_000;
}

/// The demo: the replicated ledger under a swarm of faults, clients included.
fn ledger() -> Scenario {
    Scenario {
        faults: FaultSource::Swarm(SwarmConfig {
            mean_interval_ms: 500,
            client_faults: ClientFaults::Included,
            ..SwarmConfig::default()
        }),
        fault_phase_ms: 10_000,
        liveness_bound_ms: 10_000,
        ..scenario(
            "ledger",
            "the demo: a replicated ledger (no consensus) under swarm faults, clients included",
            Store::Ledger,
            3,
            3,
        )
    }
}

const EVERY_KIND: [FaultKind; 9] = FaultKind::FAULTS;

fn raft() -> Vec<Scenario> {
    let kv = |name: &str, description: &str, servers: usize| Scenario {
        recovery_ms: 3_000,
        ..scenario(name, description, Store::Raft, servers, 2)
    };
    let read_heavy = KvMix {
        think_time_ms: 10,
        put_percent: 30,
        get_percent: 65,
        serializable_get_percent: 0,
        txn_percent: 5,
        ..KvMix::default()
    };
    let mut single = Scenario {
        faults: FaultSource::Swarm(SwarmConfig {
            mean_interval_ms: 1_500,
            max_unavailable_servers: Some(1),
            kinds: vec![FaultKind::Crash, FaultKind::Pause],
            ..SwarmConfig::default()
        }),
        ..kv(
            "raft_single_server",
            "a single voter with slow disks crashed and paused: nothing acknowledged may be lost",
            1,
        )
    };
    slow_disks(&mut single.world);
    let mut figure8 = Scenario {
        faults: FaultSource::LeaderKiller(LeaderKiller {
            max_delay_ms: 200,
            leader_percent: 20,
            strand_leader_percent: 70,
        }),
        tuning: Tuning {
            max_entries_per_append: Some(1),
            ..Tuning::default()
        },
        ..kv(
            "raft_figure8",
            "leaders crashed again and again, most after being stranded with the clients, one \
             entry per AppendEntries on a lossy network: the Raft paper's Figure 8 by seeds",
            3,
        )
    };
    figure8.world.network.loss = Ratio::new(30, 100);
    slow_disks(&mut figure8.world);
    let mut killer = Scenario {
        faults: FaultSource::LeaderKiller(LeaderKiller::default()),
        tuning: Tuning {
            max_entries_per_append: Some(1),
            ..Tuning::default()
        },
        ..kv(
            "raft_leader_killer",
            "five servers whose leaders keep crashing (some stranded first) on a lossy network",
            5,
        )
    };
    killer.world.network.loss = Ratio::new(20, 100);
    let mut stale_append = Scenario {
        faults: swarm(
            300,
            &[FaultKind::Crash, FaultKind::Partition, FaultKind::Latency],
        ),
        ..kv(
            "raft_duplicated_appends",
            "duplicated and reordered AppendEntries under crashes, partitions and latency",
            3,
        )
    };
    stale_append.world.network.duplication = Ratio::new(30, 100);
    let cut_off_slow_clock = Scenario {
        workload: Workload::KvMix(KvMix {
            request_timeout_ms: 250,
            retry_backoff_ms: 10,
            ..read_heavy.clone()
        }),
        faults: FaultSource::CutOffLeader(CutOffLeader {
            interval_ms: 600,
            duration_ms: 1_200,
            with_clients: 1,
            leader_drift_ppm: -500_000,
            ..CutOffLeader::default()
        }),
        ..kv(
            "raft_cut_off_leader_slow_clock",
            "the leader, its clock running slow, cut off with one client again and again, \
             under a read-heavy load",
            3,
        )
    };
    let mut cut_off_impatient = Scenario {
        workload: Workload::KvMix(KvMix {
            processes_per_client: 3,
            connect_timeout_ms: 30,
            request_timeout_ms: 150,
            retry_backoff_ms: 2,
            ..read_heavy
        }),
        faults: FaultSource::CutOffLeader(CutOffLeader {
            interval_ms: 500,
            duration_ms: 900,
            with_clients: 0,
            leader_drift_ppm: 0,
            ..CutOffLeader::default()
        }),
        ..kv(
            "raft_cut_off_leader",
            "the leader cut off from everyone right after acknowledging writes, again and \
             again, with impatient clients that fail over fast",
            3,
        )
    };
    slow_disks(&mut cut_off_impatient.world);
    let (s1, s2, s3) = (NodeId::server(0), NodeId::server(1), NodeId::server(2));
    let split_vote = Scenario {
        faults: FaultSource::Plan(FaultPlan::new(vec![
            ScheduledFault::at(
                0,
                sim::fault::Fault::Partition {
                    shape: PartitionShape::Groups {
                        groups: vec![vec![s1], vec![s3]],
                    },
                },
            )
            .lasting(3_000),
            ScheduledFault::at(325, sim::fault::Fault::Crash { node: s2.into() }).lasting(10),
        ])),
        fault_phase_ms: 3_000,
        tuning: Tuning {
            election_timeout_ms: Some((300, 310)),
            ..Tuning::default()
        },
        ..kv(
            "raft_split_vote_restart",
            "s1 and s3 cannot hear each other and campaign in one term through s2, which \
             crashes and restarts between their requests",
            3,
        )
    };
    let flapping = Scenario {
        faults: FaultSource::FlappingFollower(FlappingFollower::default()),
        checks: vec!["default".into(), "protocol.leader_stability".into()],
        ..kv(
            "raft_flapping_follower",
            "a healthy five-server cluster with one follower behind a flapping link: the \
             leader must not be deposed again and again",
            5,
        )
    };
    let leases = |name: &str, description: &str| Scenario {
        workload: Workload::KvLeases(KvLeases::default()),
        checks: vec!["default".into(), "etcd.lease_not_expired_early".into()],
        ..kv(name, description, 3)
    };
    let leases_swarm = Scenario {
        faults: swarm(
            500,
            &[
                FaultKind::Partition,
                FaultKind::Crash,
                FaultKind::Pause,
                FaultKind::Loss,
            ],
        ),
        ..leases(
            "raft_leases",
            "clients holding, renewing, revoking and abandoning leases under partitions, \
             crashes, pauses and loss (no clock steps: early expiry is then a violation; \
             expiry may be late while no quorum is up, so its bound is not checked)",
        )
    };
    let leases_elections = Scenario {
        faults: FaultSource::CutOffLeader(CutOffLeader {
            interval_ms: 1_500,
            duration_ms: 500,
            with_clients: 0,
            ..CutOffLeader::default()
        }),
        fault_phase_ms: 14_000,
        // Leaders change, but a quorum is always there: an abandoned lease must expire.
        checks: vec![
            "default".into(),
            "etcd.lease_not_expired_early".into(),
            "etcd.lease_expires_in_bound".into(),
        ],
        ..leases(
            "raft_leases_under_elections",
            "leases held and abandoned while the leader is cut off every two seconds: a new \
             leader must neither expire a kept lease early nor keep an abandoned one alive",
        )
    };
    vec![
        leases_swarm,
        leases_elections,
        Scenario {
            faults: swarm(
                400,
                &[
                    FaultKind::Partition,
                    FaultKind::Crash,
                    FaultKind::Pause,
                    FaultKind::Loss,
                    FaultKind::Duplication,
                    FaultKind::Clog,
                ],
            ),
            ..kv(
                "raft_swarm_3",
                "three servers under partitions, crashes, pauses, loss, duplication and clogs",
                3,
            )
        },
        Scenario {
            faults: swarm(400, &EVERY_KIND),
            ..kv("raft_swarm_5", "five servers under every fault kind", 5)
        },
        Scenario {
            faults: swarm(
                400,
                &[
                    FaultKind::Partition,
                    FaultKind::Crash,
                    FaultKind::Pause,
                    FaultKind::Loss,
                ],
            ),
            ..kv(
                "raft_swarm_7",
                "seven servers under partitions, crashes, pauses and loss",
                7,
            )
        },
        single,
        killer,
        figure8,
        stale_append,
        cut_off_slow_clock,
        cut_off_impatient,
        split_vote,
        flapping,
    ]
}

fn zab() -> Vec<Scenario> {
    const ZAB_KINDS: [FaultKind; 8] = [
        FaultKind::Partition,
        FaultKind::Clog,
        FaultKind::Loss,
        FaultKind::Latency,
        FaultKind::Crash,
        FaultKind::Pause,
        FaultKind::ClockStep,
        FaultKind::ClockDrift,
    ];
    let zk = |name: &str, description: &str, servers: usize, clients: usize| Scenario {
        faults: swarm(700, &ZAB_KINDS),
        recovery_ms: 4_000,
        liveness_bound_ms: 30_000,
        tuning: Tuning {
            diff_window: Some(20),
            ..Tuning::default()
        },
        ..scenario(name, description, Store::Zab, servers, clients)
    };
    let mut scenarios = vec![
        Scenario {
            faults: FaultSource::Swarm(SwarmConfig {
                mean_interval_ms: 700,
                client_faults: ClientFaults::Included,
                kinds: ZAB_KINDS.to_vec(),
                ..SwarmConfig::default()
            }),
            ..zk(
                "zab_swarm_3",
                "three servers and three clients, all of them faulted, under every fault kind \
                 but duplication (ZAB runs over FIFO connections)",
                3,
                3,
            )
        },
        zk(
            "zab_swarm_5",
            "five servers under every fault kind but duplication",
            5,
            3,
        ),
        zk(
            "zab_swarm_7",
            "seven servers under every fault kind but duplication",
            7,
            2,
        ),
        Scenario {
            faults: swarm(700, &[FaultKind::Latency, FaultKind::ClockStep]),
            ..zk(
                "zab_single_server",
                "a single server under latency and clock steps (it cannot survive a crash or \
                 a partition)",
                1,
                2,
            )
        },
        Scenario {
            faults: FaultSource::PauseClients(PauseClients {
                interval_ms: 800,
                pause_ms: 2_500,
            }),
            ..zk(
                "zab_paused_clients",
                "clients paused past their session timeout again and again (a GC pause): \
                 sessions expire, their ephemerals go, the clients start new sessions",
                3,
                3,
            )
        },
        Scenario {
            workload: Workload::ZkWatches(ZkWatches::default()),
            faults: swarm(
                600,
                &[FaultKind::Partition, FaultKind::Crash, FaultKind::Pause],
            ),
            fault_phase_ms: 6_000,
            recovery_ms: 3_000,
            ..zk(
                "zab_watches",
                "one writer and two watchers on five servers under partitions, crashes and \
                 pauses: every watch fires once, in order, re-registered after failover",
                5,
                3,
            )
        },
        Scenario {
            faults: FaultSource::LeaderKiller(LeaderKiller {
                max_delay_ms: 400,
                ..LeaderKiller::default()
            }),
            ..zk(
                "zab_leader_killer",
                "three servers whose leaders keep crashing, some after being stranded with the \
                 clients: recoveries with a lagging quorum",
                3,
                3,
            )
        },
    ];
    scenarios.extend(zab_directed(zk));
    scenarios
}

/// The directed ZAB schedules the known-bug table uses: each aims at the moment one
/// documented bug needs, by roles and spans, and leaves the rest to the seed.
fn zab_directed(zk: impl Fn(&str, &str, usize, usize) -> Scenario) -> Vec<Scenario> {
    let mut killer_diffs = Scenario {
        faults: FaultSource::LeaderKiller(LeaderKiller {
            max_delay_ms: 400,
            ..LeaderKiller::default()
        }),
        ..zk(
            "zab_leader_killer_diffs",
            "leaders crashed again and again, some after being stranded with the clients, \
             and every rejoining server synced by DIFF (no SNAP): stranded proposals and \
             expired sessions reach the rejoiners as diffs",
            3,
            3,
        )
    };
    killer_diffs.tuning.diff_window = Some(1_000);
    let reader = |readers| {
        Workload::ZkMix(ZkMix {
            readers,
            ..ZkMix::default()
        })
    };
    let cut_off_reader = Scenario {
        workload: reader(1),
        faults: FaultSource::CutOffLeader(CutOffLeader {
            interval_ms: 600,
            duration_ms: 2_000,
            with_clients: 1,
            ..CutOffLeader::default()
        }),
        tuning: Tuning {
            sync_limit_ticks: Some(10),
            ..Tuning::default()
        },
        ..zk(
            "zab_cut_off_leader_reader",
            "the leader cut off with a client that only reads (plain and synced reads) \
             again and again, leading for a second after its followers have moved on",
            3,
            3,
        )
    };
    let readers_join = Scenario {
        workload: reader(2),
        faults: FaultSource::CutOffLeader(CutOffLeader {
            interval_ms: 600,
            duration_ms: 3_000,
            with_clients: 2,
            clients_join_after_ms: 800,
            ..CutOffLeader::default()
        }),
        tuning: Tuning {
            sync_limit_ticks: Some(40),
            ..Tuning::default()
        },
        ..zk(
            "zab_cut_off_leader_readers_join",
            "the leader cut off alone for three seconds (it leads on for four); once the \
             others have moved on, two reading clients that saw their writes can reach only it",
            3,
            4,
        )
    };
    let mut quorum_restart = Scenario {
        faults: FaultSource::QuorumRestart(QuorumRestart::default()),
        ..zk(
            "zab_quorum_restart",
            "every server crashed at once again and again, a quorum without the last \
             leader restarting from its disks (slow ones) and electing among itself",
            3,
            3,
        )
    };
    slow_disks(&mut quorum_restart.world);
    let mut rejoin_crash = Scenario {
        faults: FaultSource::RejoinCrash(RejoinCrash::default()),
        fault_phase_ms: 20_000,
        ..zk(
            "zab_rejoin_crash",
            "a follower crashes and rejoins; as it syncs the other follower stalls, and the \
             leader and the rejoining follower crash together, on slow disks",
            3,
            3,
        )
    };
    slow_disks(&mut rejoin_crash.world);
    vec![
        killer_diffs,
        cut_off_reader,
        readers_join,
        quorum_restart,
        rejoin_crash,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogue_scenario_is_valid_unique_and_round_trips() {
        let scenarios = all();
        let mut names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), scenarios.len(), "duplicate names");
        for scenario in &scenarios {
            scenario
                .validate()
                .unwrap_or_else(|error| panic!("{}: {error}", scenario.name));
            let json = serde_json::to_string(scenario).unwrap();
            let back = Scenario::parse(&json, crate::scenario::Format::Json).unwrap();
            assert_eq!(&back, scenario);
            let toml = toml::to_string(scenario).unwrap();
            let back = Scenario::parse(&toml, crate::scenario::Format::Toml)
                .unwrap_or_else(|error| panic!("{}: {error}\n{toml}", scenario.name));
            assert_eq!(&back, scenario);
        }
    }
}
