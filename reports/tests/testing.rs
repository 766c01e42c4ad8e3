//! The testing API (`coordsim::testing`): user code over seeds, a failing seed's replay
//! line, and, with the environment variables set, its timeline, trace and shrunk fault plan.
//!
//! The first test sets the environment variables the API reads, which are the process's;
//! the other runs nothing (its scenario is refused), so it reads none of them.

use coordsim::testing::{SHRINK_DIR, Store, TIMELINE_DIR, TRACE_DIR, UserCode, UserNode, UserTest};
use models::etcd::{EtcdClient, EtcdCluster, kv_response};
use sim::{
    Sim,
    fault::{FaultKind, SwarmConfig},
    history::{OpResult, kv::KvResponse},
};
use std::time::Duration;

/// A lock that reads the key and then writes it: two clients can both see it free.
async fn check_then_act_lock(node: UserNode) {
    let sim = Sim::current().expect("inside a run");
    let cluster = sim.service::<EtcdCluster>().expect("the store");
    let context = Sim::current_node().expect("a client node");
    let mut client = EtcdClient::new(&cluster, context, node.index() as u32);
    let lock = node.lock("job");
    loop {
        lock.requested();
        let free = matches!(
            kv_response(&client.get("lock/job").await),
            Some(KvResponse::Get { kvs, .. }) if kvs.is_empty()
        );
        let token = match client.put("lock/job", "held").await {
            OpResult::Ok { .. } if free => match kv_response(&client.get("lock/job").await) {
                Some(KvResponse::Get { kvs, .. }) if !kvs.is_empty() => kvs[0].mod_revision,
                _ => continue,
            },
            _ => {
                node.context().sim().sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        lock.acquired(token);
        node.context().sim().sleep(Duration::from_millis(100)).await;
        lock.released(token);
        let _ = client.delete("lock/job").await;
    }
}

#[test]
fn a_failing_seed_replays_and_writes_its_timeline_trace_and_shrunk_plan() {
    // Bad input first: an invalid scenario runs nothing and is one line, not a panic.
    let nothing = UserCode::new("no-servers", Store::Raft, |_| async {});
    let error = UserTest::new(nothing)
        .servers(0)
        .run()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("servers") && !error.contains('\n'),
        "{error}"
    );

    let dir = std::env::temp_dir().join(format!("coordsim-testing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // SAFETY: the only test of this binary that runs a scenario; the other returns at its
    // validation, before anything reads the environment, so no other thread reads it.
    unsafe {
        std::env::set_var(TIMELINE_DIR, dir.join("timelines"));
        std::env::set_var(TRACE_DIR, dir.join("traces"));
        std::env::set_var(SHRINK_DIR, dir.join("plans"));
    }
    let code = UserCode::new("testing-api-lock", Store::Raft, check_then_act_lock)
        .with_check("recipe.mutual_exclusion");
    let test = UserTest::new(code)
        .faults(sim::fault::FaultSource::Swarm(SwarmConfig {
            mean_interval_ms: 2_000,
            kinds: vec![FaultKind::Partition],
            ..SwarmConfig::default()
        }))
        .seeds(4)
        .for_test(coordsim::this_test!(
            "a_failing_seed_replays_and_writes_its_timeline_trace_and_shrunk_plan"
        ));
    let summary = test.run().expect("a valid scenario");
    summary.assert_fired(&[FaultKind::Partition]);
    let failure = summary
        .failures
        .first()
        .expect("check-then-act fails in some seed");
    assert!(failure.checks_fired().contains(&"recipe.mutual_exclusion"));
    let replay = failure.report.command.clone().unwrap_or_default();
    assert!(
        replay.contains("cargo test -p coordsim --test testing -- --exact a_failing_seed_replays"),
        "{replay}"
    );
    let stem = format!("testing-api-lock-{}", failure.outcome.seed);
    let timeline = std::fs::read_to_string(dir.join(format!("timelines/{stem}.html"))).unwrap();
    assert!(timeline.contains("<html"), "an HTML page");
    let trace = std::fs::read_to_string(dir.join(format!("traces/{stem}.json"))).unwrap();
    let trace: serde_json::Value = serde_json::from_str(&trace).unwrap();
    assert!(
        trace["records"]
            .as_array()
            .is_some_and(|records| !records.is_empty())
    );
    let plan = std::fs::read_to_string(dir.join(format!("plans/{stem}-shrunk-plan.json"))).unwrap();
    let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
    assert!(plan.get("faults").is_some(), "a fault plan: {plan}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_campaign_check_switch_lands_in_the_scenarios_tuning() {
    use coordsim::testing::CampaignCheck;
    let code = UserCode::new("testing-api-switch", Store::Raft, |_node| async {});
    let upstream = UserTest::new(code.clone());
    assert_eq!(upstream.scenario().tuning.campaign_check, None);
    let fixed = UserTest::new(code).campaign_check(CampaignCheck::RecheckOwnKey);
    assert_eq!(
        fixed.scenario().tuning.campaign_check,
        Some(CampaignCheck::RecheckOwnKey)
    );
}

/// An unknown role (a `$name` no earlier fault named, or a role's name mistyped where plans
/// are read) is one line of bad input naming what was expected, not a panic.
#[test]
fn an_unknown_fault_role_is_one_line_of_bad_input() {
    use coordsim::testing::{Fault, FaultPlan, FaultSource, ScheduledFault, Target};
    let nothing = UserCode::new("unknown-role", Store::Raft, |_| async {});
    let plan = FaultPlan::new(vec![ScheduledFault::at(
        100,
        Fault::Pause {
            node: Target::Label("stranded".into()),
        },
    )]);
    let error = UserTest::new(nothing)
        .faults(FaultSource::Plan(plan))
        .run()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("`$stranded`") && !error.contains('\n'),
        "{error}"
    );
    let mistyped = "leadr".parse::<Target>().unwrap_err().to_string();
    assert!(
        mistyped.contains("leadr") && mistyped.contains("leader") && !mistyped.contains('\n'),
        "{mistyped}"
    );
}
