//! No green without evidence: a scenario runs its workload's checks whatever its `checks`
//! say, an outcome lists every check with what it judged, a sweep fails when a check it
//! relies on judged nothing in every seed or a mark it declares was never reached, and
//! taking a check away needs a reason.

use scenarios::{KnownBug, Scenario, scenario::Format, sweep::Sweep};
use sim::coverage::Mark;

/// A queue-lock scenario written from the README example of earlier versions (`checks = ["default"]`),
/// which used to skip every recipe check and came back clean with the herd bug on.
const README_QUEUE_LOCK: &str = r#"
name = "my_queue_lock"
store = "zab"
servers = 3
clients = 5
fault_phase_ms = 6000
recovery_ms = 1000
liveness_bound_ms = 30000
checks = ["default"]

[workload]
kind = "locks"
recipe = "zk_queue_lock"
"#;

fn readme_queue_lock() -> Scenario {
    Scenario::parse(README_QUEUE_LOCK, Format::Toml).expect("a valid scenario")
}

#[test]
fn a_lock_scenario_from_the_readme_runs_the_lock_checks_and_catches_the_herd() {
    let scenario = readme_queue_lock();
    let names: Vec<&str> = scenario
        .check_set()
        .iter()
        .map(|check| check.name)
        .collect();
    for check in [
        "recipe.mutual_exclusion",
        "recipe.fenced_writes",
        "recipe.herd_effect",
        "recipe.holder_owns_node",
        "recipe.no_orphan_waiter",
    ] {
        assert!(names.contains(&check), "{check} missing from {names:?}");
        assert!(
            scenario.relied_on().contains(&check),
            "{check} not relied on"
        );
    }
    let buggy = scenario.clone().with_bugs(["recipe.herd_watch_all"
        .parse::<KnownBug>()
        .expect("a variant")]);
    let summary = Sweep::new(
        buggy,
        "scenarios",
        "evidence",
        "a_lock_scenario_from_the_readme_runs_the_lock_checks_and_catches_the_herd",
        5,
    )
    .run();
    // Every waiter of five watches everything ahead of it: each release wakes the whole
    // line, in every seed that has a line (all of seeds 0-4 did when this was written).
    assert!(
        summary.seeds_where_fired("recipe.herd_effect") >= 1,
        "the herd went unseen in {} seeds",
        summary.seeds.len()
    );
    // The outcome says what each check judged.
    let outcome = &summary.outcomes[0];
    let exclusion = outcome
        .checks
        .iter()
        .find(|tally| tally.check == "recipe.mutual_exclusion")
        .expect("mutual exclusion ran");
    assert!(exclusion.judged > 0, "{exclusion}");
    assert!(
        outcome.to_string().contains("recipe.mutual_exclusion: "),
        "{outcome}"
    );
}

#[test]
fn a_check_that_judged_nothing_is_reported_vacuous_and_fails_the_sweep() {
    // A key-value workload gives the lock checks nothing to judge: naming one makes the
    // scenario rely on it, and the sweep must say it showed nothing.
    let mut scenario = scenarios::catalogue::get("raft_swarm_3").expect("in the catalogue");
    scenario.checks.push("recipe.mutual_exclusion".into());
    scenario.faults = Default::default();
    let summary = Sweep::new(
        scenario,
        "scenarios",
        "evidence",
        "a_check_that_judged_nothing_is_reported_vacuous_and_fails_the_sweep",
        2,
    )
    .run();
    assert!(summary.failures.is_empty(), "the runs themselves are clean");
    let outcome = &summary.outcomes[0];
    let tally = outcome
        .checks
        .iter()
        .find(|tally| tally.check == "recipe.mutual_exclusion")
        .expect("ran");
    assert!(tally.is_vacuous() && tally.relied_on, "{tally}");
    assert!(
        outcome
            .to_string()
            .contains("0 exclusive holds (vacuous, relied on)")
    );
    assert_eq!(
        summary.evidence().vacuous_relied_on(),
        vec!["recipe.mutual_exclusion"]
    );
    let panic = std::panic::catch_unwind(|| summary.assert_clean()).expect_err("must fail");
    let message = panic.downcast_ref::<String>().expect("a message");
    assert!(message.contains("judged nothing"), "{message}");
    let replay = format!(
        "COORDSIM_SEED={} cargo test -p scenarios --test evidence -- --exact \
         a_check_that_judged_nothing_is_reported_vacuous_and_fails_the_sweep",
        summary.seeds[0]
    );
    assert!(message.contains(&replay), "no replay line: {message}");
}

#[test]
fn a_seed_whose_check_judged_nothing_is_named_with_its_replay_line() {
    // `assert_judged` asks it of every seed: the failing one says which, how the run itself
    // went, and the line that replays that seed (not the first).
    let mut scenario = scenarios::catalogue::get("raft_swarm_3").expect("in the catalogue");
    scenario.checks.push("recipe.mutual_exclusion".into());
    scenario.faults = Default::default();
    let name = "a_seed_whose_check_judged_nothing_is_named_with_its_replay_line";
    let summary = Sweep::new(scenario, "scenarios", "evidence", name, 2).run();
    let panic = std::panic::catch_unwind(|| summary.assert_judged("recipe.mutual_exclusion"))
        .expect_err("must fail");
    let message = panic.downcast_ref::<String>().expect("a message");
    let seed = summary.seeds[0];
    assert!(
        message.contains(&format!(
            "recipe.mutual_exclusion judged nothing in seed {seed}"
        )),
        "{message}"
    );
    assert!(message.contains("the run itself was clean"), "{message}");
    let replay =
        format!("COORDSIM_SEED={seed} cargo test -p scenarios --test evidence -- --exact {name}");
    assert!(message.contains(&replay), "no replay line: {message}");
}

#[test]
fn a_declared_mark_never_reached_fails_the_sweep() {
    let mut scenario = scenarios::catalogue::get("raft_swarm_3").expect("in the catalogue");
    scenario.marks = vec![Mark::ZabTruncSync];
    scenario.faults = Default::default();
    let summary = Sweep::new(
        scenario,
        "scenarios",
        "evidence",
        "a_declared_mark_never_reached_fails_the_sweep",
        2,
    )
    .run();
    assert_eq!(summary.evidence().marks_missed(), vec![Mark::ZabTruncSync]);
    let panic = std::panic::catch_unwind(|| summary.assert_clean()).expect_err("must fail");
    let message = panic.downcast_ref::<String>().expect("a message");
    assert!(message.contains("zab_trunc_sync"), "{message}");
}

#[test]
fn taking_a_check_away_needs_a_known_check_and_a_reason() {
    let unknown = Scenario::parse(
        &README_QUEUE_LOCK.replace(
            "[workload]",
            "skip_checks = [{ check = \"recipe.nonexistent\", reason = \"x\" }]\n[workload]",
        ),
        Format::Toml,
    )
    .expect_err("unknown check");
    assert!(
        unknown.to_string().contains("skip_checks[0].check"),
        "{unknown}"
    );
    let no_reason = Scenario::parse(
        &README_QUEUE_LOCK.replace(
            "[workload]",
            "skip_checks = [{ check = \"recipe.herd_effect\", reason = \" \" }]\n[workload]",
        ),
        Format::Toml,
    )
    .expect_err("no reason");
    assert!(
        no_reason.to_string().contains("skip_checks[0].reason"),
        "{no_reason}"
    );
    let skipped = Scenario::parse(
        &README_QUEUE_LOCK.replace(
            "[workload]",
            "skip_checks = [{ check = \"recipe.herd_effect\", reason = \"measured elsewhere\" }]\n[workload]",
        ),
        Format::Toml,
    )
    .expect("a reasoned skip");
    assert!(
        !skipped
            .check_set()
            .iter()
            .any(|check| check.name == "recipe.herd_effect")
    );
    // The reason goes into every outcome.
    let outcome = scenarios::driver::run(&skipped, sim::Seed::new(0));
    assert!(
        outcome
            .to_string()
            .contains("recipe.herd_effect skipped: measured elsewhere"),
        "{outcome}"
    );
}
