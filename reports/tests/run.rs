//! `coordsim run` and `coordsim demo`: exit codes per failure kind (0 clean, 1 safety,
//! 2 bad input, 3 liveness, 4 crash, 5 time limit), one-line errors for bad scenario files,
//! a written plan that replays a run to the same history digest, and how the linearizability
//! check resolved the operations whose reply was lost (in `run`, `run --json` and `sweep`).

mod common;

use common::{coordsim_output as coordsim, temporary, temporary_path};

fn digest(stdout: &str) -> &str {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix("history digest:"))
        .expect("a history digest")
        .trim()
}

const LEDGER: &str = r#"name = "ledger_file"
store = "ledger"
servers = 3
clients = 2
fault_phase_ms = 2000
liveness_bound_ms = 5000
[workload]
kind = "ledger"
appends_per_client = 10
[faults.swarm]
mean_interval_ms = 300
"#;

#[test]
fn a_written_plan_replays_the_run_to_the_same_digest() {
    let plan = temporary("killer-plan.json", "");
    let (code, first, _) = coordsim(&[
        "run",
        "--scenario",
        "raft_leader_killer",
        "--seed",
        "7",
        "--plan-out",
        &plan,
    ]);
    assert_eq!(code, 0, "{first}");
    assert!(first.contains("verdict:         clean"), "{first}");
    let (code, again, _) = coordsim(&[
        "run",
        "--scenario",
        "raft_leader_killer",
        "--seed",
        "7",
        "--plan",
        &plan,
    ]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(digest(&first), digest(&again));
    let (code, demo, _) = coordsim(&["demo", "--seed", "42"]);
    assert_eq!(code, 0, "{demo}");
}

#[test]
fn scenario_files_run_and_failure_kinds_have_their_exit_codes() {
    let clean = temporary("clean.toml", LEDGER);
    let (code, stdout, stderr) = coordsim(&["run", "--scenario", &clean, "--seed", "3"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, json, _) = coordsim(&["run", "--scenario", &clean, "--seed", "3", "--json"]);
    assert_eq!(code, 0);
    let outcome: serde_json::Value = serde_json::from_str(&json).expect("the outcome as JSON");
    assert_eq!(outcome["failure"], serde_json::Value::Null);
    let stall = temporary(
        "stall.toml",
        &LEDGER.replace("liveness_bound_ms = 5000", "liveness_bound_ms = 1"),
    );
    let (code, stdout, _) = coordsim(&["run", "--scenario", &stall, "--seed", "3"]);
    assert_eq!(code, 3, "{stdout}");
    assert!(
        stdout.contains("liveness: the liveness bound of 1 ms passed"),
        "{stdout}"
    );
    let crash = temporary(
        "crash.toml",
        &LEDGER.replace(
            "appends_per_client = 10",
            "appends_per_client = 10\npanic_at_append = 2",
        ),
    );
    let (code, stdout, _) = coordsim(&["run", "--scenario", &crash, "--seed", "3"]);
    assert_eq!(code, 4, "{stdout}");
    assert!(stdout.contains("crash: a model panicked"), "{stdout}");
    let late = temporary(
        "late.toml",
        &format!("time_limit_ms = 3000\nrecovery_ms = 60000\n{LEDGER}"),
    );
    let (code, stdout, _) = coordsim(&["run", "--scenario", &late, "--seed", "3"]);
    assert_eq!(code, 5, "{stdout}");
    // A known bug breaks safety on some seed of its sweep.
    let buggy = temporary(
        "volatile-vote.json",
        &serde_json::to_string(
            &scenarios::catalogue::get("raft_split_vote_restart")
                .unwrap()
                .with_bugs(["raft.volatile_vote".parse().unwrap()]),
        )
        .unwrap(),
    );
    let safety = (0..20).find_map(|seed| {
        let (code, stdout, _) =
            coordsim(&["run", "--scenario", &buggy, "--seed", &seed.to_string()]);
        (code == 1).then_some(stdout)
    });
    let stdout = safety.expect("raft.volatile_vote broke safety on some seed in 20");
    assert!(stdout.contains("violated leader uniqueness"), "{stdout}");
}

#[test]
fn bad_scenarios_get_one_line_and_exit_two() {
    let unknown_store = temporary(
        "unknown-store.toml",
        &LEDGER.replace("store = \"ledger\"", "store = \"cassandra\""),
    );
    let no_servers = temporary(
        "no-servers.toml",
        &LEDGER.replace("servers = 3", "servers = 0"),
    );
    let malformed = temporary("malformed.json", "{\"name\": \"x\",\n  \"servers\": [");
    let cases = [
        (
            unknown_store.as_str(),
            ":2: `store`: unknown variant `cassandra`",
        ),
        (
            no_servers.as_str(),
            ":3: `servers`: 0 servers (expected 1..=15)",
        ),
        (malformed.as_str(), ":2: "),
        (
            "no_such_scenario",
            "no scenario `no_such_scenario` (expected a catalogue name or a scenario file: ",
        ),
    ];
    for (scenario, expected) in cases {
        let (code, stdout, stderr) = coordsim(&["run", "--scenario", scenario]);
        assert_eq!(code, 2, "{scenario}: {stdout}{stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(expected), "{scenario}: {stderr}");
    }
    let (code, _, stderr) = coordsim(&["run", "--scenario", "ledger", "--seed", "x1"]);
    assert_eq!(code, 2);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// A `--plan` whose fault fires at or after the scenario's fault phase (10000 ms for
/// `ledger`) is bad input for `run` and `replay`: one line naming the plan file, the field,
/// the time and the phase it must be below.
#[test]
fn a_plan_fault_after_the_fault_phase_is_bad_input() {
    for (name, at_ms) in [("late", 11_000), ("far", 999_999), ("at-the-heal", 10_000)] {
        let plan = temporary(
            &format!("{name}-plan.json"),
            &format!(
                r#"{{"faults": [{{"at_ms": 100, "fault": "crash", "node": "s1", "for_ms": 500}},
                    {{"at_ms": {at_ms}, "fault": "crash", "node": "s2"}}]}}"#
            ),
        );
        for command in ["run", "replay"] {
            let (code, stdout, stderr) = coordsim(&[
                command,
                "--scenario",
                "ledger",
                "--seed",
                "1",
                "--plan",
                &plan,
            ]);
            assert_eq!(code, 2, "{command} {name}: {stdout}{stderr}");
            assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
            assert!(
                stderr.contains(&format!(
                    "{plan}: `faults.plan[1].at_ms`: {at_ms} ms is not within the fault phase of \
                     10000 ms (expected a time below 10000"
                )),
                "{command} {name}: {stderr}"
            );
        }
    }
    // Just inside the phase, the same plan runs.
    let plan = temporary(
        "in-time-plan.json",
        r#"{"faults": [{"at_ms": 9999, "fault": "crash", "node": "s2"}]}"#,
    );
    let (code, stdout, stderr) = coordsim(&[
        "run",
        "--scenario",
        "ledger",
        "--seed",
        "1",
        "--plan",
        &plan,
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
}

/// The `resolved` counts of `check` in a run's JSON outcome (absent: `None`).
fn resolved_of(outcome: &serde_json::Value, check: &str) -> Option<serde_json::Value> {
    let tallies = outcome["checks"].as_array().expect("checks");
    let tally = tallies
        .iter()
        .find(|tally| tally["check"] == check)
        .expect("the check ran");
    tally.get("resolved").cloned()
}

/// The number at `field` of resolved counts.
fn count(resolved: &serde_json::Value, field: &str) -> u64 {
    resolved[field].as_u64().expect("a count")
}

#[test]
fn a_run_with_lost_replies_says_how_the_linearizability_check_resolved_them() {
    // raft_leader_killer seed 3 loses 15 replies, all of them writes; the check resolves 9 as
    // applied and 6 as not applied, from the replicas' applied log.
    let args = ["run", "--scenario", "raft_leader_killer", "--seed", "3"];
    let (code, text, _) = coordsim(&args);
    assert_eq!(code, 0, "{text}");
    let line = text
        .lines()
        .find(|line| line.trim_start().starts_with("etcd.linearizable:"))
        .expect("the check's tally");
    assert!(
        line.contains("resolved from the replicas' applied log: 9 as applied"),
        "{line}"
    );
    let (code, json, _) = coordsim(&[&args[..], &["--json"]].concat());
    assert_eq!(code, 0, "{json}");
    let outcome: serde_json::Value = serde_json::from_str(&json).expect("an outcome");
    let resolved = resolved_of(&outcome, "etcd.linearizable").expect("resolved counts");
    let unknown = outcome["metrics"]["unknown"].as_u64().expect("unknown");
    assert_eq!(
        (count(&resolved, "took_effect"), count(&resolved, "did_not")),
        (9, 6),
        "{resolved}"
    );
    assert_eq!(
        count(&resolved, "took_effect") + count(&resolved, "did_not"),
        unknown,
        "every lost reply of this run is a write the log resolved"
    );
    assert_eq!(count(&resolved, "ambiguous"), 0);
    // Only the linearizability checks resolve anything.
    assert_eq!(resolved_of(&outcome, "etcd.read_sees_prior_writes"), None);
}

#[test]
fn a_sweep_sums_the_resolved_counts_over_its_seeds() {
    let out = temporary_path("resolved-sweep.json");
    let sweep = |seed: &str| {
        let args = ["sweep", "--scenario", "raft_leader_killer"];
        let (code, text, _) = coordsim(&[&args[..], &["--from", seed, "--seeds", "1"]].concat());
        assert_eq!(code, 0, "{text}");
        text
    };
    let line_of = |text: &str| {
        text.lines()
            .find(|line| line.starts_with("etcd.linearizable: outcome unknown"))
            .map(str::to_string)
            .expect("the sweep's resolved counts")
    };
    assert!(line_of(&sweep("3")).contains(": 9 as applied"));
    let (code, text, _) = coordsim(&[
        "sweep",
        "--scenario",
        "raft_leader_killer",
        "--from",
        "3",
        "--seeds",
        "2",
        "--out",
        &out,
    ]);
    assert_eq!(code, 0, "{text}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).expect("results");
    let per_run: Vec<serde_json::Value> = results["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|run| resolved_of(run, "etcd.linearizable").expect("resolved counts"))
        .collect();
    let evidence = results["evidence"]["checks"]
        .as_array()
        .expect("evidence")
        .iter()
        .find(|check| check["check"] == "etcd.linearizable")
        .expect("the check's evidence")["resolved"]
        .clone();
    for field in ["took_effect", "did_not", "ambiguous"] {
        let sum: u64 = per_run.iter().map(|resolved| count(resolved, field)).sum();
        assert_eq!(count(&evidence, field), sum, "{field}: {evidence}");
    }
    assert!(count(&evidence, "took_effect") > 9, "{evidence}");
    assert!(line_of(&text).contains(&format!(": {} as applied", count(&evidence, "took_effect"))));
}
