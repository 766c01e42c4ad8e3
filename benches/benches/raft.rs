//! A 5-server Raft store under a steady client load: simulated operations and messages per
//! wall second, compared with raw madsim message throughput in the same process.
//!
//! The load: 4 client nodes × 2 processes, each doing puts (60%) and linearizable gets
//! (40%) on 8 keys back to back for 5 s of simulated time; no faults. "Messages" are every
//! message the world put on the wire: Raft datagrams between servers and client-connection
//! frames. The raw baseline is the typed round trip of `coordsim_benches::raw_madsim` (madsim
//! `Endpoint::send_to_raw`, no coordsim layer at all).
//! Target: Raft-store traffic at ≥ 100% of raw madsim message throughput, with as few
//! messages per operation as the protocol needs (both are printed).

use coordsim_benches::raw_madsim;
use criterion::{Criterion, Throughput};
use models::etcd::{EtcdClient, EtcdCluster, EtcdConfig};
use sim::{Seed, World, history::OpResult};
use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

const RAW_ROUND_TRIPS: u64 = 2_000;
const LOAD_SIMULATED: Duration = Duration::from_secs(5);

/// What one loaded run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Load {
    operations: u64,
    messages: u64,
}

fn raft_store_under_load() -> Load {
    let operations = Arc::new(AtomicU64::new(0));
    let counter = operations.clone();
    let outcome = World::builder()
        .seed(Seed::new(1))
        .servers(5)
        .clients(4)
        .clock_skew(Duration::ZERO, 0)
        .build()
        .unwrap()
        .run(move |sim| async move {
            let cluster = EtcdCluster::start(&sim, EtcdConfig::new(&sim.servers()));
            sim.sleep(Duration::from_secs(1)).await;
            let deadline = sim.now() + LOAD_SIMULATED;
            let mut tasks = Vec::new();
            for node in sim.clients() {
                for process in 0..2 {
                    let (cluster, context, counter) =
                        (cluster.clone(), sim.node(node), counter.clone());
                    let sim = sim.clone();
                    tasks.push(sim.clone().spawn(node, async move {
                        let mut client = EtcdClient::new(&cluster, context, process);
                        let mut sequence = 0u64;
                        while sim.now() < deadline {
                            sequence += 1;
                            let key = format!("key/{}", sequence % 8);
                            let result = if sequence % 5 < 3 {
                                client.put(&key, &format!("{process}-{sequence}")).await
                            } else {
                                client.get(&key).await
                            };
                            if matches!(result, OpResult::Ok { .. }) {
                                counter.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }));
                }
            }
            for task in tasks {
                task.await.unwrap();
            }
        });
    Load {
        operations: operations.load(Ordering::Relaxed),
        messages: outcome.fault_counts.messages_sent,
    }
}

fn per_second(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

fn main() {
    let load = raft_store_under_load();
    assert_eq!(
        raft_store_under_load(),
        load,
        "the loaded run is deterministic"
    );
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("raft_store");
    group.sample_size(10);
    group.throughput(Throughput::Elements(load.messages));
    group.bench_function("five_servers_steady_load_messages", |b| {
        b.iter(raft_store_under_load)
    });
    group.throughput(Throughput::Elements(2 * RAW_ROUND_TRIPS));
    group.bench_function("raw_madsim_round_trips_messages", |b| {
        b.iter(|| raw_madsim::round_trips(RAW_ROUND_TRIPS))
    });
    group.finish();
    criterion.final_summary();

    // Interleaved so that machine noise hits both sides alike.
    let (mut raw, mut messages, mut operations) = (0.0, 0.0, 0.0);
    let rounds = 3;
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..5 {
            assert_eq!(raw_madsim::round_trips(RAW_ROUND_TRIPS), RAW_ROUND_TRIPS);
        }
        raw += per_second(5 * 2 * RAW_ROUND_TRIPS, start.elapsed());
        let start = Instant::now();
        let run = raft_store_under_load();
        let elapsed = start.elapsed();
        messages += per_second(run.messages, elapsed);
        operations += per_second(run.operations, elapsed);
    }
    let rounds = f64::from(rounds);
    println!(
        "5-server Raft store, steady load ({} simulated s): {} operations, {} messages per run \
         ({:.1} messages per operation)",
        LOAD_SIMULATED.as_secs(),
        load.operations,
        load.messages,
        load.messages as f64 / load.operations as f64
    );
    println!(
        "  raw madsim messages per wall second: {:>12.0}",
        raw / rounds
    );
    println!(
        "  Raft store messages per wall second: {:>12.0}  ratio to raw madsim: {:.2} (target >= 1.00)",
        messages / rounds,
        messages / raw
    );
    println!(
        "  Raft store operations per wall second: {:>10.0}",
        operations / rounds
    );
}
