//! The etcd store's feature scenarios: leases kept alive, abandoned and lost, watches
//! resumed after reconnects and started at a compaction revision, compare-and-swap
//! transactions. Each pairs a workload that times its steps by simulated time with a fault
//! plan aimed at those steps (roles, `$labels` and spans), so a run replays from its
//! printed plan like any other.

use crate::catalogue::{isolated, scenario};
use crate::{
    scenario::{Scenario, Tuning},
    store::Store,
    workload::{
        CasCounter, CompactedWatch, HeldLease, LeaseKeeper, Renewal, WatchResume, Workload,
    },
};
use sim::{
    NodeId,
    fault::{Fault, FaultPlan, FaultSource, PartitionShape, ScheduledFault, Target},
};

/// The etcd store's feature scenarios.
pub(in crate::catalogue) fn scenarios() -> Vec<Scenario> {
    vec![
        lease_keep_alive(),
        lease_leader_changes(),
        lease_paused_holder(),
        lease_stale_reader(),
        watch_resume(),
        watch_after_snapshot(),
        compacted_watch(),
        cas_counter(),
    ]
}

/// The checks of every lease scenario: the store's set, and early expiry (no clock steps
/// here, so a lease that ends before its TTL since a renewal is a violation).
fn lease_checks() -> Vec<String> {
    vec!["default".into(), "etcd.lease_not_expired_early".into()]
}

/// The lease checks, and abandoned leases expiring in bound (for scenarios where a quorum
/// is up whenever a lease should expire).
fn lease_checks_with_expiry_bound() -> Vec<String> {
    let mut checks = lease_checks();
    checks.push("etcd.lease_expires_in_bound".into());
    checks
}

fn lease(name: &str, ttl_ms: u64, renewal: Renewal) -> HeldLease {
    HeldLease {
        name: name.into(),
        ttl_ms,
        renewal,
    }
}

/// No faults: the baseline of leases. One lease is kept alive for a while, one abandoned at
/// once; the abandoned one expires (its key with it) while the kept one lives, then the
/// kept one expires once its renewals stop.
fn lease_keep_alive() -> Scenario {
    Scenario {
        workload: Workload::LeaseKeeper(LeaseKeeper {
            leases: vec![
                lease("kept", 1_000, Renewal::UntilMs(4_500)),
                lease("abandoned", 1_000, Renewal::Never),
            ],
            read_every_ms: 250,
            ..LeaseKeeper::default()
        }),
        fault_phase_ms: 7_000,
        liveness_bound_ms: 10_000,
        checks: lease_checks_with_expiry_bound(),
        ..scenario(
            "etcd_lease_keep_alive",
            "a lease kept alive for three seconds and one abandoned at once: the abandoned \
             lease expires with its key while the kept one lives, then the kept one expires \
             once its renewals stop",
            Store::Raft,
            3,
            1,
        )
    }
}

/// The leader cut off for a second every two and a half seconds while a lease is kept
/// alive and another abandoned.
fn lease_leader_changes() -> Scenario {
    let cuts = (0..4)
        .map(|round| isolated(Target::Leader, 2_500 + 2_500 * round, 1_000))
        .collect();
    Scenario {
        workload: Workload::LeaseKeeper(LeaseKeeper {
            leases: vec![
                // Kept two seconds past the last cut: time for a slow election (split votes)
                // and a renewal with its winner. 2 s: etcd grants whole seconds (this lease
                // asked for 1.5 s before the model did too, and lived 2 s on a real etcd).
                lease("kept", 2_000, Renewal::UntilMs(13_000)),
                lease("abandoned", 2_000, Renewal::Never),
            ],
            read_every_ms: 250,
            ..LeaseKeeper::default()
        }),
        faults: FaultSource::Plan(FaultPlan::new(cuts)),
        fault_phase_ms: 11_000,
        // Checkpoints every half second, for the 2 s leases: each new leader starts them from
        // their checkpoint (the default, etcd's 5 minutes, checkpoints no lease this short).
        tuning: Tuning {
            lease_checkpoint_interval_ms: Some(500),
            ..Tuning::default()
        },
        // The kept lease is abandoned two seconds into the recovery, which gives it time to
        // expire (within the expiry bound) before the final reads.
        recovery_ms: 7_000,
        liveness_bound_ms: 10_000,
        checks: lease_checks_with_expiry_bound(),
        ..scenario(
            "etcd_lease_leader_changes",
            "the leader cut off four times while a lease is kept alive and another is \
             abandoned: no new leader expires the kept lease early, none keeps the \
             abandoned one alive, and the kept one expires once its renewals stop",
            Store::Raft,
            3,
            1,
        )
    }
}

/// The lease holder paused (a GC pause) for three TTLs while another client reads.
fn lease_paused_holder() -> Scenario {
    let holder = NodeId::client(0);
    Scenario {
        workload: Workload::LeaseKeeper(LeaseKeeper {
            leases: vec![lease("lock", 1_000, Renewal::UntilGone)],
            renew_every_ms: 250,
            ..LeaseKeeper::default()
        }),
        faults: FaultSource::Plan(FaultPlan::new(vec![
            ScheduledFault::at(
                2_500,
                Fault::Pause {
                    node: holder.into(),
                },
            )
            .lasting(3_000),
        ])),
        fault_phase_ms: 6_000,
        recovery_ms: 1_500,
        liveness_bound_ms: 10_000,
        checks: lease_checks(),
        ..scenario(
            "etcd_lease_paused_holder",
            "the holder of a kept-alive lease paused for three times its TTL: the lease \
             expires and its key goes while it sleeps (another client sees it gone), and \
             once awake its keep-alive learns the lease is gone",
            Store::Raft,
            3,
            2,
        )
    }
}

/// A lease abandoned just before its leader is cut off with a reader, the leader's clock
/// running slow: the new leader expires the lease while the old one still answers the
/// reader. With `raft.read_without_readindex` the old leader shows the reader the key of
/// the expired lease (`etcd.lease_keys_removed`).
fn lease_stale_reader() -> Scenario {
    let reader = NodeId::client(1);
    let old_leader = Target::Label("old_leader".into());
    Scenario {
        workload: Workload::LeaseKeeper(LeaseKeeper {
            leases: vec![lease("lock", 1_000, Renewal::Never)],
            read_every_ms: 10,
            operation_timeout_ms: 300,
            ..LeaseKeeper::default()
        }),
        faults: FaultSource::Plan(FaultPlan::new(vec![
            // 0.98 s after the holder asked for its lease of 1 s, just before the old leader
            // would expire it: the new leader expires it from a recent checkpoint while the
            // old one, its CheckQuorum slowed by its clock, still believes it leads.
            ScheduledFault::at(
                1_980,
                Fault::Partition {
                    shape: PartitionShape::Strand {
                        node: Target::Leader,
                        with: vec![reader],
                    },
                },
            )
            .lasting(2_500)
            .named("old_leader"),
            ScheduledFault::at(
                1_980,
                Fault::ClockDrift {
                    node: old_leader,
                    drift_ppm: -500_000,
                },
            )
            .lasting(2_500),
        ])),
        fault_phase_ms: 4_500,
        recovery_ms: 500,
        liveness_bound_ms: 10_000,
        tuning: Tuning {
            election_timeout_ms: Some((150, 160)),
            // Checkpoints close together: the new leader's lease runs out about when the
            // old leader's would have, while the old leader still believes it leads.
            lease_checkpoint_interval_ms: Some(100),
            ..Tuning::default()
        },
        checks: lease_checks(),
        ..scenario(
            "etcd_lease_stale_reader",
            "a lease abandoned just before its TTL runs out, as its leader, its clock \
             running slow, is cut off with a client that reads the lease key every 10 ms: \
             the new leader expires the lease while the old one can still answer the reader",
            Store::Raft,
            3,
            2,
        )
    }
}

/// A watcher from a past revision whose connections break: cut off, then every server
/// crashed in turn.
fn watch_resume() -> Scenario {
    let watcher = NodeId::client(1);
    let crashes = (0..3).map(|index| {
        ScheduledFault::at(
            2_400 + 700 * index as u64,
            Fault::Crash {
                node: NodeId::server(index).into(),
            },
        )
        .lasting(300)
    });
    let mut faults = vec![isolated(watcher, 1_500, 500)];
    faults.extend(crashes);
    Scenario {
        workload: Workload::WatchResume(WatchResume::default()),
        faults: FaultSource::Plan(FaultPlan::new(faults)),
        fault_phase_ms: 4_500,
        recovery_ms: 1_000,
        liveness_bound_ms: 10_000,
        ..scenario(
            "etcd_watch_resume",
            "a watch from a past revision while its client is cut off and every server \
             crashes in turn: after each reconnect it resumes after the last change it saw, \
             and every change arrives exactly once, in order",
            Store::Raft,
            3,
            2,
        )
    }
}

/// Watchers on every server while one server is cut off from the others (not from the
/// clients) until it needs a snapshot, then healed: the watchers it serves must go on from
/// where they were after it installs the snapshot (etcd-io/etcd#15271).
fn watch_after_snapshot() -> Scenario {
    let (s1, s2, s3) = (NodeId::server(0), NodeId::server(1), NodeId::server(2));
    let cut = ScheduledFault::at(
        1_500,
        Fault::Partition {
            shape: PartitionShape::Groups {
                groups: vec![vec![s1, s2], vec![s3]],
            },
        },
    )
    .lasting(2_000);
    Scenario {
        workload: Workload::WatchResume(WatchResume::default()),
        faults: FaultSource::Plan(FaultPlan::new(vec![cut])),
        fault_phase_ms: 4_500,
        recovery_ms: 1_000,
        liveness_bound_ms: 10_000,
        tuning: Tuning {
            snapshot_threshold: Some(5),
            ..Tuning::default()
        },
        ..scenario(
            "etcd_watch_after_snapshot",
            "a writer and three watchers while s3 is cut off from the other servers for 2 s \
             and they snapshot every 5 entries: s3 installs a snapshot, and the watchers it \
             serves resume from their own next revision, every change exactly once, in order",
            Store::Raft,
            3,
            4,
        )
    }
}

/// The election waiter of etcd-io/etcd#18089, round after round, without faults: the
/// compaction revision's delete must reach a watch from that revision.
fn compacted_watch() -> Scenario {
    Scenario {
        workload: Workload::CompactedWatch(CompactedWatch::default()),
        fault_phase_ms: 3_000,
        liveness_bound_ms: 10_000,
        ..scenario(
            "etcd_compacted_watch",
            "election waiters watching from the revision at which history was compacted, \
             the delete they wait for at that very revision (etcd-io/etcd#18089)",
            Store::Raft,
            3,
            1,
        )
    }
}

/// Three clients racing compare-and-swap increments of one counter while the leader crashes.
fn cas_counter() -> Scenario {
    Scenario {
        workload: Workload::CasCounter(CasCounter {
            think_time_ms: 50,
            ..CasCounter::default()
        }),
        faults: FaultSource::Plan(FaultPlan::new(vec![
            ScheduledFault::at(
                2_000,
                Fault::Crash {
                    node: Target::Leader,
                },
            )
            .lasting(1_000),
        ])),
        fault_phase_ms: 4_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 10_000,
        ..scenario(
            "etcd_cas_counter",
            "three clients increment one counter with compare-and-swap transactions while \
             the leader crashes: the counter ends at the number of acknowledged increments \
             (plus at most those whose answer was lost)",
            Store::Raft,
            3,
            3,
        )
    }
}
