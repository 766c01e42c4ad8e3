//! Runs a user script against the drop-in inside a coordsim world and hands back what each
//! client's script returned, with the run's outcome.
// Each test file uses a part of it.
#![allow(dead_code)]

use etcd_client::Client;
use scenarios::{
    Outcome, Scenario, driver,
    scenario::Store,
    workload::{UserCode, UserNode},
};
use sim::{Seed, fault::FaultSource};
use std::sync::{Arc, Mutex};

/// What each client's script returned, by client index, and the outcome.
pub struct Ran<T> {
    pub outcome: Outcome,
    pub results: Vec<(usize, T)>,
}

impl<T> Ran<T> {
    /// How many operations `check` judged (0 when it did not run).
    pub fn judged(&self, check: &str) -> u64 {
        self.outcome
            .checks
            .iter()
            .find(|tally| tally.check == check)
            .map_or(0, |tally| tally.judged)
    }

    /// The only client's result (for single-client runs).
    pub fn only(mut self) -> T {
        assert_eq!(
            self.results.len(),
            1,
            "one client ran its script to the end"
        );
        self.results.pop().expect("one result").1
    }
}

/// Runs `script` on each of `clients` client nodes (3 servers) with `seed` and `faults`.
/// The script gets a connected client; what it returns is collected. After it returns the
/// node idles, so that every client's calls end inside the run.
pub fn run<T, F, Fut>(clients: usize, seed: u64, faults: FaultSource, script: F) -> Ran<T>
where
    T: Send + 'static,
    F: Fn(Client, UserNode) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    let results: Arc<Mutex<Vec<(usize, T)>>> = Arc::new(Mutex::new(Vec::new()));
    let script = Arc::new(script);
    let code = {
        let results = results.clone();
        UserCode::new("dropin-kv", Store::Raft, move |node: UserNode| {
            let results = results.clone();
            let script = script.clone();
            async move {
                let client = Client::connect(["s1:2379", "s2:2379", "s3:2379"], None)
                    .await
                    .expect("connects inside a run");
                let index = node.index();
                let answer = script(client, node.clone()).await;
                results.lock().unwrap().push((index, answer));
                loop {
                    node.context()
                        .sim()
                        .sleep(std::time::Duration::from_millis(100))
                        .await;
                }
            }
        })
    };
    let mut scenario = Scenario::of_user_code(code, 3, clients);
    scenario.faults = faults;
    let outcome = driver::run(&scenario, Seed::new(seed));
    let mut results = std::mem::take(&mut *results.lock().unwrap());
    results.sort_by_key(|(index, _)| *index);
    Ran { outcome, results }
}

/// The gRPC code and message of `error`, or a panic naming what it was instead.
pub fn status(error: &etcd_client::Error) -> (tonic::Code, String) {
    match error {
        etcd_client::Error::GRpcStatus(status) => (status.code(), status.message().to_string()),
        other => panic!("expected a gRPC status, got {other}"),
    }
}
