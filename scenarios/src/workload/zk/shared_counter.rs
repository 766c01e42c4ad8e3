//! `shared_counter` on the ZAB store: every client increments one ZooKeeper counter
//! ([`ZkCounter`]) again and again, opening a new session when one ends. After the heal,
//! with every incrementer stopped, one client reads the counter after a `sync`: the read
//! `recipe.counter` judges against the acknowledged and unknown increments.

use crate::workload::{Pending, Workers, spawn_per_client, zk::sessions::Sessions};
use models::{
    recipes::{RecipeBugs, ZkCounter},
    zk::ZkEnsemble,
};
use serde::{Deserialize, Serialize};
use sim::Sim;
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The counter's path.
pub const COUNTER_PATH: &str = "/counters/hits";

/// Parameters of `shared_counter`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SharedCounter {
    /// Pause between one client's increments, milliseconds.
    pub think_ms: u64,
    /// Session timeout, milliseconds.
    pub session_timeout_ms: u64,
}

impl Default for SharedCounter {
    fn default() -> Self {
        Self {
            think_ms: 20,
            session_timeout_ms: 3_000,
        }
    }
}

impl SharedCounter {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.session_timeout_ms < 100 {
            return Err(format!(
                "expected a session timeout of at least 100 ms, got {} ms",
                self.session_timeout_ms
            ));
        }
        Ok(())
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(self.session_timeout_ms)
    }

    pub(crate) fn start(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        bugs: RecipeBugs,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        spawn_per_client(sim, |_, _, context| {
            let (work, stop) = (self.clone(), stop.clone());
            let mut sessions = Sessions::with_timeout(ensemble, &context, 0, self.timeout());
            async move {
                while !stop.load(Ordering::Relaxed) {
                    let Some(zk) = sessions.current().await else {
                        continue;
                    };
                    let _ = ZkCounter::new(&zk, &context, COUNTER_PATH)
                        .with_bugs(bugs)
                        .increment()
                        .await;
                    context
                        .clock()
                        .sleep(Duration::from_millis(work.think_ms))
                        .await;
                }
                sessions.close().await;
            }
        })
    }

    /// After the heal: the first client reads the counter once.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        pending: &Pending,
    ) -> Result<(), String> {
        pending.set(format!("the final read of {COUNTER_PATH}"));
        let node = sim.clients()[0];
        let context = sim.node(node);
        // Its own process number: the workers' sessions are closed or expiring.
        let mut sessions = Sessions::with_timeout(ensemble, &context, 100, self.timeout());
        let task = sim.spawn(node, async move {
            loop {
                let Some(zk) = sessions.current().await else {
                    continue;
                };
                if ZkCounter::new(&zk, &context, COUNTER_PATH)
                    .read()
                    .await
                    .is_ok()
                {
                    break;
                }
            }
            sessions.close().await;
        });
        task.await
            .map_err(|error| format!("the final read failed: {error}"))
    }
}
