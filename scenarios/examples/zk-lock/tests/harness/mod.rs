//! The user's test harness, shared by the example's tests: what the locker believes,
//! recorded for the recipe checks and the lock comparison as its session's history process,
//! and its work, written to the fenced resource. The one place that uses what only coordsim
//! offers (`history_process`, `lock_as`).

use coordsim::testing::{LockBeliefs, LossReason, ResourceClient, Store, UserCode, UserNode};
use std::time::Duration;
use zk_lock_example::{Holding, Locker, Recipe, run};
use zookeeper_client::{Client, SessionState};

/// The session timeout the lockers ask for.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(2);

/// What one locker believes and writes, recorded.
pub struct Recorded {
    node: UserNode,
    beliefs: Option<LockBeliefs>,
    resource: Option<ResourceClient>,
}

impl Recorded {
    pub fn new(node: UserNode) -> Self {
        Self {
            node,
            beliefs: None,
            resource: None,
        }
    }

    fn beliefs(&self) -> &LockBeliefs {
        self.beliefs
            .as_ref()
            .expect("the locker records only after it connected")
    }
}

impl Holding for Recorded {
    fn connected(&mut self, client: &Client) {
        // The checks join a waiter's beliefs with its calls by process: the session's.
        let process = zookeeper_client::coordsim::history_process(client);
        self.beliefs = Some(self.node.lock_as("job", process));
        self.resource = self
            .node
            .resource()
            .map(|resource| resource.client(self.node.context(), process));
    }
    fn requested(&mut self) {
        self.beliefs().requested();
    }
    fn woken(&mut self, watched: &str) {
        self.beliefs().woken(watched);
    }
    fn acquired(&mut self, token: i64) {
        self.beliefs().acquired(token as u64);
    }
    async fn work(&mut self, fence: Option<i64>, round: u32) {
        if let Some(resource) = &mut self.resource {
            // The verdict is the resource's: the checks read it from the history.
            let _ = resource
                .write(fence.map(|token| token as u64), format!("round {round}"))
                .await;
        }
    }
    fn released(&mut self, token: i64) {
        self.beliefs().released(token as u64);
    }
    fn lost(&mut self, token: i64, state: SessionState) {
        let why = match state {
            SessionState::Expired => LossReason::SessionExpired,
            _ => LossReason::ConnectionLost,
        };
        self.beliefs().lost(token as u64, why);
    }
}

/// One locker per client node, `rounds` rounds of `round_interval` a term.
pub fn lockers(name: &str, recipe: Recipe, rounds: u32, round_interval: Duration) -> UserCode {
    UserCode::new(name, Store::Zab, move |node: UserNode| async move {
        let locker = Locker {
            dir: "/job".into(),
            rounds,
            round_interval,
            recipe,
        };
        let mut recorded = Recorded::new(node);
        run(
            "s1:2181,s2:2181,s3:2181",
            SESSION_TIMEOUT,
            &locker,
            &mut recorded,
        )
        .await;
    })
}
