//! `coordsim zoo`: on a small subset, each variant is caught by its check, its failing plan
//! shrinks to at most 10 faults and the correct model raises no false alarm, as the table
//! and the JSON say; the report does not depend on `--jobs` but for wall times; the default
//! subset — one variant for each check the known-bug table names — finds every check firing
//! within its row's bound, and covers every check of the table as rows are added; bad input
//! exits 2 on one line.

mod common;

use common::{assert_bad_input, coordsim, temporary_path};
use scenarios::{KnownBugCase, known_bug_table};
use serde_json::Value;
use std::collections::BTreeSet;

/// The variants `cargo test` runs through the zoo: for each check the known-bug table
/// names, one variant it must catch (a quick one where there is a choice).
const DEFAULT_SUBSET: &[&str] = &[
    "raft.ack_before_fsync",
    "raft.truncate_on_stale_append",
    "raft.read_without_readindex",
    "raft.volatile_vote",
    "raft.no_prevote_no_checkquorum",
    "etcd.lease_ttl_reset_on_leader_change",
    "etcd.compact_drops_tombstone",
    "etcd.lessor_not_demoted",
    "zab.diff_without_trunc",
    "zab.last_processed_zxid_on_diff",
    "zab.ack_newleader_before_persist",
    "zab.sync_not_quorum",
    "zab.reconnect_ignores_last_zxid",
    "zab.fle_nontransitive_order",
    "recipe.no_fencing",
    "recipe.trust_local_state_after_expiry",
    "etcd_election.no_postwait_check",
    "recipe.oneshot_watch_no_reread",
    "recipe.read_without_sync",
    "recipe.unprotected_seq_create",
    "recipe.protection_without_session_check",
    "recipe.herd_watch_all",
    "recipe.no_relist_on_gone_predecessor",
    "recipe.barrier_enter_on_wakeup",
    "recipe.counter_retry_after_connection_loss",
    "recipe.pubsub_resume_from_last_received",
    "resource.rejects_equal_token",
];

/// Variants of the subset where, at the time of writing, another check fires at an earlier
/// seed than the row's check does (the zoo still counts them caught, as the known-bug test
/// does, and names the earlier failure): the single server's lost writes break
/// `protocol.replica_agreement` at seed 0 before `etcd.acknowledged_write_durability` sees
/// one at seed 1; the two ZAB variants' stale reads break `zk.sync_then_read` at seed 0.
const CAUGHT_BY_ANOTHER_CHECK_FIRST: &[&str] = &[
    "raft.ack_before_fsync",
    // Session 9's changes (messages arriving wake their receiver once; ZooKeeper clients back
    // off between connection attempts as zookeeper-client 0.11 does) change every run:
    // zab.ack_newleader_before_persist's first failing seed now also fails
    // `protocol.replica_prefix` and `zk.linearizable` (the lost write is a lost write to them
    // too), and zab.last_processed_zxid_on_diff's fails by its own check only.
    "zab.ack_newleader_before_persist",
    // zab.reconnect_ignores_last_zxid left this list with issue 24's ZooKeeper fidelity
    // changes (a sync takes no zxid, seeded children order): its first failing seed now
    // fails by its own check only.
];

/// A small subset that is caught cleanly, with quick shrinks, some of plans of more than
/// 10 faults.
const SMALL_SUBSET: &[&str] = &[
    "raft.truncate_on_stale_append",
    "zab.epoch_not_persisted",
    "recipe.no_fencing",
    "recipe.unprotected_seq_create",
];

/// The zoo over `variants` (exact names, as `--only` patterns) with `extra` arguments; its
/// exit code, stdout and JSON.
fn zoo(name: &str, variants: &[&str], extra: &[&str]) -> (i32, String, Value) {
    let json = temporary_path(name);
    let mut args = vec!["zoo", "--json", &json];
    for variant in variants {
        args.extend(["--only", variant]);
    }
    args.extend_from_slice(extra);
    let ran = coordsim(&args);
    assert!(
        ran.code == 0 || ran.code == 1,
        "{}\n{}",
        ran.stdout,
        ran.stderr
    );
    let text = std::fs::read_to_string(&json).expect("the JSON report");
    (
        ran.code,
        ran.stdout,
        serde_json::from_str(&text).expect("JSON"),
    )
}

fn case(name: &str) -> KnownBugCase {
    known_bug_table()
        .into_iter()
        .find(|case| case.bug.name() == name)
        .unwrap_or_else(|| panic!("{name} is not in the known-bug table"))
}

/// The cells of the table row of `variant` in `stdout`.
fn table_row<'a>(stdout: &'a str, variant: &str) -> Vec<&'a str> {
    let line = stdout
        .lines()
        .find(|line| line.starts_with(&format!("| {variant} ")))
        .unwrap_or_else(|| panic!("no table row for {variant}:\n{stdout}"));
    line.split('|').map(str::trim).collect()
}

/// The rows of the report's variants, checked against the table: one per name of
/// `variants`, in the table's order, with the row's check, scenario, source and bound.
fn variant_rows<'a>(report: &'a Value, variants: &[&str]) -> Vec<&'a Value> {
    let rows: Vec<&Value> = report["variants"]
        .as_array()
        .expect("variants")
        .iter()
        .collect();
    let names: Vec<&str> = rows
        .iter()
        .map(|row| row["variant"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = known_bug_table()
        .into_iter()
        .map(|case| case.bug.name())
        .filter(|name| variants.contains(name))
        .collect();
    assert_eq!(names, expected, "{report}");
    for row in &rows {
        let case = case(row["variant"].as_str().unwrap());
        assert_eq!(row["check"], case.check, "{row}");
        assert_eq!(row["scenario"], case.scenario, "{row}");
        assert_eq!(row["source"], case.source, "{row}");
        assert_eq!(row["seed_bound"].as_u64(), Some(case.seeds), "{row}");
    }
    rows
}

/// Checks a caught row: found within its bound, shrunk to at most 10 faults when the shrink
/// had `shrink_runs` of at least 200; the same in the table. Its seeds run.
fn assert_caught(row: &Value, stdout: &str, full_shrink: bool) -> u64 {
    let detection = &row["detection"];
    assert_eq!(detection["verdict"], "caught", "{row}");
    let bound = row["seed_bound"].as_u64().unwrap();
    let seeds_run = detection["seeds_run"].as_u64().unwrap();
    assert!((1..=bound).contains(&seeds_run), "{row}");
    assert_eq!(detection["seed"].as_u64(), Some(seeds_run - 1), "{row}");
    assert!(detection["wall_s"].as_f64().unwrap() > 0.0, "{row}");
    let shrink = &detection["shrink"];
    assert_eq!(shrink["result"], "done", "{row}");
    let original = shrink["original_faults"].as_u64().unwrap();
    let shrunk = shrink["shrunk_faults"].as_u64().unwrap();
    assert!(shrunk <= original, "{row}");
    if full_shrink {
        assert!(shrunk <= 10, "{row}");
    }
    assert_eq!(
        shrink["plan"]["faults"].as_array().unwrap().len() as u64,
        shrunk,
        "{row}"
    );
    let cells = table_row(stdout, row["variant"].as_str().unwrap());
    assert_eq!(cells[2], row["check"].as_str().unwrap(), "{cells:?}");
    match detection["earlier_failure"].as_object() {
        None => assert_eq!(cells[3], "yes", "{cells:?}"),
        Some(earlier) => {
            let earlier_seed = earlier["seed"].as_u64().unwrap();
            assert!(earlier_seed < seeds_run - 1, "{row}");
            assert_eq!(cells[3], "yes*", "{cells:?}");
            // The note under the table says how the earlier seed failed.
            let note = format!(
                "* {}: seed {earlier_seed:#x} failed first, with ",
                row["variant"].as_str().unwrap()
            );
            assert!(stdout.contains(&note), "`{note}` in {stdout}");
        }
    }
    assert_eq!(cells[4], format!("{seeds_run} of {bound}"), "{cells:?}");
    // The variant's total time is its detection's and its shrink's.
    let detect_s: f64 = cells[5].parse().expect("detection seconds");
    let total_s: f64 = cells[6].parse().expect("total seconds");
    let shrink_s = shrink["wall_s"].as_f64().unwrap();
    assert!(shrink_s > 0.0, "{row}");
    assert!(
        (total_s - (detect_s + shrink_s)).abs() <= 0.011,
        "{cells:?} {row}"
    );
    assert!(shrink["simulated_ms"].as_u64().unwrap() > 0, "{row}");
    assert_eq!(cells[7], format!("{original} → {shrunk}"), "{cells:?}");
    // The table fits a terminal of 160 columns.
    for line in stdout.lines().filter(|line| line.starts_with('|')) {
        assert!(line.chars().count() <= 160, "wider than 160: {line}");
    }
    seeds_run
}

/// Checks that the false-alarm rows are the distinct scenarios of `variants`, each over
/// `seeds` seeds without a false alarm, in the report and in its table.
fn assert_no_false_alarm(report: &Value, stdout: &str, variants: &[&str], seeds: u64) {
    let scenarios: BTreeSet<&str> = variants.iter().map(|name| case(name).scenario).collect();
    let rows = report["false_alarms"].as_array().expect("false alarms");
    let named: BTreeSet<&str> = rows
        .iter()
        .map(|row| row["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(named, scenarios, "{report}");
    assert_eq!(rows.len(), scenarios.len(), "{report}");
    for row in rows {
        assert_eq!(row["seeds"].as_u64(), Some(seeds), "{row}");
        assert_eq!(row["false_alarms"].as_array().unwrap().len(), 0, "{row}");
        let cells = table_row(stdout, row["scenario"].as_str().unwrap());
        assert_eq!(cells[3], seeds.to_string(), "{cells:?}");
        assert_eq!(cells[4], "0", "{cells:?}");
    }
    let summary = &report["summary"];
    assert_eq!(summary["false_alarms"].as_u64(), Some(0), "{summary}");
    assert_eq!(
        summary["false_alarm_runs"].as_u64(),
        Some(seeds * scenarios.len() as u64),
        "{summary}"
    );
}

#[test]
fn a_small_subset_is_caught_shrunk_and_raises_no_false_alarm() {
    let (code, stdout, report) = zoo("small.json", SMALL_SUBSET, &["--seeds", "2"]);
    assert_eq!(code, 0, "{stdout}");
    for row in variant_rows(&report, SMALL_SUBSET) {
        assert_caught(row, &stdout, true);
    }
    // The bound of 10 faults is not met by the plans as generated: the shrinker met it.
    let longest_original = report["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            row["detection"]["shrink"]["original_faults"]
                .as_u64()
                .unwrap()
        })
        .max();
    assert!(longest_original > Some(10), "{report}");
    assert_no_false_alarm(&report, &stdout, SMALL_SUBSET, 2);
    let summary = &report["summary"];
    assert_eq!(summary["caught"].as_u64(), Some(SMALL_SUBSET.len() as u64));
    assert_eq!(summary["passed"], true, "{summary}");
    assert!(
        summary["shrunk_faults_max"].as_u64().unwrap() <= 10,
        "{summary}"
    );
    assert!(
        stdout.contains(&format!(
            "caught: {0} of {0} variants by their check",
            SMALL_SUBSET.len()
        )),
        "{stdout}"
    );
}

/// The default subset with shrinks of one run (the confirming replay: the subset is about
/// the checks firing; the small subset above shrinks in full).
#[test]
fn the_default_subset_fires_every_check_of_the_table_within_its_bound() {
    let (code, stdout, report) = zoo(
        "default-subset.json",
        DEFAULT_SUBSET,
        &["--seeds", "1", "--shrink-runs", "1"],
    );
    let mut other_first: Vec<&str> = Vec::new();
    for row in variant_rows(&report, DEFAULT_SUBSET) {
        assert_caught(row, &stdout, false);
        if row["detection"]["earlier_failure"].is_object() {
            other_first.push(row["variant"].as_str().unwrap());
        }
    }
    assert_eq!(other_first, CAUGHT_BY_ANOTHER_CHECK_FIRST, "{stdout}");
    assert_no_false_alarm(&report, &stdout, DEFAULT_SUBSET, 1);
    let summary = &report["summary"];
    assert_eq!(
        summary["caught_after_other_failures"].as_u64(),
        Some(other_first.len() as u64)
    );
    assert_eq!(
        summary["caught"].as_u64(),
        Some(DEFAULT_SUBSET.len() as u64)
    );
    assert_eq!(summary["passed"], true, "{summary}");
    assert_eq!(code, 0, "{stdout}");
}

#[test]
fn the_default_subset_covers_every_check_of_the_known_bug_table() {
    let table = known_bug_table();
    let covered: BTreeSet<&str> = table
        .iter()
        .filter(|case| DEFAULT_SUBSET.contains(&case.bug.name()))
        .map(|case| case.check)
        .collect();
    let missing: Vec<String> = table
        .iter()
        .filter(|case| !covered.contains(case.check))
        .map(|case| format!("{} (e.g. {})", case.check, case.bug))
        .collect();
    assert!(
        missing.is_empty(),
        "checks of the known-bug table that no variant of DEFAULT_SUBSET is expected to fire \
         (add one of their variants): {missing:?}"
    );
    // Every name of the subsets is a row of the table (a renamed row fails here).
    for name in DEFAULT_SUBSET
        .iter()
        .chain(CAUGHT_BY_ANOTHER_CHECK_FIRST)
        .chain(SMALL_SUBSET)
    {
        case(name);
    }
}

#[test]
fn the_report_is_the_same_for_any_number_of_jobs_apart_from_wall_times() {
    let without_wall_times = |mut report: Value| {
        report["wall_s"] = Value::Null;
        for row in report["variants"].as_array_mut().unwrap() {
            row["detection"]["wall_s"] = Value::Null;
            row["detection"]["shrink"]["wall_s"] = Value::Null;
        }
        for row in report["false_alarms"].as_array_mut().unwrap() {
            row["runs_wall_s"] = Value::Null;
        }
        report["summary"]["detection_wall_median_s"] = Value::Null;
        report["summary"]["detection_wall_max_s"] = Value::Null;
        report["summary"]["total_wall_max"] = Value::Null;
        report
    };
    // One caught and shrunk, one caught by another check first.
    let variants = ["recipe.no_fencing", "raft.ack_before_fsync"];
    let (_, one_stdout, one) = zoo("jobs-1.json", &variants, &["--seeds", "2", "--jobs", "1"]);
    let (_, two_stdout, two) = zoo("jobs-2.json", &variants, &["--seeds", "2", "--jobs", "2"]);
    assert_eq!(without_wall_times(one), without_wall_times(two));
    // The tables too, but for the wall-time column.
    let tables = |stdout: &str| -> Vec<String> {
        stdout
            .lines()
            .filter(|line| line.starts_with('|'))
            .map(|line| {
                let mut cells: Vec<&str> = line.split('|').collect();
                if cells.len() > 7 {
                    // detect s and total s.
                    cells[5] = "";
                    cells[6] = "";
                }
                cells.join("|")
            })
            .collect()
    };
    assert_eq!(tables(&one_stdout), tables(&two_stdout));
    assert!(tables(&one_stdout).len() >= 2 + 2 + 2, "{one_stdout}");
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    assert_bad_input(
        &coordsim(&["zoo", "--only", "raft.no_such_variant"]),
        "--only `raft.no_such_variant` matches no variant",
    );
    // The nearest names, not the whole table.
    assert_bad_input(
        &coordsim(&["zoo", "--only", "recipe.no_fencin_"]),
        "did you mean `recipe.no_fencing`",
    );
    assert_bad_input(&coordsim(&["zoo", "--seeds", "0"]), "--seeds");
    assert_bad_input(&coordsim(&["zoo", "--jobs", "0"]), "--jobs");
    assert_bad_input(&coordsim(&["zoo", "--seeds", "many"]), "--seeds");
    let unwritable = std::env::temp_dir()
        .join("coordsim-no-such-directory")
        .join("zoo.json");
    assert_bad_input(
        &coordsim(&["zoo", "--json", unwritable.to_str().unwrap()]),
        "cannot write",
    );
}
