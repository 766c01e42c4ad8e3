//! Every catalogue scenario is swept by some suite: `cargo test` runs it over that suite's
//! default number of seeds through the one driver (`Sweep`), and `COORDSIM_SEEDS` raises
//! it. A scenario is covered if a test file that sweeps (`Sweep::new`, or the suites' sweeps
//! in `tests/common`) names it, or if the known-bug table names it (`known_bugs.rs` sweeps
//! every row's scenario with the bug off and on). This test runs nothing: it fails when a
//! scenario is added without a suite.

use scenarios::{catalogue, known_bug_table};

/// What a test file that sweeps calls: `Sweep` itself, or one of `tests/common`'s sweeps.
const SWEEP_CALLS: [&str; 5] = [
    "Sweep::new(",
    "sweep(",
    "sweep_clean(",
    "sweep_counting(",
    "sweep_outcomes(",
];

#[test]
fn every_catalogue_scenario_is_swept_by_some_suite() {
    let directory = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut sweeping_suites: Vec<(String, String)> = Vec::new();
    for entry in std::fs::read_dir(&directory).expect("the tests directory") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|ext| ext == "rs") {
            let text = std::fs::read_to_string(&path).expect("a readable test file");
            if SWEEP_CALLS.iter().any(|call| text.contains(call)) {
                sweeping_suites.push((path.display().to_string(), text));
            }
        }
    }
    assert!(sweeping_suites.len() >= 10, "{sweeping_suites:?}");
    let table = known_bug_table();
    let mut uncovered = Vec::new();
    for scenario in catalogue::all() {
        let quoted = format!("\"{}\"", scenario.name);
        let in_table = table.iter().any(|case| case.scenario == scenario.name);
        if !in_table
            && !sweeping_suites
                .iter()
                .any(|(_, text)| text.contains(&quoted))
        {
            uncovered.push(scenario.name);
        }
    }
    assert!(
        uncovered.is_empty(),
        "catalogue scenarios no suite sweeps (add them to a suite, or to a sweep over a few \
         seeds): {uncovered:?}"
    );
}

#[test]
fn the_situations_the_catalogue_exists_for_are_declared_as_marks() {
    use sim::coverage::Mark;
    // Each of these is a situation some catalogue scenario must be seen to reach (issue 22):
    // a sweep of a declaring scenario fails when it reaches none.
    let declared: std::collections::BTreeSet<Mark> = catalogue::all()
        .iter()
        .flat_map(|scenario| scenario.marks.clone())
        .collect();
    for mark in Mark::ALL {
        assert!(declared.contains(&mark), "no scenario declares {mark}");
    }
}
