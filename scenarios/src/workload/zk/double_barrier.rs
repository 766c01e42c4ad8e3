//! `double_barrier` on the ZAB store: every client takes part in `rounds` double barriers
//! ([`ZkDoubleBarrier`]), one barrier node per round, all clients in each: enter, work a
//! little (`work_ms` plus a seeded jitter of up to `work_jitter_ms`, drawn from the node's
//! `double-barrier-work` stream, so that the participants reach the exit apart and an
//! early exit shows on the clock), leave. A participant whose session ends inside a barrier goes on through it with
//! a new session: it enters again if it was entering, and leaves if it was leaving (its node
//! went with the session, so the others may have left without it). The rounds are a fixed
//! number, not "until told to stop": a participant that stopped between rounds would leave
//! the others waiting at the next entry. The
//! finishing step has nothing more to do; `recipe.barrier` judges that nobody was left
//! behind.

use crate::workload::{Pending, Workers, zk::sessions::Sessions};
use models::{
    recipes::{RecipeBugs, RecipeError, ZkDoubleBarrier},
    zk::ZkEnsemble,
};
use rand::Rng;
use serde::{Deserialize, Serialize};
use sim::Sim;
use std::{
    sync::{Arc, atomic::AtomicBool},
    time::Duration,
};

/// The parent of the rounds' barrier nodes.
pub const BARRIER_PREFIX: &str = "/barriers/round-";

/// Parameters of `double_barrier`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DoubleBarrier {
    /// How many barriers every client passes.
    pub rounds: u32,
    /// Work between entering and leaving, milliseconds (at least).
    pub work_ms: u64,
    /// Up to this much more work, seeded per participant and round, milliseconds.
    pub work_jitter_ms: u64,
    /// How long a participant waits at a gate before giving up, milliseconds.
    pub patience_ms: u64,
    /// Session timeout, milliseconds.
    pub session_timeout_ms: u64,
}

impl Default for DoubleBarrier {
    fn default() -> Self {
        Self {
            rounds: 12,
            work_ms: 50,
            work_jitter_ms: 100,
            patience_ms: 20_000,
            session_timeout_ms: 3_000,
        }
    }
}

impl DoubleBarrier {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.rounds == 0 || self.session_timeout_ms < 100 || self.patience_ms == 0 {
            return Err(format!(
                "expected at least one round, a session timeout of at least 100 ms and a \
                 patience above 0 ms, got {} rounds, {} ms, {} ms",
                self.rounds, self.session_timeout_ms, self.patience_ms
            ));
        }
        Ok(())
    }

    pub(crate) fn start(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        bugs: RecipeBugs,
        _stop: &Arc<AtomicBool>,
    ) -> Workers {
        let clients = sim.clients();
        let size = clients.len();
        clients
            .into_iter()
            .map(|node| {
                let (work, context) = (self.clone(), sim.node(node));
                let mut sessions = Sessions::with_timeout(
                    ensemble,
                    &context,
                    0,
                    Duration::from_millis(self.session_timeout_ms),
                );
                let patience = Duration::from_millis(self.patience_ms);
                let mut jitter = context.rng("double-barrier-work");
                sim.spawn(node, async move {
                    for round in 1..=work.rounds {
                        let path = format!("{BARRIER_PREFIX}{round}");
                        let name = context.id().to_string();
                        // A participant whose session ended on the way in lost its node, so
                        // the others cannot count it: it enters again with a new session, as
                        // a real one would, rather than leave them waiting out their patience.
                        let entered = loop {
                            let zk = sessions.live().await;
                            let barrier = ZkDoubleBarrier::new(&zk, &context, &path, size, &name)
                                .with_bugs(bugs);
                            match barrier.enter(patience).await {
                                Err(RecipeError::SessionEnded) => continue,
                                entered => break entered.is_ok(),
                            }
                        };
                        if entered {
                            let work_ms = work.work_ms + jitter.gen_range(0..=work.work_jitter_ms);
                            context.clock().sleep(Duration::from_millis(work_ms)).await;
                        }
                        // On the way out its node is gone with the session (the others may
                        // be out already): it goes on leaving with a new session, waiting
                        // for whoever is still there, so that it too gets out.
                        loop {
                            let zk = sessions.live().await;
                            let barrier = ZkDoubleBarrier::new(&zk, &context, &path, size, &name)
                                .with_bugs(bugs);
                            if barrier.leave(patience).await != Err(RecipeError::SessionEnded) {
                                break;
                            }
                        }
                    }
                    sessions.close().await;
                })
            })
            .collect()
    }

    /// Nothing left to do: the workers passed every round.
    pub(crate) async fn finish(&self, pending: &Pending) -> Result<(), String> {
        pending.set("nothing");
        Ok(())
    }
}
