//! The known-bug table (`scenarios::known_bug_table`, from `scenarios/known-bugs.md`): each
//! variant, switched on in its catalogue scenario, is caught by the named check within the
//! table's seed bound, by the zoo's rule (`scenarios::detection`: seed after seed until the
//! check fires); the correct model runs the same seeds clean — no violation, no stall,
//! progress made.
//!
//! Exact traces of the Raft bugs, step by step, are in models/tests/raft_scripts.rs; of the
//! ZAB bugs, in zab_known_bugs.rs and zk_session_guarantees.rs (the catalogue's scripted
//! plans `zab_trace_*`: examples, where this table is the zoo's test).
//! With `COORDSIM_SEED` pinned to a seed that does not trigger the bug, the buggy half fails
//! (the message says how the first failing seed failed, if one did).

use scenarios::{
    KnownBugCase, catalogue,
    detection::{self, Detection},
    known_bug_table,
    sweep::Sweep,
};
use sim::report::FailureReport;

const TARGET: &str = "known_bugs";

fn case(name: &str) -> KnownBugCase {
    known_bug_table()
        .into_iter()
        .find(|case| case.bug.name() == name)
        .unwrap_or_else(|| panic!("{name} is not in the known-bug table"))
}

/// Runs the case's scenario with the bug on until its check fires (the zoo's rule,
/// `scenarios::detection`), then the correct model over the table's seeds.
fn caught_and_correct_passes(name: &str, test_name: &str) {
    let case = case(name);
    let scenario = catalogue::get(case.scenario).expect("a catalogue scenario");
    let seeds = sim::env::test_seeds(case.seeds);
    let found = detection::detect(
        &case,
        &scenario.clone().with_bugs([case.bug]),
        seeds.iter().copied(),
        |seed| FailureReport::for_test(seed, "scenarios", TARGET, test_name),
    );
    let Detection::Caught {
        detecting,
        seeds_run,
        earlier_failure,
    } = found
    else {
        panic!(
            "{} ({}) was not caught by `{}` in {} seeds of `{}`: {}",
            case.bug,
            case.source,
            case.check,
            seeds.len(),
            case.scenario,
            match found {
                Detection::OnlyOtherFailures { first } => format!(
                    "seed {} failed otherwise first, with {:?} {:?}",
                    first.outcome.seed,
                    first.outcome.failure,
                    first.checks_fired()
                ),
                _ => "no seed failed".to_string(),
            }
        )
    };
    println!(
        "{} ({}): `{}` fired at seed {}, after {seeds_run} seeds{}:",
        case.bug,
        case.source,
        case.check,
        detecting.outcome.seed,
        earlier_failure.map_or_else(String::new, |earlier| format!(
            " (seed {} failed first, with {:?})",
            earlier.outcome.seed,
            earlier.checks_fired()
        ))
    );
    for violation in detecting
        .outcome
        .violations
        .iter()
        .filter(|v| v.check == case.check)
        .take(3)
    {
        println!("  {}", violation.evidence);
    }
    let correct = Sweep::new(scenario, "scenarios", TARGET, test_name, case.seeds).run();
    correct.assert_clean();
    correct.assert_faults_fired();
}

macro_rules! known_bug_tests {
    ($($test:ident => $bug:literal,)*) => {
        $(
            #[test]
            fn $test() {
                caught_and_correct_passes($bug, stringify!($test));
            }
        )*

        /// Every row of the table has a test above.
        #[test]
        fn every_row_of_the_table_is_tested() {
            let tested = [$($bug),*];
            for case in known_bug_table() {
                assert!(tested.contains(&case.bug.name()), "{} has no test", case.bug);
            }
        }
    };
}

known_bug_tests! {
    raft_ack_before_fsync => "raft.ack_before_fsync",
    raft_commit_prev_term_by_count => "raft.commit_prev_term_by_count",
    raft_truncate_on_stale_append => "raft.truncate_on_stale_append",
    raft_read_without_readindex => "raft.read_without_readindex",
    raft_readindex_before_term_commit => "raft.readindex_before_term_commit",
    raft_volatile_vote => "raft.volatile_vote",
    raft_no_prevote_no_checkquorum => "raft.no_prevote_no_checkquorum",
    etcd_lease_ttl_reset_on_leader_change => "etcd.lease_ttl_reset_on_leader_change",
    etcd_lessor_not_demoted => "etcd.lessor_not_demoted",
    etcd_compact_drops_tombstone => "etcd.compact_drops_tombstone",
    etcd_watch_restore_keeps_stale_minrev => "etcd.watch_restore_keeps_stale_minrev",
    zab_epoch_not_persisted => "zab.epoch_not_persisted",
    zab_diff_without_trunc => "zab.diff_without_trunc",
    zab_last_processed_zxid_on_diff => "zab.last_processed_zxid_on_diff",
    zab_ack_newleader_before_persist => "zab.ack_newleader_before_persist",
    zab_sync_not_quorum => "zab.sync_not_quorum",
    zab_reconnect_ignores_last_zxid => "zab.reconnect_ignores_last_zxid",
    zab_fle_nontransitive_order => "zab.fle_nontransitive_order",
    zab_setcurrentepoch_on_uptodate => "zab.setcurrentepoch_on_uptodate",
    zab_snap_zxid_below_log_tail => "zab.snap_zxid_below_log_tail",
    recipe_no_fencing => "recipe.no_fencing",
    recipe_trust_local_state_after_expiry => "recipe.trust_local_state_after_expiry",
    etcd_mutex_no_postwait_check => "etcd_mutex.no_postwait_check",
    etcd_election_no_postwait_check => "etcd_election.no_postwait_check",
    recipe_oneshot_watch_no_reread => "recipe.oneshot_watch_no_reread",
    recipe_read_without_sync => "recipe.read_without_sync",
    recipe_unprotected_seq_create => "recipe.unprotected_seq_create",
    recipe_protection_without_session_check => "recipe.protection_without_session_check",
    resource_check_not_atomic => "resource.check_not_atomic",
    recipe_herd_watch_all => "recipe.herd_watch_all",
    recipe_seq_overflow_compare => "recipe.seq_overflow_compare",
    recipe_election_watches_leader => "recipe.election_watches_leader",
    recipe_no_relist_on_gone_predecessor => "recipe.no_relist_on_gone_predecessor",
    recipe_barrier_enter_on_wakeup => "recipe.barrier_enter_on_wakeup",
    recipe_counter_retry_after_connection_loss => "recipe.counter_retry_after_connection_loss",
    recipe_pubsub_resume_from_last_received => "recipe.pubsub_resume_from_last_received",
    resource_rejects_equal_token => "resource.rejects_equal_token",
}
