//! Code written against etcd-client's watch API runs unchanged in a coordsim world: its
//! events arrive in revision order, with previous values when asked, filters honoured,
//! cancel, progress and compaction answered as etcd answers them — and every watch is judged
//! by `etcd.watch_delivery`, across leader crashes.

use etcd_client::{
    Client, Error, EventType, PutOptions, WatchFilterType, WatchOptions, WatchResponse,
};
use futures_util::{
    StreamExt,
    future::{Either, select},
};
use scenarios::{
    Outcome, Scenario, driver,
    scenario::Store,
    workload::{UserCode, UserNode},
};
use sim::{
    Seed,
    fault::{Fault, FaultPlan, FaultSource, LeaderKiller, ScheduledFault},
};
use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

const ENDPOINTS: [&str; 3] = ["s1:2379", "s2:2379", "s3:2379"];

/// What the user code saw, shared with the test.
type Seen<T> = Arc<Mutex<Vec<T>>>;

/// A scenario of 3 servers running `program` on `clients` client nodes.
fn scenario_of<P, F>(name: &str, clients: usize, program: P) -> Scenario
where
    P: Fn(UserNode) -> F + Send + Sync + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    Scenario::of_user_code(UserCode::new(name, Store::Raft, program), 3, clients)
}

fn judged(outcome: &Outcome, check: &str) -> u64 {
    outcome
        .checks
        .iter()
        .find(|tally| tally.check == check)
        .map_or(0, |tally| tally.judged)
}

async fn sleep_ms(node: &UserNode, ms: u64) {
    node.context().sim().sleep(Duration::from_millis(ms)).await;
}

/// Production code idles once its job is done: the run stops it.
async fn idle(node: &UserNode) {
    loop {
        sleep_ms(node, 1_000).await;
    }
}

/// The next message, or `None` when none comes within `ms`.
async fn message_within(
    node: &UserNode,
    stream: &mut etcd_client::WatchStream,
    ms: u64,
) -> Option<WatchResponse> {
    let message = Box::pin(stream.message());
    let timeout = Box::pin(sleep_ms(node, ms));
    match select(message, timeout).await {
        Either::Left((Ok(message), _)) => message,
        _ => None,
    }
}

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
    for seed in 1..=3 {
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
        let outcome = driver::run(&scenario, Seed::new(seed));
        assert!(outcome.is_clean(), "seed {seed}: {outcome:?}");
        assert!(
            outcome.fault_counts.crashes > 0,
            "seed {seed}: the leader killer crashed servers"
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
    }
}

#[test]
fn filters_leave_events_out_and_cancel_stops_one_watch_of_a_shared_stream() {
    let seen: Seen<WatchResponse> = Arc::default();
    let scenario = scenario_of("dropin-watch-cancel", 2, {
        let seen = seen.clone();
        move |node: UserNode| {
            let seen = seen.clone();
            async move {
                let mut client = Client::connect(ENDPOINTS, None).await.expect("connects");
                if node.index() != 0 {
                    sleep_ms(&node, 500).await;
                    for i in 0u32.. {
                        let _ = client.put(format!("f/{i}"), "v", None).await;
                        let _ = client.delete(format!("f/{i}"), None).await;
                        let _ = client.put(format!("g/{i}"), "v", None).await;
                        sleep_ms(&node, 50).await;
                    }
                    return;
                }
                let puts_only = WatchOptions::new()
                    .with_prefix()
                    .with_filters([WatchFilterType::NoDelete]);
                let mut stream = client.watch("f/", Some(puts_only)).await.expect("watch");
                stream
                    .watch("g/", Some(WatchOptions::new().with_prefix()))
                    .await
                    .expect("second watch on the stream");
                let mut f_events = 0;
                let mut canceled = false;
                while let Ok(Some(response)) = stream.message().await {
                    if response.watch_id() == 0 {
                        f_events += response.events().len();
                    }
                    seen.lock().unwrap().push(response);
                    if f_events >= 6 && !canceled {
                        stream.cancel(0).await.expect("cancel");
                        canceled = true;
                    }
                }
            }
        }
    });
    let outcome = driver::run(&scenario, Seed::new(7));
    assert!(outcome.is_clean(), "{outcome:?}");
    let seen = seen.lock().unwrap().clone();
    let created: Vec<i64> = seen
        .iter()
        .filter(|r| r.created())
        .map(|r| r.watch_id())
        .collect();
    assert_eq!(created, [0, 1], "etcd assigns ids from 0 on the stream");
    let f: Vec<_> = seen.iter().filter(|r| r.watch_id() == 0).collect();
    let f_events: Vec<_> = f.iter().flat_map(|r| r.events()).collect();
    assert!(f_events.len() >= 6);
    assert!(
        f_events.iter().all(|e| e.event_type() == EventType::Put),
        "NoDelete leaves deletes out"
    );
    let last = f.last().unwrap();
    assert!(last.canceled() && last.events().is_empty(), "{last:?}");
    assert_eq!(f.iter().filter(|r| r.canceled()).count(), 1);
    let cancel_at = seen.iter().position(|r| r.canceled()).unwrap();
    let g_after = seen[cancel_at..]
        .iter()
        .filter(|r| r.watch_id() == 1 && !r.events().is_empty())
        .count();
    assert!(g_after > 5, "the other watch goes on: {g_after}");
    assert!(judged(&outcome, "etcd.watch_delivery") > 10);
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
                // The drop-in has no `compact` yet: the model's client compacts.
                let cluster = sim::Sim::current()
                    .and_then(|sim| sim.service::<models::etcd::EtcdCluster>())
                    .unwrap();
                let mut compactor =
                    models::etcd::EtcdClient::new(&cluster, node.context().clone(), 999);
                let compacted = compactor.compact(revision as u64).await;
                assert!(
                    matches!(compacted, sim::history::OpResult::Ok { .. }),
                    "{compacted:?}"
                );
                // A watch is served by any server: give the followers time to apply the
                // compaction (etcd's own watches are not linearized either).
                sleep_ms(&node, 500).await;
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

/// Runs `attempt` once on one client node of a quiet world and returns what it gave.
fn attempt_once<T, A, F>(name: &str, plan: Option<FaultPlan>, attempt: A) -> T
where
    T: Send + 'static,
    A: Fn(Client, UserNode) -> F + Send + Sync + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let seen: Seen<T> = Arc::default();
    let attempt = Arc::new(attempt);
    let mut scenario = scenario_of(name, 1, {
        let seen = seen.clone();
        move |node: UserNode| {
            let (seen, attempt) = (seen.clone(), attempt.clone());
            async move {
                let client = Client::connect(ENDPOINTS, None).await.expect("connects");
                let answer = attempt(client, node.clone()).await;
                seen.lock().unwrap().push(answer);
                idle(&node).await;
            }
        }
    });
    scenario.fault_phase_ms = 6_000;
    if let Some(plan) = plan {
        scenario = scenario.with_plan(plan);
    }
    driver::run(&scenario, Seed::new(1));
    let mut seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{name}: the attempt ran once");
    seen.pop().unwrap()
}

#[test]
fn a_key_or_range_end_that_is_not_utf8_is_invalid_args() {
    let errors = attempt_once("dropin-watch-utf8", None, |mut client, _| async move {
        let key = client.watch(vec![0xff, 0xfe], None).await.err();
        let end = client
            .watch("a", Some(WatchOptions::new().with_range(vec![0xff])))
            .await
            .err();
        [key, end].map(|error| error.map(|e| e.to_string()))
    });
    for (error, what) in errors.iter().zip(["key", "range end"]) {
        let error = error.as_deref().expect("an error");
        assert!(error.starts_with("invalid arguments: "), "{error}");
        assert!(error.contains(what) && error.contains("UTF-8"), "{error}");
    }
}

#[test]
fn a_negative_start_revision_is_invalid_args() {
    let error = attempt_once("dropin-watch-negative", None, |mut client, _| async move {
        let options = WatchOptions::new().with_start_revision(-3);
        client.watch("a", Some(options)).await.err()
    });
    assert!(
        matches!(&error, Some(Error::InvalidArgs(message)) if message.contains("-3")),
        "{error:?}"
    );
}

#[test]
fn a_watch_id_in_use_on_the_stream_is_refused_created_and_canceled() {
    let answers = attempt_once(
        "dropin-watch-duplicate",
        None,
        |mut client, node| async move {
            let mine = WatchOptions::new().with_watch_id(7);
            let mut stream = client.watch("a", Some(mine.clone())).await.expect("watch");
            stream.watch("b", Some(mine)).await.expect("sent");
            // An id nobody watches: etcd does not answer.
            stream.cancel(42).await.expect("sent");
            let mut answers = Vec::new();
            while let Some(answer) = message_within(&node, &mut stream, 1_000).await {
                answers.push((answer.watch_id(), answer.created(), answer.canceled()));
            }
            answers
        },
    );
    assert_eq!(answers, [(7, true, false), (-1, true, true)]);
}

#[test]
fn a_watch_no_server_answers_is_unavailable() {
    let crash = |server: &str| {
        ScheduledFault::at(
            1,
            Fault::Crash {
                node: server.parse().unwrap(),
            },
        )
    };
    let plan = FaultPlan::new(vec![crash("s1"), crash("s2"), crash("s3")]);
    let error = attempt_once(
        "dropin-watch-unavailable",
        Some(plan),
        |mut client, node| async move {
            sleep_ms(&node, 100).await;
            client.watch("a", None).await.err().map(|e| e.to_string())
        },
    );
    let error = error.expect("an error");
    assert!(error.contains("Unavailable"), "{error}");
}

/// Keeps the import of `PutOptions` honest: a put with a previous value, then a watch that
/// sees the same previous value as the put's answer.
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
