//! What the watch tests share: a world of 3 servers running user code, and small waits.

#![allow(dead_code)] // each test file uses its own part

use etcd_client::{Client, WatchResponse, WatchStream};
use futures_util::future::{Either, select};
use scenarios::{
    Outcome, Scenario, driver,
    scenario::Store,
    workload::{UserCode, UserNode},
};
use sim::{Seed, fault::FaultPlan};
use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

pub const ENDPOINTS: [&str; 3] = ["s1:2379", "s2:2379", "s3:2379"];

/// What the user code saw, shared with the test.
pub type Seen<T> = Arc<Mutex<Vec<T>>>;

/// A scenario of 3 servers running `program` on `clients` client nodes.
pub fn scenario_of<P, F>(name: &str, clients: usize, program: P) -> Scenario
where
    P: Fn(UserNode) -> F + Send + Sync + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    Scenario::of_user_code(UserCode::new(name, Store::Raft, program), 3, clients)
}

pub fn judged(outcome: &Outcome, check: &str) -> u64 {
    outcome
        .checks
        .iter()
        .find(|tally| tally.check == check)
        .map_or(0, |tally| tally.judged)
}

pub async fn sleep_ms(node: &UserNode, ms: u64) {
    node.context().sim().sleep(Duration::from_millis(ms)).await;
}

/// Production code idles once its job is done: the run stops it.
pub async fn idle(node: &UserNode) {
    loop {
        sleep_ms(node, 1_000).await;
    }
}

/// The next message, or `None` when none comes within `ms`.
pub async fn message_within(
    node: &UserNode,
    stream: &mut WatchStream,
    ms: u64,
) -> Option<WatchResponse> {
    let message = Box::pin(stream.message());
    let timeout = Box::pin(sleep_ms(node, ms));
    match select(message, timeout).await {
        Either::Left((Ok(message), _)) => message,
        _ => None,
    }
}

/// Runs `attempt` once on one client node of a quiet world and returns what it gave.
pub fn attempt_once<T, A, F>(name: &str, plan: Option<FaultPlan>, attempt: A) -> T
where
    T: Send + 'static,
    A: Fn(Client, UserNode) -> F + Send + Sync + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let seen: Seen<T> = Arc::default();
    let attempt = Arc::new(attempt);
    let mut scenario = scenario_of(name, 1, {
        let seen = seen.clone();
        move |node: UserNode| {
            let (seen, attempt) = (seen.clone(), attempt.clone());
            async move {
                let client = Client::connect(ENDPOINTS, None).await.expect("connects");
                let answer = attempt(client, node.clone()).await;
                seen.lock().unwrap().push(answer);
                idle(&node).await;
            }
        }
    });
    scenario.fault_phase_ms = 6_000;
    if let Some(plan) = plan {
        scenario = scenario.with_plan(plan);
    }
    driver::run(&scenario, Seed::new(1));
    let mut seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{name}: the attempt ran once");
    seen.pop().unwrap()
}

/// Compacts the store at `revision` through the model's client (the drop-in has no
/// `compact` yet), then gives the followers time to apply it: a watch is served by any
/// server, and etcd's watches are not linearized either.
pub async fn compact(node: &UserNode, revision: i64) {
    let cluster = sim::Sim::current()
        .and_then(|sim| sim.service::<models::etcd::EtcdCluster>())
        .expect("a Raft store in this run");
    let mut compactor = models::etcd::EtcdClient::new(&cluster, node.context().clone(), 999);
    let compacted = compactor.compact(revision as u64).await;
    assert!(
        matches!(compacted, sim::history::OpResult::Ok { .. }),
        "{compacted:?}"
    );
    sleep_ms(node, 500).await;
}
