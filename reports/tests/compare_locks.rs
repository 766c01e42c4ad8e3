//! `coordsim compare-locks`: the herd lock's notifications per release grow with the
//! clients while the queue lock's and etcd's mutex's stay at one; every row is in the JSON;
//! the JSON is the same run after run and whatever the parallelism; bad input exits 2 on one
//! line.

mod common;

use common::{coordsim_output as coordsim, temporary_path as temporary};

use serde_json::Value;

/// Runs the comparison with `args` and `--json`; its JSON, as text and parsed, and what it
/// printed.
fn compare(name: &str, args: &[&str]) -> (String, Value, String) {
    let json = temporary(name);
    let mut all = vec!["compare-locks", "--json", &json];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = coordsim(&all);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let text = std::fs::read_to_string(&json).unwrap();
    let value = serde_json::from_str(&text).unwrap();
    (text, value, stdout)
}

fn row<'a>(report: &'a Value, lock: &str, clients: u64) -> &'a Value {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["lock"] == lock && row["clients"] == clients)
        .unwrap_or_else(|| panic!("no row for {lock} with {clients} clients: {report}"))
}

fn figure(row: &Value, name: &str) -> f64 {
    row[name]["all_seeds"]
        .as_f64()
        .unwrap_or_else(|| panic!("no {name} in {row}"))
}

#[test]
fn the_herd_lock_wakes_every_waiter_and_the_queue_lock_and_mutex_one() {
    let (_, report, printed) = compare("herd.json", &["--clients", "2,6", "--seeds", "1"]);
    assert_eq!(report["rows"].as_array().unwrap().len(), 6, "{report}");
    // So few clients' final turns fit in the lock scenarios' own bound
    // (`tests/lock_liveness_bound.rs` raises it).
    assert!(
        printed.contains("liveness bound (simulated): 30.0 s at 2, 6 clients;"),
        "{printed}"
    );
    for lock in ["zk_herd_lock", "zk_queue_lock", "etcd_mutex"] {
        for clients in [2, 6] {
            let row = row(&report, lock, clients);
            assert_eq!(row["runs"], 1, "{row}");
            assert_eq!(row["liveness_bound_ms"], 30_000, "{row}");
            assert!(row["acquisitions"].as_u64().unwrap() > 0, "{row}");
            assert!(row["hand_offs"].as_u64().unwrap() > 0, "{row}");
            assert!(figure(row, "handoff_latency_p50_ms") > 0.0, "{row}");
            assert!(
                figure(row, "handoff_latency_p99_ms") >= figure(row, "handoff_latency_p50_ms"),
                "{row}"
            );
            assert!(figure(row, "acquire_latency_p50_ms") > 0.0, "{row}");
            assert!(figure(row, "messages_per_acquisition") > 0.0, "{row}");
            assert!(figure(row, "acquisitions_per_s") > 0.0, "{row}");
            let notifications = figure(row, "notifications_per_release");
            if lock != "zk_herd_lock" {
                assert!(notifications <= 1.2, "{lock}, {clients} clients: {row}");
            }
        }
    }
    // With six clients a release wakes about the other five waiters.
    let herd = |clients| {
        figure(
            row(&report, "zk_herd_lock", clients),
            "notifications_per_release",
        )
    };
    assert!(herd(6) >= 4.0, "{report}");
    assert!(herd(6) > herd(2) + 2.0, "{report}");
    // The herd costs messages: more per acquisition than the queue lock's.
    let messages = |lock| figure(row(&report, lock, 6), "messages_per_acquisition");
    assert!(
        messages("zk_herd_lock") > messages("zk_queue_lock"),
        "{report}"
    );
}

#[test]
fn the_json_is_the_same_every_time_and_whatever_the_parallelism() {
    let args = ["--store", "zab", "--clients", "2,6", "--seeds", "2"];
    let svg = temporary("locks.svg");
    let (one_at_a_time, report, _) = compare(
        "serial.json",
        &[&args[..], &["--jobs", "1", "--svg", &svg]].concat(),
    );
    let (two_at_once, _, _) = compare("parallel.json", &[&args[..], &["--jobs", "2"]].concat());
    assert_eq!(one_at_a_time, two_at_once);
    assert_eq!(report["rows"].as_array().unwrap().len(), 4, "{report}");
    assert_eq!(report["options"]["seeds"].as_array().unwrap().len(), 2);
    assert_eq!(row(&report, "zk_queue_lock", 6)["runs"], 2);
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg"), "{plot}");
    for label in [
        "zab herd lock",
        "zab queue lock",
        "hand-off latency",
        // The caption: the seeds each point pools, and the faults.
        "2 seeds (0–1) per point",
        "no faults",
    ] {
        assert!(plot.contains(label), "no {label} in the plot");
    }
    // A min–max band per line and panel (two locks, two panels), and the queue lock's
    // triangles beside the herd lock's circles, so coinciding lines both show.
    assert_eq!(
        plot.matches(r#"<polygon opacity="0.15""#).count(),
        4,
        "{plot}"
    );
    assert!(
        plot.contains("<circle") && plot.contains(r#"<polygon opacity="1""#),
        "{plot}"
    );
}

#[test]
fn with_faults_every_lock_follows_the_plan_of_its_seed() {
    let (_, report, _) = compare(
        "faults.json",
        &["--faults", "default", "--clients", "2", "--seeds", "1"],
    );
    let options = &report["options"];
    assert!(
        options["plan_source"]
            .as_str()
            .unwrap()
            .contains("followed by every lock"),
        "{options}"
    );
    let plans = options["plans"].as_array().unwrap();
    assert_eq!(plans.len(), 1, "{options}");
    assert!(plans[0]["faults"].as_u64().unwrap() > 0, "{options}");
    for lock in ["zk_herd_lock", "zk_queue_lock", "etcd_mutex"] {
        let row = row(&report, lock, 2);
        assert_eq!(row["scenario"], format!("{lock}_faults"), "{row}");
        assert_eq!(row["runs"], 1, "{row}");
    }
}

#[test]
fn bad_input_gets_one_line_and_exit_code_2() {
    let unwritable = "/nonexistent-directory/locks.json";
    for args in [
        &["--clients", "0"][..],
        &["--clients", "2,x"],
        &["--store", "foo"],
        &["--faults", "bar"],
        &["--seeds", "0"],
        &["--json", unwritable],
        &["--svg", unwritable],
    ] {
        let (code, stdout, stderr) = coordsim(&[&["compare-locks"][..], args].concat());
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
    }
    let (_, _, stderr) = coordsim(&["compare-locks", "--clients", "0"]);
    assert!(stderr.contains("at least 1"), "{stderr}");
    let (_, _, stderr) = coordsim(&["compare-locks", "--json", unwritable]);
    assert!(stderr.contains(unwritable), "{stderr}");
    let (code, help, _) = coordsim(&["compare-locks", "--help"]);
    assert_eq!(code, 0);
    assert!(help.contains("Examples:"), "{help}");
    // The defaults as they are typed.
    assert!(help.contains("[default: 2,8,32,128]"), "{help}");
    assert!(help.contains("[default: zab,raft]"), "{help}");
}
