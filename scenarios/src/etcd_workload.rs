//! Workloads for the Raft store (etcd-like): clients doing random reads and writes on a few
//! keys while faults fire, then, after the heal, a final linearizable read of every key.
//!
//! This module drives `models`; the checkers never do (they read only the history).

use models::etcd::{EtcdClient, EtcdCluster, EtcdConfig, KnownBug, kv_response};
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
    pub tune: fn(&mut EtcdConfig),
    /// Datagram duplication rate at the start (as `Ratio` numerator per 100).
    pub duplication_percent: u32,
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
            tune: |_| {},
            duplication_percent: 0,
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
    builder = match &workload.faults {
        Faults::None => builder,
        Faults::Swarm(swarm) => builder.swarm_faults(swarm.clone()),
        Faults::Plan(plan) => builder.fault_plan(plan.clone()),
    };
    let world = builder.build().expect("a valid workload world");
    let has_faults = !world.fault_plan().faults.is_empty();
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
        (workload.tune)(&mut config);
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
                    let mut client = EtcdClient::new(&cluster, context, process);
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
        if has_faults {
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
    match rng.gen_range(0..100) {
        0..45 => KvOperation::Put {
            key,
            value,
            lease: None,
        },
        45..80 => KvOperation::Get {
            key,
            range_end: None,
            revision: None,
            consistency: ReadConsistency::Linearizable,
        },
        80..85 => KvOperation::Get {
            key,
            range_end: None,
            revision: None,
            consistency: ReadConsistency::Serializable,
        },
        85..95 => KvOperation::Txn {
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
