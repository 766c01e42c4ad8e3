//! The drop-in `etcd-client` (models/etcd-client) against the model's `EtcdClient` it wraps:
//! the same puts and gets, from the same process number on the same node of the same world,
//! so the simulation does the very same work (the two histories' digests are asserted
//! equal) and the difference is the drop-in's own cost: byte keys made text, options made
//! the model's operation, the answer made etcd-client's response. Target (issue 25): a call
//! through the drop-in costs ≤ 1.2× the same call through `EtcdClient`.

// Linked for its global allocator (mimalloc, as every bench).
use coordsim_benches as _;
use criterion::Criterion;
use models::etcd::{EtcdClient, EtcdCluster, EtcdConfig};
use sim::{Seed, World, history::OpResult};
use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

/// Puts and gets per run, half each: enough that the world's setup is a small part.
const CALLS: u64 = 4_000;

/// The drop-in numbers its first handle's process 1000; the model client takes the same,
/// so both talk to the same first server.
const PROCESS: u32 = 1000;

#[derive(Clone, Copy, Debug)]
enum Api {
    Model,
    DropIn,
}

/// One run: 3 servers, one client doing `CALLS` puts and linearizable gets back to back
/// through `api`; answers the calls that succeeded and the history's digest.
fn run(api: Api) -> (u64, sim::digest::Digest) {
    let succeeded = Arc::new(AtomicU64::new(0));
    let counter = succeeded.clone();
    let outcome = World::builder()
        .seed(Seed::new(1))
        .servers(3)
        .clients(1)
        .clock_skew(Duration::ZERO, 0)
        .build()
        .unwrap()
        .run(move |sim| async move {
            let cluster = EtcdCluster::start(&sim, EtcdConfig::new(&sim.servers()));
            sim.provide(cluster.clone());
            sim.sleep(Duration::from_secs(1)).await;
            let node = sim.clients()[0];
            let context = sim.node(node);
            let task = sim.clone().spawn(node, async move {
                let succeeded = match api {
                    Api::Model => {
                        let mut client = EtcdClient::new(&cluster, context, PROCESS);
                        model_calls(&mut client).await
                    }
                    Api::DropIn => {
                        let mut client = etcd_client::Client::connect(["s1:2379"], None)
                            .await
                            .expect("connects inside the run");
                        drop_in_calls(&mut client).await
                    }
                };
                counter.store(succeeded, Ordering::Relaxed);
            });
            task.await.unwrap();
        });
    (succeeded.load(Ordering::Relaxed), outcome.history_digest())
}

async fn model_calls(client: &mut EtcdClient) -> u64 {
    let mut succeeded = 0;
    for call in 0..CALLS {
        let key = format!("key/{}", call % 8);
        let result = match call % 2 {
            0 => client.put(&key, &format!("value-{call}")).await,
            _ => client.get(&key).await,
        };
        succeeded += u64::from(matches!(result, OpResult::Ok { .. }));
    }
    succeeded
}

async fn drop_in_calls(client: &mut etcd_client::Client) -> u64 {
    let mut succeeded = 0;
    for call in 0..CALLS {
        let key = format!("key/{}", call % 8);
        let ok = match call % 2 {
            0 => client.put(key, format!("value-{call}"), None).await.is_ok(),
            _ => client.get(key, None).await.is_ok(),
        };
        succeeded += u64::from(ok);
    }
    succeeded
}

fn main() {
    let (model_ok, model_digest) = run(Api::Model);
    let (drop_in_ok, drop_in_digest) = run(Api::DropIn);
    assert_eq!(model_ok, CALLS, "every model call succeeded");
    assert_eq!(drop_in_ok, CALLS, "every drop-in call succeeded");
    assert_eq!(
        model_digest, drop_in_digest,
        "the drop-in's history is the model client's, operation for operation"
    );
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("dropin_vs_model");
    group.sample_size(10);
    group.bench_function("model_etcd_client_4000_calls", |b| {
        b.iter(|| run(Api::Model))
    });
    group.bench_function("dropin_etcd_client_4000_calls", |b| {
        b.iter(|| run(Api::DropIn))
    });
    group.finish();
    criterion.final_summary();

    // Interleaved so that machine noise hits both sides alike.
    let (mut model, mut drop_in) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..5 {
        let start = Instant::now();
        run(Api::Model);
        model += start.elapsed();
        let start = Instant::now();
        run(Api::DropIn);
        drop_in += start.elapsed();
    }
    println!(
        "dropin: {CALLS} calls per run, 5 interleaved runs: model {:.1} ms/run, drop-in {:.1} ms/run, ratio {:.3}x (target <= 1.2x)",
        model.as_secs_f64() * 200.0,
        drop_in.as_secs_f64() * 200.0,
        drop_in.as_secs_f64() / model.as_secs_f64()
    );
}
