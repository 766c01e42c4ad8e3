//! The ZAB store's scenarios.

use crate::catalogue::{scenario, slow_disks, swarm};
use crate::{
    scenario::{Scenario, Tuning},
    store::Store,
    workload::{Workload, ZkMix, ZkWatches},
};
use sim::{
    NodeId,
    fault::{
        ClientFaults, CutOffLeader, Fault, FaultKind, FaultPlan, FaultSource, LeaderKiller,
        PartitionShape, PauseClients, QuorumRestart, RejoinCrash, ScheduledFault, SwarmConfig,
    },
};

/// The ZAB store's scenarios: sweeps of every size and the directed schedules.
pub(in crate::catalogue) fn scenarios() -> Vec<Scenario> {
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
                ..PauseClients::default()
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
    scenarios.extend(even_ensembles_and_observers(zk, &ZAB_KINDS));
    scenarios
}

/// Ensembles of 2, 4 and 6 voters (a quorum is a strict majority: 2, 3 and 4), and five
/// servers of which the last two observe, under swarms and with the observers cut off.
fn even_ensembles_and_observers(
    zk: impl Fn(&str, &str, usize, usize) -> Scenario,
    kinds: &[FaultKind],
) -> Vec<Scenario> {
    let observers = |scenario: Scenario| Scenario {
        observers: 2,
        ..scenario
    };
    let voters = [NodeId::server(0), NodeId::server(1), NodeId::server(2)];
    let observing = [NodeId::server(3), NodeId::server(4)];
    vec![
        Scenario {
            // The default bound is a minority of the servers: none of two.
            faults: FaultSource::Swarm(SwarmConfig {
                mean_interval_ms: 700,
                max_unavailable_servers: Some(1),
                kinds: kinds.to_vec(),
                ..SwarmConfig::default()
            }),
            ..zk(
                "zab_swarm_2",
                "two servers (a quorum is both: one crashed or paused stops commits until it \
                 is back) under every fault kind but duplication",
                2,
                2,
            )
        },
        zk(
            "zab_swarm_4",
            "four servers (a quorum is three) under every fault kind but duplication",
            4,
            3,
        ),
        zk(
            "zab_swarm_6",
            "six servers (a quorum is four: two may fail) under every fault kind but \
             duplication",
            6,
            2,
        ),
        observers(Scenario {
            faults: swarm(700, kinds),
            ..zk(
                "zab_observers",
                "s1..s3 vote and s4..s5 observe (they serve clients, forward writes, learn \
                 commits by INFORM and count in no quorum), under every fault kind but \
                 duplication",
                5,
                3,
            )
        }),
        observers(Scenario {
            faults: FaultSource::Plan(FaultPlan::new(vec![
                ScheduledFault::at(
                    1_500,
                    Fault::Partition {
                        shape: PartitionShape::Groups {
                            groups: vec![voters.to_vec(), observing.to_vec()],
                        },
                    },
                )
                .lasting(4_000),
            ])),
            fault_phase_ms: 7_000,
            recovery_ms: 2_000,
            ..zk(
                "zab_observers_cut_off",
                "both observers (s4, s5) cut off from the voters for four seconds (clients \
                 reach everyone): the voters keep their leader and commit; the observers \
                 stop serving, then rejoin and catch up",
                5,
                3,
            )
        }),
    ]
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
