//! The fault-plan shrinker (`scenarios::shrink`) on rows of the known-bug table whose plans
//! are generated and long: a small sweep finds the caught seed with the most faults, the
//! shrinker cuts its plan down, and the shrunk plan still fails the row's check, is no
//! larger, has at most 10 faults, and replays through the driver to the history digest of
//! the shrinker's last failing run.
//!
//! The shrinker's search itself (ddmin, pairing, `$name` dependencies, spans, times, the
//! budget) is unit-tested on synthetic predicates in `scenarios/src/shrink.rs`.

use scenarios::{
    KnownBugCase, Scenario, catalogue, driver, known_bug_table,
    shrink::{self, PlanSize, ShrinkConfig, ShrinkError, ShrinkReport, ShrinkTarget},
    sweep::{SeedFailure, Sweep, SweepSummary},
};
use sim::fault::FaultPlan;
use std::time::Instant;

const TARGET: &str = "shrink";

fn case(name: &str) -> KnownBugCase {
    known_bug_table()
        .into_iter()
        .find(|case| case.bug.name() == name)
        .unwrap_or_else(|| panic!("{name} is not in the known-bug table"))
}

/// The row's scenario with its bug, and a sweep of it over the row's seed bound.
fn buggy_sweep(case: &KnownBugCase, test_name: &str) -> (Scenario, SweepSummary) {
    let scenario = catalogue::get(case.scenario)
        .expect("a catalogue scenario")
        .with_bugs([case.bug]);
    let summary = Sweep::new(scenario.clone(), "scenarios", TARGET, test_name, case.seeds).run();
    (scenario, summary)
}

/// Of the runs where the row's check fired, the one with the most faults (the first such).
fn longest_caught<'a>(case: &KnownBugCase, summary: &'a SweepSummary) -> &'a SeedFailure {
    let mut caught = summary
        .failures
        .iter()
        .filter(|failure| failure.checks_fired().contains(&case.check));
    let first = caught.next().unwrap_or_else(|| {
        panic!(
            "`{}` did not fire in {} seeds of `{}` with {}",
            case.check,
            summary.seeds.len(),
            case.scenario,
            case.bug
        )
    });
    caught.fold(first, |longest, failure| {
        if failure.outcome.fault_plan.faults.len() > longest.outcome.fault_plan.faults.len() {
            failure
        } else {
            longest
        }
    })
}

/// Shrinks the longest caught run of the row, checks the report, and returns it.
fn shrinks_and_replays(bug: &str, test_name: &str) -> (Scenario, SeedFailure, ShrinkReport) {
    let case = case(bug);
    let (scenario, mut summary) = buggy_sweep(&case, test_name);
    let failing = longest_caught(&case, &summary);
    let seed = failing.outcome.seed;
    let original = PlanSize::of(&failing.outcome.fault_plan);
    assert!(
        original.faults >= 2,
        "seed {seed} failed with {} fault(s): nothing to shrink",
        original.faults
    );
    let target = ShrinkTarget::of(&failing.outcome, Some(case.check)).expect("the check fired");
    let started = Instant::now();
    let report = shrink::shrink(
        &scenario,
        seed,
        &failing.outcome,
        &target,
        &ShrinkConfig::default(),
    )
    .expect("the failure replays");
    println!(
        "{bug}, seed {seed}: {} -> {} faults, {} runs ({} failed the same way), {:.2} s\n{report}",
        report.original.faults,
        report.shrunk.faults,
        report.runs_tried,
        report.runs_failed,
        started.elapsed().as_secs_f64()
    );
    // (a) It still fails with the same check.
    assert!(target.matches(&report.outcome), "{}", report.outcome);
    assert!(
        report
            .outcome
            .violations
            .iter()
            .any(|v| v.check == case.check)
    );
    // Judged by that check alone: the rest of the check set (the linearizability search
    // among it) would cost more than the runs.
    let judged: Vec<&str> = report
        .outcome
        .checks
        .iter()
        .map(|c| c.check.as_str())
        .collect();
    assert_eq!(judged, [case.check], "{report}");
    assert!(report.simulated_ms >= report.outcome.metrics.ended_at_ms);
    // (b) At most 10 faults, and no more than the original.
    assert!(report.shrunk.faults <= 10, "{report}");
    assert!(report.shrunk.faults <= original.faults, "{report}");
    // (c) No larger by fault count, then total span, then times.
    assert_eq!(report.original, original);
    assert_eq!(report.shrunk, PlanSize::of(&report.plan));
    assert!(report.shrunk <= report.original, "{report}");
    assert!(report.runs_failed >= 1 && report.runs_failed <= report.runs_tried);
    assert!(report.runs_tried <= ShrinkConfig::default().max_runs);
    // (d) The scenario with the shrunk plan, every check on, replays the last failing run.
    let replay = driver::run(&scenario.clone().with_plan(report.plan.clone()), seed);
    assert!(replay.history_digest.is_some());
    assert_eq!(replay.history_digest, report.outcome.history_digest);
    assert!(replay.violations.iter().any(|v| v.check == case.check));
    assert_eq!(replay.fault_plan, report.plan);
    // The plan is the JSON `coordsim run --plan FILE` reads (reports/src/run.rs: read_plan).
    let json = serde_json::to_string_pretty(&report.plan).expect("a plan serializes");
    assert!(!json.contains("enabled_kinds"), "{json}");
    assert_eq!(
        serde_json::from_str::<FaultPlan>(&json).expect("the plan reads back"),
        report.plan
    );
    let index = summary
        .failures
        .iter()
        .position(|f| f.outcome.seed == seed)
        .expect("the failing run");
    let failing = summary.failures.swap_remove(index);
    (scenario, failing, report)
}

/// A swarm plan (crashes, partitions, latency) on three servers with duplicated appends.
#[test]
fn a_swarm_plan_of_truncate_on_stale_append_shrinks_and_replays() {
    let (scenario, failing, report) = shrinks_and_replays(
        "raft.truncate_on_stale_append",
        "a_swarm_plan_of_truncate_on_stale_append_shrinks_and_replays",
    );
    // The correct model runs this seed and plan clean (the known-bug table says so): the
    // shrinker cannot start, and says why on one line.
    let correct = catalogue::get(&scenario.name).expect("a catalogue scenario");
    let error = match shrink::shrink(
        &correct,
        failing.outcome.seed,
        &failing.outcome,
        &report.target,
        &ShrinkConfig::default(),
    ) {
        Ok(report) => panic!("the correct model failed the same way:\n{report}"),
        Err(error) => error,
    };
    assert!(
        matches!(error, ShrinkError::NotReproduced { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("a clean run"), "{error}");
    assert!(!error.to_string().contains('\n'), "{error}");
}

/// A leader-killer plan whose crashes name the stranded leader (`as`, `$name`), on ZAB.
#[test]
fn a_leader_killer_plan_of_diff_without_trunc_shrinks_deterministically() {
    let (scenario, failing, report) = shrinks_and_replays(
        "zab.diff_without_trunc",
        "a_leader_killer_plan_of_diff_without_trunc_shrinks_deterministically",
    );
    let again = shrink::shrink(
        &scenario,
        failing.outcome.seed,
        &failing.outcome,
        &report.target,
        &ShrinkConfig::default(),
    )
    .expect("the failure replays");
    assert_eq!(again.plan, report.plan);
    assert_eq!(again.runs_tried, report.runs_tried);
    assert_eq!(again.outcome.history_digest, report.outcome.history_digest);
}

/// What the target is, and the one-line errors when there is none.
#[test]
fn the_target_is_the_named_check_or_the_first_that_fired() {
    let case = case("raft.ack_before_fsync");
    let (_, summary) = buggy_sweep(
        &case,
        "the_target_is_the_named_check_or_the_first_that_fired",
    );
    let failing = summary
        .failures
        .iter()
        .find(|failure| {
            failure
                .outcome
                .failure
                .as_ref()
                .is_some_and(|f| f.kind() == "safety")
        })
        .expect("a safety failure in the sweep");
    let first = &failing.outcome.violations[0].check;
    let target = ShrinkTarget::of(&failing.outcome, None).expect("a target");
    assert_eq!(target.kind, "safety");
    assert_eq!(target.check.as_ref(), Some(first));
    assert!(target.matches(&failing.outcome));
    let error = ShrinkTarget::of(&failing.outcome, Some("recipe.barrier")).unwrap_err();
    assert!(
        matches!(&error, ShrinkError::CheckDidNotFire { check, fired }
            if check == "recipe.barrier" && fired.contains(first)),
        "{error}"
    );
    assert!(error.to_string().contains(first.as_str()), "{error}");
    if let Some(clean) = summary.outcomes.iter().find(|outcome| outcome.is_clean()) {
        assert_eq!(ShrinkTarget::of(clean, None), Err(ShrinkError::Clean));
        assert!(!target.matches(clean));
    }
}
