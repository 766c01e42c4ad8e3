//! What the drop-in's tests share: connecting as user code does, and reading an outcome.

#![allow(dead_code)]

use etcd_client::Client;
use scenarios::{
    Outcome, Scenario, driver,
    scenario::{CampaignCheck, Store},
    workload::UserCode,
};
use sim::Seed;
use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

/// Connects as user code does (the endpoints are accepted as given).
pub async fn connect() -> Client {
    Client::connect(["s1:2379", "s2:2379", "s3:2379"], None)
        .await
        .expect("connects inside a run")
}

/// How many items `check` judged in `outcome` (0 if it did not run).
pub fn judged(outcome: &Outcome, check: &str) -> u64 {
    outcome
        .checks
        .iter()
        .find(|tally| tally.check == check)
        .map_or(0, |tally| tally.judged)
}

/// How many violations `check` found in `outcome`.
pub fn violations(outcome: &Outcome, check: &str) -> u64 {
    outcome
        .checks
        .iter()
        .find(|tally| tally.check == check)
        .map_or(0, |tally| tally.violations)
}

/// Sleeps `ms` of simulated time on the current node.
pub async fn sleep_ms(ms: u64) {
    madsim::time::sleep(Duration::from_millis(ms)).await;
}

/// Runs `code` once on a single client without faults; what it wrote down.
pub fn run_once<F, Fut>(code: F) -> Vec<String>
where
    F: Fn(Client, Arc<Mutex<Vec<String>>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    run_once_with(None, code)
}

/// [`run_once`] with the store's campaign check set to `check`.
pub fn run_once_with<F, Fut>(check: Option<CampaignCheck>, code: F) -> Vec<String>
where
    F: Fn(Client, Arc<Mutex<Vec<String>>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let notes: Arc<Mutex<Vec<String>>> = Arc::default();
    let user = {
        let notes = notes.clone();
        let code = Arc::new(code);
        UserCode::new("dropin-calls", Store::Raft, move |_node| {
            let (notes, code) = (notes.clone(), code.clone());
            async move {
                code(connect().await, notes).await;
                std::future::pending::<()>().await;
            }
        })
    };
    let mut scenario = Scenario::of_user_code(user, 3, 1);
    scenario.tuning.campaign_check = check;
    let outcome = driver::run(&scenario, Seed::new(1));
    assert!(outcome.is_clean(), "{outcome:?}");
    notes.lock().unwrap().clone()
}
