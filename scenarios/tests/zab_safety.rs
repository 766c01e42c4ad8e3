//! The ZAB store under seeded faults (partitions, clogs, loss, latency, crashes, pauses,
//! clock steps and drift): every protocol and ZooKeeper property holds on every seed, the
//! faults fire, and after the heal the ensemble serves every client again.

mod zk_support;

use scenarios::{
    checkers::{protocol_checks, zk_store_checks},
    sweep::Sweep,
};
use std::time::Duration;
use zk_support::ZkWorkload;

fn all_checks(outcome: &sim::RunOutcome) -> Vec<Box<dyn scenarios::Violation>> {
    let mut violations = protocol_checks(&outcome.history);
    violations.extend(zk_store_checks(&outcome.history, Duration::from_secs(1)));
    violations
}

#[test]
fn three_servers_stay_safe_under_swarm_faults() {
    let workload = ZkWorkload::new(3, 3);
    let summary = Sweep::new(
        "scenarios",
        "zab_safety",
        "three_servers_stay_safe_under_swarm_faults",
        4,
    )
    .run(|seed| workload.run(seed), all_checks);
    summary.assert_clean();
    let faults = &summary.fault_totals;
    assert!(faults.faults_applied() > 0, "no fault fired: {faults}");
    assert!(
        faults.crashes + faults.partitions + faults.pauses > 0,
        "no crash, partition or pause fired: {faults}"
    );
}

#[test]
fn five_servers_stay_safe_under_swarm_faults() {
    let workload = ZkWorkload::new(5, 3);
    let summary = Sweep::new(
        "scenarios",
        "zab_safety",
        "five_servers_stay_safe_under_swarm_faults",
        3,
    )
    .run(|seed| workload.run(seed), all_checks);
    summary.assert_clean();
    assert!(summary.fault_totals.faults_applied() > 0);
}

#[test]
fn ensembles_of_one_and_seven_serve_and_stay_safe() {
    for servers in [1, 7] {
        let mut workload = ZkWorkload::new(servers, 2);
        if servers == 1 {
            // A single server cannot survive a partition or crash: only network faults.
            workload.swarm.kinds = vec![
                sim::fault::FaultKind::Latency,
                sim::fault::FaultKind::ClockStep,
            ];
        }
        let summary = Sweep::new(
            "scenarios",
            "zab_safety",
            "ensembles_of_one_and_seven_serve_and_stay_safe",
            1,
        )
        .run(|seed| workload.run(seed), all_checks);
        summary.assert_clean();
    }
}

#[test]
fn same_seed_same_history() {
    let workload = ZkWorkload::new(3, 2);
    let seed = sim::Seed::new(7);
    let first = workload.run(seed);
    let second = workload.run(seed);
    assert_eq!(first.history_digest(), second.history_digest());
    assert!(first.history.len() > 100);
}
