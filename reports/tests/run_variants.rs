//! `coordsim run --store` and `--bug`: a scenario moved to the other store, known-bug
//! variants switched on, `--store zab,raft` side by side, and one line with exit code 2
//! for every flag that cannot be.

mod common;

use common::{assert_bad_input, coordsim};

#[test]
fn bad_stores_and_variants_get_one_line_and_exit_two() {
    assert_bad_input(
        &coordsim(&["run", "--scenario", "zab_swarm_3", "--store", "raft"]),
        "`zk_mix` of scenario `zab_swarm_3` runs only on the zab store (expected a workload \
         that runs on both: discovery",
    );
    assert_bad_input(
        &coordsim(&["run", "--scenario", "zk_herd_lock", "--store", "raft"]),
        "`locks (zk_herd_lock)`",
    );
    assert_bad_input(
        &coordsim(&["run", "--scenario", "ledger", "--store", "cassandra"]),
        "invalid value 'cassandra' for '--store",
    );
    assert_bad_input(
        &coordsim(&[
            "run",
            "--scenario",
            "raft_swarm_3",
            "--bug",
            "raft.nonsense",
        ]),
        "--bug: unknown known-bug variant `raft.nonsense` (did you mean `raft.",
    );
    assert_bad_input(
        &coordsim(&[
            "run",
            "--scenario",
            "raft_swarm_3",
            "--bug",
            "zab.sync_not_quorum",
        ]),
        "--bug zab.sync_not_quorum: not a variant of anything that runs on the raft store",
    );
    // The variant of the store the scenario moved from does not move with it.
    assert_bad_input(
        &coordsim(&[
            "run",
            "--scenario",
            "zk_discovery",
            "--store",
            "raft",
            "--bug",
            "recipe.oneshot_watch_no_reread",
        ]),
        "not a variant of anything that runs on the raft store of `zk_discovery`",
    );
    assert_bad_input(
        &coordsim(&[
            "run",
            "--scenario",
            "zk_discovery",
            "--store",
            "zab,raft",
            "--plan-out",
            "plan.json",
        ]),
        "--plan-out and --history-out take one store",
    );
}

#[test]
fn a_bug_switched_on_from_the_command_line_breaks_the_run_as_in_a_scenario_file() {
    let caught = (0..20).find_map(|seed| {
        let ran = coordsim(&[
            "run",
            "--scenario",
            "raft_split_vote_restart",
            "--bug",
            "raft.volatile_vote",
            "--seed",
            &seed.to_string(),
        ]);
        assert!(
            ran.code == 0 || ran.code == 1,
            "{}{}",
            ran.stdout,
            ran.stderr
        );
        (ran.code == 1).then_some(ran.stdout)
    });
    let stdout = caught.expect("raft.volatile_vote broke safety on some seed in 20");
    assert!(
        stdout.contains("\"bugs\":[\"raft.volatile_vote\"]"),
        "{stdout}"
    );
    assert!(stdout.contains("violated leader uniqueness"), "{stdout}");
    assert!(
        stdout.contains("run --scenario raft_split_vote_restart --bug raft.volatile_vote --seed"),
        "{stdout}"
    );
}

#[test]
fn discovery_runs_on_both_stores_side_by_side_with_one_plan() {
    let text = coordsim(&[
        "run",
        "--scenario",
        "zk_discovery_faults",
        "--seed",
        "1",
        "--store",
        "zab,raft",
    ]);
    let json = coordsim(&[
        "run",
        "--scenario",
        "zk_discovery_faults",
        "--seed",
        "1",
        "--store",
        "zab,raft",
        "--json",
    ]);
    assert_eq!(text.code, json.code, "{}", text.stdout);
    let outcomes: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    let (zab, raft) = (&outcomes["zab"], &outcomes["raft"]);
    // The exit code is the worse run's: safety over crash over liveness over time limit.
    let code = |outcome: &serde_json::Value| match outcome["failure"]["kind"].as_str() {
        None => (0, 0),
        Some("time_limit") => (1, 5),
        Some("liveness") => (2, 3),
        Some("crash") => (3, 4),
        Some("safety") => (4, 1),
        Some(other) => panic!("unknown failure kind {other}"),
    };
    assert_eq!(json.code, code(zab).max(code(raft)).1, "{}", json.stdout);
    assert_ne!(zab["scenario_digest"], raft["scenario_digest"]);
    assert_ne!(zab["history_digest"], raft["history_digest"]);
    assert_eq!(zab["fault_plan"], raft["fault_plan"], "one seed, one plan");
    assert!(!zab["fault_plan"]["faults"].as_array().unwrap().is_empty());
    for outcome in [zab, raft] {
        assert!(
            outcome["metrics"]["acknowledged"].as_u64().unwrap() > 0,
            "{outcome}"
        );
    }
    // The text shows both columns, each run's digest, and how to replay each.
    for expected in [
        "│ zab",
        "│ raft",
        "faults, the same",
        zab["history_digest"].as_str().unwrap(),
        raft["history_digest"].as_str().unwrap(),
        "run --scenario zk_discovery_faults --store zab --seed 0x1",
        "run --scenario zk_discovery_faults --store raft --seed 0x1",
        "\"store\":\"raft\"",
        "\"recipe\":\"etcd_discovery\"",
    ] {
        assert!(
            text.stdout.contains(expected),
            "`{expected}` in:\n{}",
            text.stdout
        );
    }
    // How each run's linearizability check resolved its operations of unknown outcome.
    let resolved = |outcome: &serde_json::Value| {
        let tallies = outcome["checks"].as_array().expect("checks");
        let resolved = tallies
            .iter()
            .find_map(|tally| tally.get("resolved"))
            .expect("a linearizability check's tally");
        let count = |field: &str| resolved[field].as_u64().expect("a count");
        format!(
            "{} / {} / {}",
            count("took_effect"),
            count("did_not"),
            count("ambiguous")
        )
    };
    let row = text
        .stdout
        .lines()
        .find(|line| line.contains("linearizability check: unknown applied / not / both ways"))
        .expect("the row of resolved counts");
    let cells: Vec<&str> = row.split('│').map(str::trim).collect();
    assert_eq!(cells[2..4], [resolved(zab), resolved(raft)], "{row}");
    // One store alone is the same run as that column.
    let raft_alone = coordsim(&[
        "run",
        "--scenario",
        "zk_discovery_faults",
        "--seed",
        "1",
        "--store",
        "raft",
        "--json",
    ]);
    let alone: serde_json::Value = serde_json::from_str(&raft_alone.stdout).expect("JSON");
    assert_eq!(alone["history_digest"], raft["history_digest"]);
}
