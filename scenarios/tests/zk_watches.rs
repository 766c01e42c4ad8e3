//! Watches under failover: every watch fires exactly once, in zxid order, before the client
//! can read the change — including watches re-registered on another server after the
//! client's server was partitioned away or crashed. Runs the catalogue's `zab_watches`
//! through the one driver.

use scenarios::{catalogue, sweep::Sweep};
use sim::{
    NodeId,
    history::{Event, History, OpId, zk::ZkEvent},
};
use std::{collections::BTreeMap, time::Duration};

/// Registrations delivered after their client reconnected (re-registered on a new server).
fn delivered_after_reconnect(history: &History) -> usize {
    let mut registered: BTreeMap<OpId, (NodeId, usize)> = BTreeMap::new();
    let mut reconnects: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut count = 0;
    for record in history.records() {
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
    let scenario = catalogue::get("zab_watches").unwrap();
    let mut delivered = 0;
    let mut after_reconnect = 0;
    let summary = Sweep::new(
        scenario,
        "scenarios",
        "zk_watches",
        "watches_fire_exactly_once_in_zxid_order_through_failover",
        50,
    )
    .run_inspecting(|outcome| {
        let history = outcome
            .history
            .as_ref()
            .expect("an inspected run has its history");
        delivered += history
            .records()
            .iter()
            .filter(|r| matches!(r.event, Event::Zk(ZkEvent::WatchDelivered { .. })))
            .count();
        after_reconnect += delivered_after_reconnect(history);
        not_vacuous(history);
    });
    summary.assert_clean();
    summary.assert_faults_fired();
    println!("watch deliveries: {delivered}, of which after a reconnect: {after_reconnect}");
    assert!(delivered > 100, "watches fired: {delivered}");
    assert!(
        after_reconnect > 0,
        "no watch was re-registered after a failover"
    );
}

/// The two watch checkers are not vacuous on this history: duplicating a delivery or
/// swapping two deliveries makes them fire.
fn not_vacuous(history: &History) {
    // The two watch checkers are not vacuous on this history: duplicating a delivery or
    // swapping two deliveries makes them fire.
    let records = history.records().to_vec();
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
