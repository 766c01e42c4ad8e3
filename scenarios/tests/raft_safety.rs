//! The Raft store under faults: partitions, crashes and restarts, pauses, loss,
//! duplication, clock trouble. Every run is checked for leader uniqueness per term, term
//! monotonicity, replica agreement (log matching at applied indexes), in-order apply,
//! linearizable reads seeing prior acknowledged writes, acknowledged-write durability in the
//! final state, and linearizability of every key-value operation; the suite asserts that its
//! faults fired and the store made progress.

use checks::{
    Violation,
    etcd::{
        acknowledged_write_durability, linearizable as kv_linearizable, read_sees_prior_writes,
    },
};
use scenarios::{
    etcd_workload::{Faults, KvRun, KvWorkload, run},
    sweep::Sweep,
};
use sim::{
    FaultCounts, Seed,
    fault::{FaultKind, SwarmConfig},
};
use std::{cell::RefCell, collections::BTreeMap};

/// What a run adds to its outcome, by seed (the sweep passes only the `RunOutcome` on).
#[derive(Clone, Copy, Debug)]
struct RunFacts {
    final_reads_from: sim::time::SimTime,
    final_read_succeeded: bool,
    acknowledged: u64,
    /// Sub-operations (per key) the linearizability check searched.
    linearizability_checked: usize,
}

fn all_checks(outcome: &sim::RunOutcome, facts: &RunFacts) -> Vec<Box<dyn Violation>> {
    let history = &outcome.history;
    let mut violations = checks::run(
        checks::protocol::CHECKS,
        history,
        &checks::CheckContext::default(),
    );
    violations.extend(boxed(read_sees_prior_writes::check(history)));
    violations.extend(boxed(acknowledged_write_durability::check(
        history,
        facts.final_reads_from,
    )));
    violations.extend(kv_linearizable::check_history(history));
    violations
}

use checks::boxed;

fn swarm(kinds: Vec<FaultKind>) -> SwarmConfig {
    SwarmConfig {
        fault_phase_ms: 8_000,
        mean_interval_ms: 400,
        kinds,
        ..SwarmConfig::default()
    }
}

/// Runs a sweep and returns the fault totals, after asserting every run was clean, made
/// progress and read every key at the end.
fn sweep(test_name: &str, default_seeds: u64, workload: KvWorkload) -> FaultCounts {
    let facts: RefCell<BTreeMap<Seed, RunFacts>> = RefCell::new(BTreeMap::new());
    let summary = Sweep::new("scenarios", "raft_safety", test_name, default_seeds).run(
        |seed| {
            let KvRun {
                outcome,
                final_reads_from,
                final_read_succeeded,
                acknowledged,
            } = run(seed, &workload);
            // What the linearizability check (in `all_checks`) gets to search: reading the
            // history again is cheap, the search is not repeated.
            let linearizability_checked =
                checks::linearizability::kv::from_history(&outcome.history)
                    .1
                    .operations
                    .len();
            facts.borrow_mut().insert(
                seed,
                RunFacts {
                    final_reads_from,
                    final_read_succeeded,
                    acknowledged,
                    linearizability_checked,
                },
            );
            outcome
        },
        |outcome| all_checks(outcome, &facts.borrow()[&outcome.seed]),
    );
    summary.assert_clean();
    for (seed, facts) in facts.borrow().iter() {
        assert!(
            facts.final_read_succeeded,
            "seed {seed}: the final read never succeeded"
        );
        assert!(
            facts.acknowledged > 20,
            "seed {seed}: only {} operations acknowledged",
            facts.acknowledged
        );
        assert!(
            facts.linearizability_checked > 20,
            "seed {seed}: linearizability checked only {} operations",
            facts.linearizability_checked
        );
    }
    summary.fault_totals
}

/// Whether the sweep runs its default seeds (not one pinned seed, whose swarm may switch
/// only some fault kinds on): only then must every kind have fired.
fn sweeping() -> bool {
    std::env::var(sim::env::SEED).is_err()
}

fn assert_fired(totals: &FaultCounts, kinds: &[FaultKind]) {
    if !sweeping() {
        assert!(totals.faults_applied() > 0, "no fault fired: {totals}");
        return;
    }
    for kind in kinds {
        let fired = match kind {
            FaultKind::Partition => totals.partitions > 0 && totals.heals > 0,
            FaultKind::Crash => totals.crashes > 0 && totals.restarts > 0,
            FaultKind::Pause => totals.pauses > 0 && totals.resumes > 0,
            FaultKind::Loss => totals.messages_dropped_loss > 0,
            FaultKind::Duplication => totals.messages_duplicated > 0,
            FaultKind::Clog => totals.clogs > 0,
            FaultKind::ClockStep => totals.clock_steps > 0,
            FaultKind::ClockDrift => totals.clock_drifts > 0,
            FaultKind::Latency | FaultKind::HealAll => {
                totals.network_changes > 0 || totals.heal_alls > 0
            }
        };
        assert!(fired, "{kind:?} never fired over the sweep: {totals}");
    }
}

#[test]
fn three_servers_stay_safe_under_partitions_crashes_pauses_loss_and_duplication() {
    let kinds = vec![
        FaultKind::Partition,
        FaultKind::Crash,
        FaultKind::Pause,
        FaultKind::Loss,
        FaultKind::Duplication,
        FaultKind::Clog,
    ];
    let totals = sweep(
        "three_servers_stay_safe_under_partitions_crashes_pauses_loss_and_duplication",
        8,
        KvWorkload {
            servers: 3,
            faults: Faults::Swarm(swarm(kinds.clone())),
            ..KvWorkload::default()
        },
    );
    assert_fired(&totals, &kinds);
}

#[test]
fn five_servers_stay_safe_under_every_fault_kind() {
    let kinds = vec![
        FaultKind::Partition,
        FaultKind::Clog,
        FaultKind::Loss,
        FaultKind::Latency,
        FaultKind::Duplication,
        FaultKind::Crash,
        FaultKind::Pause,
        FaultKind::ClockStep,
        FaultKind::ClockDrift,
    ];
    let totals = sweep(
        "five_servers_stay_safe_under_every_fault_kind",
        8,
        KvWorkload {
            servers: 5,
            faults: Faults::Swarm(swarm(kinds.clone())),
            ..KvWorkload::default()
        },
    );
    assert_fired(&totals, &kinds);
}

#[test]
fn seven_servers_stay_safe_under_partitions_crashes_and_pauses() {
    let kinds = vec![
        FaultKind::Partition,
        FaultKind::Crash,
        FaultKind::Pause,
        FaultKind::Loss,
    ];
    let totals = sweep(
        "seven_servers_stay_safe_under_partitions_crashes_and_pauses",
        8,
        KvWorkload {
            servers: 7,
            faults: Faults::Swarm(swarm(kinds.clone())),
            ..KvWorkload::default()
        },
    );
    assert_fired(&totals, &kinds);
}

/// A single voter: every crash loses whatever was not yet fsynced, and nothing acknowledged
/// may be among it (slow disks widen the window the `raft.ack_before_fsync` test exploits).
#[test]
fn a_single_server_keeps_acknowledged_writes_across_crashes() {
    let kinds = vec![FaultKind::Crash, FaultKind::Pause];
    let totals = sweep(
        "a_single_server_keeps_acknowledged_writes_across_crashes",
        6,
        KvWorkload {
            servers: 1,
            disk_sync_latency: Some((
                std::time::Duration::from_millis(20),
                std::time::Duration::from_millis(40),
            )),
            faults: Faults::Swarm(SwarmConfig {
                fault_phase_ms: 8_000,
                mean_interval_ms: 1_500,
                max_unavailable_servers: Some(1),
                kinds: kinds.clone(),
                ..SwarmConfig::default()
            }),
            ..KvWorkload::default()
        },
    );
    assert_fired(&totals, &kinds);
    if sweeping() {
        assert!(
            totals.unsynced_writes_lost > 0,
            "no crash ever lost unsynced writes: {totals}"
        );
    }
}

/// Leaders are crashed again and again, some after being cut off with the clients (so they
/// hold entries they cannot commit), one entry per AppendEntries, on a lossy network: the
/// schedule that finds `raft.commit_prev_term_by_count` (Figure 8) leaves the correct core safe.
#[test]
fn five_servers_stay_safe_when_leaders_keep_crashing() {
    let totals = sweep(
        "five_servers_stay_safe_when_leaders_keep_crashing",
        8,
        KvWorkload {
            servers: 5,
            loss_percent: 20,
            tune: scenarios::etcd_workload::Tuning::with(|config| {
                config.raft.max_entries_per_append = 1
            }),
            faults: Faults::LeaderKiller(scenarios::etcd_workload::LeaderKiller {
                phase: std::time::Duration::from_secs(8),
                max_delay: std::time::Duration::from_millis(200),
                leader_percent: 30,
                strand_leader_percent: 50,
            }),
            ..KvWorkload::default()
        },
    );
    assert!(totals.crashes > 0 && totals.partitions > 0, "{totals}");
}

/// Determinism: the same seed replays the same run, fault schedule, client operations and
/// protocol events included, to the same history digest; another seed does not.
#[test]
fn a_run_replays_to_the_same_history_digest() {
    let workload = KvWorkload {
        servers: 3,
        faults: Faults::Swarm(swarm(vec![
            FaultKind::Partition,
            FaultKind::Crash,
            FaultKind::Loss,
            FaultKind::Duplication,
        ])),
        ..KvWorkload::default()
    };
    let seed = sim::env::test_seeds(1)[0];
    let first = run(seed, &workload);
    let again = run(seed, &workload);
    assert_eq!(
        first.outcome.history_digest(),
        again.outcome.history_digest()
    );
    assert_eq!(first.outcome.history, again.outcome.history);
    let other = run(seed.offset(1), &workload);
    assert_ne!(
        first.outcome.history_digest(),
        other.outcome.history_digest()
    );
}
