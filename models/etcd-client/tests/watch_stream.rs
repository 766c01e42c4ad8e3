//! One etcd-client `WatchStream` carries several watches, told apart by watch id: cancelling
//! one (while the stream waits on it, or not) stops it alone, and filters apply per watch.

mod watch_support;

use etcd_client::{Client, EventType, WatchFilterType, WatchOptions, WatchResponse};
use scenarios::{driver, workload::UserNode};
use sim::Seed;
use std::sync::Arc;
use watch_support::{ENDPOINTS, Seen, judged, scenario_of, sleep_ms};

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
fn cancel_interrupts_a_watch_the_stream_is_waiting_on() {
    let seen: Seen<WatchResponse> = Arc::default();
    let scenario = scenario_of("dropin-watch-interrupt", 2, {
        let seen = seen.clone();
        move |node: UserNode| {
            let seen = seen.clone();
            async move {
                let mut client = Client::connect(ENDPOINTS, None).await.expect("connects");
                if node.index() != 0 {
                    sleep_ms(&node, 500).await;
                    for i in 0u32.. {
                        // "y" is never written: only the interrupt ends the wait on it.
                        let _ = client.put("x", i.to_string(), None).await;
                        sleep_ms(&node, 50).await;
                    }
                    return;
                }
                let mut stream = client.watch("x", None).await.expect("watch");
                stream.watch("y", None).await.expect("second watch");
                let mut canceled = false;
                while let Ok(Some(response)) = stream.message().await {
                    // Once an event came, the stream is waiting on both watches: the cancel
                    // of "y" interrupts that wait.
                    let event = !response.events().is_empty();
                    seen.lock().unwrap().push(response);
                    if event && !canceled {
                        stream.cancel(1).await.expect("cancel");
                        canceled = true;
                    }
                }
            }
        }
    });
    let outcome = driver::run(&scenario, Seed::new(5));
    assert!(outcome.is_clean(), "{outcome:?}");
    let seen = seen.lock().unwrap().clone();
    let y: Vec<_> = seen.iter().filter(|r| r.watch_id() == 1).collect();
    let y_canceled = y.iter().position(|r| r.canceled()).expect("y was canceled");
    assert_eq!(
        y_canceled,
        y.len() - 1,
        "nothing for y after its cancel: {y:?}"
    );
    let cancel_at = seen.iter().position(|r| r.canceled()).unwrap();
    let x_after = seen[cancel_at..]
        .iter()
        .filter(|r| r.watch_id() == 0 && !r.events().is_empty())
        .count();
    assert!(x_after > 5, "x goes on: {x_after}");
    assert!(judged(&outcome, "etcd.watch_delivery") > 10);
}
