//! Typed-message round trips: raw madsim endpoints versus `sim`'s transports, same process.
//!
//! Reported by criterion as messages per wall second; at the end a direct comparison prints
//! the ratio of `sim`'s datagram (and FIFO connection) throughput to raw madsim's.
//! Target: `sim`'s transport keeps at least 70% of raw madsim throughput.

use coordsim_benches::raw_madsim::{self, Ping};
use criterion::{Criterion, Throughput};
use sim::{NodeId, Seed, World};
use std::{time::Duration, time::Instant};

const ROUND_TRIPS: u64 = 2_000;

fn quiet_world() -> World {
    World::builder()
        .seed(Seed::new(1))
        .servers(1)
        .clients(1)
        .clock_skew(Duration::ZERO, 0)
        .build()
        .unwrap()
}

fn sim_datagram_round_trips(round_trips: u64) -> u64 {
    let received = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = received.clone();
    quiet_world().run(move |sim| async move {
        let network = sim.datagram_network::<Ping>();
        let server = network.endpoint(NodeId::server(0));
        sim.spawn(NodeId::server(0), async move {
            loop {
                let datagram = server.recv().await;
                let mut ping = datagram.message;
                ping.sequence += 1;
                server.send(datagram.from, ping);
            }
        });
        let client = network.endpoint(NodeId::client(0));
        let done = sim.spawn(NodeId::client(0), async move {
            let mut received = 0;
            for sequence in 0..round_trips {
                client.send(
                    NodeId::server(0),
                    Ping {
                        sequence,
                        payload: [sequence; 4],
                    },
                );
                received += client.recv().await.message.payload[0] - sequence + 1;
            }
            received
        });
        counter.store(done.await.unwrap(), std::sync::atomic::Ordering::Relaxed);
    });
    received.load(std::sync::atomic::Ordering::Relaxed)
}

fn sim_connection_round_trips(round_trips: u64) -> u64 {
    let received = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = received.clone();
    quiet_world().run(move |sim| async move {
        let network = sim.stream_network::<Ping>();
        let listener = network.listen(NodeId::server(0));
        sim.spawn(NodeId::server(0), async move {
            let connection = listener.accept().await;
            while let Ok(mut ping) = connection.recv().await {
                ping.sequence += 1;
                connection.send(ping).unwrap();
            }
        });
        let done = sim.spawn(NodeId::client(0), async move {
            let connection = network
                .connect(NodeId::client(0), NodeId::server(0), Duration::from_secs(1))
                .await
                .unwrap();
            let mut received = 0;
            for sequence in 0..round_trips {
                connection
                    .send(Ping {
                        sequence,
                        payload: [sequence; 4],
                    })
                    .unwrap();
                received += connection.recv().await.unwrap().payload[0] - sequence + 1;
            }
            received
        });
        counter.store(done.await.unwrap(), std::sync::atomic::Ordering::Relaxed);
    });
    received.load(std::sync::atomic::Ordering::Relaxed)
}

fn messages_per_second(run: fn(u64) -> u64, repetitions: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..repetitions {
        assert_eq!(run(ROUND_TRIPS), ROUND_TRIPS, "a round trip was lost");
    }
    (2 * ROUND_TRIPS * u64::from(repetitions)) as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("typed_round_trips");
    group.throughput(Throughput::Elements(2 * ROUND_TRIPS));
    group.sample_size(20);
    group.bench_function("raw_madsim_endpoint", |b| {
        b.iter(|| raw_madsim::round_trips(ROUND_TRIPS))
    });
    group.bench_function("sim_datagram", |b| {
        b.iter(|| sim_datagram_round_trips(ROUND_TRIPS))
    });
    group.bench_function("sim_fifo_connection", |b| {
        b.iter(|| sim_connection_round_trips(ROUND_TRIPS))
    });
    group.finish();
    criterion.final_summary();

    // Interleaved so that machine noise hits both sides alike.
    let (mut raw, mut datagram, mut connection) = (0.0, 0.0, 0.0);
    for _ in 0..3 {
        raw += messages_per_second(raw_madsim::round_trips, 5);
        datagram += messages_per_second(sim_datagram_round_trips, 5);
        connection += messages_per_second(sim_connection_round_trips, 5);
    }
    println!("typed messages per wall second (mean of 3 interleaved rounds):");
    println!("  raw madsim endpoint:  {:>12.0}", raw / 3.0);
    println!(
        "  sim datagram:         {:>12.0}  ratio to raw madsim: {:.2}",
        datagram / 3.0,
        datagram / raw
    );
    println!(
        "  sim FIFO connection:  {:>12.0}  ratio to raw madsim: {:.2}",
        connection / 3.0,
        connection / raw
    );
}
