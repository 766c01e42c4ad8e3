//! What a new user meets first: errors that suggest the nearest names and say "file not
//! found", usage when nothing is asked, bad seeds and digests named as typed, a run's
//! violations grouped per check, the outcome JSON's verdict, the replay line every command
//! prints (one prefix), and `list` grouped and filtered.

mod common;

use common::{assert_bad_input, coordsim, coordsim_with, temporary};
use scenarios::replay_command::PREFIX;

const LEDGER: &str = r#"name = "ledger_file"
store = "ledger"
servers = 3
clients = 2
fault_phase_ms = 2000
liveness_bound_ms = 5000
[workload]
kind = "ledger"
appends_per_client = 10
"#;

#[test]
fn no_arguments_is_bad_input_with_the_usage() {
    let ran = coordsim(&[]);
    assert_eq!(ran.code, 2, "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr.contains("Usage: coordsim <COMMAND>"),
        "{}",
        ran.stderr
    );
    assert!(ran.stdout.is_empty(), "{}", ran.stdout);
}

#[test]
fn an_unknown_name_suggests_the_nearest_names_not_all_of_them() {
    let ran = coordsim(&["run", "--scenario", "raft_leadr_killer"]);
    assert_bad_input(&ran, "did you mean `raft_leader_killer`");
    let suggested = ran.stderr.matches("`, `").count() + 1;
    assert!(suggested <= 5, "at most five names: {}", ran.stderr);
    assert!(
        ran.stderr.contains("`coordsim list` lists all"),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.len() < 400, "one short line: {}", ran.stderr);
    assert_bad_input(
        &coordsim(&["run", "--scenario", "ledger", "--bug", "recipe.no_fenc"]),
        "did you mean `recipe.no_fencing`",
    );
    // A scenario file naming an unknown check.
    let unknown_check = temporary(
        "unknown-check.toml",
        &format!("checks = [\"protocol.leader_uniquenes\"]\n{LEDGER}"),
    );
    assert_bad_input(
        &coordsim(&["run", "--scenario", &unknown_check]),
        "did you mean `protocol.leader_uniqueness`",
    );
}

#[test]
fn a_path_that_does_not_exist_is_file_not_found() {
    for args in [
        &["run", "--scenario", "no/such/scenario.toml"][..],
        &["run", "--scenario", "ledger", "--plan", "no/such/plan.json"],
        &["check-history", "no/such/history.jsonl"],
    ] {
        let ran = coordsim(args);
        assert_bad_input(&ran, "file not found: no/such/");
    }
}

#[test]
fn a_bad_seed_in_the_environment_names_the_variable() {
    let ran = coordsim_with(&["run", "--scenario", "ledger"], &[("COORDSIM_SEED", "zz")]);
    assert_bad_input(&ran, "COORDSIM_SEED");
    assert!(!ran.stderr.contains("--seed"), "{}", ran.stderr);
    // Typed on the command line, the flag is named.
    assert_bad_input(
        &coordsim(&["run", "--scenario", "ledger", "--seed", "zz"]),
        "--seed",
    );
}

#[test]
fn a_digest_is_exactly_sixteen_hex_digits() {
    for digest in ["0x12", "12", "+123456789abcdef", "0123456789abcdef0", "xyz"] {
        assert_bad_input(
            &coordsim(&["replay", "--scenario", "ledger", "--digest", digest]),
            "expected 16 hex digits",
        );
    }
}

#[test]
fn a_demo_without_clients_is_bad_input() {
    assert_bad_input(&coordsim(&["demo", "--clients", "0"]), "--clients: 0");
}

/// 223 violations of five checks, in one run: each check's count, its first three, then
/// how many more and where they all are.
#[test]
fn violations_are_grouped_per_check_with_the_first_few_in_full() {
    let args = [
        "run",
        "--scenario",
        "raft_split_vote_restart",
        "--bug",
        "raft.volatile_vote",
        "--seed",
        "2",
    ];
    let text = coordsim(&args);
    assert_eq!(text.code, 1, "{}", text.stderr);
    let json = coordsim(&[&args[..], &["--json"]].concat());
    let outcome: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    let violations = outcome["violations"].as_array().expect("violations");
    assert!(violations.len() > 20, "a run with many violations");
    let printed = text.stdout.matches("violated ").count();
    assert!(
        printed < violations.len() && printed <= 3 * 5,
        "{printed} of {} printed",
        violations.len()
    );
    let replica_agreement = violations
        .iter()
        .filter(|v| v["check"] == "protocol.replica_agreement")
        .count();
    assert!(replica_agreement > 3, "{replica_agreement}");
    for expected in [
        format!("  protocol.replica_agreement: {replica_agreement}"),
        format!("    … and {} more", replica_agreement - 3),
        format!("protocol.replica_agreement ×{replica_agreement}"),
        format!(
            "{printed} of {} shown; all of them in --json",
            violations.len()
        ),
    ] {
        assert!(
            text.stdout.contains(&expected),
            "`{expected}` in {}",
            text.stdout
        );
    }
    assert_eq!(outcome["verdict"], "failed: safety");
}

#[test]
fn the_outcome_says_its_verdict_and_which_leaders_it_counts() {
    let json = coordsim(&["run", "--scenario", "ledger", "--seed", "1", "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let outcome: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(outcome["verdict"], "clean");
    let text = coordsim(&["run", "--scenario", "zk_herd_lock", "--seed", "1"]);
    assert!(
        text.stdout.contains("server leaders elected"),
        "{}",
        text.stdout
    );
    let both = coordsim(&[
        "run",
        "--scenario",
        "etcd_election_faults",
        "--seed",
        "1",
        "--store",
        "zab,raft",
        "--json",
    ]);
    let outcomes: serde_json::Value = serde_json::from_str(&both.stdout).expect("JSON");
    for store in ["zab", "raft"] {
        assert!(
            outcomes[store]["verdict"].is_string(),
            "{store}: {}",
            both.stdout
        );
    }
}

/// Every replay line starts with the one prefix.
#[test]
fn replay_lines_start_with_one_prefix() {
    let run = coordsim(&["run", "--scenario", "ledger", "--seed", "3"]);
    let demo = coordsim(&["demo", "--seed", "3", "--appends", "5"]);
    for (ran, expected) in [
        (&run, "run --scenario ledger --seed 0x3".to_string()),
        (&demo, "demo --appends 5 --seed 0x3".to_string()),
    ] {
        let line = ran
            .stdout
            .lines()
            .find(|line| line.starts_with("replay with:"))
            .unwrap_or_else(|| panic!("no replay line: {}", ran.stdout));
        assert_eq!(
            line.trim_start_matches("replay with:").trim(),
            format!("{PREFIX} {expected}")
        );
    }
}

/// A model that panics: the world's failure report names the scenario and the command
/// that ran it (it said "custom world" and "the same scenario and seed" before).
#[test]
fn a_model_panic_names_its_scenario_and_replay_line() {
    let crash = temporary(
        "panic.toml",
        &LEDGER.replace(
            "appends_per_client = 10",
            "appends_per_client = 10\npanic_at_append = 2",
        ),
    );
    let ran = coordsim(&["run", "--scenario", &crash, "--seed", "3"]);
    assert_eq!(ran.code, 4, "{}{}", ran.stdout, ran.stderr);
    for expected in [
        "FAILED: scenario `ledger_file` with seed 0x3".to_string(),
        format!("REPRODUCE WITH: {PREFIX} run --scenario {crash} --seed 0x3"),
    ] {
        assert!(
            ran.stderr.contains(&expected),
            "`{expected}` in {}",
            ran.stderr
        );
    }
}

#[test]
fn list_groups_scenarios_by_store_and_workload_and_takes_a_filter() {
    let all = coordsim(&["list"]);
    for heading in [
        "Scenarios on zab, by workload",
        "Scenarios on raft, by workload",
    ] {
        assert!(all.stdout.contains(heading), "{heading}");
    }
    let locks = coordsim(&["list", "lock"]);
    assert_eq!(locks.code, 0, "{}", locks.stderr);
    assert!(locks.stdout.contains("zk_queue_lock"), "{}", locks.stdout);
    assert!(!locks.stdout.contains("raft_swarm_3"), "{}", locks.stdout);
    assert!(locks.stdout.len() < all.stdout.len() / 2);
    let json = coordsim(&["list", "lock", "--json"]);
    let listing: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    let scenarios = listing["scenarios"].as_array().expect("scenarios");
    assert!(!scenarios.is_empty());
    for scenario in scenarios {
        let text = scenario.to_string();
        assert!(text.contains("lock"), "{text}");
    }
    assert_bad_input(
        &coordsim(&["list", "qqqqqq"]),
        "nothing listed contains `qqqqqq`",
    );
}

#[test]
fn an_unknown_workload_suggests_the_nearest_kinds() {
    let file = temporary(
        "unknown-workload.toml",
        &LEDGER.replace("kind = \"ledger\"", "kind = \"zk_watchs\""),
    );
    let ran = coordsim(&["run", "--scenario", &file]);
    assert_bad_input(
        &ran,
        "unknown variant `zk_watchs` (did you mean `zk_watches`",
    );
    assert!(!ran.stderr.contains("`kv_leases`"), "{}", ran.stderr);
}
