//! The ZAB store under a steady client load: a five-server ensemble, five clients each
//! writing (setData through the leader: forward, PROPOSAL, ACK, COMMIT) and reading (local
//! to its server) in a closed loop. Reported as operations and messages per wall second,
//! against raw madsim message throughput in the same process.
//! Target: at least 50% of raw madsim's messages per wall second.

use coordsim_benches::raw_madsim;
use criterion::{Criterion, Throughput};
use models::zk::{ZkEnsemble, ZkEnsembleConfig};
use sim::{Seed, World, history::zk::CreateMode};
use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

const CLIENTS: usize = 5;
const OPERATIONS_PER_CLIENT: u64 = 400;

/// One run; returns (operations completed, messages sent).
fn steady_load(operations_per_client: u64) -> (u64, u64) {
    let completed = Arc::new(AtomicU64::new(0));
    let counter = completed.clone();
    let outcome = World::builder()
        .seed(Seed::new(1))
        .servers(5)
        .clients(CLIENTS)
        .clock_skew(Duration::ZERO, 0)
        .time_limit(Duration::from_secs(3_600))
        .build()
        .expect("a valid world")
        .run(move |sim| async move {
            let ensemble =
                ZkEnsemble::new(&sim, ZkEnsembleConfig::new(sim.servers())).expect("ensemble");
            ensemble.start(&sim);
            let mut clients = Vec::new();
            for (index, node) in sim.clients().into_iter().enumerate() {
                let (ensemble, context, completed) =
                    (ensemble.clone(), sim.node(node), counter.clone());
                clients.push(sim.spawn(node, async move {
                    let zk = ensemble
                        .connect(&context, ensemble.client_config(index as u32))
                        .await
                        .expect("connects");
                    let path = format!("/bench{index}");
                    zk.create(&path, "0", CreateMode::Persistent)
                        .await
                        .expect("create");
                    for round in 0..operations_per_client {
                        if round % 2 == 0 {
                            zk.set_data(&path, "value", None).await.expect("write");
                        } else {
                            zk.get_data(&path).await.expect("read");
                        }
                        completed.fetch_add(1, Ordering::Relaxed);
                    }
                }));
            }
            for client in clients {
                client.await.expect("client task");
            }
        });
    (
        completed.load(Ordering::Relaxed),
        outcome.fault_counts.messages_sent,
    )
}

fn per_second(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let (operations, messages) = steady_load(OPERATIONS_PER_CLIENT);
    let mut group = criterion.benchmark_group("zab_steady_load");
    group.sample_size(10);
    group.throughput(Throughput::Elements(operations));
    group.bench_function("five_servers_five_clients_operations", |b| {
        b.iter(|| steady_load(OPERATIONS_PER_CLIENT))
    });
    group.throughput(Throughput::Elements(messages));
    group.bench_function("five_servers_five_clients_messages", |b| {
        b.iter(|| steady_load(OPERATIONS_PER_CLIENT))
    });
    group.throughput(Throughput::Elements(4_000));
    group.bench_function("raw_madsim_round_trips", |b| {
        b.iter(|| raw_madsim::round_trips(2_000))
    });
    group.finish();
    criterion.final_summary();

    // Interleaved so that machine noise hits both sides alike.
    let (mut raw, mut zab_messages, mut zab_operations) = (0.0, 0.0, 0.0);
    let rounds = 3;
    for _ in 0..rounds {
        raw += raw_madsim::messages_per_second(2_000, 5);
        let start = Instant::now();
        let (mut operations, mut messages) = (0, 0);
        for _ in 0..3 {
            let (o, m) = steady_load(OPERATIONS_PER_CLIENT);
            operations += o;
            messages += m;
        }
        let elapsed = start.elapsed();
        zab_messages += per_second(messages, elapsed);
        zab_operations += per_second(operations, elapsed);
    }
    let rounds = f64::from(rounds);
    let (raw, zab_messages, zab_operations) =
        (raw / rounds, zab_messages / rounds, zab_operations / rounds);
    println!(
        "ZAB store, 5 servers, {CLIENTS} clients, half writes (mean of 3 interleaved rounds):"
    );
    println!("  operations per wall second:   {zab_operations:>12.0}");
    println!(
        "  messages per wall second:     {zab_messages:>12.0}  ({:.1} messages per operation)",
        zab_messages / zab_operations
    );
    println!("  raw madsim messages per wall second: {raw:>12.0}");
    println!(
        "  ratio of ZAB messages to raw madsim: {:.2} (target >= 0.50)",
        zab_messages / raw
    );
}
