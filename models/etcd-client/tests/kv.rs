//! Code written against etcd-client's KV API runs unchanged in a coordsim world: connect,
//! put, get with options, delete; every call is an operation the store's checks judge.

use etcd_client::{Client, GetOptions, PutOptions};
use scenarios::{
    Scenario, driver,
    scenario::Store,
    workload::{UserCode, UserNode},
};
use sim::Seed;
use std::sync::{Arc, Mutex};

/// What a user's service does with etcd: nothing here is coordsim's API.
async fn register(client: &mut Client, name: &str) -> Result<(i64, usize), etcd_client::Error> {
    let put = client
        .put(format!("services/{name}"), "up", Some(PutOptions::new()))
        .await?;
    let listed = client
        .get("services/", Some(GetOptions::new().with_prefix()))
        .await?;
    Ok((put.header().map_or(0, |h| h.revision()), listed.kvs().len()))
}

#[test]
fn etcd_client_code_runs_against_the_raft_store_and_is_judged() {
    let seen: Arc<Mutex<Vec<(i64, usize)>>> = Arc::default();
    let code = {
        let seen = seen.clone();
        UserCode::new("dropin-kv", Store::Raft, move |node: UserNode| {
            let seen = seen.clone();
            async move {
                let mut client = Client::connect(["s1:2379", "s2:2379", "s3:2379"], None)
                    .await
                    .expect("connects inside a run");
                if let Ok(answer) = register(&mut client, &format!("c{}", node.index())).await {
                    seen.lock().unwrap().push(answer);
                }
                loop {
                    let _ = client.get("services/", None).await;
                    node.context()
                        .sim()
                        .sleep(std::time::Duration::from_millis(100))
                        .await;
                }
            }
        })
    };
    let scenario = Scenario::of_user_code(code, 3, 3);
    let outcome = driver::run(&scenario, Seed::new(3));
    assert!(outcome.is_clean(), "{outcome:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "every client registered: {seen:?}");
    assert!(
        seen.iter()
            .all(|(revision, listed)| *revision > 1 && *listed >= 1)
    );
    let judged = outcome
        .checks
        .iter()
        .find(|tally| tally.check == "etcd.linearizable")
        .map_or(0, |tally| tally.judged);
    assert!(judged > 10, "etcd.linearizable judged the calls: {judged}");
}

#[test]
fn connect_outside_a_run_is_an_error_not_a_panic() {
    let runtime = madsim::runtime::Runtime::new();
    let error = runtime
        .block_on(Client::connect(["s1:2379"], None))
        .err()
        .expect("no run, no store");
    assert!(error.to_string().contains("no coordsim run"), "{error}");
}
