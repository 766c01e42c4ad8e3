//! Raw madsim message throughput: the yardstick simulated stores are compared against.
//!
//! A typed-message round trip between two madsim nodes (boxed typed payloads, no
//! serialization), the one the transport, Raft and ZAB benchmarks all compare against.

use madsim::{net::Endpoint, runtime::Runtime};
use std::{net::SocketAddr, time::Duration, time::Instant};

/// A small typed message, never serialized (the transport benches send it over coordsim's
/// networks too, so that both sides carry the same payload).
#[derive(Clone, Debug)]
pub struct Ping {
    /// Its place in the run (the echo adds one).
    pub sequence: u64,
    /// A payload of a realistic small size.
    pub payload: [u64; 4],
}

/// Runs `round_trips` request/response round trips between two raw madsim nodes; returns
/// how many came back.
pub fn round_trips(round_trips: u64) -> u64 {
    let runtime = Runtime::with_seed_and_config(1, madsim::Config::default());
    let server_address: SocketAddr = "10.0.0.2:1".parse().expect("address");
    let client_address: SocketAddr = "10.0.0.1:1".parse().expect("address");
    let server = runtime.create_node().ip(server_address.ip()).build();
    let client = runtime.create_node().ip(client_address.ip()).build();
    runtime.block_on(async move {
        server.spawn(async move {
            let endpoint = Endpoint::bind(server_address).await.expect("bind");
            loop {
                let (message, from) = endpoint.recv_from_raw(0).await.expect("receive");
                let mut ping = *message.downcast::<Ping>().expect("a ping");
                ping.sequence += 1;
                endpoint
                    .send_to_raw(from, 0, Box::new(ping))
                    .await
                    .expect("send");
            }
        });
        let done = client.spawn(async move {
            let endpoint = Endpoint::bind(client_address).await.expect("bind");
            madsim::time::sleep(Duration::from_millis(10)).await;
            let mut received = 0;
            for sequence in 0..round_trips {
                let ping = Ping {
                    sequence,
                    payload: [sequence; 4],
                };
                endpoint
                    .send_to_raw(server_address, 0, Box::new(ping))
                    .await
                    .expect("send");
                let (message, _) = endpoint.recv_from_raw(0).await.expect("receive");
                received += message.downcast::<Ping>().expect("a ping").payload[0] - sequence + 1;
            }
            received
        });
        done.await.expect("client task")
    })
}

/// Raw madsim messages per wall second, over `repetitions` runs of `per_run` round trips.
pub fn messages_per_second(per_run: u64, repetitions: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..repetitions {
        assert_eq!(round_trips(per_run), per_run, "a round trip was lost");
    }
    (2 * per_run * u64::from(repetitions)) as f64 / start.elapsed().as_secs_f64()
}
