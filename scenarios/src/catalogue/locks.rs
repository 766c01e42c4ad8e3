//! The lock scenarios: each lock recipe on its store, fault-free, under faults that leave
//! sessions alive, and with holders paused past their session timeout or lease TTL.

use super::{scenario, swarm};
use crate::{
    scenario::{Scenario, Store},
    workload::{LockRecipe, Locks, Workload},
};
use sim::fault::{FaultKind, FaultSource, PauseClients, PausedClient};

/// The faults of the `_faults` scenarios: the network and the servers misbehave, clients
/// are not paused (so no session should expire while its client is alive and connected
/// to a live quorum).
const SERVER_FAULTS: [FaultKind; 5] = [
    FaultKind::Partition,
    FaultKind::Loss,
    FaultKind::Latency,
    FaultKind::Crash,
    FaultKind::Pause,
];

/// The checks every lock scenario runs besides the store's: mutual exclusion as believed and
/// at the resource.
fn lock_checks(herd_bounded: bool) -> Vec<String> {
    let mut checks = vec![
        "default".to_string(),
        "recipe.mutual_exclusion".into(),
        "recipe.fenced_writes".into(),
    ];
    if herd_bounded {
        checks.push("recipe.herd_effect".into());
    }
    checks
}

/// Every lock scenario.
pub(super) fn scenarios() -> Vec<Scenario> {
    let recipes = [
        (
            LockRecipe::ZkHerdLock,
            "zk_herd_lock",
            Store::Zab,
            "the ZooKeeper herd lock (everyone watches one node)",
        ),
        (
            LockRecipe::ZkQueueLock,
            "zk_queue_lock",
            Store::Zab,
            "the ZooKeeper queue lock (each waiter watches its predecessor)",
        ),
        (
            LockRecipe::EtcdMutex,
            "etcd_mutex",
            Store::Raft,
            "etcd's concurrency.Mutex",
        ),
    ];
    let mut scenarios = Vec::new();
    for (recipe, name, store, what) in recipes {
        // The herd lock wakes every waiter by design: its herd is measured, not bounded.
        let herd_bounded = recipe != LockRecipe::ZkHerdLock;
        let base = |suffix: &str, description: String| Scenario {
            workload: Workload::Locks(Locks {
                recipe,
                ..Locks::default()
            }),
            checks: lock_checks(herd_bounded),
            fault_phase_ms: 8_000,
            recovery_ms: 1_000,
            liveness_bound_ms: 30_000,
            ..scenario(&format!("{name}{suffix}"), &description, store, 3, 5)
        };
        scenarios.push(base(
            "",
            format!("{what}: five clients take turns writing to a fenced resource, no faults"),
        ));
        scenarios.push(Scenario {
            faults: swarm(500, &SERVER_FAULTS),
            ..base(
                "_faults",
                format!(
                    "{what} under partitions, loss, latency, server crashes and pauses \
                     (clients are not paused)"
                ),
            )
        });
        scenarios.push(Scenario {
            faults: FaultSource::PauseClients(PauseClients {
                interval_ms: 1_000,
                pause_ms: 3_000,
                whom: PausedClient::Holder,
            }),
            ..base(
                "_expiry",
                format!(
                    "{what} with the holder paused past its session timeout / lease TTL \
                     (2 s): it still believes it holds the lock when it resumes, and writes; \
                     the fenced resource must refuse it"
                ),
            )
        });
    }
    scenarios
}
