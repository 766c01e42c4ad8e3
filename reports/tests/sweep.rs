//! `coordsim sweep` and `coordsim sweep merge`: stopping at the first failure or going on,
//! the results file's shape, the same output for any number of jobs, shards that merge
//! into exactly the sweep over all their seeds, and the merge's checks.

mod common;

use common::{Ran, assert_bad_input, coordsim, coordsim_with, scratch};
use scenarios::Outcome;

/// A known-bug scenario that fails on some seeds of 12 and runs clean on others.
const BUGGY: [&str; 6] = [
    "--scenario",
    "raft_split_vote_restart",
    "--bug",
    "raft.volatile_vote",
    "--seeds",
    "12",
];

fn sweep(extra: &[&str]) -> Ran {
    let args: Vec<&str> = ["sweep"]
        .iter()
        .chain(&BUGGY)
        .chain(extra)
        .copied()
        .collect();
    coordsim(&args)
}

fn results(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("a results file"))
        .expect("results as JSON")
}

fn seeds_of(results: &serde_json::Value) -> Vec<u64> {
    results["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|run| run["seed"].as_u64().expect("a seed"))
        .collect()
}

fn failing_seeds(results: &serde_json::Value) -> Vec<u64> {
    results["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter(|run| !run["failure"].is_null())
        .map(|run| run["seed"].as_u64().expect("a seed"))
        .collect()
}

#[test]
fn a_sweep_stops_at_the_first_failure_unless_it_keeps_going() {
    let directory = scratch("sweep-stop");
    let all = directory.join("all.json");
    let ran = sweep(&["--keep-going", "--out", all.to_str().unwrap()]);
    assert_eq!(
        ran.code, 1,
        "safety is the first failure's kind: {}",
        ran.stdout
    );
    let all = results(&all);
    assert_eq!(seeds_of(&all), (0..12).collect::<Vec<u64>>());
    let failing = failing_seeds(&all);
    assert!(
        !failing.is_empty() && failing.len() < 12,
        "the variant fails on some seeds, not all: {failing:?}"
    );
    let first = failing[0];
    assert!(
        ran.stdout.contains(&format!(
            "REPRODUCE WITH: cargo run --release -p coordsim -- run --scenario \
             raft_split_vote_restart --bug raft.volatile_vote --seed {first:#x}"
        )),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("violated leader uniqueness"),
        "{}",
        ran.stdout
    );

    // One job: exactly the seeds up to the first failure. Two: those, and maybe one more
    // that was running when it failed.
    let one_job = directory.join("one.json");
    let ran = sweep(&["--jobs", "1", "--out", one_job.to_str().unwrap()]);
    assert_eq!(ran.code, 1, "{}", ran.stdout);
    assert_eq!(
        seeds_of(&results(&one_job)),
        (0..=first).collect::<Vec<u64>>()
    );
    assert_eq!(failing_seeds(&results(&one_job)), [first]);
    let two_jobs = directory.join("two.json");
    sweep(&["--jobs", "2", "--out", two_jobs.to_str().unwrap()]);
    // Seeds start in order and the running ones finish: the runs are 0..=k for a k at or
    // past the first failure.
    let seeds = seeds_of(&results(&two_jobs));
    assert_eq!(seeds, (0..seeds.len() as u64).collect::<Vec<u64>>());
    assert!(seeds.len() as u64 > first && seeds.len() < 12, "{seeds:?}");
    assert_eq!(failing_seeds(&results(&two_jobs))[0], first);

    // Without the bug, the same seeds run clean: exit 0.
    let ran = coordsim(&[
        "sweep",
        "--scenario",
        "raft_split_vote_restart",
        "--seeds",
        "3",
    ]);
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("failed:          0"), "{}", ran.stdout);
}

#[test]
fn the_results_file_has_the_documented_shape_and_runs_are_outcomes() {
    let directory = scratch("sweep-shape");
    let path = directory.join("shard.json");
    let ran = sweep(&[
        "--keep-going",
        "--from",
        "5",
        "--shard",
        "1/3",
        "--out",
        path.to_str().unwrap(),
    ]);
    assert!(
        ran.code == 0 || ran.code == 1,
        "{}{}",
        ran.stdout,
        ran.stderr
    );
    let value = results(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    let fields = [
        "scenario",
        "scenario_digest",
        "seeds",
        "shard",
        "declared_marks",
        "runs",
        // Known only once the runs are written (they stream to the file as they finish).
        "interrupted",
        "evidence",
    ];
    let positions: Vec<usize> = fields
        .iter()
        .map(|field| {
            text.find(&format!("\n  \"{field}\": "))
                .unwrap_or_else(|| panic!("no top-level `{field}`"))
        })
        .collect();
    assert!(positions.is_sorted(), "fields in this order: {fields:?}");
    assert_eq!(value.as_object().unwrap().len(), fields.len());
    assert_eq!(value["scenario"], "raft_split_vote_restart");
    assert_eq!(value["seeds"], serde_json::json!({"from": 5, "count": 12}));
    assert_eq!(value["shard"], serde_json::json!({"index": 1, "count": 3}));
    assert_eq!(value["interrupted"], false);
    // What the runs judged: every check that ran, with its seeds and its amount.
    let checks = value["evidence"]["checks"]
        .as_array()
        .expect("evidence.checks");
    let linearizable = checks
        .iter()
        .find(|check| check["check"] == "etcd.linearizable")
        .expect("etcd.linearizable ran");
    assert_eq!(linearizable["seeds_run"], 4);
    assert!(
        linearizable["judged"].as_u64().unwrap() > 0,
        "{linearizable}"
    );
    // Shard 1 of 3 runs the seeds whose index (seed - from) is 1 mod 3.
    assert_eq!(seeds_of(&value), [6, 9, 12, 15]);
    for run in value["runs"].as_array().unwrap() {
        let outcome: Outcome = serde_json::from_value(run.clone()).expect("an Outcome");
        assert_eq!(
            outcome.scenario_digest.to_string(),
            value["scenario_digest"]
        );
        assert!(outcome.history_digest.is_some());
        assert_eq!(
            serde_json::to_value(&outcome).unwrap(),
            *run,
            "as Outcome serializes"
        );
    }
    // The Kubernetes Indexed Job form reads the index from the environment.
    let from_env = directory.join("env.json");
    let args: Vec<&str> = ["sweep"]
        .iter()
        .chain(&BUGGY)
        .chain(&[
            "--keep-going",
            "--from",
            "5",
            "--shard",
            "env/3",
            "--out",
            from_env.to_str().unwrap(),
        ])
        .copied()
        .collect();
    coordsim_with(&args, &[("JOB_COMPLETION_INDEX", "1")]);
    assert_eq!(
        std::fs::read(&from_env).unwrap(),
        std::fs::read(&path).unwrap()
    );
}

#[test]
fn the_output_is_the_same_for_one_job_and_two() {
    let directory = scratch("sweep-jobs");
    let (one, two) = (directory.join("one.json"), directory.join("two.json"));
    let first = sweep(&[
        "--keep-going",
        "--jobs",
        "1",
        "--out",
        one.to_str().unwrap(),
    ]);
    let second = sweep(&[
        "--keep-going",
        "--jobs",
        "2",
        "--out",
        two.to_str().unwrap(),
    ]);
    assert_eq!(first.code, second.code);
    assert_eq!(first.stdout, second.stdout);
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&two).unwrap());
    // Progress goes to stderr as plain lines when it is not a terminal.
    assert!(
        first.stderr.contains("12 of 12 seeds in"),
        "{}",
        first.stderr
    );
}

#[test]
fn merged_shards_are_byte_identical_to_the_whole_sweep() {
    let directory = scratch("sweep-merge");
    let whole = directory.join("whole.json");
    sweep(&["--keep-going", "--out", whole.to_str().unwrap()]);
    let shards: Vec<String> = (0..3)
        .map(|index| {
            let path = directory.join(format!("shard-{index}.json"));
            let shard = format!("{index}/3");
            sweep(&[
                "--keep-going",
                "--shard",
                &shard,
                "--out",
                path.to_str().unwrap(),
            ]);
            path.display().to_string()
        })
        .collect();
    let merged = directory.join("merged.json");
    let mut args = vec!["sweep", "merge"];
    args.extend(shards.iter().map(String::as_str));
    args.extend(["--out", merged.to_str().unwrap()]);
    let ran = coordsim(&args);
    assert_eq!(
        ran.code, 1,
        "the merged runs' first failure: {}{}",
        ran.stdout, ran.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&merged).unwrap(),
        std::fs::read_to_string(&whole).unwrap()
    );
    assert!(
        ran.stdout.contains("seeds run:       12 of 12"),
        "{}",
        ran.stdout
    );

    // A shard left out: its seeds are missing. A shard twice: its seeds are duplicated.
    assert_bad_input(
        &coordsim(&["sweep", "merge", &shards[0], &shards[2]]),
        "4 seeds missing: 0x1, 0x4, 0x7, 0xa",
    );
    assert_bad_input(
        &coordsim(&[
            "sweep", "merge", &shards[0], &shards[1], &shards[1], &shards[2],
        ]),
        "4 seeds duplicated: 0x1, 0x4, 0x7, 0xa",
    );
    // Another scenario's results do not merge.
    let other = directory.join("other.json");
    coordsim(&[
        "sweep",
        "--scenario",
        "raft_split_vote_restart",
        "--seeds",
        "12",
        "--shard",
        "1/3",
        "--out",
        other.to_str().unwrap(),
    ]);
    assert_bad_input(
        &coordsim(&[
            "sweep",
            "merge",
            &shards[0],
            other.to_str().unwrap(),
            &shards[2],
        ]),
        "(expected shards of one sweep)",
    );
    // Runs are read one at a time, so each file must hold them in seed order, as a sweep
    // writes them; any JSON layout and field order is read.
    let mut reordered = results(&whole);
    let runs = reordered["runs"].as_array_mut().unwrap();
    runs.reverse();
    let reordered_path = directory.join("reordered.json");
    std::fs::write(&reordered_path, reordered.to_string()).unwrap();
    assert_bad_input(
        &coordsim(&["sweep", "merge", reordered_path.to_str().unwrap()]),
        "seed 0xa after 0xb (expected the runs in seed order, as `coordsim sweep` writes them)",
    );
    reordered["runs"].as_array_mut().unwrap().reverse();
    std::fs::write(&reordered_path, reordered.to_string()).unwrap();
    let remerged = directory.join("remerged.json");
    coordsim(&[
        "sweep",
        "merge",
        reordered_path.to_str().unwrap(),
        "--out",
        remerged.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read_to_string(&remerged).unwrap(),
        std::fs::read_to_string(&whole).unwrap(),
        "one line of JSON, fields in another order, merges to the same file"
    );
    let garbage = directory.join("garbage.json");
    std::fs::write(&garbage, "{\"runs\": 3}").unwrap();
    assert_bad_input(
        &coordsim(&["sweep", "merge", garbage.to_str().unwrap()]),
        "expected sweep results",
    );
}

#[test]
fn bad_sweeps_get_one_line_and_exit_two() {
    let cases: [(&[&str], &str); 6] = [
        (&["--shard", "3/3"], "expected K/M with 0 <= K < M"),
        (&["--shard", "env/3"], "JOB_COMPLETION_INDEX is not set"),
        (&["--jobs", "0"], "--jobs 0"),
        (&["--store", "zab,raft"], "a sweep runs on one store"),
        (
            &["--bug", "zab.nonsense"],
            "unknown known-bug variant `zab.nonsense`",
        ),
        (&["--from", "x"], "invalid seed `x`"),
    ];
    for (extra, expected) in cases {
        assert_bad_input(&sweep(extra), expected);
    }
    assert_bad_input(
        &coordsim(&["sweep", "--scenario", "ledger", "--seeds", "0"]),
        "--seeds 0",
    );
    assert_bad_input(&coordsim(&["sweep", "--seeds", "3"]), "--scenario");
}
