//! A ZooKeeper-store workload for the simulation suites: an ensemble, client processes
//! issuing a random mix of operations through faults, then a healed liveness phase with a
//! synced audit read of everything by every client.

#![allow(dead_code)]

use models::{
    zab::KnownBugs,
    zk::{WriteOp, ZkClient, ZkClientError, ZkEnsemble, ZkEnsembleConfig},
};
use rand::Rng;
use sim::{
    NodeContext, RunOutcome, Seed, Sim, World,
    fault::{FaultKind, SwarmConfig},
    history::zk::CreateMode,
};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// Keys the workload writes.
pub const KEYS: [&str; 3] = ["/k0", "/k1", "/k2"];

/// A workload run.
#[derive(Clone, Debug)]
pub struct ZkWorkload {
    /// Servers.
    pub servers: usize,
    /// Client processes (one per client node).
    pub clients: usize,
    /// Faults generated from the seed.
    pub swarm: SwarmConfig,
    /// Known bugs switched on.
    pub bugs: KnownBugs,
    /// Recovery time after the fault phase before the audit.
    pub recovery: Duration,
    /// Time after the audit for watches to be delivered.
    pub settle: Duration,
    /// Leader's DIFF window (small values exercise SNAP).
    pub diff_window: usize,
}

impl ZkWorkload {
    /// A workload with every swarm fault kind, over `servers` servers and `clients` clients.
    pub fn new(servers: usize, clients: usize) -> Self {
        Self {
            servers,
            clients,
            swarm: SwarmConfig {
                fault_phase_ms: 8_000,
                mean_interval_ms: 700,
                kinds: vec![
                    FaultKind::Partition,
                    FaultKind::Clog,
                    FaultKind::Loss,
                    FaultKind::Latency,
                    FaultKind::Crash,
                    FaultKind::Pause,
                    FaultKind::ClockStep,
                    FaultKind::ClockDrift,
                ],
                ..SwarmConfig::default()
            },
            bugs: KnownBugs::none(),
            recovery: Duration::from_secs(4),
            settle: Duration::from_secs(2),
            diff_window: 20,
        }
    }

    /// Runs the workload with `seed`.
    pub fn run(&self, seed: Seed) -> RunOutcome {
        let workload = self.clone();
        World::builder()
            .seed(seed)
            .servers(self.servers)
            .clients(self.clients)
            .swarm_faults(self.swarm.clone())
            .time_limit(Duration::from_secs(60))
            .build()
            .expect("a valid world")
            .run(move |sim| workload.scenario(sim))
    }

    async fn scenario(self, sim: Sim) {
        let mut config = ZkEnsembleConfig::new(sim.servers());
        config.bugs = self.bugs.clone();
        config.diff_window = self.diff_window;
        let ensemble = ZkEnsemble::new(&sim, config).expect("a valid ensemble");
        ensemble.start(&sim);
        let stop = Arc::new(AtomicBool::new(false));
        let mut workers = Vec::new();
        for (process, node) in sim.clients().into_iter().enumerate() {
            let (ensemble, stop, context) = (ensemble.clone(), stop.clone(), sim.node(node));
            workers.push(sim.spawn(node, async move {
                worker(ensemble, context, process as u32, stop).await
            }));
        }
        sim.fault_phase_ended().await;
        sim.sleep(self.recovery).await;
        stop.store(true, Ordering::SeqCst);
        for worker in workers {
            let _ = worker.await;
        }
        // Liveness after heal: every client can open a session, sync and read everything.
        let mut audits = Vec::new();
        for (index, node) in sim.clients().into_iter().enumerate() {
            let (ensemble, context) = (ensemble.clone(), sim.node(node));
            let process = 1_000 + index as u32;
            audits.push(sim.spawn(node, async move { audit(ensemble, context, process).await }));
        }
        for audit in audits {
            let result = audit.await.expect("audit task");
            assert_eq!(result, Ok(()), "liveness after heal: the audit failed");
        }
        sim.sleep(self.settle).await;
    }
}

async fn connect(ensemble: &ZkEnsemble, context: &NodeContext, process: u32) -> Option<ZkClient> {
    let mut config = ensemble.client_config(process);
    config.session_timeout = Duration::from_millis(1_500);
    config.connect_patience = Duration::from_secs(20);
    ensemble.connect(context, config).await.ok()
}

/// Creates the workload's parents (idempotent).
async fn bootstrap(client: &ZkClient) -> Result<(), ZkClientError> {
    for path in KEYS.iter().copied().chain(["/q", "/e"]) {
        match client.create(path, "0", CreateMode::Persistent).await {
            Ok(_) | Err(ZkClientError::Api(_)) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

async fn worker(ensemble: ZkEnsemble, context: NodeContext, process: u32, stop: Arc<AtomicBool>) {
    let mut rng = context.rng(&format!("zk-workload-{process}"));
    let mut client: Option<ZkClient> = None;
    let mut bootstrapped = false;
    let mut counter = 0u64;
    let mut watches = Vec::new();
    let mut spins = 0u64;
    let mut last_time = sim::time::now();
    while !stop.load(Ordering::SeqCst) {
        if sim::time::now() == last_time {
            spins += 1;
            assert!(
                spins < 100_000,
                "worker {process} spins at {last_time}: client {client:?} expired {:?} connected {:?}",
                client.as_ref().map(|c| c.is_expired()),
                client.as_ref().map(|c| c.is_connected())
            );
        } else {
            spins = 0;
            last_time = sim::time::now();
        }
        let zk = match &client {
            Some(zk) if !zk.is_expired() && !zk.is_closed() => zk.clone(),
            _ => match connect(&ensemble, &context, process).await {
                Some(zk) => {
                    client = Some(zk.clone());
                    zk
                }
                None => continue,
            },
        };
        if !bootstrapped {
            bootstrapped = bootstrap(&zk).await.is_ok();
            continue;
        }
        counter += 1;
        let key = KEYS[rng.gen_range(0..KEYS.len())];
        let value = format!("{process}-{counter}");
        match rng.gen_range(0..100) {
            0..=24 => {
                let _ = zk.set_data(key, &value, None).await;
            }
            25..=34 => {
                if let Ok((_, stat)) = zk.get_data(key).await {
                    let _ = zk.set_data(key, &value, Some(stat.version)).await;
                }
            }
            35..=44 => {
                let _ = zk.get_data(key).await;
            }
            45..=54 => {
                if zk.sync("/").await.is_ok() {
                    let _ = zk.get_data(key).await;
                }
            }
            55..=62 => {
                if let Ok((_, _, watch)) = zk.get_data_watch(key).await {
                    watches.push(watch);
                }
            }
            63..=67 => {
                if let Ok((_, _, watch)) = zk.get_children_watch("/q").await {
                    watches.push(watch);
                }
            }
            68..=75 => {
                let mode = if rng.gen_bool(0.5) {
                    CreateMode::EphemeralSequential
                } else {
                    CreateMode::PersistentSequential
                };
                let _ = zk.create_protected("/q/n-", &value, mode).await;
            }
            76..=81 => {
                let path = format!("/e/p{process}");
                if let Err(ZkClientError::Api(_)) =
                    zk.create(&path, &value, CreateMode::Ephemeral).await
                {
                    let _ = zk.delete(&path, None).await;
                }
            }
            82..=87 => {
                if zk.sync("/").await.is_ok() {
                    let _ = zk.exists(&format!("/e/p{}", rng.gen_range(0..4))).await;
                }
            }
            88..=92 => {
                if let Ok((children, _)) = zk.get_children("/q").await
                    && let Some(child) = children.first()
                {
                    let _ = zk.delete(&format!("/q/{child}"), None).await;
                }
            }
            _ => {
                let _ = zk
                    .multi(vec![
                        WriteOp::SetData {
                            path: key.into(),
                            data: value.clone(),
                            version: None,
                        },
                        WriteOp::Create {
                            path: "/q/m-".into(),
                            data: value,
                            mode: CreateMode::PersistentSequential,
                        },
                    ])
                    .await;
            }
        }
        // Keep at most a few watches alive; dropping one does not unregister it.
        if watches.len() > 8 {
            watches.remove(0);
        }
    }
}

/// A fresh session that syncs and reads everything (synced reads are what the checkers
/// judge), and writes once to show the ensemble makes progress.
async fn audit(ensemble: ZkEnsemble, context: NodeContext, process: u32) -> Result<(), String> {
    let zk = connect(&ensemble, &context, process)
        .await
        .ok_or("no session after heal")?;
    let retry = |error: ZkClientError| format!("{error}");
    zk.sync("/").await.map_err(retry)?;
    for key in KEYS {
        zk.get_data(key).await.map_err(retry)?;
    }
    for parent in ["/q", "/e"] {
        let (children, _) = zk.get_children(parent).await.map_err(retry)?;
        for child in children.iter().take(20) {
            match zk.exists(&format!("{parent}/{child}")).await {
                Ok(_) => {}
                Err(error) => return Err(retry(error)),
            }
        }
    }
    zk.set_data(KEYS[0], &format!("audit-{process}"), None)
        .await
        .map_err(retry)?;
    zk.close().await.map_err(retry)?;
    Ok(())
}
