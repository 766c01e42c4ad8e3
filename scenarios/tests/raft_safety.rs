//! The Raft store under faults: partitions, crashes and restarts, pauses, loss,
//! duplication, clock trouble. Every run is checked for leader uniqueness per term, term
//! monotonicity, replica agreement (log matching at applied indexes), in-order apply,
//! linearizable reads seeing prior acknowledged writes, and acknowledged-write durability
//! in the final state; the suite asserts that its faults fired and the store made progress.

use scenarios::{
    Violation,
    checkers::{acknowledged_write_durability, protocol_checks, read_sees_prior_writes},
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
}

fn all_checks(outcome: &sim::RunOutcome, facts: &RunFacts) -> Vec<Box<dyn Violation>> {
    let history = &outcome.history;
    let mut violations = protocol_checks(history);
    violations.extend(boxed(read_sees_prior_writes::check(history)));
    violations.extend(boxed(acknowledged_write_durability::check(
        history,
        facts.final_reads_from,
    )));
    violations
}

fn boxed<V: Violation + 'static>(violations: Vec<V>) -> Vec<Box<dyn Violation>> {
    violations
        .into_iter()
        .map(|v| Box::new(v) as Box<dyn Violation>)
        .collect()
}

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
            facts.borrow_mut().insert(
                seed,
                RunFacts {
                    final_reads_from,
                    final_read_succeeded,
                    acknowledged,
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
    }
    summary.fault_totals
}

#[test]
fn five_servers_stay_safe_under_partitions_crashes_pauses_and_loss() {
    let started = std::time::Instant::now();
    let workload = KvWorkload {
        servers: 5,
        faults: Faults::Swarm(swarm(vec![
            FaultKind::Partition,
            FaultKind::Crash,
            FaultKind::Pause,
            FaultKind::Loss,
        ])),
        ..KvWorkload::default()
    };
    let totals = sweep(
        "five_servers_stay_safe_under_partitions_crashes_pauses_and_loss",
        2,
        workload,
    );
    println!("{totals} in {:?}", started.elapsed());
    assert!(totals.partitions > 0, "no partition fired: {totals}");
    assert!(
        totals.crashes > 0 && totals.restarts > 0,
        "no crash/restart: {totals}"
    );
    assert!(totals.pauses > 0, "no pause fired: {totals}");
    assert!(
        totals.messages_dropped_loss > 0,
        "no message lost: {totals}"
    );
}
