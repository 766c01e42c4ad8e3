//! `ready_config` on the ZAB store: the first client publishes version after version of a
//! configuration of several parts behind `ready` ([`ZkConfig`]); the others read it again
//! and again. After the heal, every reader reads it once more.

use crate::workload::{Pending, Workers, spawn_per_client, zk::sessions::Sessions};
use models::{
    recipes::{RecipeBugs, ZkConfig},
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

/// The configuration's path.
pub const CONFIG_PATH: &str = "/config/service";

/// Parameters of `ready_config`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReadyConfig {
    /// Parts of the configuration.
    pub parts: usize,
    /// Pause between the writer's publishes, milliseconds (long enough that readers,
    /// restarting whenever `ready` changes under them, mostly finish).
    pub publish_every_ms: u64,
    /// Pause between one reader's reads, milliseconds.
    pub think_ms: u64,
    /// Session timeout, milliseconds.
    pub session_timeout_ms: u64,
}

impl Default for ReadyConfig {
    fn default() -> Self {
        Self {
            parts: 4,
            publish_every_ms: 250,
            think_ms: 30,
            session_timeout_ms: 3_000,
        }
    }
}

impl ReadyConfig {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.parts == 0 || self.session_timeout_ms < 100 {
            return Err(format!(
                "expected at least one part and a session timeout of at least 100 ms, got {} \
                 parts and {} ms",
                self.parts, self.session_timeout_ms
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
        spawn_per_client(sim, |index, _, context| {
            let (work, stop) = (self.clone(), stop.clone());
            let mut sessions = Sessions::with_timeout(ensemble, &context, 0, self.timeout());
            async move {
                let mut version = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let Some(zk) = sessions.current().await else {
                        continue;
                    };
                    let config =
                        ZkConfig::new(&zk, &context, CONFIG_PATH, work.parts).with_bugs(bugs);
                    let pause = if index == 0 {
                        version += 1;
                        let _ = config.publish(version).await;
                        work.publish_every_ms
                    } else {
                        let _ = config.read().await;
                        work.think_ms
                    };
                    context.clock().sleep(Duration::from_millis(pause)).await;
                }
                sessions.close().await;
            }
        })
    }

    /// After the heal: every reader reads the configuration once more.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        bugs: RecipeBugs,
        pending: &Pending,
    ) -> Result<(), String> {
        pending.set(format!("the final reads of {CONFIG_PATH}"));
        let mut tasks = Vec::new();
        for node in sim.clients().into_iter().skip(1) {
            let (work, context) = (self.clone(), sim.node(node));
            // Its own process number: the workers' sessions are closed or expiring.
            let mut sessions = Sessions::with_timeout(ensemble, &context, 100, self.timeout());
            tasks.push(sim.spawn(node, async move {
                loop {
                    let Some(zk) = sessions.current().await else {
                        continue;
                    };
                    let config =
                        ZkConfig::new(&zk, &context, CONFIG_PATH, work.parts).with_bugs(bugs);
                    if config.read().await.is_ok() {
                        break;
                    }
                    context.clock().sleep(Duration::from_millis(50)).await;
                }
                sessions.close().await;
            }));
        }
        for task in tasks {
            task.await
                .map_err(|error| format!("a final read failed: {error}"))?;
        }
        Ok(())
    }
}
