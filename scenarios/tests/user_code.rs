//! User code through the one run driver: code from outside the catalogue runs on every
//! client node, finds the store the scenario started the way a drop-in client's `connect`
//! does (`Sim::current`, `Sim::current_node`, `Sim::service`), and is judged by the store's
//! checks and the checks it names — clean when it is right, caught when it is not, with the
//! seed and the line that replays it.

use models::etcd::{EtcdClient, EtcdCluster};
use scenarios::{
    Scenario, driver,
    sweep::Sweep,
    workload::{UserCode, UserNode},
};
use sim::{
    Seed, Sim,
    history::{
        OpResult,
        kv::{Compare, CompareOperator, CompareTarget, KvOperation, KvResponse},
    },
};
use std::time::Duration;

/// An etcd client for the current node, found as a drop-in's `connect` finds it.
fn connect(node: &UserNode) -> EtcdClient {
    let sim = Sim::current().expect("user code runs inside a world");
    let cluster = sim
        .service::<EtcdCluster>()
        .expect("the driver provides the store it started");
    let context = Sim::current_node().expect("user code runs on a client node");
    assert_eq!(
        context.id(),
        node.id(),
        "the task runs on its own client node"
    );
    EtcdClient::new(&cluster, context, node.index() as u32)
}

#[test]
fn user_code_runs_on_every_client_and_the_store_checks_judge_it() {
    let code = UserCode::new(
        "user-kv",
        scenarios::scenario::Store::Raft,
        |node| async move {
            let mut client = connect(&node);
            let key = format!("user/{}", node.index());
            for round in 0u64.. {
                let _ = client.put(&key, &round.to_string()).await;
                let _ = client.get(&key).await;
                node.context().sim().sleep(Duration::from_millis(50)).await;
            }
        },
    );
    let scenario = Scenario::of_user_code(code, 3, 3);
    scenario.validate().expect("a valid scenario");
    let outcome = driver::run(&scenario, Seed::new(1));
    assert!(outcome.is_clean(), "{outcome:?}");
    assert!(outcome.metrics.acknowledged > 50, "{:?}", outcome.metrics);
    let linearizable = outcome
        .checks
        .iter()
        .find(|tally| tally.check == "etcd.linearizable")
        .expect("the store's linearizability check runs on user code");
    assert!(linearizable.judged > 50, "{linearizable:?}");
    assert_eq!(
        outcome.history_digest,
        driver::run(&scenario, Seed::new(1)).history_digest,
        "the same seed gives the same history"
    );
}

/// A lock that reads the key and then writes it, not in one transaction: two clients can
/// both see it free and both believe they hold it.
fn check_then_act_lock(node: UserNode) -> impl std::future::Future<Output = ()> + Send {
    async move {
        let mut client = connect(&node);
        let process = node.index() as u32;
        let lock = node.lock("job");
        loop {
            lock.requested();
            let free = matches!(
                models::etcd::kv_response(&client.get("lock/job").await),
                Some(KvResponse::Get { kvs, .. }) if kvs.is_empty()
            );
            if !free {
                node.context().sim().sleep(Duration::from_millis(20)).await;
                continue;
            }
            let token = match client.put("lock/job", &process.to_string()).await {
                OpResult::Ok { .. } => {
                    match models::etcd::kv_response(&client.get("lock/job").await) {
                        Some(KvResponse::Get { kvs, .. }) if !kvs.is_empty() => kvs[0].mod_revision,
                        _ => continue,
                    }
                }
                _ => continue,
            };
            lock.acquired(token);
            node.context().sim().sleep(Duration::from_millis(100)).await;
            lock.released(token);
            let _ = client.delete("lock/job").await;
        }
    }
}

/// The same lock taken in one transaction: put the key only if it does not exist.
fn transactional_lock(node: UserNode) -> impl std::future::Future<Output = ()> + Send {
    async move {
        let mut client = connect(&node);
        let process = node.index() as u32;
        let lock = node.lock("job");
        loop {
            lock.requested();
            let taken = client
                .txn(
                    vec![Compare {
                        key: "lock/job".into(),
                        target: CompareTarget::CreateRevision(0),
                        operator: CompareOperator::Equal,
                        range_end: None,
                    }],
                    vec![KvOperation::Put {
                        key: "lock/job".into(),
                        value: process.to_string(),
                        lease: None,
                        prev_kv: false,
                    }],
                    Vec::new(),
                )
                .await;
            let token = match models::etcd::kv_response(&taken) {
                Some(KvResponse::Txn {
                    succeeded: true,
                    revision,
                    ..
                }) => *revision,
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
}

/// Five seeds of the user lock `program` on 3 clients against 3 etcd servers, judged by
/// `recipe.mutual_exclusion`, replayed by the test `test`.
fn lock_sweep<P, F>(name: &str, program: P, test: &str) -> scenarios::sweep::SweepSummary
where
    P: Fn(UserNode) -> F + Send + Sync + 'static,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let code = UserCode::new(name, scenarios::scenario::Store::Raft, program)
        .with_check("recipe.mutual_exclusion");
    Sweep::new(
        Scenario::of_user_code(code, 3, 3),
        "scenarios",
        "user_code",
        test,
        5,
    )
    .run()
}

#[test]
fn a_user_lock_taken_in_one_transaction_passes_the_same_check() {
    let summary = lock_sweep(
        "user-transactional-lock",
        transactional_lock,
        "a_user_lock_taken_in_one_transaction_passes_the_same_check",
    );
    summary.assert_clean();
    summary.assert_evidence();
}

#[test]
fn a_user_lock_that_checks_then_acts_is_caught_by_the_check_it_names() {
    let summary = lock_sweep(
        "user-check-then-act-lock",
        check_then_act_lock,
        "a_user_lock_that_checks_then_acts_is_caught_by_the_check_it_names",
    );
    let caught = summary.seeds_where_fired("recipe.mutual_exclusion");
    assert!(
        caught >= 1,
        "the race was caught in no seed of {:?}",
        summary.seeds
    );
    let failure = summary.failures.first().expect("a failed seed");
    let replay = failure.report.command.clone().unwrap_or_default();
    assert!(
        replay.contains("COORDSIM_SEED=") && replay.contains("--test user_code"),
        "a failure names the line that replays it: {replay}"
    );
}

#[test]
fn user_code_with_an_unknown_check_or_read_from_a_file_is_one_line_of_bad_input() {
    let code = UserCode::new("user-typo", scenarios::scenario::Store::Raft, |_| async {})
        .with_check("recipe.mutual_exclusoin");
    let error = Scenario::of_user_code(code, 3, 1).validate().unwrap_err();
    let line = error.to_string();
    assert!(
        line.contains("unknown check `recipe.mutual_exclusoin`"),
        "{line}"
    );
    assert!(!line.contains('\n'), "{line}");

    let code = UserCode::new("user-empty", scenarios::scenario::Store::Raft, |_| async {});
    let zero_servers = Scenario::of_user_code(code.clone(), 0, 1).validate();
    assert!(zero_servers.is_err(), "0 servers is bad input");

    let text = serde_json::to_string(&Scenario::of_user_code(code, 3, 1)).unwrap();
    assert!(
        text.contains(r#""kind":"user","name":"user-empty""#),
        "{text}"
    );
    let read_back = Scenario::parse(&text, scenarios::scenario::Format::Json).unwrap_err();
    assert!(
        read_back.to_string().contains("cannot be read from a file"),
        "{read_back}"
    );
}
