//! The run model itself: every failure kind is produced and reported with the right kind
//! and a replay command; a directed plan written to a file replays to the same history
//! digest; bad scenario files get one line naming the file, the line and the field.

use scenarios::{
    Failure, KnownBug, Scenario, catalogue, driver,
    scenario::Format,
    sweep::{SeedFailure, Sweep},
    workload::Workload,
};
use sim::{Seed, fault::FaultPlan};

const TARGET: &str = "run_model";

/// The first failure of a sweep of `scenario`, which must fail on some seed.
fn first_failure(scenario: Scenario, test_name: &str, seeds: u64) -> SeedFailure {
    let summary = Sweep::new(scenario, "scenarios", TARGET, test_name, seeds).run();
    let failure = summary
        .failures
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no seed of {test_name} failed"));
    let report = failure.to_string();
    assert!(
        report.contains(&format!(
            "REPRODUCE WITH: COORDSIM_SEED={} cargo test -p scenarios --test {TARGET} -- --exact {test_name}",
            failure.outcome.seed
        )),
        "{report}"
    );
    assert!(
        report.contains("scenario: {"),
        "the report prints the scenario: {report}"
    );
    failure
}

fn ledger() -> Scenario {
    catalogue::get("ledger").unwrap()
}

#[test]
fn a_safety_violation_is_reported_as_safety() {
    let scenario = catalogue::get("raft_split_vote_restart")
        .unwrap()
        .with_bugs(["raft.volatile_vote".parse::<KnownBug>().unwrap()]);
    let failure = first_failure(scenario, "a_safety_violation_is_reported_as_safety", 20);
    assert_eq!(failure.outcome.failure, Some(Failure::Safety));
    assert!(failure.outcome.violated("leader uniqueness"), "{}", failure);
    assert!(
        failure
            .outcome
            .violations
            .iter()
            .any(|v| v.check == "protocol.leader_uniqueness")
    );
}

#[test]
fn a_stall_after_the_heal_is_reported_as_liveness_naming_what_is_pending() {
    let scenario = Scenario {
        liveness_bound_ms: 1,
        ..ledger()
    };
    let failure = first_failure(
        scenario,
        "a_stall_after_the_heal_is_reported_as_liveness_naming_what_is_pending",
        1,
    );
    let Some(Failure::Liveness { pending }) = &failure.outcome.failure else {
        panic!("not a liveness failure: {failure}");
    };
    assert!(
        pending.contains("liveness bound of 1 ms") && pending.contains("pending: "),
        "{pending}"
    );
    assert!(failure.outcome.violations.is_empty());
}

#[test]
fn a_panic_in_a_model_is_reported_as_a_crash_and_the_sweep_goes_on() {
    let mut scenario = ledger();
    let Workload::Ledger(appends) = &mut scenario.workload else {
        unreachable!()
    };
    appends.panic_at_append = Some(3);
    let test_name = "a_panic_in_a_model_is_reported_as_a_crash_and_the_sweep_goes_on";
    let summary = Sweep::new(scenario, "scenarios", TARGET, test_name, 2).run();
    // Every seed crashes (the ledger reaches its third append in any seed), and the sweep
    // runs them all: one failure per seed, however many seeds it runs (two by default).
    assert_eq!(
        (summary.failures.len(), summary.outcomes.len()),
        (summary.seeds.len(), summary.seeds.len()),
        "the sweep went on after the first crash"
    );
    for failure in &summary.failures {
        let Some(Failure::Crash { message }) = &failure.outcome.failure else {
            panic!("not a crash: {failure}");
        };
        assert!(message.contains("asked to panic at append 3"), "{message}");
        assert!(
            failure
                .to_string()
                .contains("REPRODUCE WITH: COORDSIM_SEED=")
        );
    }
}

/// An assertion about a run, inside a sweep's inspection, is reported with the seed and the
/// command that replays it (the sweep's failure report), as a failed run is.
#[test]
fn a_panic_in_a_sweeps_inspection_names_the_seed_and_the_replay_line() {
    let test_name = "a_panic_in_a_sweeps_inspection_names_the_seed_and_the_replay_line";
    let first_seed = sim::env::test_seeds(1)[0];
    let panic = std::panic::catch_unwind(|| {
        Sweep::new(ledger(), "scenarios", TARGET, test_name, 1).run_inspecting(|outcome| {
            assert_eq!(
                outcome.metrics.operations,
                u64::MAX,
                "an assertion about the run"
            );
        })
    })
    .expect_err("the inspection's assertion fails");
    let message = panic
        .downcast_ref::<String>()
        .expect("a panic with a message");
    for expected in [
        "an assertion about the run".to_string(),
        format!("asserted about the run of seed {first_seed}; the run itself was clean"),
        format!(
            "REPRODUCE WITH: COORDSIM_SEED={first_seed} cargo test -p scenarios --test {TARGET} \
             -- --exact {test_name}"
        ),
    ] {
        assert!(message.contains(&expected), "`{expected}` in: {message}");
    }
}

/// The plans the generators make, and so the plans runs record (which `replay --from`
/// follows), are within their scenario's fault phase: the check that rejects a plan fault
/// after the phase never rejects a recorded plan.
#[test]
fn generated_plans_are_within_the_fault_phase() {
    for scenario in catalogue::all() {
        sim::report::for_each_seed(
            0..20,
            sim::this_test!("generated_plans_are_within_the_fault_phase"),
            |seed| {
                let world = sim::World::new(seed, scenario.world_config())
                    .unwrap_or_else(|error| panic!("{}: {error}", scenario.name));
                let plan = world.fault_plan();
                if let Err(error) = plan.validate_within_phase("plan", scenario.fault_phase_ms) {
                    panic!(
                        "{} with seed {seed}: {}: {}\n{plan}",
                        scenario.name, error.field, error.problem
                    );
                }
                assert!(
                    scenario.clone().with_plan(plan.clone()).validate().is_ok(),
                    "{} with seed {seed}: its recorded plan does not validate",
                    scenario.name
                );
            },
        );
    }
}

#[test]
fn a_run_that_reaches_its_time_limit_is_a_failure() {
    let scenario = Scenario {
        recovery_ms: 60_000,
        time_limit_ms: Some(20_000),
        ..ledger()
    };
    let failure = first_failure(
        scenario,
        "a_run_that_reaches_its_time_limit_is_a_failure",
        1,
    );
    assert_eq!(
        failure.outcome.failure,
        Some(Failure::TimeLimit { at_ms: 20_000 }),
        "{failure}"
    );
}

#[test]
fn a_clean_run_made_progress() {
    let outcome = driver::run(&ledger(), Seed::new(42));
    assert!(outcome.is_clean(), "{outcome}");
    assert!(outcome.metrics.acknowledged > 0);
    assert!(outcome.fault_counts.faults_fired() > 0, "{outcome}");
}

/// A directed plan (the leader killer, a quorum restart, a crash on rejoin, clients joining
/// a cut-off leader, a scripted trace: aimed at roles and `$names`) written to a file and
/// read back replays the run to the same history digest.
#[test]
fn directed_plans_replay_from_their_files_to_the_same_digest() {
    for name in [
        "raft_leader_killer",
        "zab_leader_killer",
        "zab_quorum_restart",
        "zab_rejoin_crash",
        "zab_cut_off_leader_readers_join",
        "zab_trace_diff_without_trunc",
    ] {
        let scenario = catalogue::get(name).unwrap();
        let seed = Seed::new(11);
        let first = driver::run(&scenario, seed);
        assert!(first.is_clean(), "{first}");
        assert!(
            first
                .fault_plan
                .faults
                .iter()
                .any(|f| f.fault.to_string().contains("leader")),
            "{name}: the plan names roles:\n{}",
            first.fault_plan
        );
        let file = std::env::temp_dir().join(format!("coordsim-{name}-plan.json"));
        std::fs::write(
            &file,
            serde_json::to_string_pretty(&first.fault_plan).unwrap(),
        )
        .unwrap();
        let plan: FaultPlan =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let again = driver::run(&scenario.clone().with_plan(plan), seed);
        assert_eq!(first.history_digest, again.history_digest, "{name}");
        assert_eq!(first.fault_counts, again.fault_counts, "{name}");
    }
}

#[test]
fn scenario_files_parse_from_toml_and_json() {
    let toml = r#"
name = "mine"
store = "raft"
servers = 5
clients = 2
fault_phase_ms = 4000
liveness_bound_ms = 10000
bugs = ["raft.volatile_vote"]
checks = ["default", "protocol.leader_stability"]

[workload]
kind = "kv_mix"
keys = 8

[faults.leader_killer]
max_delay_ms = 300

[world.network]
loss = "1/20"
"#;
    let scenario = Scenario::parse(toml, Format::Toml).unwrap();
    assert_eq!(scenario.servers, 5);
    assert_eq!(scenario.check_set().len(), 7 + 5 + 1);
    let json = serde_json::to_string(&scenario).unwrap();
    assert_eq!(Scenario::parse(&json, Format::Json).unwrap(), scenario);
    let path = std::env::temp_dir().join("coordsim-scenario-mine.toml");
    std::fs::write(&path, toml).unwrap();
    assert_eq!(Scenario::load(&path).unwrap(), scenario);
}

/// Bad scenario files: one line with the file, the line, the field and what was expected.
///
/// Long on purpose: a data-driven table, one bad file and the line it must print per row.
#[test]
fn bad_scenario_files_name_the_file_line_and_field() {
    let base = r#"name = "bad"
store = "raft"
servers = 3
clients = 2
fault_phase_ms = 4000
liveness_bound_ms = 10000
[workload]
kind = "kv_mix"
"#;
    let cases: [(&str, &str, usize, &str, &str); 15] = [
        (
            "store = \"raft\"",
            "store = \"cassandra\"",
            2,
            "store",
            "unknown variant `cassandra`",
        ),
        (
            "servers = 3",
            "servers = 0",
            3,
            "servers",
            "0 servers (expected 1..=15)",
        ),
        (
            "kind = \"kv_mix\"",
            "kind = \"zk_mix\"",
            8,
            "workload.kind",
            "runs on the zab store",
        ),
        // Internally tagged tables (the workload, a fault): serde reports the table, at its
        // header.
        (
            "kind = \"kv_mix\"",
            "kind = \"kv_mix\"\nbogus = 1",
            7,
            "workload",
            "unknown field `bogus`",
        ),
        (
            "liveness_bound_ms = 10000",
            "liveness_bound_ms = 0",
            6,
            "liveness_bound_ms",
            "expected a positive bound",
        ),
        (
            "clients = 2",
            "clients = 2\nbugs = [\"raft.made_up\"]",
            5,
            "bugs[0]",
            "unknown known-bug variant `raft.made_up`",
        ),
        (
            "clients = 2",
            "clients = 2\nchecks = [\"zk.nope\"]",
            5,
            "checks[0]",
            "unknown check `zk.nope`",
        ),
        (
            "[workload]",
            "[faults.swarm]\nmax_unavailable_servers = 4\n[workload]",
            8,
            "faults.swarm.max_unavailable_servers",
            "4 servers down at once, of 3",
        ),
        (
            "[workload]",
            "[[faults.plan.faults]]\nat_ms = 1\nfault = \"crash\"\nnode = \"leadr\"\n[workload]",
            7,
            "faults.plan.faults[0]",
            "`leadr` is not a target",
        ),
        (
            "servers = 3",
            "servers = 3\nobservers = 1",
            4,
            "observers",
            "1 on the raft store (expected 0: only the zab store has observers)",
        ),
        (
            "store = \"raft\"\nservers = 3",
            "store = \"zab\"\nservers = 3\nobservers = 3",
            4,
            "observers",
            "3 of 3 servers (expected at least one voting server: at most 2 observers)",
        ),
        (
            "[workload]",
            "[tuning]\nsequence_counter_bits = 3\n[workload]",
            8,
            "tuning.sequence_counter_bits",
            "3 (expected a counter width from 4 to 32 bits)",
        ),
        // A plan's faults fire within the fault phase (4000 ms here): one at its end or
        // later would fire after the heal, or push the run past its time limit.
        (
            "[workload]",
            "[[faults.plan.faults]]\nat_ms = 4000\nfault = \"crash\"\nnode = \"s1\"\n[workload]",
            8,
            "faults.plan[0].at_ms",
            "4000 ms is not within the fault phase of 4000 ms (expected a time below 4000",
        ),
        (
            "[workload]",
            "[[faults.plan.faults]]\nat_ms = 10\nfault = \"crash\"\nnode = \"s1\"\n\
             [[faults.plan.faults]]\nat_ms = 999999\nfault = \"crash\"\nnode = \"s2\"\n[workload]",
            8,
            "faults.plan[1].at_ms",
            "999999 ms is not within the fault phase of 4000 ms",
        ),
        (
            "[workload]",
            "[[faults.plan.faults]]\nat_ms = 3000\nfault = \"crash\"\nnode = \"s1\"\nfor_ms = 2000\n[workload]",
            11,
            "faults.plan[0].for_ms",
            "2000 ms from 3000 ms ends at 5000 ms, after the fault phase of 4000 ms",
        ),
    ];
    for (from, to, line, field, expected) in cases {
        let text = base.replace(from, to);
        let path = std::env::temp_dir().join(format!(
            "coordsim-bad-{}.toml",
            field.replace(['.', '[', ']'], "_")
        ));
        std::fs::write(&path, &text).unwrap();
        let error = Scenario::load(&path).unwrap_err();
        let message = error.to_string();
        assert!(!message.contains('\n'), "one line: {message}");
        assert!(
            message.starts_with(&format!("{}:{line}: ", path.display())),
            "{field}: {message}"
        );
        assert_eq!(error.field, field, "{message}");
        assert!(message.contains(expected), "{field}: {message}");
    }
    let malformed = Scenario::parse("name = \"x\"\nservers = [", Format::Toml).unwrap_err();
    assert_eq!(malformed.line, Some(2), "{malformed}");
    let json =
        Scenario::parse("{\"name\": \"x\",\n \"servers\": \"three\"}", Format::Json).unwrap_err();
    assert_eq!(
        (json.line, json.field.as_str()),
        (Some(2), "servers"),
        "{json}"
    );
}

/// `observers = 2` in a scenario file: the last two of five servers observe. The run is
/// clean, s4 and s5 record that they observe, no observer leads, and the leader recorded
/// the quorums it counted (voters only, or `protocol.observers_never_count` would fail the
/// run); the same seed gives the same history digest. The scenario serializes with its observers, and without the field when there are
/// none (so the digests of scenarios without observers did not change).
#[test]
fn a_scenario_file_with_observers_runs_them() {
    use sim::history::{Event, ProtocolEvent};
    let toml = r#"name = "observed"
store = "zab"
servers = 5
observers = 2
clients = 2
fault_phase_ms = 2000
liveness_bound_ms = 20000
[workload]
kind = "zk_mix"
"#;
    let path = std::env::temp_dir().join("coordsim-scenario-observers.toml");
    std::fs::write(&path, toml).unwrap();
    let scenario = Scenario::load(&path).unwrap();
    assert_eq!((scenario.servers, scenario.observers), (5, 2));
    let json = serde_json::to_string(&scenario).unwrap();
    assert!(json.contains("\"observers\":2"), "{json}");
    assert_eq!(Scenario::parse(&json, Format::Json).unwrap(), scenario);
    let voters_only = Scenario {
        observers: 0,
        ..scenario.clone()
    };
    assert!(
        !serde_json::to_string(&voters_only)
            .unwrap()
            .contains("observers")
    );

    let outcome = scenarios::driver::run(&scenario, sim::Seed::new(3));
    assert!(outcome.is_clean(), "{outcome}");
    let again = scenarios::driver::run(&scenario, sim::Seed::new(3));
    assert_eq!(again.history_digest, outcome.history_digest);
    let history = outcome.history.expect("a clean run's history");
    let by = |wanted: fn(&ProtocolEvent) -> bool| -> Vec<sim::NodeId> {
        history
            .records()
            .iter()
            .filter_map(|record| match &record.event {
                Event::Protocol(event) if wanted(event) => record.node,
                _ => None,
            })
            .collect()
    };
    let mut observing = by(|event| *event == ProtocolEvent::StartedObserving);
    observing.sort();
    assert_eq!(
        observing,
        vec![sim::NodeId::server(3), sim::NodeId::server(4)]
    );
    let leaders = by(|event| matches!(event, ProtocolEvent::BecameLeader { .. }));
    assert!(!leaders.is_empty() && leaders.iter().all(|node| node.ordinal() < 3));
    assert!(!by(|event| matches!(event, ProtocolEvent::QuorumCounted { .. })).is_empty());
}

/// The command a model panic's failure report names (the world is described by the
/// driver): the scenario by name, its variants and the seed, with the one replay prefix.
#[test]
fn a_runs_replay_command_names_its_scenario_its_variants_and_its_seed() {
    let scenario = catalogue::get("raft_split_vote_restart")
        .unwrap()
        .with_bugs(["raft.volatile_vote".parse::<KnownBug>().unwrap()]);
    assert_eq!(
        driver::replay_command(&scenario, Seed::new(2)).to_string(),
        format!(
            "{} run --scenario raft_split_vote_restart --bug raft.volatile_vote --seed 0x2",
            scenarios::replay_command::PREFIX
        )
    );
}
