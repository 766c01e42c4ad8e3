//! The Raft store under faults, through the one driver: catalogue scenarios swept over seeds,
//! every run checked for leader uniqueness per term, term monotonicity, replica agreement
//! and prefix agreement, in-order apply, reads seeing prior acknowledged writes,
//! acknowledged-write durability in the final reads, linearizability and watch delivery.
//! Every sweep asserts that each fault kind it turned on fired (by that kind's own
//! counter), and every run that it completed, finished its final reads within the liveness
//! bound, and made progress.

mod common;

use common::{catalogued, sweep_clean};
use scenarios::sweep::SweepSummary;

/// [`sweep_clean`] of the catalogue scenario `name`, asserting too that every run made a
/// lot of progress (what only this suite asks: its swarms must not starve the store).
fn sweep_clean_and_busy(name: &str, test_name: &str, seeds: u64) -> SweepSummary {
    let summary = sweep_clean(catalogued(name), test_name, seeds, |_| {});
    for outcome in &summary.outcomes {
        // A clean run made progress; these runs must make a lot of it.
        assert!(
            outcome.metrics.acknowledged > 20,
            "seed {}: only {} operations acknowledged",
            outcome.seed,
            outcome.metrics.acknowledged
        );
    }
    summary
}

#[test]
fn three_servers_stay_safe_under_partitions_crashes_pauses_loss_and_duplication() {
    sweep_clean_and_busy(
        "raft_swarm_3",
        "three_servers_stay_safe_under_partitions_crashes_pauses_loss_and_duplication",
        50,
    );
}

#[test]
fn five_servers_stay_safe_under_every_fault_kind() {
    sweep_clean_and_busy(
        "raft_swarm_5",
        "five_servers_stay_safe_under_every_fault_kind",
        50,
    );
}

#[test]
fn seven_servers_stay_safe_under_partitions_crashes_and_pauses() {
    sweep_clean_and_busy(
        "raft_swarm_7",
        "seven_servers_stay_safe_under_partitions_crashes_and_pauses",
        50,
    );
}

/// A single voter: every crash loses whatever was not yet fsynced, and nothing acknowledged
/// may be among it.
#[test]
fn a_single_server_keeps_acknowledged_writes_across_crashes() {
    let summary = sweep_clean_and_busy(
        "raft_single_server",
        "a_single_server_keeps_acknowledged_writes_across_crashes",
        50,
    );
    if summary.sweeping {
        assert!(
            summary.fault_totals.unsynced_writes_lost > 0,
            "no crash ever lost unsynced writes: {}",
            summary.fault_totals
        );
    }
}

/// Leaders are crashed again and again, some after being stranded with the clients (so they
/// hold entries they cannot commit), one entry per AppendEntries, on a lossy network.
#[test]
fn five_servers_stay_safe_when_leaders_keep_crashing() {
    sweep_clean_and_busy(
        "raft_leader_killer",
        "five_servers_stay_safe_when_leaders_keep_crashing",
        50,
    );
}

/// Determinism: the same seed replays the same run to the same history digest; another
/// seed does not.
#[test]
fn a_run_replays_to_the_same_history_digest() {
    let scenario = catalogued("raft_swarm_3");
    let seed = sim::env::test_seeds(1)[0];
    let first = scenarios::driver::run(&scenario, seed);
    let again = scenarios::driver::run(&scenario, seed);
    assert!(first.history_digest.is_some());
    assert_eq!(first.history_digest, again.history_digest);
    assert_eq!(first.history, again.history);
    let other = scenarios::driver::run(&scenario, seed.offset(1));
    assert_ne!(first.history_digest, other.history_digest);
}

/// Clients hold leases the way lock and registration recipes do: the lease checks (keys gone
/// once their lease ended, no early expiry, abandoned leases expiring in time) have leases
/// to judge, and do, under faults and under repeated leader changes.
#[test]
fn leases_expire_on_time_and_take_their_keys_with_them() {
    for (scenario, test) in [
        (
            "raft_leases",
            "leases_expire_on_time_and_take_their_keys_with_them",
        ),
        (
            "raft_leases_under_elections",
            "leases_expire_on_time_and_take_their_keys_with_them",
        ),
    ] {
        let mut expired = 0;
        let summary = sweep_clean(catalogued(scenario), test, 50, |history| {
            expired += checks::history::leases::leases(history)
                .values()
                .filter(|facts| !facts.expired_at.is_empty())
                .count();
        });
        assert!(
            expired > summary.seeds.len(),
            "`{}`: leases rarely expired ({expired} over {} seeds): the checks had little to judge",
            summary.scenario,
            summary.seeds.len()
        );
    }
}

/// Servers snapshot every 8 applied entries under the swarm: logs are compacted all the
/// time, servers restart from snapshots, and followers that fell behind the leader's
/// snapshot are sent it (counted from the runs' `SnapshotTaken` and `SnapshotInstalled`
/// events) — and every check stays clean.
#[test]
fn servers_that_snapshot_often_stay_safe_and_send_snapshots_to_laggards() {
    let summary = sweep_clean_and_busy(
        "raft_snapshots_swarm",
        "servers_that_snapshot_often_stay_safe_and_send_snapshots_to_laggards",
        10,
    );
    let taken: u64 = summary
        .outcomes
        .iter()
        .map(|outcome| outcome.metrics.snapshots_taken)
        .sum();
    let installed: u64 = summary
        .outcomes
        .iter()
        .map(|outcome| outcome.metrics.snapshots_installed)
        .sum();
    assert!(
        summary
            .outcomes
            .iter()
            .all(|outcome| outcome.metrics.snapshots_taken > 0),
        "a run took no snapshot"
    );
    assert!(
        installed > 0,
        "no snapshot was installed in {} runs ({taken} taken)",
        summary.outcomes.len()
    );
}

/// s3 is cut off from the other servers while they compact their logs past what it has:
/// after the heal it can only catch up by InstallSnapshot, and then agrees with them
/// (replica agreement, linearizability and durability stay clean).
#[test]
fn a_follower_cut_off_until_it_needs_a_snapshot_catches_up_and_agrees() {
    let summary = sweep_clean_and_busy(
        "raft_snapshot_catch_up",
        "a_follower_cut_off_until_it_needs_a_snapshot_catches_up_and_agrees",
        5,
    );
    for outcome in &summary.outcomes {
        assert!(
            outcome.metrics.snapshots_installed > 0,
            "seed {}: the cut-off server caught up without a snapshot",
            outcome.seed
        );
    }
}
