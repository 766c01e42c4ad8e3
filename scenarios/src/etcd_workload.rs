//! Workloads for the Raft store (etcd-like): clients doing random reads and writes on a few
//! keys while faults fire, then, after the heal, a final linearizable read of every key.
//!
//! This module drives `models`; the checkers never do (they read only the history).

use models::etcd::{ClientConfig, EtcdClient, EtcdCluster, EtcdConfig, KnownBug, kv_response};
use rand::Rng;
use sim::{
    NodeId, RunOutcome, Seed, World,
    fault::{FaultPlan, SwarmConfig},
    history::{
        OpResult,
        kv::{Compare, CompareOperator, CompareTarget, KvOperation, KvResponse, ReadConsistency},
    },
    time::SimTime,
};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

/// Where a run's faults come from.
#[derive(Clone, Debug)]
pub enum Faults {
    /// None.
    None,
    /// Generated from the seed.
    Swarm(SwarmConfig),
    /// An explicit schedule.
    Plan(FaultPlan),
    /// Crash the current leader again and again (after a random delay), restart crashed
    /// servers so that a majority stays up, and partition at random — like the "Figure 8"
    /// tests of MIT 6.824. Runs for `phase`, then heals everything.
    LeaderKiller(LeaderKiller),
    /// Every `interval`, cut the current leader off from the other servers for `duration`,
    /// together with the first `with_clients` client nodes (which can then reach only it).
    CutOffLeader {
        /// How long the nemesis runs.
        phase: Duration,
        /// Time between cuts.
        interval: Duration,
        /// How long each cut lasts.
        duration: Duration,
        /// Client nodes cut off with the leader.
        with_clients: usize,
        /// Drift of the cut-off leader's clock while it is cut off (negative: slow), ppm.
        leader_drift_ppm: i32,
    },
    /// Once a leader is elected, cut one follower off for `cut`, then reconnect it for
    /// `reconnect`, `rounds` times: a flapping link.
    FlapFollower {
        /// How long each cut lasts.
        cut: Duration,
        /// How long the follower is reconnected between cuts.
        reconnect: Duration,
        /// Number of cuts.
        rounds: u32,
    },
}

/// The operations a workload issues, in percent (the rest are deletes).
#[derive(Clone, Copy, Debug)]
pub struct OperationMix {
    /// Puts.
    pub put_percent: u32,
    /// Linearizable gets.
    pub get_percent: u32,
    /// Serializable gets.
    pub serializable_get_percent: u32,
    /// Compare-and-put transactions.
    pub txn_percent: u32,
}

impl Default for OperationMix {
    fn default() -> Self {
        Self {
            put_percent: 45,
            get_percent: 35,
            serializable_get_percent: 5,
            txn_percent: 10,
        }
    }
}

/// Parameters of [`Faults::LeaderKiller`].
#[derive(Clone, Copy, Debug)]
pub struct LeaderKiller {
    /// How long the nemesis runs.
    pub phase: Duration,
    /// Longest wait before crashing a leader (the wait is random in `0..=this`).
    pub max_delay: Duration,
    /// Percent chance, per round, that the leader is crashed (otherwise a random server).
    pub leader_percent: u32,
    /// Percent chance, per round, of cutting the leader off from the other servers (but not
    /// from the clients, so it keeps appending writes it cannot commit) for a while and
    /// then crashing it.
    pub strand_leader_percent: u32,
}

/// Adjusts the store configuration of a workload (Raft timing, batch sizes, …).
#[derive(Clone)]
pub struct Tuning(pub Arc<dyn Fn(&mut EtcdConfig) + Send + Sync>);

impl Tuning {
    /// No adjustment.
    pub fn none() -> Self {
        Self(Arc::new(|_| {}))
    }

    /// This adjustment.
    pub fn with(adjust: impl Fn(&mut EtcdConfig) + Send + Sync + 'static) -> Self {
        Self(Arc::new(adjust))
    }
}

impl std::fmt::Debug for Tuning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tuning(..)")
    }
}

/// A key-value workload on the Raft store.
#[derive(Clone, Debug)]
pub struct KvWorkload {
    /// Servers in the cluster.
    pub servers: usize,
    /// Client nodes.
    pub clients: usize,
    /// Client processes per client node.
    pub processes_per_client: u32,
    /// Keys the workload touches (`key/0`…).
    pub keys: usize,
    /// Longest pause between a process's operations.
    pub think_time: Duration,
    /// How long the workload runs when there is no fault plan.
    pub duration: Duration,
    /// How long after the fault phase ends the workload keeps going (recovery).
    pub settle: Duration,
    /// Faults.
    pub faults: Faults,
    /// Known-bug variants switched on.
    pub bugs: Vec<KnownBug>,
    /// Store configuration tweaks applied after the defaults (e.g. Raft timing).
    pub tune: Tuning,
    /// Datagram duplication rate at the start, percent.
    pub duplication_percent: u32,
    /// Datagram loss rate at the start, percent.
    pub loss_percent: u32,
    /// What the clients do.
    pub mix: OperationMix,
    /// Client timing.
    pub client: ClientConfig,
    /// Disk sync latency range, if not the world's default.
    pub disk_sync_latency: Option<(Duration, Duration)>,
    /// One-way network latency range, if not the world's default.
    pub network_latency: Option<(Duration, Duration)>,
}

impl Default for KvWorkload {
    fn default() -> Self {
        Self {
            servers: 3,
            clients: 2,
            processes_per_client: 2,
            keys: 4,
            think_time: Duration::from_millis(40),
            duration: Duration::from_secs(5),
            settle: Duration::from_secs(3),
            faults: Faults::None,
            bugs: Vec::new(),
            tune: Tuning::none(),
            duplication_percent: 0,
            loss_percent: 0,
            mix: OperationMix::default(),
            client: ClientConfig::default(),
            disk_sync_latency: None,
            network_latency: None,
        }
    }
}

/// What a workload run produced.
#[derive(Debug)]
pub struct KvRun {
    /// The world's outcome (history, fault counts, …).
    pub outcome: RunOutcome,
    /// When the final reads began.
    pub final_reads_from: SimTime,
    /// Whether a final read of every key succeeded.
    pub final_read_succeeded: bool,
    /// Operations acknowledged (completed with `Ok`).
    pub acknowledged: u64,
}

/// The key prefix of the workload.
pub const KEY_PREFIX: &str = "key/";

/// Runs `workload` with `seed`.
pub fn run(seed: Seed, workload: &KvWorkload) -> KvRun {
    let mut builder = World::builder()
        .seed(seed)
        .servers(workload.servers)
        .clients(workload.clients)
        .time_limit(Duration::from_secs(120));
    if workload.duplication_percent > 0 {
        builder = builder.duplication(sim::Ratio::new(workload.duplication_percent, 100));
    }
    if workload.loss_percent > 0 {
        builder = builder.packet_loss(sim::Ratio::new(workload.loss_percent, 100));
    }
    if let Some((min, max)) = workload.disk_sync_latency {
        builder = builder.disk_sync_latency(min..=max);
    }
    if let Some((min, max)) = workload.network_latency {
        builder = builder.latency(min..=max);
    }
    builder = match &workload.faults {
        Faults::None => builder,
        Faults::Swarm(swarm) => builder.swarm_faults(swarm.clone()),
        Faults::Plan(plan) => builder.fault_plan(plan.clone()),
        Faults::LeaderKiller(_) | Faults::CutOffLeader { .. } | Faults::FlapFollower { .. } => {
            builder
        }
    };
    let world = builder.build().expect("a valid workload world");
    let has_faults = !world.fault_plan().faults.is_empty();
    let directed = matches!(
        workload.faults,
        Faults::LeaderKiller(_) | Faults::CutOffLeader { .. } | Faults::FlapFollower { .. }
    );
    let final_reads_from = Arc::new(AtomicU64::new(u64::MAX));
    let final_read_succeeded = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(AtomicU64::new(0));
    let workload = workload.clone();
    let (from, succeeded, acked) = (
        final_reads_from.clone(),
        final_read_succeeded.clone(),
        acknowledged.clone(),
    );
    let outcome = world.run(move |sim| async move {
        let mut config = EtcdConfig::new(&sim.servers()).with_bugs(workload.bugs.iter().copied());
        (workload.tune.0)(&mut config);
        let cluster = EtcdCluster::start(&sim, config);
        let stop = Arc::new(AtomicBool::new(false));
        let mut workers = Vec::new();
        for client in sim.clients() {
            for process in 0..workload.processes_per_client {
                let context = sim.node(client);
                let (cluster, stop, acked) = (cluster.clone(), stop.clone(), acked.clone());
                let workload = workload.clone();
                workers.push(sim.spawn(client, async move {
                    let mut rng = context.rng(&format!("kv-workload-{process}"));
                    let clock = context.clock().clone();
                    let mut client =
                        EtcdClient::new(&cluster, context, process).with_config(workload.client);
                    let mut sequence = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        sequence += 1;
                        let operation =
                            random_operation(&mut rng, &workload, client.process(), sequence);
                        if let OpResult::Ok { .. } = client.execute(operation).await {
                            acked.fetch_add(1, Ordering::Relaxed);
                        }
                        let think = rng.gen_range(0..=workload.think_time.as_millis() as u64);
                        clock.sleep(Duration::from_millis(think)).await;
                    }
                }));
            }
        }
        if directed {
            run_directed_faults(&sim, &workload.faults).await;
        } else if has_faults {
            sim.fault_phase_ended().await;
        } else {
            sim.sleep(workload.duration).await;
        }
        sim.sleep(workload.settle).await;
        stop.store(true, Ordering::Relaxed);
        for worker in workers {
            // A worker on a crashed client node is gone; its last operation stays open.
            let _ = worker.await;
        }
        from.store(sim.now().as_nanos(), Ordering::Relaxed);
        let reader = NodeId::client(0);
        let context = sim.node(reader);
        let cluster = cluster.clone();
        let final_read = sim.spawn(reader, async move {
            let mut client = EtcdClient::new(&cluster, context, 1_000);
            for _ in 0..20 {
                let result = client.get_prefix(KEY_PREFIX).await;
                if kv_response(&result).is_some() {
                    return true;
                }
            }
            false
        });
        succeeded.store(final_read.await.unwrap_or(false), Ordering::Relaxed);
    });
    KvRun {
        outcome,
        final_reads_from: SimTime::from_nanos(final_reads_from.load(Ordering::Relaxed)),
        final_read_succeeded: final_read_succeeded.load(Ordering::Relaxed),
        acknowledged: acknowledged.load(Ordering::Relaxed),
    }
}

fn random_operation(
    rng: &mut impl Rng,
    workload: &KvWorkload,
    process: u32,
    sequence: u64,
) -> KvOperation {
    let key = format!("{KEY_PREFIX}{}", rng.gen_range(0..workload.keys));
    let value = format!("p{process}-{sequence}-{}", rng.r#gen::<u16>());
    let mix = workload.mix;
    let roll = rng.gen_range(0..100);
    let puts = mix.put_percent;
    let gets = puts + mix.get_percent;
    let serializable = gets + mix.serializable_get_percent;
    let txns = serializable + mix.txn_percent;
    match roll {
        roll if roll < puts => KvOperation::Put {
            key,
            value,
            lease: None,
        },
        roll if roll < gets => KvOperation::Get {
            key,
            range_end: None,
            revision: None,
            consistency: ReadConsistency::Linearizable,
        },
        roll if roll < serializable => KvOperation::Get {
            key,
            range_end: None,
            revision: None,
            consistency: ReadConsistency::Serializable,
        },
        roll if roll < txns => KvOperation::Txn {
            compares: vec![Compare {
                key: key.clone(),
                target: CompareTarget::Version(rng.gen_range(0..4)),
                operator: CompareOperator::Greater,
            }],
            success: vec![KvOperation::Put {
                key: key.clone(),
                value,
                lease: None,
            }],
            failure: vec![KvOperation::Get {
                key,
                range_end: None,
                revision: None,
                consistency: ReadConsistency::Linearizable,
            }],
        },
        _ => KvOperation::Delete {
            key,
            range_end: None,
        },
    }
}

/// The revision of a successful write response, if any.
pub fn write_revision(result: &OpResult) -> Option<u64> {
    match kv_response(result)? {
        KvResponse::Put { revision }
        | KvResponse::Delete { revision, .. }
        | KvResponse::Txn { revision, .. } => Some(*revision),
        _ => None,
    }
}

/// The server that most recently became leader and has not stepped down or crashed.
pub fn current_leader(sim: &sim::Sim) -> Option<NodeId> {
    use sim::history::{Event, ProtocolEvent};
    let mut leader: Option<(NodeId, u64)> = None;
    for record in sim.history_snapshot().records() {
        match (&record.event, record.node) {
            (Event::Protocol(ProtocolEvent::BecameLeader { term }), Some(node))
                if leader.is_none_or(|(_, t)| *term >= t) =>
            {
                leader = Some((node, *term));
            }
            (Event::Protocol(ProtocolEvent::SteppedDown { term }), Some(node))
                if leader == Some((node, *term)) =>
            {
                leader = None;
            }
            _ => {}
        }
    }
    leader
        .map(|(node, _)| node)
        .filter(|node| !sim.is_crashed(*node))
}

async fn kill_leaders(sim: &sim::Sim, killer: LeaderKiller) {
    use rand::seq::SliceRandom;
    use sim::fault::PartitionShape;
    let mut rng = sim.seed().stream("leader-killer");
    let _ = &mut rng;
    let nemesis = sim.nemesis();
    let servers = sim.servers();
    let clients = sim.clients();
    let minority = (servers.len() - 1) / 2;
    let max_delay_ms = killer.max_delay.as_millis() as u64;
    let start = sim.now();
    while sim.now().saturating_duration_since(start) < killer.phase {
        sim.sleep(Duration::from_millis(rng.gen_range(0..=max_delay_ms)))
            .await;
        let crashed: Vec<NodeId> = servers
            .iter()
            .copied()
            .filter(|s| sim.is_crashed(*s))
            .collect();
        if minority == 0 || crashed.len() >= minority {
            if let Some(node) = crashed.choose(&mut rng) {
                nemesis.restart(*node);
            } else if minority == 0 {
                // A single server: crash it and bring it back.
                nemesis.crash(servers[0]);
                sim.sleep(Duration::from_millis(rng.gen_range(0..=max_delay_ms)))
                    .await;
                nemesis.restart(servers[0]);
            }
            continue;
        }
        let roll = rng.gen_range(0..100);
        let leader = current_leader(sim);
        if roll < killer.strand_leader_percent {
            let Some(leader) = leader else { continue };
            let mut stranded = vec![leader];
            stranded.extend(clients.iter().copied());
            let others: Vec<NodeId> = servers.iter().copied().filter(|s| *s != leader).collect();
            nemesis.partition(PartitionShape::Groups {
                groups: vec![stranded, others],
            });
            sim.sleep(Duration::from_millis(rng.gen_range(0..=max_delay_ms)))
                .await;
            nemesis.crash(leader);
            nemesis.heal();
        } else if roll < killer.strand_leader_percent + killer.leader_percent {
            if let Some(leader) = leader {
                nemesis.crash(leader);
            }
        } else if let Some(victim) = servers.choose(&mut rng)
            && !sim.is_crashed(*victim)
        {
            nemesis.crash(*victim);
        }
    }
    nemesis.heal_all();
}

async fn run_directed_faults(sim: &sim::Sim, faults: &Faults) {
    use sim::fault::PartitionShape;
    let nemesis = sim.nemesis();
    match faults {
        Faults::LeaderKiller(killer) => kill_leaders(sim, *killer).await,
        Faults::CutOffLeader {
            phase,
            interval,
            duration,
            with_clients,
            leader_drift_ppm,
        } => {
            let start = sim.now();
            while sim.now().saturating_duration_since(start) < *phase {
                sim.sleep(*interval).await;
                let Some(leader) = current_leader(sim) else {
                    continue;
                };
                let clients = sim.clients();
                let (cut_clients, other_clients) =
                    clients.split_at((*with_clients).min(clients.len()));
                let mut cut: Vec<NodeId> = vec![leader];
                cut.extend(cut_clients);
                let mut rest: Vec<NodeId> =
                    sim.servers().into_iter().filter(|s| *s != leader).collect();
                rest.extend(other_clients);
                nemesis.partition(PartitionShape::Groups {
                    groups: vec![cut, rest],
                });
                if *leader_drift_ppm != 0 {
                    nemesis.set_drift(leader, *leader_drift_ppm);
                }
                sim.sleep(*duration).await;
                nemesis.heal();
                if *leader_drift_ppm != 0 {
                    nemesis.set_drift(leader, 0);
                }
            }
            nemesis.heal_all();
        }
        Faults::FlapFollower {
            cut,
            reconnect,
            rounds,
        } => {
            let leader = loop {
                if let Some(leader) = current_leader(sim) {
                    break leader;
                }
                sim.sleep(Duration::from_millis(10)).await;
            };
            let follower = sim
                .servers()
                .into_iter()
                .find(|server| *server != leader)
                .expect("a cluster with a follower");
            for _ in 0..*rounds {
                nemesis.isolate(follower);
                sim.sleep(*cut).await;
                nemesis.heal();
                sim.sleep(*reconnect).await;
            }
            nemesis.heal_all();
        }
        Faults::None | Faults::Swarm(_) | Faults::Plan(_) => {}
    }
}
