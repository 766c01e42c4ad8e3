//! `discovery`: every client node runs a member (process 0) and a discoverer (process 1) of
//! one group, on either store (`zk_discovery` on the ZAB store, `etcd_discovery` on the
//! Raft store).
//!
//! A member registers under its node's name, stays a while (a random spell around
//! `stay_ms`), unregisters and closes its session, stays away for `away_ms`, and joins
//! again with a new session; if its registration is lost while it stays (its session
//! expired or its lease ran out: it was paused or cut off past its timeout) it joins again
//! at once. When the workload stops, every member still running joins if it is away, and
//! keeps its session to the end of the run. A member whose node crashed is gone: its
//! session or lease runs out by itself.
//!
//! A discoverer watches the group to the end of the run (it is not a worker the driver
//! waits for), acting on each view for `react_ms` before it asks for the next (the
//! caller's `OnServiceChanged` work); when its ZooKeeper session ends it starts again with
//! a new one.
//!
//! After the heal, every live discoverer's view must equal the members whose registration
//! is live, within the liveness bound: the finishing step reads the history as
//! `recipe.discovery_converges` does ([`discovery_converges::behind`]) and names the
//! discoverers still behind.

use crate::workload::{Pending, RunningStore, Workers};
use checks::recipes::discovery_converges::{self, ViewNotConverged};
use futures_util::future::{Either, select};
use models::{
    etcd::{EtcdClient, EtcdCluster},
    recipes::{
        EtcdDiscoverer, EtcdRegistration, EtcdSession, RecipeBugs, ZkDiscoverer, ZkRegistration,
    },
    zk::{ZkClient, ZkEnsemble},
};
use rand::Rng;
use serde::{Deserialize, Serialize};
use sim::{NodeContext, Sim};
use std::{
    pin::pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The group's node (ZooKeeper) or key prefix (etcd).
pub const GROUP: &str = "/services/workers";

/// The member process on each client node.
pub const MEMBER_PROCESS: u32 = 0;

/// The discoverer process on each client node.
pub const DISCOVERER_PROCESS: u32 = 1;

/// How often the finishing step looks at the views.
const POLL: Duration = Duration::from_millis(200);

/// How long the views must stay converged for the finishing step to be done.
const STEADY: Duration = Duration::from_secs(1);

/// Which discovery recipe the clients use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiscoveryRecipe {
    /// ZooKeeper: ephemeral children and a child watch.
    ZkDiscovery,
    /// etcd: keys under a lease and a prefix watch.
    EtcdDiscovery,
}

/// Parameters of `discovery`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Discovery {
    /// The recipe.
    pub recipe: DiscoveryRecipe,
    /// ZooKeeper session timeout, or etcd lease TTL, milliseconds.
    pub session_timeout_ms: u64,
    /// A member stays registered for a random spell of half to one and a half times this,
    /// milliseconds.
    pub stay_ms: u64,
    /// A member that left stays away this long, milliseconds.
    pub away_ms: u64,
    /// A discoverer acts on each view this long before asking for the next (the caller's
    /// `OnServiceChanged` work: reconnecting to the members), milliseconds.
    pub react_ms: u64,
}

impl Default for Discovery {
    fn default() -> Self {
        Self {
            recipe: DiscoveryRecipe::ZkDiscovery,
            session_timeout_ms: 2_000,
            stay_ms: 1_500,
            away_ms: 400,
            react_ms: 250,
        }
    }
}

impl Discovery {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.session_timeout_ms < 100 || self.stay_ms == 0 {
            return Err(format!(
                "expected a session timeout of at least 100 ms and a positive stay, got {} ms \
                 and {} ms",
                self.session_timeout_ms, self.stay_ms
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
        store: &RunningStore,
        bugs: RecipeBugs,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        let mut workers = Vec::new();
        for node in sim.clients() {
            let (parameters, running, stop) = (self.clone(), store.clone(), stop.clone());
            let context = sim.node(node);
            workers.push(sim.spawn(node, async move {
                let mut member = Member::new(&parameters, &running, &context);
                member.churn(&stop).await;
                member.join_for_good().await;
            }));
            let (parameters, running) = (self.clone(), store.clone());
            let context = sim.node(node);
            // Not a worker: it watches to the end of the run (its handle detaches).
            drop(sim.spawn(node, async move {
                discover(&parameters, &running, &context, bugs).await;
            }));
        }
        workers
    }

    /// After the heal: waits until every live discoverer sees the members whose
    /// registration is live, and has gone on seeing them for [`STEADY`] (a discoverer
    /// working through a backlog of changes can pass through the right view on its way).
    pub(crate) async fn finish(&self, sim: &Sim, pending: &Pending) -> Result<(), String> {
        let mut converged_since = None;
        loop {
            let history = sim.history_snapshot();
            let now = sim.now();
            let behind = discovery_converges::behind(&history, now, Duration::ZERO);
            if behind.is_empty() {
                let since = *converged_since.get_or_insert(now);
                if now.saturating_duration_since(since) >= STEADY {
                    return Ok(());
                }
                pending.set(format!("the views of {GROUP} to stay converged"));
                sim.sleep(POLL).await;
                continue;
            }
            converged_since = None;
            pending.set(format!(
                "discoverers of {GROUP} behind: {}",
                behind.iter().map(describe).collect::<Vec<_>>().join("; ")
            ));
            sim.sleep(POLL).await;
        }
    }
}

fn describe(behind: &ViewNotConverged) -> String {
    let (node, process) = behind.discoverer;
    format!(
        "{node}/{process} sees {:?} (missing {:?}, departed {:?})",
        behind.view, behind.missing, behind.stale
    )
}

/// A member's live registration and what it lives by.
enum Registered {
    Zk(ZkClient, ZkRegistration),
    Etcd(Box<EtcdSession>, EtcdRegistration),
}

/// Whether a member's stay ran its course.
enum Stay {
    /// It stayed as long as it meant to.
    RanItsCourse,
    /// Its registration was lost first (its session ended).
    Lost,
}

/// One member process.
struct Member {
    parameters: Discovery,
    store: RunningStore,
    context: NodeContext,
    /// The process's one etcd client, for all its sessions.
    etcd: Option<EtcdClient>,
    registered: Option<Registered>,
}

impl Member {
    fn new(parameters: &Discovery, store: &RunningStore, context: &NodeContext) -> Self {
        Self {
            parameters: parameters.clone(),
            store: store.clone(),
            context: context.clone(),
            etcd: match store {
                RunningStore::Raft(cluster) => {
                    Some(EtcdClient::new(cluster, context.clone(), MEMBER_PROCESS))
                }
                _ => None,
            },
            registered: None,
        }
    }

    fn name(&self) -> String {
        self.context.id().to_string()
    }

    /// Joins, stays, leaves and comes back until the workload stops (registered or not).
    async fn churn(&mut self, stop: &AtomicBool) {
        let mut rng = self.context.rng("discovery-member");
        let clock = self.context.clock().clone();
        while !stop.load(Ordering::Relaxed) {
            if !self.join().await {
                continue;
            }
            let stay = self.parameters.stay_ms / 2 + rng.gen_range(0..=self.parameters.stay_ms);
            if let Stay::Lost = self.stay(Duration::from_millis(stay)).await {
                self.drop_session().await;
                continue;
            }
            if stop.load(Ordering::Relaxed) {
                return;
            }
            self.leave().await;
            clock
                .sleep(Duration::from_millis(self.parameters.away_ms))
                .await;
        }
    }

    /// After the workload stopped: joins if it is away, and keeps its session (with its
    /// registration) to the end of the run.
    async fn join_for_good(mut self) {
        while !self.join().await {}
        let registered = self.registered.take();
        // The session must outlive this worker: a task that holds it to the end of the run.
        sim::task::spawn_local(async move {
            let _held = registered;
            std::future::pending::<()>().await;
        });
    }

    /// Registers with a new session, unless registered; `false` if that failed (after a
    /// pause, so that a caller retrying does not spin while the store is unreachable).
    async fn join(&mut self) -> bool {
        if self.registered.is_some() {
            return true;
        }
        let (name, timeout) = (self.name(), self.parameters.timeout());
        let value = format!("{name}:{}", self.context.incarnation());
        self.registered = match &self.store {
            RunningStore::Zab(ensemble) => {
                join_zk(ensemble, &self.context, &name, &value, timeout).await
            }
            RunningStore::Raft(cluster) => {
                let client = self.etcd.as_mut().expect("made on the Raft store");
                join_etcd(cluster, client, &self.context, &name, &value, timeout).await
            }
            RunningStore::Ledger(_) => {
                unreachable!("validated: discovery runs on a consensus store")
            }
        };
        if self.registered.is_none() {
            self.context.clock().sleep(Duration::from_millis(100)).await;
        }
        self.registered.is_some()
    }

    async fn stay(&self, how_long: Duration) -> Stay {
        let clock = self.context.clock().clone();
        let lost = async {
            match self.registered.as_ref() {
                Some(Registered::Zk(_, registration)) => {
                    registration.lost().await;
                }
                Some(Registered::Etcd(session, registration)) => {
                    registration.lost(session).await;
                }
                None => {}
            }
        };
        match select(pin!(clock.sleep(how_long)), pin!(lost)).await {
            Either::Left(_) => Stay::RanItsCourse,
            Either::Right(_) => Stay::Lost,
        }
    }

    /// Unregisters and closes the session.
    async fn leave(&mut self) {
        match self.registered.take() {
            Some(Registered::Zk(zk, registration)) => {
                let _ = registration.unregister().await;
                let _ = zk.close().await;
            }
            Some(Registered::Etcd(session, registration)) => {
                let client = self.etcd.as_mut().expect("made on the Raft store");
                let _ = registration.unregister(client, &session).await;
                (*session).close().await;
            }
            None => {}
        }
    }

    /// After a loss: ends what is left of the session (its registration is gone).
    async fn drop_session(&mut self) {
        match self.registered.take() {
            Some(Registered::Zk(zk, _)) => {
                let _ = zk.close().await;
            }
            Some(Registered::Etcd(session, _)) => (*session).close().await,
            None => {}
        }
    }
}

async fn join_zk(
    ensemble: &ZkEnsemble,
    context: &NodeContext,
    name: &str,
    value: &str,
    timeout: Duration,
) -> Option<Registered> {
    let mut config = ensemble.client_config(MEMBER_PROCESS);
    config.session_timeout = timeout;
    let zk = ensemble.connect(context, config).await.ok()?;
    match ZkRegistration::register(&zk, context, GROUP, name, value).await {
        Ok(registration) => Some(Registered::Zk(zk, registration)),
        Err(_) => {
            let _ = zk.close().await;
            None
        }
    }
}

async fn join_etcd(
    cluster: &EtcdCluster,
    client: &mut EtcdClient,
    context: &NodeContext,
    name: &str,
    value: &str,
    timeout: Duration,
) -> Option<Registered> {
    let session = EtcdSession::start(cluster, context, MEMBER_PROCESS, timeout, timeout * 5)
        .await
        .ok()?;
    match EtcdRegistration::register(client, context, &session, GROUP, name, value).await {
        Ok(registration) => Some(Registered::Etcd(Box::new(session), registration)),
        Err(_) => {
            session.close().await;
            None
        }
    }
}

/// A discoverer, to the end of the run: watches the group, acting on each view for
/// `react_ms`; starts again when its ZooKeeper session ends.
async fn discover(
    parameters: &Discovery,
    store: &RunningStore,
    context: &NodeContext,
    bugs: RecipeBugs,
) {
    let clock = context.clock().clone();
    let react = Duration::from_millis(parameters.react_ms);
    match store {
        RunningStore::Zab(ensemble) => loop {
            let mut config = ensemble.client_config(DISCOVERER_PROCESS);
            config.session_timeout = parameters.timeout();
            let Ok(zk) = ensemble.connect(context, config).await else {
                clock.sleep(Duration::from_millis(100)).await;
                continue;
            };
            if let Ok(mut discoverer) = ZkDiscoverer::start(&zk, context, GROUP, bugs).await {
                clock.sleep(react).await;
                while discoverer.changed().await.is_ok() {
                    clock.sleep(react).await;
                }
            }
            let _ = zk.close().await;
        },
        RunningStore::Raft(cluster) => {
            let mut client = EtcdClient::new(cluster, context.clone(), DISCOVERER_PROCESS);
            let mut discoverer = EtcdDiscoverer::start(&mut client, context, GROUP).await;
            loop {
                clock.sleep(react).await;
                discoverer.changed(&mut client).await;
            }
        }
        RunningStore::Ledger(_) => unreachable!("validated: discovery runs on a consensus store"),
    }
}
