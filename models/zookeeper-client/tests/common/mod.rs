//! What the drop-in's tests share: connecting as user code does, and reading an outcome.

#![allow(dead_code)]

use scenarios::{Outcome, Scenario, driver, scenario::Store, workload::UserCode};
use sim::Seed;
use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};
use zookeeper_client::Client;

/// The connect string user code would use (the hosts are accepted as given).
pub const CLUSTER: &str = "s1:2181,s2:2181,s3:2181";

/// Connects as user code does.
pub async fn connect() -> Client {
    Client::connect(CLUSTER)
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

/// Runs `code` once on a single client of a 3-server ensemble without faults; asserts
/// the run clean and returns what the code wrote down.
pub fn run_once<F, Fut>(code: F) -> Vec<String>
where
    F: Fn(Arc<Mutex<Vec<String>>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let notes: Arc<Mutex<Vec<String>>> = Arc::default();
    let user = {
        let notes = notes.clone();
        let code = Arc::new(code);
        UserCode::new("zk-dropin-calls", Store::Zab, move |_node| {
            let (notes, code) = (notes.clone(), code.clone());
            async move {
                code(notes).await;
                std::future::pending::<()>().await;
            }
        })
    };
    let scenario = Scenario::of_user_code(user, 3, 1);
    let outcome = driver::run(&scenario, Seed::new(1));
    assert!(outcome.is_clean(), "{outcome:?}");
    notes.lock().unwrap().clone()
}

/// Writes `note` down.
pub fn note(notes: &Mutex<Vec<String>>, note: impl Into<String>) {
    notes.lock().unwrap().push(note.into());
}
