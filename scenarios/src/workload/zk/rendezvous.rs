//! `rendezvous` on the ZAB store (Hunt et al., ZooKeeper, section 2.4; [`ZkRendezvous`]):
//! the first client creates the ephemeral rendezvous node, the second is the master and
//! publishes its address into it at a seeded time, and the others are workers that start
//! at seeded times, some before the master publishes (they wait on the watch) and some
//! after (the address is already there). A worker then watches for the node's deletion.
//!
//! When told to stop, the creator ends the rendezvous once every worker has the address
//! (the workload tells it out of band, as the program that started master and workers
//! would know), and the master and workers notice the end and stop. If the creator's
//! session ends first, its node goes with it: it records the end, creates the node again
//! with a new session, the master publishes again, and the workers wait for it again.

use crate::workload::{Pending, Workers, zk::sessions::Sessions};
use models::{recipes::ZkRendezvous, zk::ZkEnsemble};
use rand::Rng;
use serde::{Deserialize, Serialize};
use sim::{NodeContext, Sim};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The rendezvous node's path.
pub const RENDEZVOUS_PATH: &str = "/rendezvous/job-1";

/// Parameters of `rendezvous`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Rendezvous {
    /// The master starts (and publishes) at a seeded time from half to one and a half times
    /// this, milliseconds. Workers start at a seeded time from 0 to twice this, so about
    /// half of them start before the master publishes.
    pub master_start_ms: u64,
    /// How long one wait (for the address, for the end) may last before it is retried,
    /// milliseconds.
    pub patience_ms: u64,
    /// Session timeout, milliseconds.
    pub session_timeout_ms: u64,
}

impl Default for Rendezvous {
    fn default() -> Self {
        Self {
            master_start_ms: 1_500,
            patience_ms: 10_000,
            session_timeout_ms: 4_000,
        }
    }
}

/// Which part a client plays, by its place among the clients.
enum Role {
    /// Creates and ends the rendezvous.
    Creator,
    /// Publishes its address.
    Master,
    /// Learns the master's address (its index among the workers).
    Worker(usize),
}

impl Role {
    fn of(index: usize) -> Role {
        match index {
            0 => Role::Creator,
            1 => Role::Master,
            worker => Role::Worker(worker - 2),
        }
    }
}

/// What the clients share out of band: whether each worker has the address now.
type Informed = Arc<Vec<AtomicBool>>;

impl Rendezvous {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.session_timeout_ms < 100 || self.patience_ms == 0 || self.master_start_ms == 0 {
            return Err(format!(
                "expected a session timeout of at least 100 ms and a patience and master start \
                 above 0 ms, got {} ms, {} ms, {} ms",
                self.session_timeout_ms, self.patience_ms, self.master_start_ms
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
        let clients = sim.clients();
        let workers = clients.len().saturating_sub(2);
        let informed: Informed = Arc::new((0..workers).map(|_| AtomicBool::new(false)).collect());
        clients
            .into_iter()
            .enumerate()
            .map(|(index, node)| {
                let context = sim.node(node);
                let client = Client {
                    work: self.clone(),
                    sessions: Sessions::with_timeout(
                        ensemble,
                        &context,
                        0,
                        Duration::from_millis(self.session_timeout_ms),
                    ),
                    context,
                    stop: stop.clone(),
                    informed: informed.clone(),
                };
                sim.spawn(node, client.play(Role::of(index)))
            })
            .collect()
    }

    /// Nothing left to do: the workers stop only once they learned and saw the end, within
    /// the liveness bound; `recipe.rendezvous` judges what they learned.
    pub(crate) async fn finish(&self, pending: &Pending) -> Result<(), String> {
        pending.set("nothing");
        Ok(())
    }
}

/// One client of the rendezvous.
struct Client {
    work: Rendezvous,
    context: NodeContext,
    sessions: Sessions,
    stop: Arc<AtomicBool>,
    informed: Informed,
}

impl Client {
    async fn play(mut self, role: Role) {
        match role {
            Role::Creator => self.create_and_end().await,
            Role::Master => {
                let start = self.seeded_delay("rendezvous-master", self.work.master_start_ms / 2);
                self.context.clock().sleep(start).await;
                self.publish().await;
            }
            Role::Worker(worker) => {
                let start = self.seeded_delay("rendezvous-worker", 0);
                self.context.clock().sleep(start).await;
                self.learn(worker).await;
            }
        }
        self.sessions.close().await;
    }

    /// A seeded delay from `least` to `least` plus twice the master's mean start.
    fn seeded_delay(&self, stream: &str, least: u64) -> Duration {
        let spread = if least == 0 {
            2 * self.work.master_start_ms
        } else {
            self.work.master_start_ms
        };
        Duration::from_millis(least + self.context.rng(stream).gen_range(0..=spread))
    }

    fn patience(&self) -> Duration {
        Duration::from_millis(self.work.patience_ms)
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    async fn session(&mut self) -> ZkRendezvous {
        let zk = self.sessions.live().await;
        ZkRendezvous::new(&zk, &self.context, RENDEZVOUS_PATH)
    }

    /// Creates the node, keeps its session until told to stop and every worker has the
    /// address, then ends the rendezvous.
    async fn create_and_end(&mut self) {
        loop {
            let rendezvous = self.session().await;
            if rendezvous.create().await.is_err() {
                continue;
            }
            loop {
                if self.sessions.current_is_over() {
                    rendezvous.ended_with_session();
                    break;
                }
                let everyone_informed = self
                    .informed
                    .iter()
                    .all(|informed| informed.load(Ordering::Relaxed));
                if self.stopping() && everyone_informed {
                    let _ = rendezvous.end().await;
                    return;
                }
                self.context.clock().sleep(Duration::from_millis(50)).await;
            }
        }
    }

    /// Publishes the master's address, again whenever the rendezvous ends before the stop
    /// (its creator's session ended and it made the node anew).
    async fn publish(&mut self) {
        let address = format!("{}:2181", self.context.id());
        loop {
            let rendezvous = self.session().await;
            if rendezvous.publish(&address, self.patience()).await.is_err() {
                continue;
            }
            if let Ok(()) = rendezvous.await_end(self.patience()).await
                && self.stopping()
            {
                return;
            }
        }
    }

    /// Learns the master's address and waits for the end; learns again if the rendezvous
    /// ends before the stop.
    async fn learn(&mut self, worker: usize) {
        loop {
            let rendezvous = self.session().await;
            match rendezvous.await_info(self.patience()).await {
                Ok(_) => self.informed[worker].store(true, Ordering::Relaxed),
                // Out of patience, or the session ended: try again (with a new session).
                Err(_) => continue,
            }
            if let Ok(()) = rendezvous.await_end(self.patience()).await {
                if self.stopping() {
                    return;
                }
                self.informed[worker].store(false, Ordering::Relaxed);
            }
        }
    }
}
