//! The Raft store's scenarios.

use crate::catalogue::{scenario, slow_disks, swarm};
use crate::{
    scenario::{Scenario, Tuning},
    store::Store,
    workload::{KvLeases, KvMix, Workload},
};
use sim::{
    NodeId, Ratio,
    fault::{
        CutOffLeader, FaultKind, FaultPlan, FaultSource, FlappingFollower, LeaderKiller,
        PartitionShape, ScheduledFault, SwarmConfig,
    },
};

const EVERY_KIND: [FaultKind; 9] = FaultKind::FAULTS;

/// The Raft store's scenarios: sweeps of every size and the directed schedules.
///
/// Long on purpose: a catalogue list, one entry per scenario in the order `coordsim list`
/// shows them.
pub(in crate::catalogue) fn scenarios() -> Vec<Scenario> {
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
        // Checkpoints every half second, for the 1 s leases: each new leader starts them from
        // their checkpoint (the default, etcd's 5 minutes, checkpoints no lease this short).
        tuning: Tuning {
            lease_checkpoint_interval_ms: Some(500),
            ..Tuning::default()
        },
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
    // Snapshots every few entries: servers compact their logs all the time, and a server that
    // was down or cut off is sent a snapshot rather than the entries it missed.
    let snapshots_swarm = Scenario {
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
        tuning: Tuning {
            snapshot_threshold: Some(8),
            ..Tuning::default()
        },
        ..kv(
            "raft_snapshots_swarm",
            "three servers taking a snapshot every 8 applied entries, under partitions, \
             crashes, pauses, loss, duplication and clogs: followers that fall behind are sent \
             snapshots",
            3,
        )
    };
    let snapshot_catch_up = Scenario {
        faults: FaultSource::Plan(FaultPlan::new(vec![
            ScheduledFault::at(
                1_000,
                sim::fault::Fault::Partition {
                    shape: PartitionShape::Groups {
                        groups: vec![vec![s1, s2], vec![s3]],
                    },
                },
            )
            .lasting(2_500),
        ])),
        fault_phase_ms: 4_000,
        tuning: Tuning {
            snapshot_threshold: Some(10),
            ..Tuning::default()
        },
        ..kv(
            "raft_snapshot_catch_up",
            "s3 cut off from the other servers (not from the clients) for 2.5 s while they \
             snapshot every 10 entries: it catches up by InstallSnapshot and agrees",
            3,
        )
    };
    vec![
        snapshots_swarm,
        snapshot_catch_up,
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
