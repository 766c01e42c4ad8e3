//! The lock scenarios: each lock recipe on its store, fault-free, under faults that leave
//! sessions alive, and with holders paused past their session timeout or lease TTL.

use crate::catalogue::{isolated, scenario, swarm, target};
use crate::{
    scenario::{Scenario, SkippedCheck},
    store::Store,
    workload::{LockNodeAcl, LockRecipe, Locks, Workload},
};
use models::zk::SessionExpiry;
use sim::fault::{
    Fault, FaultKind, FaultPlan, FaultSource, PauseClients, PausedClient, ScheduledFault,
};

/// The faults of the `_faults` scenarios: the network and the servers misbehave, clients
/// are not paused (so no session should expire while its client is alive and connected
/// to a live quorum). The election scenarios use the same.
pub(in crate::catalogue) const SERVER_FAULTS: [FaultKind; 5] = [
    FaultKind::Partition,
    FaultKind::Loss,
    FaultKind::Latency,
    FaultKind::Crash,
    FaultKind::Pause,
];

/// Whether clients can believe they hold the lock together in a scenario's runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Belief {
    /// No: a correct recipe notices every loss in time, so `recipe.mutual_exclusion` runs.
    Exclusive,
    /// Yes, by design: holders are paused past their session, and a paused process notices
    /// nothing. Safety is judged at the fenced resource only.
    PausedHoldersOverlap,
}

/// The checks of the lock workload a lock scenario does not run, and why.
fn lock_skips(recipe: LockRecipe, belief: Belief) -> Vec<SkippedCheck> {
    let mut skipped = Vec::new();
    if belief == Belief::PausedHoldersOverlap {
        skipped.push(SkippedCheck {
            check: match recipe {
                LockRecipe::ZkRwLock => "recipe.rw_exclusion",
                _ => "recipe.mutual_exclusion",
            }
            .into(),
            reason: "holders are paused past their session: a paused process still believes \
                     it holds the lock when the store has given it away; safety is judged at \
                     the fenced resource (recipe.fenced_writes)"
                .into(),
        });
    }
    if recipe == LockRecipe::ZkHerdLock {
        skipped.push(SkippedCheck {
            check: "recipe.herd_effect".into(),
            reason: "the herd lock wakes every waiter at each release by design; \
                     `coordsim compare-locks` measures its herd"
                .into(),
        });
    }
    skipped
}

/// Every lock scenario.
pub(in crate::catalogue) fn scenarios() -> Vec<Scenario> {
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
        (
            LockRecipe::ZkRwLock,
            "zk_rw_lock",
            Store::Zab,
            "the ZooKeeper read/write lock (30 % of turns write, the rest read; readers share)",
        ),
    ];
    let mut scenarios = Vec::new();
    for (recipe, name, store, what) in recipes {
        let base = |suffix: &str, description: String| Scenario {
            workload: Workload::Locks(Locks {
                recipe,
                ..Locks::default()
            }),
            skip_checks: lock_skips(recipe, Belief::Exclusive),
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
            skip_checks: lock_skips(recipe, Belief::PausedHoldersOverlap),
            // Three pauses of whoever holds the lock then (a pause that finds nobody holding
            // is skipped, and recorded as such).
            faults: FaultSource::PauseClients(PauseClients {
                interval_ms: 500,
                pause_ms: 2_500,
                whom: PausedClient::Holder,
            }),
            fault_phase_ms: 12_000,
            // Long enough critical sections that a pause mostly finds a holder.
            workload: Workload::Locks(Locks {
                recipe,
                hold_ms: 300,
                ..Locks::default()
            }),
            ..base(
                "_expiry",
                format!(
                    "{what} with the holder paused for 2.5 s, past its session timeout / \
                     lease TTL (2 s): it still believes it holds the lock when it resumes, and writes; \
                     the fenced resource must refuse it"
                ),
            )
        });
    }
    scenarios.push(queue_lock_creator_all_acl());
    scenarios.push(queue_lock_crashes());
    scenarios.push(queue_lock_quick_turns());
    scenarios.push(queue_lock_expiry_slow_resource());
    scenarios.push(queue_lock_curator_joiner_cut_off());
    scenarios.push(queue_lock_seq_wrap());
    scenarios.extend(cut_off(
        LockRecipe::ZkQueueLock,
        "zk_queue_lock",
        Store::Zab,
    ));
    scenarios.extend(cut_off(LockRecipe::EtcdMutex, "etcd_mutex", Store::Raft));
    scenarios
}

/// Long critical sections, and a holder (or the longest waiter) cut off from everyone for
/// longer than its session timeout: a correct recipe notices the loss before the store
/// gives the lock away (ZooKeeper: no server heard for 2/3 of the timeout; etcd: no
/// renewal acknowledged for a TTL), or, waiting, checks that its key survived.
fn cut_off(recipe: LockRecipe, name: &str, store: Store) -> Vec<Scenario> {
    let isolate = |role: &str, at_ms: u64| isolated(target(role), at_ms, 3_000);
    let long_holds = |suffix: &str, role: &str, description: &str| Scenario {
        workload: Workload::Locks(Locks {
            recipe,
            hold_ms: 4_000,
            ..Locks::default()
        }),
        skip_checks: lock_skips(recipe, Belief::Exclusive),
        faults: FaultSource::Plan(FaultPlan::new(vec![
            isolate(role, 2_000),
            isolate(role, 8_000),
        ])),
        fault_phase_ms: 12_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 40_000,
        ..scenario(&format!("{name}{suffix}"), description, store, 3, 3)
    };
    vec![
        long_holds(
            "_cut_off_holder",
            "holder",
            "four-second critical sections; the holder cut off from everyone for 3 s (past \
             its 2 s session) twice: it must stop believing before the lock moves on",
        ),
        long_holds(
            "_cut_off_waiter",
            "waiter",
            "four-second critical sections; the longest waiter cut off from everyone for 3 s \
             (past its 2 s session) twice: its key goes with its session, and when its turn \
             seems to come it must find that out",
        ),
    ]
}

/// The queue lock with the holder paused just past its session timeout, so that it resumes
/// and writes about when the next holder's first write reaches the resource, and slow disks
/// (20–40 ms syncs), so that a resource that writes durably between its token check and the
/// write's commit (`resource.check_not_atomic`) has both writes in that gap at once. A
/// correct resource checks and commits in one step and refuses the stale write.
fn queue_lock_expiry_slow_resource() -> Scenario {
    let mut slow = Scenario {
        workload: Workload::Locks(Locks {
            recipe: LockRecipe::ZkQueueLock,
            hold_ms: 60,
            ..Locks::default()
        }),
        skip_checks: lock_skips(LockRecipe::ZkQueueLock, Belief::PausedHoldersOverlap),
        // 2.2 s: found by sweeping the pause (2.05 to 2.45 s) over 30–40 seeds; the stale
        // write meets the new holder's most often just past the 2 s session timeout.
        faults: FaultSource::PauseClients(PauseClients {
            interval_ms: 500,
            pause_ms: 2_200,
            whom: PausedClient::Holder,
        }),
        fault_phase_ms: 12_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 30_000,
        ..scenario(
            "zk_queue_lock_expiry_slow_resource",
            "the ZooKeeper queue lock, five clients, the holder paused for 2.2 s (its session \
             expires at 2 s) and writing as it resumes, as the next holder writes; slow disks \
             (20–40 ms syncs) at the fenced resource and the servers",
            Store::Zab,
            3,
            5,
        )
    };
    crate::catalogue::slow_disks(&mut slow.world);
    slow
}

/// The queue lock with servers crashing (and restarting) often: a client connected to a
/// crashed server loses its connection with requests in flight, among them creates of line
/// nodes that the leader committed before the crash, so the client never hears of them.
/// Protected creates find such a node by its GUID; unprotected ones make a second
/// (`recipe.unprotected_seq_create`).
fn queue_lock_crashes() -> Scenario {
    let mut crashes = Scenario {
        workload: Workload::Locks(Locks {
            recipe: LockRecipe::ZkQueueLock,
            ..Locks::default()
        }),
        // `zk.linearizable`'s search budget the many crashes' unknown outcomes on the one lock
        // path can exhaust (inconclusive, at seed 60 of 100); the `zab` scenarios judge the
        // store's linearizability.
        skip_checks: crate::catalogue::zk::primitives::linearizable_skipped(),
        faults: swarm(250, &[FaultKind::Crash]),
        fault_phase_ms: 8_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 30_000,
        ..scenario(
            "zk_queue_lock_crashes",
            "the ZooKeeper queue lock, five clients, a server crashing and restarting every \
             quarter second or so: creates committed just before a crash lose their replies",
            Store::Zab,
            3,
            5,
        )
    };
    // Slow syncs keep creates in flight longer, so more crashes catch one.
    crate::catalogue::slow_disks(&mut crashes.world);
    crashes
}

/// The queue lock with two clients taking quick turns (5 ms in the critical section, 5 ms
/// between turns), no faults: a client that joins while the other holds often finds, with
/// `exists`, that the holder's node went after its `getChildren` listed it — the race in
/// which a waiter must list the children again instead of waiting on a watch for the
/// node's creation (`recipe.no_relist_on_gone_predecessor`, judged by
/// `recipe.no_lost_wakeup`). With five clients and 50 ms holds the line is long and the
/// race rare.
fn queue_lock_quick_turns() -> Scenario {
    Scenario {
        workload: Workload::Locks(Locks {
            recipe: LockRecipe::ZkQueueLock,
            hold_ms: 5,
            think_ms: 5,
            ..Locks::default()
        }),
        fault_phase_ms: 8_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 30_000,
        ..scenario(
            "zk_queue_lock_quick_turns",
            "the ZooKeeper queue lock, two clients taking quick turns (5 ms holds, 5 ms \
             between): a joiner's predecessor often goes between its listing and its exists",
            Store::Zab,
            3,
            2,
        )
    }
}

/// Curator's clients on the queue lock (a session given up after a session timeout without
/// a connection, and a join whose reply that loss swallowed carried into the next session
/// by its GUID): three times, the newest waiter — the one whose create is most likely in
/// flight — is cut off from everyone for 2.5 s, and 1 s into the cut the leader crashes
/// for 1 s. The new leader gives every session a fresh timeout, so the cut-off client's
/// old session, and the node its lost create made, outlive the client's own expiry: back
/// in a new session, it finds that node by its GUID. A correct client deletes it and joins
/// again; without the session check (`recipe.protection_without_session_check`) it holds
/// the lock by it.
fn queue_lock_curator_joiner_cut_off() -> Scenario {
    let round = |at_ms: u64| {
        [
            isolated(target("newest_waiter"), at_ms, 2_500),
            ScheduledFault::at(
                at_ms + 1_000,
                Fault::Crash {
                    node: "leader".parse().expect("a role"),
                },
            )
            .lasting(1_000),
        ]
    };
    let mut scenario = Scenario {
        workload: Workload::Locks(Locks {
            recipe: LockRecipe::ZkQueueLock,
            session_expiry: SessionExpiry::AfterDisconnectedTimeout,
            ..Locks::default()
        }),
        skip_checks: lock_skips(LockRecipe::ZkQueueLock, Belief::Exclusive),
        faults: FaultSource::Plan(FaultPlan::new(
            [2_000, 6_000, 10_000].into_iter().flat_map(round).collect(),
        )),
        fault_phase_ms: 13_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 30_000,
        ..scenario(
            "zk_queue_lock_curator_joiner_cut_off",
            "Curator's clients (simulated session expiry, a lost join carried into the next \
             session) on the ZooKeeper queue lock, five clients; the newest waiter cut off \
             for 2.5 s three times, the leader crashed 1 s into each cut: the new leader \
             keeps the cut-off client's old session, and its node, past the client's expiry",
            Store::Zab,
            3,
            5,
        )
    };
    // Slow syncs keep creates in flight longer, so more cuts catch one.
    crate::catalogue::slow_disks(&mut scenario.world);
    scenario
}

/// The queue lock under a lock node whose sequence counter is 6 bits wide: it wraps from 31
/// to -32 after 32 creates and deletes of waiters' nodes (about two seconds of turns), back
/// to 0 after 64, and so on, so every run crosses the wrap several times with a holder and
/// waiters on both sides of it. A correct line orders the nodes along the counter; one that
/// compares the names as text (`recipe.seq_overflow_compare`) lets the first waiter past a
/// wrap hold beside the holder. No faults: the wrap is the trigger.
fn queue_lock_seq_wrap() -> Scenario {
    Scenario {
        workload: Workload::Locks(Locks {
            recipe: LockRecipe::ZkQueueLock,
            ..Locks::default()
        }),
        fault_phase_ms: 8_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 30_000,
        ..scenario(
            "zk_queue_lock_seq_wrap",
            "the ZooKeeper queue lock, five clients, no faults, under a lock node whose \
             sequence counter is 6 bits wide: it wraps to negative names every 64 creates \
             and deletes, with a holder and waiters on both sides of the wrap",
            Store::Zab,
            3,
            5,
        )
    }
    .with_sequence_counter_bits(6)
}

/// The queue lock with its nodes under `CREATOR_ALL_ACL` (every client authenticated as the
/// lock's digest user), under the server faults: ACLs go through the log, SNAP and
/// recovery like every write, and the lock behaves as with open nodes.
fn queue_lock_creator_all_acl() -> Scenario {
    Scenario {
        workload: Workload::Locks(Locks {
            recipe: LockRecipe::ZkQueueLock,
            node_acl: LockNodeAcl::CreatorAll,
            ..Locks::default()
        }),
        faults: swarm(500, &SERVER_FAULTS),
        skip_checks: lock_skips(LockRecipe::ZkQueueLock, Belief::Exclusive),
        fault_phase_ms: 8_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 30_000,
        ..scenario(
            "zk_queue_lock_creator_acl",
            "the ZooKeeper queue lock, its nodes made with CREATOR_ALL_ACL by clients that \
             authenticate as one digest user, under partitions, loss, latency, server crashes \
             and pauses",
            Store::Zab,
            3,
            5,
        )
    }
}
