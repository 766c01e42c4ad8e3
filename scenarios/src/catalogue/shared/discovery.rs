//! The discovery and pub/sub scenarios: service discovery on both stores (fault-free,
//! under server faults, and with members paused, cut off past their session, or crashed),
//! and pub/sub on etcd (fault-free, under server faults, and with subscribers cut off).

use crate::catalogue::{isolated, scenario, swarm, target};
use crate::{
    scenario::Scenario,
    store::Store,
    workload::{Discovery, DiscoveryRecipe, PubSub, Workload},
};
use sim::fault::{Fault, FaultKind, FaultPlan, FaultSource, ScheduledFault};

/// The faults of the `_faults` scenarios: the network and the servers misbehave; clients
/// are left alone, so no session of a live client should end.
const SERVER_FAULTS: [FaultKind; 5] = [
    FaultKind::Partition,
    FaultKind::Loss,
    FaultKind::Latency,
    FaultKind::Crash,
    FaultKind::Pause,
];

/// Every discovery and pub/sub scenario.
pub(in crate::catalogue) fn scenarios() -> Vec<Scenario> {
    let mut scenarios = Vec::new();
    for (recipe, name, store, what) in [
        (
            DiscoveryRecipe::ZkDiscovery,
            "zk_discovery",
            Store::Zab,
            "ZooKeeper discovery (ephemeral members, a child watch re-read on every event)",
        ),
        (
            DiscoveryRecipe::EtcdDiscovery,
            "etcd_discovery",
            Store::Raft,
            "etcd discovery (members under their session's lease, a prefix watch from the \
             read's revision + 1)",
        ),
    ] {
        scenarios.extend(discovery(recipe, name, store, what));
    }
    scenarios.extend(pubsub());
    scenarios
}

fn isolate(node: &str, at_ms: u64, for_ms: u64) -> ScheduledFault {
    isolated(target(node), at_ms, for_ms)
}

fn discovery(recipe: DiscoveryRecipe, name: &str, store: Store, what: &str) -> Vec<Scenario> {
    let base = |suffix: &str, description: String| Scenario {
        workload: Workload::Discovery(Discovery {
            recipe,
            ..Discovery::default()
        }),
        checks: vec!["default".into(), "recipe.discovery_converges".into()],
        fault_phase_ms: 8_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 20_000,
        ..scenario(&format!("{name}{suffix}"), &description, store, 3, 5)
    };
    vec![
        base(
            "",
            format!(
                "{what}: five members joining and leaving, five discoverers watching, no faults"
            ),
        ),
        Scenario {
            faults: swarm(500, &SERVER_FAULTS),
            ..base(
                "_faults",
                format!(
                    "{what} under partitions, loss, latency, server crashes and pauses (clients \
                     are left alone)"
                ),
            )
        },
        Scenario {
            // Members stay at least 2 s, so the faults between 1 s and 1.5 s find them registered.
            workload: Workload::Discovery(Discovery {
                recipe,
                stay_ms: 4_000,
                ..Discovery::default()
            }),
            faults: FaultSource::Plan(FaultPlan::new(vec![
                ScheduledFault::at(
                    1_000,
                    Fault::Pause {
                        node: "c1".parse().expect("a node"),
                    },
                )
                .lasting(3_000),
                isolate("c2", 1_200, 3_000),
                ScheduledFault::at(
                    1_400,
                    Fault::Crash {
                        node: "c3".parse().expect("a node"),
                    },
                ),
            ])),
            fault_phase_ms: 9_000,
            ..base(
                "_members_expire",
                format!(
                    "{what}: c1 paused and c2 cut off for 3 s while registered, past their 2 s \
                     sessions, so that they drop out and come back; c3 crashes for good and \
                     drops out when its session runs out"
                ),
            )
        },
    ]
}

fn pubsub() -> Vec<Scenario> {
    let base = |suffix: &str, description: &str| Scenario {
        workload: Workload::PubSub(PubSub::default()),
        checks: vec!["default".into(), "recipe.pubsub_delivery".into()],
        fault_phase_ms: 8_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 20_000,
        ..scenario(
            &format!("etcd_pubsub{suffix}"),
            description,
            Store::Raft,
            3,
            4,
        )
    };
    vec![
        base(
            "",
            "etcd pub/sub: four publishers, four subscribers from a revision (the first or \
             the present) resubscribing from where they left off, no faults",
        ),
        Scenario {
            faults: swarm(500, &SERVER_FAULTS),
            ..base(
                "_faults",
                "etcd pub/sub under partitions, loss, latency, server crashes and pauses",
            )
        },
        Scenario {
            // No resubscriptions: every reconnect is the watch stream's own.
            workload: Workload::PubSub(PubSub {
                resubscribe_every_ms: 60_000,
                ..PubSub::default()
            }),
            faults: FaultSource::Plan(FaultPlan::new(vec![
                isolate("c1", 1_500, 2_000),
                isolate("c2", 4_000, 2_000),
                isolate("c3", 6_500, 1_000),
            ])),
            ..base(
                "_cut_off",
                "etcd pub/sub with subscribers (and their nodes' publishers) cut off from \
                 everyone in turn, and no resubscriptions: their watches break and resume from \
                 where they left off",
            )
        },
    ]
}
