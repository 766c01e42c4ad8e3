//! The lock comparison's liveness bound grows with the clients. After the heal every client
//! takes the lock once more, one after the other, so at 256 clients that alone outlasts the
//! catalogue's 30 s: `compare-locks` raises the bound to what the workload needs
//! (`Scenario::liveness_needed_ms`), and a run that needs it is clean. The raised bound is
//! still a bound: a lock held past it fails liveness.

use coordsim::lock_comparison::with_clients;
use scenarios::{Failure, Scenario, catalogue, driver, workload::Workload};
use sim::Seed;

/// The cheapest of the three locks to run at this size (etcd's mutex: no herd, no watch per
/// waiter on the servers).
const LOCK: &str = "etcd_mutex";

const CLIENTS: usize = 256;

fn at_256_clients() -> Scenario {
    with_clients(catalogue::get(LOCK).expect("catalogued"), CLIENTS).expect("valid")
}

#[test]
fn the_bound_is_the_scenarios_own_until_the_clients_turns_need_more() {
    let catalogued = catalogue::get(LOCK).unwrap();
    assert_eq!(catalogued.liveness_bound_ms, 30_000);
    for clients in [2, 8, 32, 64] {
        let scenario = with_clients(catalogued.clone(), clients).unwrap();
        assert_eq!(scenario.liveness_bound_ms, 30_000, "{clients} clients");
    }
    // 10 s of patience, then 257 turns of a 50 ms hold and a 154 ms hand-off.
    assert_eq!(at_256_clients().liveness_bound_ms, 62_428);
}

#[test]
fn at_256_clients_a_run_is_clean_with_the_raised_bound_and_fails_with_the_catalogues() {
    let scenario = at_256_clients();
    let outcome = driver::run(&scenario, Seed::new(0));
    // Clean means the liveness phase ended: every one of the 256 clients took the lock.
    assert_eq!(outcome.failure, None, "{outcome}");
    let short = Scenario {
        liveness_bound_ms: 30_000,
        ..scenario
    };
    let outcome = driver::run(&short, Seed::new(0));
    let Some(Failure::Liveness { pending }) = &outcome.failure else {
        panic!("the catalogue's 30 s should not be enough at 256 clients: {outcome}");
    };
    assert!(pending.contains("still waiting for"), "{pending}");
}

#[test]
fn a_lock_held_past_the_raised_bound_still_fails_liveness() {
    let mut scenario = at_256_clients();
    let Workload::Locks(locks) = &mut scenario.workload else {
        unreachable!("{LOCK} runs the lock workload");
    };
    // An hour's critical section: whoever holds the lock when the workers are told to stop
    // does not let go within the bound.
    locks.hold_ms = 3_600_000;
    let outcome = driver::run(&scenario, Seed::new(0));
    let Some(Failure::Liveness { pending }) = &outcome.failure else {
        panic!("not a liveness failure: {outcome}");
    };
    assert!(
        pending.contains("liveness bound of 62428 ms") && pending.contains("workers to stop"),
        "{pending}"
    );
}
