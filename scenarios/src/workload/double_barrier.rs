//! `double_barrier` on the ZAB store: every client takes part in `rounds` double barriers
//! ([`ZkDoubleBarrier`]), one barrier node per round, all clients in each: enter, work a
//! little, leave. A participant whose session ends inside a barrier goes on through it with
//! a new session: it enters again if it was entering, and leaves if it was leaving (its node
//! went with the session, so the others may have left without it). The rounds are a fixed
//! number, not "until told to stop": a participant that stopped between rounds would leave
//! the others waiting at the next entry. The
//! finishing step has nothing more to do; `recipe.barrier` judges that nobody was left
//! behind.

use super::{Pending, Workers, zk_sessions::Sessions};
use models::{
    recipes::{BarrierError, ZkDoubleBarrier},
    zk::ZkEnsemble,
};
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
    /// Work between entering and leaving, milliseconds.
    pub work_ms: u64,
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
            patience_ms: 20_000,
            session_timeout_ms: 3_000,
        }
    }
}

impl DoubleBarrier {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.rounds == 0 || self.session_timeout_ms < 100 || self.patience_ms == 0 {
            return Err(format!(
                "expected at least one round, a session timeout of at least 100 ms and a \
                 patience above 0 ms, got {} rounds, {} ms, {} ms",
                self.rounds, self.session_timeout_ms, self.patience_ms
            ));
        }
        Ok(())
    }

    pub(super) fn start(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
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
                sim.spawn(node, async move {
                    for round in 1..=work.rounds {
                        let path = format!("{BARRIER_PREFIX}{round}");
                        let name = context.id().to_string();
                        // A participant whose session ended on the way in lost its node, so
                        // the others cannot count it: it enters again with a new session, as
                        // a real one would, rather than leave them waiting out their patience.
                        let entered = loop {
                            let zk = sessions.live().await;
                            let barrier = ZkDoubleBarrier::new(&zk, &context, &path, size, &name);
                            match barrier.enter(patience).await {
                                Err(BarrierError::SessionEnded) => continue,
                                entered => break entered.is_ok(),
                            }
                        };
                        if entered {
                            context
                                .clock()
                                .sleep(Duration::from_millis(work.work_ms))
                                .await;
                        }
                        // On the way out its node is gone with the session (the others may
                        // be out already): it goes on leaving with a new session, waiting
                        // for whoever is still there, so that it too gets out.
                        loop {
                            let zk = sessions.live().await;
                            let barrier = ZkDoubleBarrier::new(&zk, &context, &path, size, &name);
                            if barrier.leave(patience).await != Err(BarrierError::SessionEnded) {
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
    pub(super) async fn finish(&self, pending: &Pending) -> Result<(), String> {
        pending.set("nothing");
        Ok(())
    }
}
