//! ZooKeeper sessions under faults, with clients holding ephemeral nodes
//! (`zk_ephemeral_holders`): a holder cut off past its session timeout, by a partition or a
//! pause, loses its session and its node; one whose server goes away fails over within its
//! timeout and keeps both, across a leader change; a crashed leader's successor keeps every
//! live session. The faults are plans naming the holder `c1`, the servers in turn, or the
//! `leader` role.

use crate::catalogue::{isolation, scenario};
use crate::{
    scenario::Scenario,
    store::Store,
    workload::{Workload, ZkEphemeralHolders},
};
use sim::{
    NodeId,
    fault::{Fault, FaultPlan, FaultSource, ScheduledFault, Target},
};

/// When the plans' first fault fires: every holder has its node by then.
const FIRST_FAULT_MS: u64 = 2_000;

/// The sessions scenarios.
pub(in crate::catalogue) fn scenarios() -> Vec<Scenario> {
    let holders = |session_timeout_ms| {
        Workload::ZkEphemeralHolders(ZkEphemeralHolders {
            session_timeout_ms,
            ..ZkEphemeralHolders::default()
        })
    };
    let c1 = NodeId::client(0);
    let cut_off = |name: &str, description: &str, fault: Fault| Scenario {
        workload: holders(1_000),
        faults: FaultSource::Plan(FaultPlan::new(vec![
            ScheduledFault::at(FIRST_FAULT_MS, fault).lasting(3_000),
        ])),
        fault_phase_ms: FIRST_FAULT_MS + 3_000,
        recovery_ms: 2_000,
        ..scenario(name, description, Store::Zab, 3, 2)
    };
    // Each server in turn, so that whichever one c1 is attached to goes away once.
    let one_server_at_a_time = (0..5)
        .map(|server| {
            ScheduledFault::at(
                FIRST_FAULT_MS + 2_500 * server as u64,
                isolation(NodeId::server(server)),
            )
            .lasting(1_500)
        })
        .collect();
    vec![
        cut_off(
            "zk_expiry_partitioned_holder",
            "holder c1 cut off by a partition for three times its 1 s session timeout: its \
             session expires, its ephemeral node vanishes for c2, and c1 is told so after \
             the heal",
            isolation(c1),
        ),
        cut_off(
            "zk_expiry_paused_holder",
            "holder c1 paused (a GC pause) for three times its 1 s session timeout: its \
             session expires, its ephemeral node vanishes for c2, and c1 is told so when it \
             wakes",
            Fault::Pause { node: c1.into() },
        ),
        Scenario {
            workload: holders(2_000),
            faults: FaultSource::Plan(FaultPlan::new(one_server_at_a_time)),
            fault_phase_ms: FIRST_FAULT_MS + 2_500 * 5,
            recovery_ms: 1_000,
            ..scenario(
                "zk_failover_keeps_session",
                "each of five servers cut off in turn for 1.5 s, the leader among them: \
                 holders whose server goes away fail over within their 2 s session timeout \
                 and keep their sessions and ephemeral nodes",
                Store::Zab,
                5,
                2,
            )
        },
        Scenario {
            workload: holders(1_500),
            faults: FaultSource::Plan(FaultPlan::new(vec![
                ScheduledFault::at(
                    FIRST_FAULT_MS,
                    Fault::Crash {
                        node: Target::Leader,
                    },
                )
                .lasting(4_000),
            ])),
            fault_phase_ms: FIRST_FAULT_MS + 4_000,
            recovery_ms: 2_000,
            ..scenario(
                "zk_leader_crash_keeps_sessions",
                "the leader crashes for 4 s under three holders with 1.5 s sessions: the new \
                 leader takes over their sessions, none expires, every ephemeral node stays",
                Store::Zab,
                3,
                3,
            )
        },
    ]
}
