//! Persistent watches (`addWatch`) in the model, judged by the watch checkers: a persistent
//! and a recursive watch deliver every change they watch, in zxid order, and a removed watch
//! delivers nothing more. The checkers must pass the
//! model's own history and have judged its watches.

use checks::zk::{watch_delivery, watch_order};
use models::zk::{ZkClient, ZkEnsemble, ZkEnsembleConfig};
use sim::{
    Seed, Sim, World,
    history::{
        Event,
        zk::{AddWatchMode, CreateMode, WatchEventType, ZkEvent},
    },
};
use std::time::Duration;

/// Runs `body` with a watcher client (on c1) and a writer client (on c2) of a healthy
/// three-server ensemble.
fn with_clients<F, Fut>(seed: u64, body: F) -> sim::RunOutcome
where
    F: FnOnce(Sim, ZkClient, ZkClient) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    World::builder()
        .seed(Seed::new(seed))
        .servers(3)
        .clients(2)
        .time_limit(Duration::from_secs(120))
        .build()
        .expect("a valid world")
        .run(move |sim: Sim| async move {
            let ensemble = ZkEnsemble::new(&sim, ZkEnsembleConfig::new(sim.servers())).unwrap();
            ensemble.start(&sim);
            let (c1, c2) = (sim.clients()[0], sim.clients()[1]);
            let (context1, context2) = (sim.node(c1), sim.node(c2));
            let (config1, config2) = (ensemble.client_config(0), ensemble.client_config(1));
            let writer_ensemble = ensemble.clone();
            let writer = sim
                .spawn(c2, async move {
                    writer_ensemble.connect(&context2, config2).await.unwrap()
                })
                .await
                .unwrap();
            let watcher = sim
                .spawn(c1, async move {
                    ensemble.connect(&context1, config1).await.unwrap()
                })
                .await
                .unwrap();
            body(sim, watcher, writer).await;
        })
}

#[test]
fn persistent_watches_deliver_every_change_and_nothing_after_removal() {
    let outcome = with_clients(24, |sim, watcher, writer| async move {
        let (c1, c2) = (sim.clients()[0], sim.clients()[1]);
        let setup = writer.clone();
        sim.spawn(c2, async move {
            setup
                .create("/p", "0", CreateMode::Persistent)
                .await
                .unwrap();
            setup
                .create("/r", "0", CreateMode::Persistent)
                .await
                .unwrap();
        })
        .await
        .unwrap();
        let (node, recursive) = sim
            .spawn(c1, async move {
                let node = watcher.watch("/p", AddWatchMode::Persistent).await.unwrap();
                let recursive = watcher
                    .watch("/r", AddWatchMode::PersistentRecursive)
                    .await
                    .unwrap();
                (node, recursive)
            })
            .await
            .unwrap();
        let changes = writer.clone();
        sim.spawn(c2, async move {
            for round in 0..3 {
                changes
                    .set_data("/p", &round.to_string(), None)
                    .await
                    .unwrap();
                let child = format!("/r/c{round}");
                changes
                    .create(&child, "", CreateMode::Persistent)
                    .await
                    .unwrap();
                let grandchild = format!("{child}/g");
                changes
                    .create(&grandchild, "", CreateMode::Persistent)
                    .await
                    .unwrap();
            }
            changes
                .create("/p/kid", "", CreateMode::Persistent)
                .await
                .unwrap();
        })
        .await
        .unwrap();
        sim.sleep(Duration::from_secs(1)).await;
        let events = sim
            .spawn(c1, async move {
                let mut seen = Vec::new();
                for _ in 0..4 {
                    seen.push(node.changed().await.unwrap().event);
                }
                for _ in 0..6 {
                    seen.push(recursive.changed().await.unwrap().event);
                }
                node.remove().await.unwrap();
                (seen, recursive)
            })
            .await
            .unwrap();
        let (seen, _recursive) = events;
        assert_eq!(
            seen.iter()
                .filter(|event| **event == WatchEventType::NodeChildrenChanged)
                .count(),
            1,
            "the node watch sees its child once; the recursive watch never: {seen:?}"
        );
        // /p's watch is removed: this change reaches nobody; the recursive one stays.
        sim.spawn(c2, async move {
            writer.set_data("/p", "after", None).await.unwrap();
            writer.set_data("/r/c0/g", "x", None).await.unwrap();
        })
        .await
        .unwrap();
        sim.sleep(Duration::from_secs(1)).await;
    });
    let history = &outcome.history;
    let delivered = |removed_path: &str| {
        history
            .records()
            .iter()
            .filter(|record| {
                matches!(&record.event, Event::Zk(ZkEvent::WatchDelivered { path, .. }) if path == removed_path)
            })
            .count()
    };
    // /p: three sets, its child; nothing after the removal. /r/c0/g: its create and the set.
    assert_eq!(delivered("/p"), 4);
    assert_eq!(delivered("/r/c0/g"), 2);
    let removed = history
        .records()
        .iter()
        .filter(|record| matches!(record.event, Event::Zk(ZkEvent::WatchRemoved { .. })))
        .count();
    assert_eq!(removed, 1);
    let delivery = watch_delivery::check(history, Duration::from_millis(500));
    assert!(delivery.violations.is_empty(), "{:?}", delivery.violations);
    assert_eq!(delivery.judged, 2, "both persistent watches judged");
    let order = watch_order::check(history);
    assert!(order.violations.is_empty(), "{:?}", order.violations);
    assert_eq!(order.judged, 4, "two registrations, each with deliveries");
}

/// The server the client on `client` attached to last.
fn attached_server(sim: &Sim, client: sim::NodeId) -> sim::NodeId {
    let history = sim.history_snapshot();
    history
        .records()
        .iter()
        .rev()
        .filter(|record| record.node == Some(client))
        .find_map(|record| match record.event {
            Event::Zk(ZkEvent::SessionEstablished { server, .. })
            | Event::Zk(ZkEvent::SessionResumed { server, .. }) => Some(server),
            _ => None,
        })
        .expect("the client attached")
}

#[test]
fn persistent_watches_survive_a_reconnect_to_another_server() {
    let outcome = with_clients(25, |sim, watcher, writer| async move {
        let (c1, c2) = (sim.clients()[0], sim.clients()[1]);
        let (node, recursive) = sim
            .spawn(c1, async move {
                let node = watcher.watch("/p", AddWatchMode::Persistent).await.unwrap();
                let recursive = watcher
                    .watch("/r", AddWatchMode::PersistentRecursive)
                    .await
                    .unwrap();
                (node, recursive)
            })
            .await
            .unwrap();
        // The watcher's server crashes: it resumes its session on another one, which gets
        // its persistent watches with SetWatches.
        let server = attached_server(&sim, c1);
        sim.nemesis().crash(server);
        sim.sleep(Duration::from_secs(3)).await;
        sim.spawn(c2, async move {
            writer
                .create("/p", "", CreateMode::Persistent)
                .await
                .unwrap();
            writer
                .create("/r", "", CreateMode::Persistent)
                .await
                .unwrap();
            writer
                .create("/r/c", "", CreateMode::Persistent)
                .await
                .unwrap();
        })
        .await
        .unwrap();
        let events = sim
            .spawn(c1, async move {
                let first = node.changed().await.unwrap();
                let second = recursive.changed().await.unwrap();
                let third = recursive.changed().await.unwrap();
                [first, second, third].map(|event| (event.event, event.path))
            })
            .await
            .unwrap();
        assert_eq!(
            events,
            [
                (WatchEventType::NodeCreated, "/p".to_string()),
                (WatchEventType::NodeCreated, "/r".to_string()),
                (WatchEventType::NodeCreated, "/r/c".to_string()),
            ]
        );
        assert_ne!(
            attached_server(&sim, c1),
            server,
            "resumed on another server"
        );
    });
    let resumed = outcome
        .history
        .records()
        .iter()
        .any(|record| matches!(record.event, Event::Zk(ZkEvent::SessionResumed { .. })));
    assert!(resumed);
}
