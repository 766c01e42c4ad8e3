//! `coordsim list`: the catalogue, the known-bug variants with their table rows, the checks
//! and the fault kinds, as tables and as JSON.

mod common;

use common::coordsim;
use scenarios::{KnownBug, catalogue, known_bug_table};
use sim::fault::FaultKind;

#[test]
fn text_and_json_list_scenarios_variants_checks_and_fault_kinds() {
    let text = coordsim(&["list"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let case = known_bug_table()
        .into_iter()
        .find(|case| case.bug.name() == "raft.volatile_vote")
        .expect("a row of the table");
    for expected in [
        "raft_swarm_3",
        "zk_queue_lock_expiry",
        "raft.volatile_vote",
        case.scenario,
        case.source,
        "protocol.leader_uniqueness",
        "recipe.mutual_exclusion",
        "clock_step",
        "heal_all",
    ] {
        assert!(text.stdout.contains(expected), "`{expected}` not listed");
    }

    let json = coordsim(&["list", "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let listing: serde_json::Value = serde_json::from_str(&json.stdout).expect("one JSON object");
    let names = |list: &str, field: &str| -> Vec<String> {
        listing[list]
            .as_array()
            .unwrap_or_else(|| panic!("no `{list}` array"))
            .iter()
            .map(|item| item[field].as_str().expect("a string").to_string())
            .collect()
    };
    assert_eq!(names("scenarios", "name").len(), catalogue::all().len());
    assert!(names("scenarios", "name").contains(&"zab_watches".to_string()));
    assert_eq!(
        names("known_bugs", "variant").len(),
        KnownBug::all().count()
    );
    assert_eq!(names("checks", "name").len(), checks::all().count());
    assert!(names("checks", "name").contains(&"zk.sync_then_read".to_string()));
    assert_eq!(
        names("fault_kinds", "name"),
        FaultKind::ALL.map(|kind| kind.name().to_string())
    );
    let row = listing["known_bugs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["variant"] == "raft.volatile_vote")
        .expect("the variant's row");
    assert_eq!(row["scenario"], case.scenario);
    assert_eq!(row["check"], case.check);
    assert_eq!(row["seeds"], case.seeds);
    assert_eq!(row["stores"], serde_json::json!(["raft"]));
}

/// `coordsim list | head` closes the pipe early: the process ends as Unix tools do (by
/// `SIGPIPE`, silently), not with a panic. The listing is larger than a pipe's buffer
/// (64 KiB on Linux), so some write finds the pipe closed however the two processes race.
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_the_listing_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let listing = common::coordsim(&["list"]);
    assert!(
        listing.stdout.len() > 64 * 1024,
        "the listing fits in a pipe's buffer"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_coordsim"))
        .arg("list")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("coordsim runs");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("coordsim ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.signal(), Some(SIGPIPE), "{:?}", output.status);
}

/// `SIGPIPE`'s number on Linux and the BSDs.
#[cfg(unix)]
const SIGPIPE: i32 = 13;
