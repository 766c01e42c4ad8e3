//! `coordsim check-history`: verdicts as exit codes (0 linearizable, 1 violation, 2
//! unknown or bad input), one-line errors naming the line, and the HTML evidence.

mod common;

use common::{coordsim_output as coordsim, temporary, temporary_path};

use std::path::PathBuf;

fn fixture(name: &str) -> String {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "scenarios",
        "checks",
        "tests",
        "testdata",
        "jepsen",
        name,
    ]
    .iter()
    .collect();
    path.display().to_string()
}

#[test]
fn a_linearizable_jepsen_log_exits_zero() {
    let (code, stdout, _) = coordsim(&["check-history", &fixture("linearizable.log")]);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(stdout.lines().nth(1), Some("linearizable"), "{stdout}");
    let judged = stdout
        .lines()
        .find_map(|line| line.strip_prefix("judged: "))
        .unwrap_or_else(|| panic!("the verdict says how much it judged: {stdout}"));
    let count: usize = judged.split(' ').next().unwrap().parse().unwrap();
    assert!(
        count > 0 && judged.contains("register operations"),
        "{stdout}"
    );
}

/// A check that judged no operation is not a pass: `--model kv` on a ZooKeeper history
/// (whose operations the kv model does not read) is reported as vacuous, naming the model
/// the history has, and exits 2; with the right model the same history is judged, and the
/// verdict says how many operations.
#[test]
fn a_check_that_judged_no_operation_is_vacuous_not_linearizable() {
    let history = temporary_path("zab-swarm.jsonl");
    let (code, _, stderr) = coordsim(&[
        "run",
        "--scenario",
        "zab_swarm_3",
        "--seed",
        "0",
        "--history-out",
        &history,
    ]);
    assert!(code == 0 || code == 1, "{stderr}");
    for model in ["kv", "register"] {
        let (code, stdout, stderr) = coordsim(&["check-history", &history, "--model", model]);
        assert_eq!(code, 2, "--model {model}: {stdout}{stderr}");
        assert!(!stdout.contains("linearizable"), "{stdout}");
        let line = stderr.trim_end();
        assert_eq!(line.lines().count(), 1, "one line: {stderr}");
        assert!(
            line.contains(&format!(
                "vacuous: judged 0 operations: the history has no operations of the {model} \
                 model (it has "
            )) && line.contains(" zk operations); expected --model zk"),
            "{line}"
        );
    }
    let (code, stdout, stderr) = coordsim(&["check-history", &history, "--model", "zk"]);
    assert_ne!(code, 2, "{stdout}{stderr}");
    let judged = stdout
        .lines()
        .find_map(|line| line.strip_prefix("judged: "))
        .unwrap_or_else(|| panic!("the verdict says how much it judged: {stdout}"));
    let count: usize = judged.split(' ').next().unwrap().parse().unwrap();
    assert!(count > 100 && judged.contains("zk operations"), "{stdout}");
}

/// A history whose operations of the model were all left out judged nothing either.
#[test]
fn a_history_whose_operations_were_all_left_out_is_vacuous() {
    // One create refused because its session had expired: it took no effect, so there is
    // nothing to judge.
    let history = temporary(
        "failed-create.jsonl",
        concat!(
            r#"{"at":1,"node":"c1","event":{"type":"invoke","client":"c1","process":0,"op_id":1,"operation":{"model":"zk","f":"create","path":"/k0","data":"0","mode":"persistent"}}}"#,
            "\n",
            r#"{"at":2,"node":"c1","event":{"type":"complete","op_id":1,"result":{"outcome":"fail","error":{"model":"zk","session_expired":null}}}}"#,
            "\n",
        ),
    );
    let (code, stdout, stderr) = coordsim(&["check-history", &history]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "vacuous: judged 0 operations: all 1 zk operations of the history were left out"
        ),
        "{stderr}"
    );
}

#[test]
fn a_violation_exits_one_with_the_evidence_and_an_html_page() {
    let html = std::env::temp_dir().join(format!("coordsim-evidence-{}.html", std::process::id()));
    let (code, stdout, _) = coordsim(&[
        "check-history",
        &fixture("violation.log"),
        "--format",
        "jepsen-etcd",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("NOT linearizable") && stdout.contains("cannot be placed next"),
        "{stdout}"
    );
    let page = std::fs::read_to_string(&html).expect("the HTML was written");
    assert!(
        page.contains("<svg") && page.contains("read(jepsen) -&gt; 1"),
        "{page}"
    );
}

#[test]
fn an_exhausted_budget_exits_two() {
    let mut log = String::new();
    for process in 0..16 {
        log.push_str(&format!(
            "INFO  jepsen.util - {process}\t:invoke\t:write\t{process}\n"
        ));
    }
    for process in 0..16 {
        log.push_str(&format!(
            "INFO  jepsen.util - {process}\t:ok\t:write\t{process}\n"
        ));
    }
    log.push_str(
        "INFO  jepsen.util - 99\t:invoke\t:read\tnil\nINFO  jepsen.util - 99\t:ok\t:read\t77\n",
    );
    let path = temporary("hard.log", &log);
    let (code, stdout, _) = coordsim(&["check-history", &path, "--max-steps", "1000"]);
    assert_eq!(code, 2, "{stdout}");
    assert!(
        stdout.starts_with("model: register")
            && stdout.contains("unknown: the step budget ran out"),
        "{stdout}"
    );
}

#[test]
fn bad_input_gets_one_line_naming_what_was_expected() {
    let malformed = temporary(
        "malformed.jsonl",
        "{\"at\": 1, \"event\": {\"type\": \"note\", \"text\": \"x\"}}\nnot json\n",
    );
    let bad_jepsen = temporary(
        "bad.log",
        "INFO  jepsen.util - 1\t:invoke\t:read\tnil\nINFO  jepsen.util - 1\t:ok\t:read\tseven\n",
    );
    let violation = fixture("violation.log");
    let empty = temporary(
        "empty.jsonl",
        "{\"at\": 1, \"event\": {\"type\": \"note\", \"text\": \"x\"}}\n",
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["check-history", "/no/such/file"],
            "file not found: /no/such/file",
        ),
        (
            vec!["check-history", &malformed],
            "line 2: expected a coordsim history record",
        ),
        (
            vec!["check-history", &bad_jepsen],
            "line 2: expected a Jepsen etcd log line",
        ),
        (
            vec!["check-history", &empty],
            "no key-value, register or znode operations",
        ),
        (
            vec!["check-history", &violation, "--model", "kv"],
            "expected --model register",
        ),
        (
            vec!["check-history", &violation, "--jobs", "0"],
            "--jobs: expected at least 1",
        ),
        (
            vec!["check-history", &violation, "--model", "graph"],
            "invalid value 'graph'",
        ),
    ];
    for (args, expected) in cases {
        let (code, stdout, stderr) = coordsim(&args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "{args:?}: one line: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_coordsim_history_from_the_demo_is_read() {
    // The demo's history has no key-value operations: a one-line error, not a panic.
    let history = std::env::temp_dir().join(format!("coordsim-demo-{}.jsonl", std::process::id()));
    let (code, _, stderr) = coordsim(&[
        "demo",
        "--seed",
        "7",
        "--history-out",
        history.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = coordsim(&["check-history", history.to_str().unwrap()]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("no key-value, register or znode operations"),
        "{stderr}"
    );
}
