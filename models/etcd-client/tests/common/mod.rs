//! What the drop-in's tests share: connecting as user code does, and reading an outcome.

#![allow(dead_code)]

use etcd_client::Client;
use scenarios::Outcome;
use std::time::Duration;

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
