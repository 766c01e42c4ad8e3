//! Code written against etcd-client's watch API runs unchanged in a coordsim world: its
//! events arrive in revision order, with previous values when asked, filters honoured,
//! cancel, progress and compaction answered as etcd answers them — and every watch is judged
//! by `etcd.watch_delivery`, across leader crashes.

mod watch_support;

use etcd_client::{Client, EventType, PutOptions, WatchOptions, WatchResponse};
use futures_util::StreamExt;
use models::etcd::EtcdBug;
use scenarios::{KnownBug, Outcome, driver, workload::UserNode};
use sim::{
    Seed,
    fault::{FaultSource, LeaderKiller},
    history::kv::WatchStep,
    report::for_each_seed,
    this_test,
};
use std::sync::Arc;
use watch_support::{
    ENDPOINTS, Seen, attempt_once, compact, idle, judged, message_within, scenario_of, sleep_ms,
};

/// Writes under `jobs/`: puts, and a delete of every fifth key.
async fn write_jobs(node: &UserNode, client: &mut Client) {
    for i in 0u32.. {
        let key = format!("jobs/k{}", i % 3);
        let _ = client.put(key.clone(), i.to_string(), None).await;
        if i % 5 == 4 {
            let _ = client.delete(key, None).await;
        }
        sleep_ms(node, 50).await;
    }
}

#[test]
fn events_arrive_in_revision_order_with_prev_kv_across_leader_crashes_and_are_judged() {
    let mut reopened = 0;
    for_each_seed(
        1..=3,
        this_test!(
            "events_arrive_in_revision_order_with_prev_kv_across_leader_crashes_and_are_judged"
        ),
        |seed| {
            let seen: Seen<WatchResponse> = Arc::default();
            let mut scenario = scenario_of("dropin-watch-order", 2, {
                let seen = seen.clone();
                move |node: UserNode| {
                    let seen = seen.clone();
                    async move {
                        let mut client = Client::connect(ENDPOINTS, None).await.expect("connects");
                        if node.index() != 0 {
                            return write_jobs(&node, &mut client).await;
                        }
                        let options = WatchOptions::new()
                            .with_prefix()
                            .with_prev_key()
                            .with_start_revision(1);
                        let mut stream = loop {
                            match client.watch("jobs/", Some(options.clone())).await {
                                Ok(stream) => break stream,
                                Err(_) => sleep_ms(&node, 100).await,
                            }
                        };
                        while let Ok(Some(response)) = stream.message().await {
                            seen.lock().unwrap().push(response);
                        }
                    }
                }
            });
            scenario.faults = FaultSource::LeaderKiller(LeaderKiller::default());
            let outcome = driver::run(&scenario, seed);
            assert!(outcome.is_clean(), "seed {seed}: {outcome:?}");
            let faults = &outcome.fault_counts;
            assert!(
                faults.crashes > 0 && faults.partitions > 0,
                "seed {seed}: the leader killer stranded and crashed leaders: {faults:?}"
            );
            let seen = seen.lock().unwrap().clone();
            assert!(seen[0].created() && seen[0].events().is_empty(), "{seen:?}");
            let events: Vec<_> = seen.iter().flat_map(|r| r.events().to_vec()).collect();
            assert!(events.len() > 50, "seed {seed}: {} events", events.len());
            let revisions: Vec<i64> = events
                .iter()
                .map(|event| event.kv().unwrap().mod_revision())
                .collect();
            assert!(
                revisions.windows(2).all(|pair| pair[0] < pair[1]),
                "seed {seed}: revision order: {revisions:?}"
            );
            for event in &events {
                let kv = event.kv().unwrap();
                let updates_a_key = event.event_type() == EventType::Delete || kv.version() > 1;
                // Keys are rewritten or deleted: their previous value is there (never compacted).
                let prev = event.prev_kv();
                assert_eq!(updates_a_key, prev.is_some(), "seed {seed}: {event:?}");
                if let Some(prev) = prev {
                    assert_eq!(prev.key(), kv.key());
                    assert!(prev.mod_revision() < kv.mod_revision());
                }
            }
            assert!(
                judged(&outcome, "etcd.watch_delivery") >= events.len() as u64,
                "seed {seed}: the watch checker judged every event"
            );
            reopened += reopenings(&outcome);
        },
    );
    assert!(
        reopened > 0,
        "a watch moved to another server after a fault"
    );
}

/// How many times the run's watches were opened again after their first server.
fn reopenings(outcome: &Outcome) -> usize {
    let history = outcome.history.as_ref().expect("the run kept its history");
    let recipe_events = history
        .records()
        .iter()
        .filter_map(|record| match &record.event {
            sim::history::Event::Recipe(event) => Some(event),
            _ => None,
        });
    let records = models::etcd::watch_records(recipe_events);
    let opened = records
        .iter()
        .filter(|record| matches!(record.step, WatchStep::Opened { .. }))
        .count();
    let watches = records
        .iter()
        .filter(|record| matches!(record.step, WatchStep::Created { .. }))
        .count();
    opened - watches
}

#[test]
fn progress_is_answered_on_request_and_notified_when_idle() {
    let seen: Seen<WatchResponse> = Arc::default();
    let mut scenario = scenario_of("dropin-watch-progress", 1, {
        let seen = seen.clone();
        move |_node: UserNode| {
            let seen = seen.clone();
            async move {
                let mut client = Client::connect(ENDPOINTS, None).await.expect("connects");
                let quiet = WatchOptions::new().with_progress_notify();
                let mut stream = client.watch("quiet", Some(quiet)).await.expect("watch");
                stream.watch("busy", None).await.expect("second watch");
                for i in 0..5 {
                    let _ = client.put("busy", i.to_string(), None).await;
                }
                stream.request_progress().await.expect("request");
                while let Ok(Some(response)) = stream.message().await {
                    seen.lock().unwrap().push(response);
                }
            }
        }
    });
    // etcd's default notify interval is 10 minutes, and so is the model's.
    scenario.fault_phase_ms = 620_000;
    let outcome = driver::run(&scenario, Seed::new(1));
    assert!(outcome.is_clean(), "{outcome:?}");
    let seen = seen.lock().unwrap().clone();
    let empty = |r: &&WatchResponse| r.events().is_empty() && !r.created() && !r.canceled();
    let requested: Vec<_> = seen.iter().filter(|r| r.watch_id() == -1).collect();
    assert_eq!(requested.len(), 1, "{seen:?}");
    assert!(empty(&requested[0]));
    let revision = requested[0].header().unwrap().revision();
    // The serving server's revision (it may lag the leader's 6 after five puts).
    assert!((1..=6).contains(&revision), "{revision}");
    let notified: Vec<_> = seen
        .iter()
        .filter(|r| r.watch_id() == 0)
        .filter(empty)
        .collect();
    assert!(
        !notified.is_empty(),
        "the idle watch was notified: {seen:?}"
    );
    assert_eq!(
        notified[0].header().unwrap().revision(),
        6,
        "caught up by then"
    );
    assert!(judged(&outcome, "etcd.watch_delivery") >= 5);
}

#[test]
fn a_watch_from_a_compacted_revision_is_canceled_with_the_compact_revision() {
    let seen: Seen<Option<WatchResponse>> = Arc::default();
    let scenario = scenario_of("dropin-watch-compacted", 1, {
        let seen = seen.clone();
        move |node: UserNode| {
            let seen = seen.clone();
            async move {
                let mut client = Client::connect(ENDPOINTS, None).await.expect("connects");
                let mut revision = 0;
                for value in ["1", "2", "3"] {
                    let put = client.put("a", value, None).await.expect("put");
                    revision = put.header().unwrap().revision();
                }
                compact(&node, revision).await;
                let from = |start| Some(WatchOptions::new().with_start_revision(start));
                let mut compacted = client.watch("a", from(revision - 1)).await.expect("watch");
                let mut at_compaction = client.watch("a", from(revision)).await.expect("watch");
                let mut looks = Vec::new();
                for _ in 0..3 {
                    looks.push(message_within(&node, &mut compacted, 1_000).await);
                }
                looks.push(message_within(&node, &mut at_compaction, 1_000).await);
                looks.push(message_within(&node, &mut at_compaction, 1_000).await);
                seen.lock().unwrap().extend(looks);
                idle(&node).await;
            }
        }
    });
    let outcome = driver::run(&scenario, Seed::new(2));
    assert!(outcome.is_clean(), "{outcome:?}");
    let seen = seen.lock().unwrap().clone();
    let [created, canceled, nothing, created_too, event] = &seen[..] else {
        panic!("five looks: {seen:?}");
    };
    assert!(created.as_ref().unwrap().created());
    let canceled = canceled.as_ref().expect("a response tells the compaction");
    assert!(
        canceled.canceled() && canceled.events().is_empty(),
        "{seen:?}"
    );
    let compact_revision = canceled.compact_revision();
    assert!(compact_revision > 1, "{canceled:?}");
    assert!(nothing.is_none(), "nothing after: {nothing:?}");
    assert!(created_too.as_ref().unwrap().created());
    let event = event.as_ref().unwrap();
    assert_eq!(event.compact_revision(), 0);
    assert_eq!(
        event.events()[0].kv().unwrap().mod_revision(),
        compact_revision,
        "a watch at the compaction revision gets its event"
    );
    assert!(judged(&outcome, "etcd.watch_delivery") >= 1);
}

/// A put that asks for the previous value and the watch event of that put carry the same
/// one.
#[test]
fn a_watch_event_carries_the_same_previous_value_as_the_put_answer() {
    let (from_put, from_watch, event) =
        attempt_once("dropin-watch-prev", None, |mut client, node| async move {
            client.put("a", "old", None).await.expect("put");
            // "From now" is the revision of the server that serves the watch: let every
            // server apply the put, or the watch could start before it.
            sleep_ms(&node, 500).await;
            let options = WatchOptions::new().with_prev_key();
            let mut stream = client.watch("a", Some(options)).await.expect("watch");
            let put = client
                .put("a", "new", Some(PutOptions::new().with_prev_key()))
                .await
                .expect("put");
            let from_put = put.prev_key().cloned();
            let _created = message_within(&node, &mut stream, 1_000).await;
            // The stream is a `Stream` too, as etcd-client's is.
            let event = stream.next().await.and_then(Result::ok);
            let from_watch = event
                .as_ref()
                .and_then(|e| e.events()[0].prev_kv().cloned());
            (from_put, from_watch, event)
        });
    assert_eq!(from_put.as_ref().map(|kv| kv.value()), Some(&b"old"[..]));
    assert_eq!(from_put, from_watch, "{event:?}");
}

/// The watch checker judges drop-in watches: with etcd's `compact_drops_tombstone` bug
/// (etcd-io/etcd#18089) a watch from the compaction revision misses the delete there, and
/// `etcd.watch_delivery` says so; without it the same code is clean.
#[test]
fn the_watch_checker_finds_a_delete_a_compaction_dropped_from_a_drop_in_watch() {
    let seen: Seen<Vec<(EventType, i64)>> = Arc::default();
    let scenario = scenario_of("dropin-watch-tombstone", 1, {
        let seen = seen.clone();
        move |node: UserNode| {
            let seen = seen.clone();
            async move {
                let mut client = Client::connect(ENDPOINTS, None).await.expect("connects");
                client.put("t", "1", None).await.expect("put");
                let deleted = client.delete("t", None).await.expect("delete");
                let revision = deleted.header().unwrap().revision();
                compact(&node, revision).await;
                let from = WatchOptions::new().with_start_revision(revision);
                let mut stream = client.watch("t", Some(from)).await.expect("watch");
                client.put("t", "2", None).await.expect("put");
                let mut events = Vec::new();
                while let Some(response) = message_within(&node, &mut stream, 1_000).await {
                    events.extend(
                        response
                            .events()
                            .iter()
                            .map(|event| (event.event_type(), event.kv().unwrap().mod_revision())),
                    );
                }
                seen.lock().unwrap().push(events);
                idle(&node).await;
            }
        }
    });
    let clean = driver::run(&scenario, Seed::new(4));
    assert!(clean.is_clean(), "{clean:?}");
    let buggy = scenario.with_bugs([KnownBug::Etcd(EtcdBug::CompactDropsTombstone)]);
    let found = driver::run(&buggy, Seed::new(4));
    let seen = seen.lock().unwrap().clone();
    let [correct, dropped] = &seen[..] else {
        panic!("two runs: {seen:?}");
    };
    let kinds = |events: &Vec<(EventType, i64)>| events.iter().map(|e| e.0).collect::<Vec<_>>();
    assert_eq!(kinds(correct), [EventType::Delete, EventType::Put]);
    assert_eq!(
        kinds(dropped),
        [EventType::Put],
        "the bug dropped the delete"
    );
    assert!(
        found
            .violations
            .iter()
            .any(|violation| violation.check == "etcd.watch_delivery"),
        "{found:?}"
    );
}
