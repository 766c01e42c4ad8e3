//! The drop-in `zookeeper-client` (models/zookeeper-client) against the model's `ZkClient`
//! it wraps: the same creates, writes and reads, from the same process number on the same
//! node of the same world, so the simulation does the same work (the two histories'
//! digests are compared) and the difference is the drop-in's own cost: bytes made text,
//! owned futures, the answer made zookeeper-client's. Target (issue 26): a call through the
//! drop-in costs ≤ 1.2× the same call through `ZkClient`.

// Linked for its global allocator (mimalloc, as every bench).
use coordsim_benches as _;
use criterion::Criterion;
use models::zk::{SessionExpiry, ZkClient, ZkEnsemble, ZkEnsembleConfig};
use sim::{Seed, World, history::zk::CreateMode as ModelMode};
use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};
use zookeeper_client::{Acls, Client, CreateMode};

/// Writes and reads per run, half each: enough that the world's setup is a small part.
const CALLS: u64 = 4_000;

/// The nodes written and read in turn.
const NODES: u64 = 8;

/// The drop-in numbers its first session's process 1000; the model client takes the same.
const PROCESS: u32 = 1000;

#[derive(Clone, Copy, Debug)]
enum Api {
    Model,
    DropIn,
}

/// One run: 3 servers, one client creating `NODES` nodes then doing `CALLS` setData and
/// getData back to back through `api`; answers the calls that succeeded and the digest.
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
            let ensemble = ZkEnsemble::new(&sim, ZkEnsembleConfig::new(sim.servers())).unwrap();
            ensemble.start(&sim);
            sim.provide(ensemble.clone());
            sim.sleep(Duration::from_secs(1)).await;
            let node = sim.clients()[0];
            let context = sim.node(node);
            let task = sim.clone().spawn(node, async move {
                let succeeded = match api {
                    Api::Model => {
                        // What the drop-in's `connect` asks for, by default.
                        let mut config = ensemble.client_config(PROCESS);
                        config.session_timeout = Duration::from_secs(6);
                        config.connect_patience = config.session_timeout;
                        config.expiry = SessionExpiry::AfterDisconnectedTimeout;
                        let client = ensemble.connect(&context, config).await.unwrap();
                        model_calls(&client).await
                    }
                    Api::DropIn => {
                        let client = Client::connect("s1:2181").await.unwrap();
                        drop_in_calls(&client).await
                    }
                };
                counter.store(succeeded, Ordering::Relaxed);
            });
            task.await.unwrap();
        });
    (succeeded.load(Ordering::Relaxed), outcome.history_digest())
}

async fn model_calls(client: &ZkClient) -> u64 {
    for node in 0..NODES {
        client
            .create2(&format!("/n{node}"), "", ModelMode::Persistent)
            .await
            .unwrap();
    }
    let mut succeeded = 0;
    for call in 0..CALLS {
        let path = format!("/n{}", call % NODES);
        let ok = match call % 2 {
            0 => client
                .set_data(&path, &format!("value-{call}"), None)
                .await
                .is_ok(),
            _ => client.get_data(&path).await.is_ok(),
        };
        succeeded += u64::from(ok);
    }
    succeeded
}

async fn drop_in_calls(client: &Client) -> u64 {
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for node in 0..NODES {
        client
            .create(&format!("/n{node}"), b"", &open)
            .await
            .unwrap();
    }
    let mut succeeded = 0;
    for call in 0..CALLS {
        let path = format!("/n{}", call % NODES);
        let ok = match call % 2 {
            0 => client
                .set_data(&path, format!("value-{call}").as_bytes(), None)
                .await
                .is_ok(),
            _ => client.get_data(&path).await.is_ok(),
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
    println!(
        "zk_dropin: histories {}",
        if model_digest == drop_in_digest {
            "identical"
        } else {
            "DIFFER"
        }
    );
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("zk_dropin_vs_model");
    group.sample_size(10);
    group.bench_function("model_zk_client_4000_calls", |b| b.iter(|| run(Api::Model)));
    group.bench_function("dropin_zookeeper_client_4000_calls", |b| {
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
        "zk_dropin: {CALLS} calls per run, 5 interleaved runs: model {:.1} ms/run, drop-in {:.1} ms/run, ratio {:.3}x (target <= 1.2x)",
        model.as_secs_f64() * 200.0,
        drop_in.as_secs_f64() * 200.0,
        drop_in.as_secs_f64() / model.as_secs_f64()
    );
}
