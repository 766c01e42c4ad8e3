//! `coordsim replay`: a replay reproduces the recorded run's history digest and exits as the
//! run did (0 clean, the run's own failure code for a reproduced failure); a digest that
//! differs exits 6 and prints both; `--from` reads `run --json` output and sweep results
//! (`{"runs": [...]}`); the trace holds every record; the timeline embeds the run's data and
//! marks the violation; bad input gets one line and exit 2.

mod common;

use common::{coordsim_output as coordsim, temporary};

use serde_json::Value;

/// The outcome `coordsim run --json` prints for `scenario` with `seed`, and its exit code.
fn recorded(scenario: &str, seed: u64) -> (i32, Value) {
    let (code, stdout, stderr) = coordsim(&[
        "run",
        "--scenario",
        scenario,
        "--seed",
        &seed.to_string(),
        "--json",
    ]);
    let outcome = serde_json::from_str(&stdout)
        .unwrap_or_else(|error| panic!("run --json prints an outcome ({error}): {stdout}{stderr}"));
    (code, outcome)
}

/// The data a timeline page embeds.
fn timeline_data(path: &str) -> Value {
    let page = std::fs::read_to_string(path).expect("the timeline was written");
    let start = page
        .find(r#"<script id="data" type="application/json">"#)
        .expect("the page embeds its data");
    let json = &page[start..];
    let json = &json[json.find('>').unwrap() + 1..json.find("</script>").unwrap()];
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "self-contained"
    );
    serde_json::from_str(json).expect("the embedded data is JSON")
}

#[test]
fn a_clean_run_replays_to_its_digest_and_a_wrong_digest_is_a_mismatch() {
    let (code, outcome) = recorded("ledger", 3);
    assert_eq!(code, 0, "{outcome}");
    let digest = outcome["history_digest"]
        .as_str()
        .expect("a digest")
        .to_string();
    let from = temporary("ledger-3.json", &outcome.to_string());
    let trace = temporary("ledger-3-trace.json", "");
    let timeline = temporary("ledger-3.html", "");
    let (code, stdout, stderr) = coordsim(&[
        "replay",
        "--scenario",
        "ledger",
        "--seed",
        "3",
        "--from",
        &from,
        "--trace",
        &trace,
        "--timeline",
        &timeline,
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            "digest check:    reproduced: history digest {digest} as expected"
        )),
        "{stdout}"
    );
    // A clean run has no violation to show the events around.
    assert!(!stdout.contains("events around"), "{stdout}");
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert_eq!(trace["outcome"]["history_digest"], digest.as_str());
    assert_eq!(
        trace["records"].as_array().unwrap().len() as u64,
        outcome["metrics"]["records"].as_u64().unwrap()
    );
    let data = timeline_data(&timeline);
    assert_eq!(
        data["focus"],
        Value::Null,
        "a clean run opens on the whole run"
    );
    assert_eq!(
        data["records"].as_array().unwrap().len() as u64,
        outcome["metrics"]["records"].as_u64().unwrap()
    );
    let lanes: Vec<&str> = data["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|lane| lane["name"].as_str().unwrap())
        .collect();
    assert_eq!(lanes[..2], ["network", "s1"], "{lanes:?}");
    assert!(lanes.contains(&"c1"), "{lanes:?}");

    let wrong = if digest == "0123456789abcdef" {
        "fedcba9876543210"
    } else {
        "0123456789abcdef"
    };
    let (code, stdout, _) = coordsim(&[
        "replay",
        "--scenario",
        "ledger",
        "--seed",
        "3",
        "--digest",
        wrong,
    ]);
    assert_eq!(code, 6, "{stdout}");
    assert!(
        stdout.contains(&format!(
            "MISMATCH: expected history digest {wrong} (given by --digest), replayed {digest}, \
             of scenario `ledger` (digest "
        )) && stdout.contains("with seed 0x3"),
        "{stdout}"
    );
}

#[test]
fn a_failing_run_from_sweep_results_replays_with_its_own_exit_code_and_marks_the_violation() {
    // raft.volatile_vote breaks leader uniqueness on some seed of a few.
    let scenario = serde_json::to_string(
        &scenarios::catalogue::get("raft_split_vote_restart")
            .unwrap()
            .with_bugs(["raft.volatile_vote".parse().unwrap()]),
    )
    .unwrap();
    let scenario = temporary("volatile-vote.json", &scenario);
    let mut runs = Vec::new();
    let failing = (0..20).find_map(|seed| {
        let (code, outcome) = recorded(&scenario, seed);
        runs.push(outcome.clone());
        (code == 1).then_some((seed, outcome))
    });
    let (seed, outcome) = failing.expect("raft.volatile_vote broke safety on some seed in 20");
    let violation = &outcome["violations"][0];
    let at_ms = violation["at_ms"]
        .as_u64()
        .expect("leader uniqueness names when it broke");
    let sweep = temporary(
        "sweep.json",
        &serde_json::json!({"runs": runs, "scenario": "volatile-vote"}).to_string(),
    );
    let timeline = temporary("volatile-vote.html", "");
    let seed = seed.to_string();
    let (code, stdout, stderr) = coordsim(&[
        "replay",
        "--scenario",
        &scenario,
        "--seed",
        &seed,
        "--from",
        &sweep,
        "--timeline",
        &timeline,
        "--around",
        "5",
    ]);
    assert_eq!(
        code, 1,
        "a reproduced safety failure exits 1: {stdout}{stderr}"
    );
    assert!(stdout.contains("digest check:    reproduced"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "events around the first violation: {} ",
            violation["check"].as_str().unwrap()
        )),
        "{stdout}"
    );
    // The window: the marker and five records on each side (fewer at the history's ends).
    let window: Vec<&str> = stdout
        .lines()
        .skip_while(|line| !line.starts_with("events around"))
        .skip(1)
        .collect();
    let marker = window
        .iter()
        .position(|line| line.starts_with(">> violation at"))
        .expect("the violation is marked");
    assert!(marker <= 5 && window.len() - marker - 1 <= 6, "{window:#?}");
    assert!(window.len() > 6, "{window:#?}");
    let data = timeline_data(&timeline);
    assert_eq!(data["focus"]["kind"], "violation");
    assert_eq!(data["focus"]["at_ns"].as_u64(), Some(at_ms * 1_000_000));
    let (from_ns, to_ns) = (
        data["focus"]["from_ns"].as_u64().unwrap(),
        data["focus"]["to_ns"].as_u64().unwrap(),
    );
    assert!(from_ns < at_ms * 1_000_000 && at_ms * 1_000_000 < to_ns);
    assert!(
        to_ns - from_ns < data["end_ns"].as_u64().unwrap() / 2,
        "the page opens zoomed in"
    );
    let marks = data["marks"].as_array().unwrap();
    assert!(
        marks
            .iter()
            .any(|mark| mark["kind"] == "violation"
                && mark["at_ns"].as_u64() == Some(at_ms * 1_000_000)),
        "{marks:?}"
    );
    let spans = data["spans"].as_array().unwrap();
    assert!(
        spans.iter().any(|span| span["kind"] == "leader"),
        "server lanes show leaderships"
    );
}

#[test]
fn bad_replay_input_gets_one_line_and_exit_two() {
    let (_, outcome) = recorded("ledger", 5);
    let from = temporary("ledger-5.json", &outcome.to_string());
    let malformed = temporary("malformed.json", "{\"runs\": [\n  {\"seed\": ");
    let not_an_outcome = temporary("not-an-outcome.json", "{\"seed\": 5}");
    let cases: [(&[&str], &str); 5] = [
        (
            &["--scenario", "ledger", "--seed", "6", "--from", &from],
            "no run with seed 0x6 (expected one of the file's seeds: 0x5)",
        ),
        (
            &["--scenario", "raft_swarm_3", "--seed", "5", "--from", &from],
            "the run with seed 0x5 is of scenario `ledger`, not `raft_swarm_3`",
        ),
        (
            &["--scenario", "ledger", "--seed", "5", "--from", &malformed],
            "malformed.json:2: expected an outcome as `coordsim run --json` prints it, or sweep results",
        ),
        (
            &[
                "--scenario",
                "ledger",
                "--seed",
                "5",
                "--from",
                &not_an_outcome,
            ],
            "not-an-outcome.json: expected an outcome",
        ),
        (
            &["--scenario", "ledger", "--seed", "5", "--digest", "xyz"],
            "`xyz`: expected 16 hex digits",
        ),
    ];
    for (args, expected) in cases {
        let (code, stdout, stderr) = coordsim(&[&["replay"], args].concat());
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "nothing ran: {stdout}");
    }
}

/// `replay --shrink` on a failing known-bug run writes a plan of fewer faults that `run
/// --plan` follows to the same check firing; on a clean run there is nothing to shrink.
/// Seed 5 is the README's failing run.
#[test]
fn shrink_writes_a_smaller_plan_that_still_fails_the_same_check() {
    let scenario = "zk_queue_lock_crashes";
    let bug = "recipe.unprotected_seq_create";
    let out = temporary("shrunk.json", "");
    let (code, stdout, stderr) = coordsim(&[
        "replay",
        "--scenario",
        scenario,
        "--seed",
        "5",
        "--bug",
        bug,
        "--shrink",
        "--shrink-out",
        &out,
    ]);
    assert_eq!(code, 1, "the replayed failure's own code\n{stdout}{stderr}");
    assert!(
        stdout.contains("shrunk for:      safety (recipe.no_orphan_waiter)"),
        "{stdout}"
    );
    let original: Value = serde_json::from_str(
        &coordsim(&[
            "run",
            "--scenario",
            scenario,
            "--seed",
            "5",
            "--bug",
            bug,
            "--json",
        ])
        .1,
    )
    .unwrap();
    let shrunk: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let faults = |plan: &Value| plan["faults"].as_array().expect("faults").len();
    assert!(
        faults(&shrunk) < faults(&original["fault_plan"]) && faults(&shrunk) <= 10,
        "{} -> {}",
        faults(&original["fault_plan"]),
        faults(&shrunk)
    );
    let (code, stdout, _) = coordsim(&[
        "run",
        "--scenario",
        scenario,
        "--seed",
        "5",
        "--bug",
        bug,
        "--plan",
        &out,
        "--json",
    ]);
    assert_eq!(code, 1);
    let rerun: Value = serde_json::from_str(&stdout).unwrap();
    let checks: Vec<&str> = rerun["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|violation| violation["check"].as_str().unwrap())
        .collect();
    assert!(checks.contains(&"recipe.no_orphan_waiter"), "{checks:?}");

    let (code, stdout, _) =
        coordsim(&["replay", "--scenario", "ledger", "--seed", "3", "--shrink"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("nothing to shrink: the run is clean"),
        "{stdout}"
    );
}

/// What `run --json` prints for `args` (a run with flags), and its exit code.
fn recorded_with(args: &[&str]) -> (i32, Value) {
    let mut all = vec!["run", "--json"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = coordsim(&all);
    let outcome = serde_json::from_str(&stdout)
        .unwrap_or_else(|error| panic!("run --json prints an outcome ({error}): {stdout}{stderr}"));
    (code, outcome)
}

/// The line of `stdout` that starts with `prefix`.
fn line<'a>(stdout: &'a str, prefix: &str) -> &'a str {
    stdout
        .lines()
        .find(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in: {stdout}"))
}

/// A run with a known-bug variant on records the scenario as it ran, bugs included: a
/// replay `--from` its outcome reproduces it without the `--bug` flag, and says in one line
/// how the scenario it was given differs from the recorded one; a replay given a bug the run
/// did not have says so too, and still replays the run as it was.
#[test]
fn a_run_with_a_known_bug_replays_from_its_outcome_as_it_ran() {
    let (code, outcome) = recorded_with(&[
        "--scenario",
        "zk_queue_lock",
        "--seed",
        "1",
        "--bug",
        "recipe.herd_watch_all",
    ]);
    assert_eq!(
        outcome["scenario_as_run"]["bugs"],
        serde_json::json!(["recipe.herd_watch_all"]),
        "{outcome}"
    );
    let digest = outcome["history_digest"].as_str().unwrap().to_string();
    let from = temporary("herd-watch-all.json", &outcome.to_string());
    let (replayed, stdout, stderr) = coordsim(&[
        "replay",
        "--scenario",
        "zk_queue_lock",
        "--seed",
        "1",
        "--from",
        &from,
    ]);
    assert_eq!(replayed, code, "exits as the run did: {stdout}{stderr}");
    assert_eq!(
        line(&stdout, "scenario check:"),
        "scenario check:  the given scenario differs from the one the recorded run ran: `bugs` \
         recorded [\"recipe.herd_watch_all\"], given []; replaying the recorded one"
    );
    assert!(
        line(&stdout, "digest check:").contains(&format!("reproduced: history digest {digest}")),
        "{stdout}"
    );

    // The same flags as the run: nothing to say about the scenario.
    let (replayed, stdout, _) = coordsim(&[
        "replay",
        "--scenario",
        "zk_queue_lock",
        "--seed",
        "1",
        "--bug",
        "recipe.herd_watch_all",
        "--from",
        &from,
    ]);
    assert_eq!(replayed, code, "{stdout}");
    assert!(!stdout.contains("scenario check:"), "{stdout}");

    // A clean run replayed with a bug it did not have: the recorded run is replayed.
    let (code, clean) = recorded_with(&["--scenario", "zk_queue_lock", "--seed", "1"]);
    assert_eq!(code, 0, "{clean}");
    let from = temporary("queue-lock-clean.json", &clean.to_string());
    let (replayed, stdout, _) = coordsim(&[
        "replay",
        "--scenario",
        "zk_queue_lock",
        "--seed",
        "1",
        "--bug",
        "recipe.herd_watch_all",
        "--from",
        &from,
    ]);
    assert_eq!(replayed, 0, "{stdout}");
    assert!(
        line(&stdout, "scenario check:").contains(
            "`bugs` recorded [], given [\"recipe.herd_watch_all\"]; replaying the recorded one"
        ),
        "{stdout}"
    );
}

/// An outcome written before outcomes recorded their scenario still loads; replayed with
/// other flags than its run's, the replay says that the scenario's digest differs, and the
/// mismatch names what its digests are of.
#[test]
fn an_outcome_without_its_scenario_names_the_scenario_digests_that_differ() {
    let (run_code, mut outcome) = recorded_with(&[
        "--scenario",
        "zk_queue_lock",
        "--seed",
        "1",
        "--bug",
        "recipe.herd_watch_all",
    ]);
    outcome
        .as_object_mut()
        .unwrap()
        .remove("scenario_as_run")
        .expect("the outcome records its scenario");
    let recorded_digest = outcome["scenario_digest"].as_str().unwrap().to_string();
    let from = temporary("herd-watch-all-old.json", &outcome.to_string());
    let (code, stdout, stderr) = coordsim(&[
        "replay",
        "--scenario",
        "zk_queue_lock",
        "--seed",
        "1",
        "--from",
        &from,
    ]);
    assert_eq!(code, 6, "{stdout}{stderr}");
    let scenario_check = line(&stdout, "scenario check:");
    assert!(
        scenario_check.contains(&format!(
            "is not the one the recorded run ran (digest {recorded_digest})"
        )) && scenario_check.contains("--bug flags"),
        "{scenario_check}"
    );
    let mismatch = line(&stdout, "digest check:");
    assert!(
        mismatch.contains(&format!(
            "MISMATCH: expected history digest {} (recorded in {from}), replayed ",
            outcome["history_digest"].as_str().unwrap()
        )) && mismatch.contains("of scenario `zk_queue_lock` (digest ")
            && mismatch.contains("with seed 0x1"),
        "{mismatch}"
    );
    // With the run's own flags, the old outcome replays.
    let (code, stdout, _) = coordsim(&[
        "replay",
        "--scenario",
        "zk_queue_lock",
        "--seed",
        "1",
        "--bug",
        "recipe.herd_watch_all",
        "--from",
        &from,
    ]);
    assert_eq!(code, run_code, "{stdout}");
    assert!(!stdout.contains("scenario check:"), "{stdout}");
    assert!(
        line(&stdout, "digest check:").contains("reproduced"),
        "{stdout}"
    );
}

/// The timeline of a failed lock run draws the waits in line (from the request to the
/// acquisition), and marks the lanes of the nodes the first violation names: the holder
/// that wrote without its token and the holder before it.
#[test]
fn a_lock_timeline_draws_waits_and_marks_the_violating_lanes() {
    let timeline = temporary("no-fencing.html", "");
    let (code, stdout, stderr) = coordsim(&[
        "replay",
        "--scenario",
        "zk_queue_lock_expiry",
        "--bug",
        "recipe.no_fencing",
        "--seed",
        "0",
        "--timeline",
        &timeline,
    ]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let data = timeline_data(&timeline);
    let spans = data["spans"].as_array().unwrap();
    let waits = spans
        .iter()
        .filter(|span| span["kind"] == "lock_wait")
        .count();
    let holds = spans.iter().filter(|span| span["kind"] == "lock").count();
    assert!(waits >= holds && holds > 0, "{waits} waits, {holds} holds");
    assert!(
        spans
            .iter()
            .filter(|span| span["kind"] == "lock_wait")
            .all(|span| span["label"]
                .as_str()
                .unwrap()
                .starts_with("waits in line for /locks/shared")),
        "{spans:?}"
    );
    let marked: Vec<&str> = data["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|lane| lane["violated"] == true)
        .map(|lane| lane["name"].as_str().unwrap())
        .collect();
    let first = data["marks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|mark| mark["kind"] == "violation")
        .min_by_key(|mark| mark["at_ns"].as_u64())
        .expect("a violation");
    let text = first["label"].as_str().unwrap();
    assert!(!marked.is_empty(), "{text}");
    for lane in &marked {
        assert!(
            text.contains(&format!("{lane}/")),
            "{lane} is not in {text}"
        );
    }
    assert!(
        !marked.contains(&"network") && !marked.contains(&"s1"),
        "{marked:?}"
    );
}
