//! `fifo_queue` on the ZAB store: the first `producers` client nodes put numbered items on
//! one ZooKeeper queue ([`ZkQueue`]), the others take them. A client whose session ends
//! opens a new one; a consumer whose session ended in the middle of a take settles that
//! take in the new session before anything else (its claim may have won). After the heal,
//! with every producer stopped, the consumers drain the queue until it is empty, and then
//! the workload records the
//! [`checks::recipes::queue_semantics::DRAINED`] marker, so that the check judges every
//! acknowledged item taken.

use crate::workload::{Pending, Workers, spawn_per_client, zk::sessions::Sessions};
use checks::recipes::queue_semantics::DRAINED;
use models::{
    recipes::{RecipeError, UnsettledTake, ZkQueue},
    zk::{ZkClient, ZkEnsemble},
};
use serde::{Deserialize, Serialize};
use sim::{
    NodeContext, Sim,
    history::{Event, RecipeEvent},
};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The queue's path.
pub const QUEUE_PATH: &str = "/queues/jobs";

/// Parameters of `fifo_queue`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FifoQueue {
    /// How many client nodes produce (the first ones); the rest consume.
    pub producers: usize,
    /// Pause between one producer's puts, milliseconds.
    pub think_ms: u64,
    /// Session timeout, milliseconds.
    pub session_timeout_ms: u64,
}

impl Default for FifoQueue {
    fn default() -> Self {
        Self {
            producers: 2,
            think_ms: 30,
            session_timeout_ms: 3_000,
        }
    }
}

/// How long a consumer waits on an empty queue before looking at the stop flag again.
const CONSUMER_PATIENCE: Duration = Duration::from_millis(200);

impl FifoQueue {
    fn timeout(&self) -> Duration {
        Duration::from_millis(self.session_timeout_ms)
    }

    pub(crate) fn validate(&self, clients: usize) -> Result<(), String> {
        if self.producers == 0 || self.producers >= clients || self.session_timeout_ms < 100 {
            return Err(format!(
                "expected at least one producer and one consumer among {clients} clients and \
                 a session timeout of at least 100 ms, got {} producers and {} ms",
                self.producers, self.session_timeout_ms
            ));
        }
        Ok(())
    }

    pub(crate) fn start(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        spawn_per_client(sim, |index, _, context| {
            let (work, ensemble, stop) = (self.clone(), ensemble.clone(), stop.clone());
            async move {
                let mut sessions = Sessions::with_timeout(&ensemble, &context, 0, work.timeout());
                let mut put = 0u64;
                let mut unsettled = None;
                while !stop.load(Ordering::Relaxed) {
                    let Some(zk) = sessions.current().await else {
                        continue;
                    };
                    let queue = ZkQueue::new(&zk, &context, QUEUE_PATH);
                    if index < work.producers {
                        put += 1;
                        let _ = queue.produce(&format!("{}#{put}", context.id())).await;
                        context
                            .clock()
                            .sleep(Duration::from_millis(work.think_ms))
                            .await;
                    } else {
                        unsettled = match unsettled {
                            Some(take) => settle(&zk, &context, take).await,
                            None => match queue.consume(CONSUMER_PATIENCE).await {
                                Err(RecipeError::TakeUnsettled(take)) => Some(take),
                                _ => None,
                            },
                        };
                    }
                }
                // A take still unsettled at the stop may own an item: find out before
                // going, whatever sessions it takes.
                while let Some(take) = unsettled {
                    let zk = sessions.live().await;
                    unsettled = settle(&zk, &context, take).await;
                }
                sessions.close().await;
            }
        })
    }

    /// After the heal: the consumers take items until the queue is empty, then the drained
    /// marker is recorded.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        pending: &Pending,
    ) -> Result<(), String> {
        pending.set(format!("the consumers to drain {QUEUE_PATH}"));
        let consumers: Vec<_> = sim.clients().into_iter().skip(self.producers).collect();
        let mut tasks = Vec::new();
        for &node in &consumers {
            let (work, ensemble, context) = (self.clone(), ensemble.clone(), sim.node(node));
            tasks.push(sim.spawn(node, async move {
                // Its own process number: the workers' sessions are closed or expiring.
                let mut sessions = Sessions::with_timeout(&ensemble, &context, 100, work.timeout());
                let mut unsettled = None;
                loop {
                    let Some(zk) = sessions.current().await else {
                        continue;
                    };
                    if let Some(take) = unsettled {
                        unsettled = settle(&zk, &context, take).await;
                        continue;
                    }
                    let queue = ZkQueue::new(&zk, &context, QUEUE_PATH);
                    // Empty as a synced server sees it, not as a server behind does.
                    let synced = zk.sync(QUEUE_PATH).await.is_ok();
                    match (synced, queue.consume(Duration::ZERO).await) {
                        (true, Ok(None)) => break,
                        (_, Err(RecipeError::TakeUnsettled(take))) => unsettled = Some(take),
                        _ => {}
                    }
                }
                sessions.close().await;
            }));
        }
        for task in tasks {
            task.await
                .map_err(|error| format!("a drain task failed: {error}"))?;
        }
        sim.node(consumers[0])
            .history()
            .record(Event::Recipe(RecipeEvent::Other {
                name: DRAINED.into(),
                detail: serde_json::json!({ "queue": QUEUE_PATH }),
            }));
        Ok(())
    }
}

/// Settles `take` through `zk`: `Some` again if that session ended too.
async fn settle(
    zk: &ZkClient,
    context: &NodeContext,
    take: UnsettledTake,
) -> Option<UnsettledTake> {
    match ZkQueue::new(zk, context, QUEUE_PATH).settle(take).await {
        Err(RecipeError::TakeUnsettled(take)) => Some(take),
        _ => None,
    }
}
