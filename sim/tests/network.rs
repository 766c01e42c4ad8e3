//! The transport does what it claims: partitions, clogs, loss, duplication, reordering,
//! FIFO order, and breaks that both ends observe.

use sim::{
    NodeId, Ratio, Seed, World,
    fault::PartitionShape,
    net::{BreakReason, ConnectError},
};
use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

const S1: NodeId = NodeId::server(0);
const S2: NodeId = NodeId::server(1);
const S3: NodeId = NodeId::server(2);
const C1: NodeId = NodeId::client(0);

fn world(servers: usize, clients: usize) -> sim::WorldBuilder {
    World::builder()
        .seed(Seed::new(7))
        .servers(servers)
        .clients(clients)
        .clock_skew(Duration::ZERO, 0)
}

fn groups(groups: &[&[NodeId]]) -> PartitionShape {
    PartitionShape::Groups {
        groups: groups.iter().map(|g| g.to_vec()).collect(),
    }
}

#[test]
fn no_delivery_across_a_partition_and_delivery_after_heal() {
    let outcome = world(3, 0).build().unwrap().run(|sim| async move {
        let network = sim.datagram_network::<u32>();
        let (s1, s2, s3) = (
            network.endpoint(S1),
            network.endpoint(S2),
            network.endpoint(S3),
        );
        sim.nemesis().partition(groups(&[&[S1], &[S2, S3]]));
        s1.send(S2, 1);
        s1.send(S3, 2);
        s2.send(S1, 3);
        s2.send(S3, 4);
        sim.sleep(Duration::from_secs(1)).await;
        assert!(
            s1.try_recv().is_none(),
            "s1 heard from across the partition"
        );
        assert!(
            s2.try_recv().is_none(),
            "s2 heard from across the partition"
        );
        assert_eq!(s3.try_recv().map(|d| (d.from, d.message)), Some((S2, 4)));
        sim.nemesis().heal();
        s1.send(S2, 5);
        s2.send(S1, 6);
        sim.sleep(Duration::from_millis(100)).await;
        assert_eq!(s2.try_recv().map(|d| (d.from, d.message)), Some((S1, 5)));
        assert_eq!(s1.try_recv().map(|d| (d.from, d.message)), Some((S2, 6)));
    });
    let counts = &outcome.fault_counts;
    assert_eq!((counts.partitions, counts.heals), (1, 1));
    assert_eq!(counts.messages_dropped_partition, 3);
    assert_eq!(counts.messages_sent, 6);
}

#[test]
fn a_one_way_clog_blocks_only_that_direction() {
    let outcome = world(2, 0).build().unwrap().run(|sim| async move {
        let network = sim.datagram_network::<&'static str>();
        let (s1, s2) = (network.endpoint(S1), network.endpoint(S2));
        sim.nemesis().clog(S1, S2);
        for _ in 0..10 {
            s1.send(S2, "forward");
            s2.send(S1, "backward");
        }
        sim.sleep(Duration::from_secs(1)).await;
        assert!(s2.try_recv().is_none(), "the clogged direction delivered");
        let mut backward = 0;
        while let Some(datagram) = s1.try_recv() {
            assert_eq!(datagram.message, "backward");
            backward += 1;
        }
        assert_eq!(backward, 10);
        sim.nemesis().unclog(S1, S2);
        s1.send(S2, "forward");
        sim.sleep(Duration::from_millis(100)).await;
        assert_eq!(s2.try_recv().map(|d| d.message), Some("forward"));
    });
    assert_eq!(
        (outcome.fault_counts.clogs, outcome.fault_counts.unclogs),
        (1, 1)
    );
    assert_eq!(outcome.fault_counts.messages_dropped_partition, 10);
}

#[test]
fn loss_drops_about_the_configured_fraction_and_every_drop_is_counted() {
    let received = Arc::new(Mutex::new(0u64));
    let observed = received.clone();
    let outcome = world(2, 0)
        .packet_loss(Ratio::new(1, 4))
        .build()
        .unwrap()
        .run(|sim| async move {
            let network = sim.datagram_network::<u64>();
            let (s1, s2) = (network.endpoint(S1), network.endpoint(S2));
            for i in 0..4_000 {
                s1.send(S2, i);
            }
            sim.sleep(Duration::from_secs(1)).await;
            while s2.try_recv().is_some() {
                *observed.lock().unwrap() += 1;
            }
        });
    let received = *received.lock().unwrap();
    let counts = &outcome.fault_counts;
    assert!(
        (2_800..3_200).contains(&received),
        "received {received} of 4000 at 1/4 loss"
    );
    assert_eq!(
        received + counts.messages_dropped_loss,
        counts.messages_sent
    );
}

#[test]
fn duplication_really_duplicates() {
    let outcome = world(2, 0)
        .duplication(Ratio::new(1, 1))
        .build()
        .unwrap()
        .run(|sim| async move {
            let network = sim.datagram_network::<u64>();
            let (s1, s2) = (network.endpoint(S1), network.endpoint(S2));
            for i in 0..50 {
                s1.send(S2, i);
            }
            sim.sleep(Duration::from_secs(1)).await;
            let mut copies = vec![0; 50];
            while let Some(datagram) = s2.try_recv() {
                copies[datagram.message as usize] += 1;
            }
            assert!(
                copies.iter().all(|&n| n == 2),
                "copies per message: {copies:?}"
            );
        });
    assert_eq!(outcome.fault_counts.messages_duplicated, 50);
}

#[test]
fn datagrams_are_reordered_but_connections_keep_fifo_order() {
    world(1, 1)
        .latency(Duration::from_millis(1)..=Duration::from_millis(50))
        .build()
        .unwrap()
        .run(|sim| async move {
            // Datagrams: random latency reorders them.
            let datagrams = sim.datagram_network::<u32>();
            let (client, server) = (datagrams.endpoint(C1), datagrams.endpoint(S1));
            for i in 0..200 {
                client.send(S1, i);
            }
            let mut arrival = Vec::new();
            for _ in 0..200 {
                arrival.push(server.recv().await.message);
            }
            assert_ne!(
                arrival,
                (0..200).collect::<Vec<_>>(),
                "datagrams were never reordered"
            );

            // Connections: same latencies, arrival in send order.
            let streams = sim.stream_network::<u32>();
            let listener = streams.listen(S1);
            let client = streams
                .connect(C1, S1, Duration::from_secs(1))
                .await
                .unwrap();
            let server = listener.accept().await;
            assert_eq!((server.peer(), client.peer()), (C1, S1));
            for i in 0..200 {
                client.send(i).unwrap();
            }
            for i in 0..200 {
                assert_eq!(server.recv().await.unwrap(), i);
            }
        });
}

#[test]
fn a_partition_breaks_a_connection_and_both_ends_see_it() {
    let outcome = world(1, 1).build().unwrap().run(|sim| async move {
        let streams = sim.stream_network::<u32>();
        let listener = streams.listen(S1);
        let client = streams
            .connect(C1, S1, Duration::from_secs(1))
            .await
            .unwrap();
        let server = listener.accept().await;
        client.send(1).unwrap();
        assert_eq!(server.recv().await.unwrap(), 1);
        // In flight when the partition strikes: must never be delivered.
        client.send(2).unwrap();
        server.send(3).unwrap();
        let server_side = sim.spawn(S1, async move { server.recv().await });
        sim.nemesis().isolate(C1);
        let broken = server_side.await.unwrap().unwrap_err();
        assert_eq!(broken.reason, BreakReason::Partitioned);
        assert_eq!(
            client.recv().await.unwrap_err().reason,
            BreakReason::Partitioned
        );
        assert!(
            client.send(4).is_err(),
            "sending on a broken connection succeeded"
        );

        // Across the partition a new connection cannot be made; after heal it can, as a
        // new epoch.
        let attempt = streams.connect(C1, S1, Duration::from_millis(300)).await;
        assert_eq!(attempt.unwrap_err(), ConnectError::TimedOut);
        sim.nemesis().heal();
        let again = streams
            .connect(C1, S1, Duration::from_secs(1))
            .await
            .unwrap();
        assert_ne!(again.id(), client.id());
        let server_again = listener.accept().await;
        again.send(5).unwrap();
        assert_eq!(
            server_again.recv().await.unwrap(),
            5,
            "an old-epoch message leaked"
        );
    });
    assert_eq!(outcome.fault_counts.connections_broken, 1);
    assert_eq!(outcome.fault_counts.messages_dropped_broken_connection, 2);
}

#[test]
fn a_crash_breaks_connections_and_refuses_new_ones_until_restart() {
    world(1, 1).build().unwrap().run(|sim| async move {
        let streams = sim.stream_network::<u32>();
        let server_streams = streams.clone();
        sim.start(S1, move |context| {
            let streams = server_streams.clone();
            async move {
                let listener = streams.listen(context.id());
                let incarnation = context.incarnation();
                loop {
                    let connection = listener.accept().await;
                    sim::task::spawn_local(async move {
                        while let Ok(value) = connection.recv().await {
                            let _ = connection.send(value + 1000 * incarnation);
                        }
                    });
                }
            }
        });
        sim.sleep(Duration::from_millis(10)).await;
        let client = streams
            .connect(C1, S1, Duration::from_secs(1))
            .await
            .unwrap();
        client.send(1).unwrap();
        assert_eq!(client.recv().await.unwrap(), 1);
        sim.nemesis().crash(S1);
        assert_eq!(
            client.recv().await.unwrap_err().reason,
            BreakReason::Crashed { node: S1 }
        );
        let refused = streams.connect(C1, S1, Duration::from_secs(1)).await;
        assert_eq!(refused.unwrap_err(), ConnectError::Refused);
        sim.nemesis().restart(S1);
        sim.sleep(Duration::from_millis(10)).await;
        let client = streams
            .connect(C1, S1, Duration::from_secs(1))
            .await
            .unwrap();
        client.send(2).unwrap();
        assert_eq!(
            client.recv().await.unwrap(),
            1002,
            "the restarted program is incarnation 1"
        );
    });
}

#[test]
fn closing_delivers_what_was_sent_then_the_close() {
    world(1, 1).build().unwrap().run(|sim| async move {
        let streams = sim.stream_network::<u32>();
        let listener = streams.listen(S1);
        let client = streams
            .connect(C1, S1, Duration::from_secs(1))
            .await
            .unwrap();
        let server = listener.accept().await;
        client.send(1).unwrap();
        client.send(2).unwrap();
        drop(client);
        assert_eq!(server.recv().await.unwrap(), 1);
        assert_eq!(server.recv().await.unwrap(), 2);
        assert_eq!(
            server.recv().await.unwrap_err().reason,
            BreakReason::Closed { by: C1 }
        );
    });
}

#[test]
fn datagrams_to_a_crashed_node_are_dropped_and_counted() {
    let outcome = world(2, 0).build().unwrap().run(|sim| async move {
        let network = sim.datagram_network::<u32>();
        let (s1, s2) = (network.endpoint(S1), network.endpoint(S2));
        s1.send(S2, 1); // in flight when s2 crashes: dropped
        sim.nemesis().crash(S2);
        s1.send(S2, 2); // s2 is down: dropped
        sim.sleep(Duration::from_millis(100)).await;
        sim.nemesis().restart(S2);
        s1.send(S2, 3);
        sim.sleep(Duration::from_millis(100)).await;
        assert_eq!(s2.try_recv().map(|d| d.message), Some(3));
        assert!(s2.try_recv().is_none());
    });
    assert_eq!(outcome.fault_counts.messages_dropped_node_down, 2);
}

#[test]
fn latency_stays_within_the_configured_range() {
    world(2, 0)
        .latency(Duration::from_millis(20)..=Duration::from_millis(30))
        .build()
        .unwrap()
        .run(|sim| async move {
            let network = sim.datagram_network::<sim::time::SimTime>();
            let (s1, s2) = (network.endpoint(S1), network.endpoint(S2));
            for _ in 0..100 {
                s1.send(S2, sim.now());
                let datagram = s2.recv().await;
                let latency = sim.now().saturating_duration_since(datagram.message);
                assert!(
                    (Duration::from_millis(20)..=Duration::from_millis(31)).contains(&latency),
                    "latency {latency:?}"
                );
            }
        });
}
