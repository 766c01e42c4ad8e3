//! The ZooKeeper lock under coordsim: one locker on each client node of a 3-server ZAB
//! store, term after term, under the faults that break the seed post's lock. Every seed
//! replays with the line a failure prints.
//!
//! - **An orphaned node after a lost create reply.** Servers crash and restart every quarter
//!   second or so; a create that committed just before its server crashed loses its reply.
//!   The post's lock tries again with a second node and waits behind the first, its own:
//!   `recipe.no_orphan_waiter` fires. So does zookeeper-client's own `Client::lock`, more
//!   rarely: its look for the lost node lists the parent on a server that may not have
//!   applied the create yet. The protected lock (a GUID in the name, twins deleted) and the
//!   herd lock (whose one node's owner says whose it is) pass the same seeds.
//! - **A holder that keeps working after its session expired.** The holder is paused past
//!   its session timeout, again and again. The post's holder works on, unfenced, while the
//!   next holder works: `recipe.fenced_writes` fires. The protected holder, the crate's
//!   lock and the herd lock stop when the session state says so, and fence what they sent
//!   before: the same check judges their writes and passes.

mod harness;

use coordsim::testing::{
    FaultKind, FaultSource, PauseClients, PausedClient, SwarmConfig, SweepSummary, UserTest,
};
use harness::lockers;
use std::time::Duration;
use zk_lock_example::Recipe;

/// Seeds each test runs (`COORDSIM_SEEDS` overrides).
const SEEDS: u64 = 10;

/// Servers crashing and restarting every quarter second or so (the catalogue's
/// `zk_queue_lock_crashes`), five lockers taking short turns.
fn under_crashes(recipe: Recipe, name: &str) -> SweepSummary {
    let code = lockers(name, recipe, 1, Duration::from_millis(50))
        .with_check("recipe.no_orphan_waiter")
        .with_check("recipe.mutual_exclusion");
    UserTest::new(code)
        .clients(5)
        .faults(FaultSource::Swarm(SwarmConfig {
            mean_interval_ms: 250,
            kinds: vec![FaultKind::Crash],
            ..SwarmConfig::default()
        }))
        .fault_phase_ms(8_000)
        .disk_sync_latency_us(20_000, 40_000)
        .seeds(SEEDS)
        .for_test(coordsim::this_test!(name))
        .run()
        .expect("a valid scenario")
}

#[test]
fn the_posts_lock_waits_behind_its_own_orphan() {
    let summary = under_crashes(
        Recipe::AsThePostWrites,
        "the_posts_lock_waits_behind_its_own_orphan",
    );
    summary.assert_fired(&[FaultKind::Crash]);
    let caught = summary.assert_only_violations_of("recipe.no_orphan_waiter");
    assert!(
        caught >= 1,
        "no orphaned waiter in {} seeds",
        summary.seeds.len()
    );
    eprintln!(
        "a locker waited behind its own orphan in {caught} of {} seeds",
        summary.seeds.len()
    );
}

#[test]
fn the_protected_lock_passes_the_crash_seeds() {
    let summary = under_crashes(
        Recipe::Protected,
        "the_protected_lock_passes_the_crash_seeds",
    );
    summary.assert_fired(&[FaultKind::Crash]);
    summary.assert_clean();
    summary.assert_judged("recipe.no_orphan_waiter");
    summary.assert_judged("recipe.mutual_exclusion");
}

#[test]
fn the_herd_lock_passes_the_crash_seeds() {
    let summary = under_crashes(Recipe::Herd, "the_herd_lock_passes_the_crash_seeds");
    summary.assert_fired(&[FaultKind::Crash]);
    summary.assert_clean();
    summary.assert_judged("recipe.no_orphan_waiter");
    summary.assert_judged("recipe.mutual_exclusion");
}

/// zookeeper-client 0.11.2's `Client::lock` looks for the node of a create whose reply was
/// lost by listing the parent on the server it reconnected to, with no `sync` first. That
/// server may not have applied the create yet: the lock creates a twin and waits behind the
/// first, its own (seed 5: the create sent to s2 at 4.216 s loses its reply when s2 crashes
/// at 4.276 s; s3 answers the listing at 4.32 s without it; the second create makes
/// `-0000000032` and the lock watches `-0000000031`, its own). The protected lock deletes
/// such twins (`protected::delete_twins`) and passes the same seeds.
#[test]
fn the_crates_own_lock_can_wait_behind_its_own_twin() {
    let summary = under_crashes(
        Recipe::CratesOwnLock,
        "the_crates_own_lock_can_wait_behind_its_own_twin",
    );
    summary.assert_fired(&[FaultKind::Crash]);
    let caught = summary.assert_only_violations_of("recipe.no_orphan_waiter");
    assert!(
        caught >= 1,
        "no twin waited behind in {} seeds",
        summary.seeds.len()
    );
    summary.assert_judged("recipe.mutual_exclusion");
    eprintln!(
        "the crate's lock waited behind its own twin in {caught} of {} seeds",
        summary.seeds.len()
    );
}

/// The holder paused for 3 s, past its 2 s session, every second; four 300 ms rounds a
/// term, each written to the fenced resource.
fn under_holder_pauses(recipe: Recipe, name: &str) -> SweepSummary {
    let code = lockers(name, recipe, 4, Duration::from_millis(300))
        .with_fenced_resource()
        .with_check("recipe.fenced_writes");
    UserTest::new(code)
        .faults(FaultSource::PauseClients(PauseClients {
            interval_ms: 1_000,
            pause_ms: 3_000,
            whom: PausedClient::Holder,
        }))
        .fault_phase_ms(12_000)
        .seeds(SEEDS)
        .for_test(coordsim::this_test!(name))
        .run()
        .expect("a valid scenario")
}

#[test]
fn the_posts_holder_works_on_after_its_session_expired() {
    let summary = under_holder_pauses(
        Recipe::AsThePostWrites,
        "the_posts_holder_works_on_after_its_session_expired",
    );
    summary.assert_fired(&[FaultKind::Pause]);
    let caught = summary.assert_only_violations_of("recipe.fenced_writes");
    assert!(
        caught >= 1,
        "no stale write accepted in {} seeds",
        summary.seeds.len()
    );
    eprintln!(
        "an expired holder's write was accepted after its successor's in {caught} of {} seeds",
        summary.seeds.len()
    );
}

#[test]
fn the_protected_holder_passes_the_pause_seeds() {
    let summary = under_holder_pauses(
        Recipe::Protected,
        "the_protected_holder_passes_the_pause_seeds",
    );
    summary.assert_fired(&[FaultKind::Pause]);
    summary.assert_clean();
    summary.assert_judged("recipe.fenced_writes");
}

#[test]
fn the_herd_holder_passes_the_pause_seeds() {
    let summary = under_holder_pauses(Recipe::Herd, "the_herd_holder_passes_the_pause_seeds");
    summary.assert_fired(&[FaultKind::Pause]);
    summary.assert_clean();
    summary.assert_judged("recipe.fenced_writes");
}

#[test]
fn the_crates_own_lock_passes_the_pause_seeds() {
    let summary = under_holder_pauses(
        Recipe::CratesOwnLock,
        "the_crates_own_lock_passes_the_pause_seeds",
    );
    summary.assert_fired(&[FaultKind::Pause]);
    summary.assert_clean();
    summary.assert_judged("recipe.fenced_writes");
}
