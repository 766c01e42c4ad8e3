//! The example's herd-style and queue-style locks through `coordsim::testing::
//! LockComparison`: the table `coordsim compare-locks` prints for coordsim's own locks,
//! computed by the same code from what the lockers record (requested, woken, acquired,
//! released) and from the history.
//!
//! Both locks have the same protections ([`Recipe::Herd`] and [`Recipe::Protected`]), so
//! the difference is the style: the herd lock's every waiter watches the one lock node and
//! wakes at each release; the queue lock's waiter watches its predecessor and wakes alone.

mod harness;

use coordsim::testing::{
    FaultKind, FaultSource, LockComparison, LockComparisonReport, SwarmConfig, UserCode, UserTest,
};
use harness::lockers;
use std::time::Duration;
use zk_lock_example::Recipe;

/// Seeds per lock and client count (`COORDSIM_SEEDS` overrides).
const SEEDS: u64 = 3;

/// The client counts compared.
const CLIENTS: [usize; 3] = [2, 8, 16];

/// One round of 50 ms a term: a short hold, then straight back into line.
fn locker(name: &str, recipe: Recipe) -> UserCode {
    lockers(name, recipe, 1, Duration::from_millis(50)).with_check("recipe.mutual_exclusion")
}

fn herd() -> UserCode {
    // No `recipe.herd_effect`: the herd lock wakes every waiter by design.
    locker("zk-lock-herd", Recipe::Herd)
}

fn queue() -> UserCode {
    // The herd-effect check fails a release that wakes more than one waiter in line.
    locker("zk-lock-queue", Recipe::Protected)
        .with_check("recipe.herd_effect")
        .with_check("recipe.no_orphan_waiter")
}

/// The comparison of both locks with [`CLIENTS`] over [`SEEDS`] seeds, under `faults`.
fn compare(faults: FaultSource, test: &str) -> LockComparisonReport {
    LockComparison::new()
        .lock("herd", herd())
        .lock("queue", queue())
        .clients(CLIENTS)
        .seeds(SEEDS)
        .faults(faults)
        .for_test(coordsim::this_test!(test))
        .run()
        .expect("valid locks and client counts")
}

/// What the table must show, with or without faults: every run clean and acquiring, with
/// hand-offs; the herd lock's notifications per release about one per other waiter, so
/// growing with its clients; the queue lock's one, whatever its clients.
///
/// Measured (seeds 0–2, `COORDSIM_SEEDS` unset), herd with 2, 8, 16 clients: 1.00, 6.96,
/// 14.7 notifications per release without faults, 1.00, 6.95, 14.8 with the crashes; queue:
/// 1.00 at every client count, both ways. Messages per acquisition with 16 clients: herd
/// 211, queue 41.6 without faults; 162 and 34.4 with the crashes.
fn assert_herd_grows_and_queue_stays(report: &LockComparisonReport) {
    report.assert_clean();
    assert_eq!(report.rows().len(), 2 * CLIENTS.len(), "{report}");
    for row in report.rows() {
        assert!(row.hand_offs > 0, "{report}");
    }
    let per_release = |lock, clients| report.notifications_per_release(lock, clients);
    for clients in CLIENTS {
        // A release wakes about every other waiter: N − 1 of N clients, less the few
        // releases after which some client was not yet back in line.
        assert!(
            per_release("herd", clients) >= clients as f64 - 2.0,
            "{report}"
        );
        assert!(per_release("queue", clients) <= 1.2, "{report}");
    }
    assert!(
        per_release("herd", 8) > per_release("herd", 2) + 3.0,
        "{report}"
    );
    assert!(
        per_release("herd", 16) > per_release("herd", 8) + 4.0,
        "{report}"
    );
    // Every woken waiter reads and races to create again: the herd costs messages too.
    let messages = |lock| {
        let row = report
            .row(lock, 16)
            .expect("a row per lock and client count");
        row.messages_per_acquisition.all_seeds.unwrap_or(0.0)
    };
    assert!(messages("herd") > 3.0 * messages("queue"), "{report}");
}

#[test]
fn the_herd_locks_notifications_per_release_grow_with_clients_and_the_queue_locks_stay_one() {
    let report = compare(
        FaultSource::None,
        "the_herd_locks_notifications_per_release_grow_with_clients_and_the_queue_locks_stay_one",
    );
    println!("{report}");
    assert_herd_grows_and_queue_stays(&report);
}

#[test]
fn under_server_crashes_both_locks_follow_one_plan_and_the_herd_still_grows() {
    // Servers crash and restart about every half second: sessions move to another server and
    // live on, so neither lock's holder has to stop (pauses and partitions that expire a
    // session would stop them, and their recorded beliefs would overlap, rightly; the
    // example's fault tests cover those).
    let crashes = FaultSource::Swarm(SwarmConfig {
        mean_interval_ms: 500,
        kinds: vec![FaultKind::Crash],
        ..SwarmConfig::default()
    });
    let report = compare(
        crashes,
        "under_server_crashes_both_locks_follow_one_plan_and_the_herd_still_grows",
    );
    println!("{report}");
    // `assert_clean` also asserts that the crashes fired.
    assert_herd_grows_and_queue_stays(&report);
    for clients in CLIENTS {
        let fired = |lock| {
            let row = report
                .row(lock, clients)
                .expect("a row per lock and client count");
            row.fault_counts.fired(FaultKind::Crash)
        };
        // One plan per seed and client count: the same crashes for both locks.
        assert!(fired("herd") > 0, "{report}");
        assert_eq!(fired("herd"), fired("queue"), "{report}");
    }
}

#[test]
fn the_herd_effect_check_the_queue_lock_passes_catches_the_herd_lock() {
    // The check that holds the queue lock to one wake-up per release is live for this
    // code: on the herd lock it fires.
    let summary = UserTest::new(herd().with_check("recipe.herd_effect"))
        .clients(8)
        .seeds(SEEDS)
        .for_test(coordsim::this_test!(
            "the_herd_effect_check_the_queue_lock_passes_catches_the_herd_lock"
        ))
        .run()
        .expect("a valid scenario");
    let caught = summary.assert_only_violations_of("recipe.herd_effect");
    assert_eq!(caught, summary.seeds.len(), "caught in {caught} seeds");
}
