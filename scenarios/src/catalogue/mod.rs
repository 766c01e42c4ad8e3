//! The catalogue: named scenarios, from the demo to the directed schedules the known-bug
//! suites use. Each is plain data; `Scenario::load` reads the same from a file.

mod etcd;
mod shared;
mod zk;

use crate::{
    scenario::{Scenario, WorldSettings},
    store::Store,
};
use sim::coverage::Mark;
use sim::fault::{
    ClientFaults, Fault, FaultKind, FaultSource, PartitionShape, ScheduledFault, SwarmConfig,
    Target,
};

/// The coverage marks the catalogue's scenarios declare: the situations each exists to
/// reach, which every sweep of it must reach in some seed. Each was reached in every one of
/// seeds 0-2 when declared (`coordsim sweep --scenario NAME --seeds 3` prints the marks
/// reached), so a sweep of a few seeds reaching none of them means the scenario no longer
/// does what it is for.
const MARKS: &[(&str, &[Mark])] = &[
    (
        "zk_queue_lock_expiry",
        &[
            Mark::LockHandedOverWithoutRelease,
            Mark::FencedWriteRejected,
            Mark::SessionExpiredWhileInUse,
        ],
    ),
    (
        "zk_herd_lock_expiry",
        &[
            Mark::LockHandedOverWithoutRelease,
            Mark::FencedWriteRejected,
        ],
    ),
    (
        "etcd_mutex_expiry",
        &[
            Mark::LockHandedOverWithoutRelease,
            Mark::FencedWriteRejected,
            Mark::LeaseExpiredWhileHeld,
        ],
    ),
    ("zk_rw_lock_expiry", &[Mark::LockHandedOverWithoutRelease]),
    (
        "zk_queue_lock_expiry_slow_resource",
        &[Mark::LockHandedOverWithoutRelease],
    ),
    (
        "zk_queue_lock_cut_off_holder",
        &[
            Mark::LockHandedOverWithoutRelease,
            Mark::SessionExpiredWhileInUse,
        ],
    ),
    (
        "etcd_mutex_cut_off_holder",
        &[
            Mark::LockHandedOverWithoutRelease,
            Mark::LeaseExpiredWhileHeld,
        ],
    ),
    (
        "etcd_mutex_faults",
        &[Mark::LeaderDeposedWithWritesInFlight],
    ),
    ("zk_queue_lock_crashes", &[Mark::WatchFiredAcrossFailover]),
    (
        "zab_rejoin_crash",
        &[
            Mark::ZabTruncSync,
            Mark::ZabSnapSync,
            Mark::IndeterminateWriteCommitted,
        ],
    ),
    ("zab_quorum_restart", &[Mark::ZabTruncSync]),
    (
        "zab_leader_killer_diffs",
        &[Mark::ZabTruncSync, Mark::WatchFiredAcrossFailover],
    ),
    (
        "zab_leader_killer",
        &[Mark::ZabSnapSync, Mark::LeaderDeposedWithWritesInFlight],
    ),
    ("zab_trace_diff_without_trunc", &[Mark::ZabTruncSync]),
    ("zab_trace_snap_zxid_below_log_tail", &[Mark::ZabSnapSync]),
    ("zab_watches", &[Mark::WatchFiredAcrossFailover]),
    (
        "zab_cut_off_leader_readers_join",
        &[Mark::WatchFiredAcrossFailover, Mark::ZabTruncSync],
    ),
    ("raft_snapshots_swarm", &[Mark::RaftInstallSnapshot]),
    ("raft_snapshot_catch_up", &[Mark::RaftInstallSnapshot]),
    ("etcd_watch_after_snapshot", &[Mark::RaftInstallSnapshot]),
    (
        "raft_leader_killer",
        &[Mark::LeaderDeposedWithWritesInFlight],
    ),
    (
        "raft_cut_off_leader",
        &[Mark::LeaderDeposedWithWritesInFlight],
    ),
    (
        "zk_protected_create_lost_reply",
        &[Mark::IndeterminateWriteCommitted],
    ),
    (
        "zk_sequential_names_under_faults",
        &[
            Mark::IndeterminateWriteCommitted,
            Mark::IndeterminateWriteLost,
        ],
    ),
    ("etcd_lease_paused_holder", &[Mark::LeaseExpiredWhileHeld]),
    ("raft_leases", &[Mark::LeaseExpiredWhileHeld]),
    ("zk_expiry_paused_holder", &[Mark::SessionExpiredWhileInUse]),
    (
        "zk_expiry_partitioned_holder",
        &[Mark::SessionExpiredWhileInUse],
    ),
];

/// Every scenario of the catalogue.
pub fn all() -> Vec<Scenario> {
    let mut scenarios = catalogue();
    for scenario in &mut scenarios {
        if let Some((_, marks)) = MARKS.iter().find(|(name, _)| *name == scenario.name) {
            scenario.marks = marks.to_vec();
        }
    }
    scenarios
}

fn catalogue() -> Vec<Scenario> {
    let mut scenarios = vec![ledger()];
    scenarios.extend(etcd::raft::scenarios());
    scenarios.extend(zk::zab::scenarios());
    scenarios.extend(shared::locks::scenarios());
    scenarios.extend(etcd::store::scenarios());
    scenarios.extend(zk::sessions::scenarios());
    scenarios.extend(zk::znodes::scenarios());
    scenarios.extend(zk::traces::scenarios());
    scenarios.extend(shared::elections::scenarios());
    scenarios.extend(shared::discovery::scenarios());
    scenarios.extend(zk::primitives::scenarios());
    scenarios
}

/// The catalogue scenario called `name`.
pub fn get(name: &str) -> Option<Scenario> {
    all().into_iter().find(|scenario| scenario.name == name)
}

/// A catalogue scenario's base: [`Scenario::base`].
pub(crate) fn scenario(
    name: &str,
    description: &str,
    store: Store,
    servers: usize,
    clients: usize,
) -> Scenario {
    Scenario::base(name, description, store, servers, clients)
}

pub(crate) fn swarm(mean_interval_ms: u64, kinds: &[FaultKind]) -> FaultSource {
    FaultSource::Swarm(SwarmConfig {
        mean_interval_ms,
        kinds: kinds.to_vec(),
        ..SwarmConfig::default()
    })
}

/// A partition that cuts `node` (a node, or a role resolved when it fires) off from
/// everyone.
pub(crate) fn isolation(node: impl Into<Target>) -> Fault {
    Fault::Partition {
        shape: PartitionShape::IsolateNode { node: node.into() },
    }
}

/// `node` cut off from everyone from `at_ms` for `for_ms`.
pub(crate) fn isolated(node: impl Into<Target>, at_ms: u64, for_ms: u64) -> ScheduledFault {
    ScheduledFault::at(at_ms, isolation(node)).lasting(for_ms)
}

/// The fault target a catalogue name spells (`s1`, `c2`, `holder`, `waiter`, …).
pub(crate) fn target(name: &str) -> Target {
    name.parse()
        .unwrap_or_else(|_| panic!("`{name}` names no node or role"))
}

pub(crate) fn slow_disks(world: &mut WorldSettings) {
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
            // The kind `coordsim list` shows is the one a scenario file spells.
            let value = serde_json::to_value(&scenario.workload).unwrap();
            assert_eq!(value["kind"], scenario.workload.kind(), "{}", scenario.name);
        }
    }

    #[test]
    fn scenarios_move_to_the_other_store_where_their_workload_runs_on_both() {
        let mut moved = 0;
        for scenario in all() {
            let other = match scenario.store {
                Store::Raft => Store::Zab,
                Store::Zab => Store::Raft,
                Store::Ledger => Store::Raft,
            };
            assert_eq!(scenario.on_store(scenario.store).as_ref(), Ok(&scenario));
            let Some(workload) = scenario.workload.on_store(other) else {
                let error = scenario.on_store(other).unwrap_err().to_string();
                assert!(
                    error.contains("expected a workload that runs on both"),
                    "{error}"
                );
                continue;
            };
            assert_eq!(workload.store(), other, "{}", scenario.name);
            assert_eq!(
                workload.on_store(scenario.store),
                Some(scenario.workload.clone())
            );
            // A scenario fails to move only by a known-bug variant of its own store.
            match scenario.on_store(other) {
                Ok(on_other) => {
                    moved += 1;
                    assert_eq!(on_other.store, other);
                    assert_eq!(on_other.faults, scenario.faults, "{}", scenario.name);
                    assert!(on_other.check_set().iter().all(|check| {
                        !check.name.starts_with(match scenario.store {
                            Store::Zab => "zk.",
                            _ => "etcd.",
                        })
                    }));
                }
                Err(error) => assert!(
                    error.field.starts_with("bugs[") && !scenario.bugs.is_empty(),
                    "{}: {error}",
                    scenario.name
                ),
            }
        }
        assert!(moved >= 20, "only {moved} scenarios moved");
    }
}
