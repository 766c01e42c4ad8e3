//! What ZooKeeper promises about znodes, each under the conditions that test it: sequential
//! names stay unique and increasing while the leader is cut off and crashed; a protected
//! create whose reply is lost finds its node instead of making a second; a read from a
//! follower may miss a write its reader was told of, but a read after `sync` may not.

use crate::catalogue::{
    scenario,
    zk::steps::{connect, create, sync},
};
use crate::{
    scenario::Scenario,
    store::Store,
    workload::{Workload, ZkOutOfBandReads, ZkScript, ZkSequentialCreates, ZkStep, ZkStepOp},
};
use sim::{
    NodeId,
    fault::{Fault, FaultPlan, FaultSource, PartitionShape, ScheduledFault, Target},
    history::zk::CreateMode,
};

/// When the protected create of `zk_protected_create_lost_reply` starts.
const PROTECTED_CREATE_AT_MS: u64 = 1_500;

/// The znode scenarios.
pub(in crate::catalogue) fn scenarios() -> Vec<Scenario> {
    vec![sequential_names(), protected_create(), follower_reads()]
}

fn sequential_names() -> Scenario {
    Scenario {
        workload: Workload::ZkSequentialCreates(ZkSequentialCreates::default()),
        faults: FaultSource::Plan(FaultPlan::new(vec![
            ScheduledFault::at(
                1_500,
                Fault::Partition {
                    shape: PartitionShape::IsolateLeader,
                },
            )
            .lasting(800),
            ScheduledFault::at(
                2_600,
                Fault::Crash {
                    node: Target::Leader,
                },
            )
            .lasting(500),
        ])),
        fault_phase_ms: 3_500,
        recovery_ms: 1_000,
        ..scenario(
            "zk_sequential_names_under_faults",
            "three clients making protected sequential nodes back to back while the leader \
             is cut off, then the next leader crashes: names stay unique and increasing",
            Store::Zab,
            3,
            3,
        )
    }
}

/// Every link takes 5 ms and every disk sync 1 ms, so that a create sent to a follower at
/// `PROTECTED_CREATE_AT_MS` commits about 20 ms later: the client is cut off 15 ms after
/// sending it, before the reply leaves (the follower forwards it to the leader, which
/// proposes, hears acks and commits, and only then does the follower answer).
fn protected_create() -> Scenario {
    let c1 = NodeId::client(0);
    let followers = [NodeId::server(0), NodeId::server(1)];
    let mut protected_create = Scenario {
        workload: Workload::ZkScript(ZkScript {
            steps: vec![
                connect(1_000, c1, &followers, 2_000),
                create(1_000, c1, "/locks", "", CreateMode::Persistent),
                ZkStep::at(
                    PROTECTED_CREATE_AT_MS,
                    c1,
                    ZkStepOp::CreateProtected {
                        path: "/locks/lock-".into(),
                        data: String::new(),
                        mode: CreateMode::EphemeralSequential,
                    },
                ),
                sync(3_000, c1),
                ZkStep::at(
                    3_000,
                    c1,
                    ZkStepOp::GetChildren {
                        path: "/locks".into(),
                    },
                ),
            ],
        }),
        faults: FaultSource::Plan(FaultPlan::new(vec![
            ScheduledFault::at(
                PROTECTED_CREATE_AT_MS + 15,
                Fault::Partition {
                    shape: PartitionShape::IsolateNode { node: c1.into() },
                },
            )
            .lasting(500),
        ])),
        fault_phase_ms: 2_500,
        recovery_ms: 1_000,
        ..scenario(
            "zk_protected_create_lost_reply",
            "a client cut off for 0.5 s right after sending a protected create to a follower \
             (s1 or s2; the fresh ensemble's leader is s3): the create commits, its reply is \
             lost, and the client finds its node by its GUID instead of making a second",
            Store::Zab,
            3,
            1,
        )
    };
    let world = &mut protected_create.world;
    (world.network.latency_min_us, world.network.latency_max_us) = (5_000, 5_000);
    (
        world.disk.sync_latency_min_us,
        world.disk.sync_latency_max_us,
    ) = (1_000, 1_000);
    protected_create
}

/// The writer on s3 (the fresh ensemble's leader), the reader on the follower s1.
fn follower_reads() -> Scenario {
    let mut reads = Scenario {
        workload: Workload::ZkOutOfBandReads(ZkOutOfBandReads {
            writer_servers: vec![NodeId::server(2)],
            reader_servers: vec![NodeId::server(0)],
            ..ZkOutOfBandReads::default()
        }),
        fault_phase_ms: 4_000,
        ..scenario(
            "zab_follower_reads",
            "a writer on the leader tells a reader on a follower, out of band, each time a \
             write is acknowledged; links take 1 to 40 ms, no faults: the reader's plain \
             reads may miss the write it was told of, its reads after a sync may not",
            Store::Zab,
            3,
            2,
        )
    };
    (
        reads.world.network.latency_min_us,
        reads.world.network.latency_max_us,
    ) = (1_000, 40_000);
    reads
}
