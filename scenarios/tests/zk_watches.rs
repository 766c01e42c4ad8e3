//! Watches under failover: every watch fires exactly once, in zxid order, before the client
//! can read the change — including watches re-registered on another server after the
//! client's server was partitioned away or crashed.

use models::zk::{ZkClient, ZkClientError, ZkEnsemble, ZkEnsembleConfig};
use scenarios::sweep::Sweep;
use sim::{
    NodeId, RunOutcome, Seed, World,
    fault::{FaultKind, SwarmConfig},
    history::{Event, OpId, zk::CreateMode, zk::ZkEvent},
};
use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

const PATHS: [&str; 3] = ["/w0", "/w1", "/w2"];

fn run(seed: Seed) -> RunOutcome {
    World::builder()
        .seed(seed)
        .servers(5)
        .clients(3)
        .swarm_faults(SwarmConfig {
            fault_phase_ms: 6_000,
            mean_interval_ms: 600,
            kinds: vec![FaultKind::Partition, FaultKind::Crash, FaultKind::Pause],
            ..SwarmConfig::default()
        })
        .time_limit(Duration::from_secs(60))
        .build()
        .expect("a valid world")
        .run(|sim| async move {
            let ensemble =
                ZkEnsemble::new(&sim, ZkEnsembleConfig::new(sim.servers())).expect("ensemble");
            ensemble.start(&sim);
            let stop = Arc::new(AtomicBool::new(false));
            let mut tasks = Vec::new();
            for (index, node) in sim.clients().into_iter().enumerate() {
                let (ensemble, context, stop) = (ensemble.clone(), sim.node(node), stop.clone());
                let mut config = ensemble.client_config(index as u32);
                config.session_timeout = Duration::from_secs(3);
                tasks.push(sim.spawn(node, async move {
                    let Ok(zk) = ensemble.connect(&context, config).await else {
                        return;
                    };
                    if index == 0 {
                        writer(zk, stop).await
                    } else {
                        watcher(zk, stop).await
                    }
                }));
            }
            sim.fault_phase_ended().await;
            sim.sleep(Duration::from_secs(3)).await;
            stop.store(true, Ordering::SeqCst);
            for task in tasks {
                let _ = task.await;
            }
            sim.sleep(Duration::from_secs(2)).await;
        })
}

async fn writer(zk: ZkClient, stop: Arc<AtomicBool>) {
    for path in PATHS {
        while !matches!(
            zk.create(path, "0", CreateMode::Persistent).await,
            Ok(_) | Err(ZkClientError::Api(_))
        ) {}
    }
    let mut round = 0u64;
    while !stop.load(Ordering::SeqCst) {
        round += 1;
        let path = PATHS[(round % 3) as usize];
        let _ = zk.set_data(path, &round.to_string(), None).await;
        if round.is_multiple_of(4) {
            let _ = zk
                .create(&format!("/w0/c{round}"), "", CreateMode::Persistent)
                .await;
        }
        if round.is_multiple_of(6) {
            let _ = zk
                .create(&format!("/x{}", round / 6), "", CreateMode::Persistent)
                .await;
        }
        if zk.is_expired() {
            return;
        }
    }
}

async fn watcher(zk: ZkClient, stop: Arc<AtomicBool>) {
    let mut round = 0u64;
    while !stop.load(Ordering::SeqCst) && !zk.is_expired() {
        round += 1;
        let mut watches = Vec::new();
        for path in PATHS {
            if let Ok((_, _, watch)) = zk.get_data_watch(path).await {
                watches.push(watch);
            }
        }
        if let Ok((_, _, watch)) = zk.get_children_watch("/w0").await {
            watches.push(watch);
        }
        if let Ok((_, watch)) = zk.exists_watch(&format!("/x{}", round + 1)).await {
            watches.push(watch);
        }
        // Each watch fires once, when its node next changes.
        for watch in watches {
            let _ = watch.fired().await;
        }
    }
}

/// Registrations delivered after their client reconnected (re-registered on a new server).
fn delivered_after_reconnect(outcome: &RunOutcome) -> usize {
    let mut registered: BTreeMap<OpId, (NodeId, usize)> = BTreeMap::new();
    let mut reconnects: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut count = 0;
    for record in outcome.history.records() {
        let Some(node) = record.node else { continue };
        match &record.event {
            Event::Zk(ZkEvent::WatchRegistered { op_id, .. }) => {
                let epoch = reconnects.get(&node).copied().unwrap_or(0);
                registered.insert(*op_id, (node, epoch));
            }
            Event::Zk(ZkEvent::SessionResumed { .. }) => {
                *reconnects.entry(node).or_default() += 1;
            }
            Event::Zk(ZkEvent::WatchDelivered { op_id, .. }) => {
                if let Some(&(client, epoch)) = registered.get(op_id)
                    && reconnects.get(&client).copied().unwrap_or(0) > epoch
                {
                    count += 1;
                }
            }
            _ => {}
        }
    }
    count
}

#[test]
fn watches_fire_exactly_once_in_zxid_order_through_failover() {
    let summary = Sweep::new(
        "scenarios",
        "zk_watches",
        "watches_fire_exactly_once_in_zxid_order_through_failover",
        10,
    )
    .run(run, |outcome| {
        // ZAB's indexes are zxids (protocol.applied_in_order needs to know).
        let context = checks::CheckContext {
            index_kind: checks::IndexKind::Zxid,
            ..Default::default()
        };
        let mut violations = checks::run(checks::protocol::CHECKS, &outcome.history, &context);
        violations.extend(checks::run(checks::zk::CHECKS, &outcome.history, &context));
        violations
    });
    summary.assert_clean();
    let faults = &summary.fault_totals;
    assert!(
        faults.partitions + faults.crashes + faults.pauses > 0,
        "{faults}"
    );
    // The watches really did fire, through failovers too.
    let mut delivered = 0;
    let mut after_reconnect = 0;
    for &seed in &summary.seeds {
        let outcome = run(seed);
        delivered += outcome
            .history
            .records()
            .iter()
            .filter(|r| matches!(r.event, Event::Zk(ZkEvent::WatchDelivered { .. })))
            .count();
        after_reconnect += delivered_after_reconnect(&outcome);
        // The two watch checkers are not vacuous on this history: duplicating a delivery or
        // swapping two deliveries makes them fire.
        let records = outcome.history.records().to_vec();
        let deliveries: Vec<usize> = records
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r.event, Event::Zk(ZkEvent::WatchDelivered { .. })))
            .map(|(index, _)| index)
            .collect();
        if deliveries.len() >= 2 {
            let mut doubled = records.clone();
            doubled.push(records[deliveries[0]].clone());
            assert!(
                !checks::zk::watch_delivery::check(
                    &sim::history::History::from_records(doubled),
                    Duration::from_secs(1)
                )
                .is_empty(),
                "a duplicated delivery is caught"
            );
            let mut swapped = records.clone();
            let (a, b) = (deliveries[0], deliveries[deliveries.len() - 1]);
            let (first_zxid, last_zxid) = match (&records[a].event, &records[b].event) {
                (
                    Event::Zk(ZkEvent::WatchDelivered { zxid: x, .. }),
                    Event::Zk(ZkEvent::WatchDelivered { zxid: y, .. }),
                ) => (*x, *y),
                _ => unreachable!(),
            };
            if first_zxid < last_zxid && records[a].node == records[b].node {
                let (event_a, event_b) = (records[a].event.clone(), records[b].event.clone());
                swapped[a].event = event_b;
                swapped[b].event = event_a;
                assert!(
                    !checks::zk::watch_order::check(&sim::history::History::from_records(swapped))
                        .is_empty(),
                    "swapped deliveries are caught"
                );
            }
        }
    }
    println!("watch deliveries: {delivered}, of which after a reconnect: {after_reconnect}");
    assert!(delivered > 100, "watches fired: {delivered}");
    assert!(
        after_reconnect > 0,
        "no watch was re-registered after a failover"
    );
}
