#![cfg(madsim)]
//! Sessions as zookeeper-client reports them: a connection lost for less than the session
//! timeout is `Disconnected` then `SyncConnected` with the same session; one lost for
//! longer is `Expired`, and every later call fails with `SessionExpired`.

mod common;

use common::{CLUSTER, judged, note};
use scenarios::{Outcome, Scenario, driver, scenario::Store, workload::UserCode};
use sim::fault::{Fault, FaultPlan, FaultSource, PartitionShape, ScheduledFault, Target};
use sim::{NodeId, Seed, report::for_each_seed, this_test};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zookeeper_client::{Acls, AddWatchMode, Client, CreateMode, EventType, SessionState};

/// What the user code saw, in order.
type Notes = Arc<Mutex<Vec<String>>>;

/// Connects with `timeout`, sets a watch, then follows its session through one partition
/// of its node: each state, a call after it, and (once terminal) the watch's event.
async fn follow_the_session(timeout: Duration, notes: Notes) {
    let client = Client::connector()
        .with_session_timeout(timeout)
        .connect(CLUSTER)
        .await
        .expect("connects");
    let id = client.session_id();
    let mine = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    client.create("/mine", b"", &mine).await.expect("created");
    let (_, watcher) = client
        .check_and_watch_stat("/other")
        .await
        .expect("watched");
    let mut persistent = client
        .watch("/other", AddWatchMode::Persistent)
        .await
        .expect("watched");
    let mut states = client.state_watcher();
    note(&notes, format!("{:?}", client.state()));
    loop {
        let state = states.changed().await;
        let call = client.check_stat("/mine").await.map(|stat| stat.is_some());
        note(&notes, format!("{state:?} then {call:?}"));
        if state.is_terminated() {
            let event = watcher.changed().await;
            assert_eq!(event.event_type, EventType::Session);
            note(&notes, format!("watch {:?}", event.session_state));
            break;
        }
        if state == SessionState::SyncConnected {
            note(
                &notes,
                format!("same session {}", client.session_id() == id),
            );
            break;
        }
    }
    // A persistent watcher is told every state change, the terminal one last.
    loop {
        let event = persistent.changed().await;
        assert_eq!(event.event_type, EventType::Session);
        note(&notes, format!("persistent {:?}", event.session_state));
        if event.session_state != SessionState::Disconnected {
            break;
        }
    }
    std::future::pending::<()>().await;
}

/// Runs [`follow_the_session`] on one client whose node is cut off at 2 s for
/// `partition_ms`.
fn run(timeout: Duration, partition_ms: u64, seed: u64) -> (Vec<String>, Outcome) {
    let notes: Notes = Arc::default();
    let code = {
        let notes = notes.clone();
        UserCode::new("zk-dropin-sessions", Store::Zab, move |_node| {
            follow_the_session(timeout, notes.clone())
        })
    };
    let mut scenario = Scenario::of_user_code(code, 3, 1);
    scenario.fault_phase_ms = 16_000;
    let isolate = Fault::Partition {
        shape: PartitionShape::IsolateNode {
            node: Target::Node(NodeId::client(0)),
        },
    };
    scenario.faults = FaultSource::Plan(FaultPlan::new(vec![
        ScheduledFault::at(2_000, isolate).lasting(partition_ms),
    ]));
    let outcome = driver::run(&scenario, Seed::new(seed));
    let notes = notes.lock().unwrap().clone();
    (notes, outcome)
}

#[test]
fn a_short_connection_loss_is_disconnected_then_sync_connected_in_one_session() {
    for_each_seed(
        1..=3,
        this_test!("a_short_connection_loss_is_disconnected_then_sync_connected_in_one_session"),
        |seed| {
            let (notes, outcome) = run(Duration::from_secs(4), 2_000, seed.value());
            assert!(outcome.is_clean(), "seed {seed}: {outcome:?}");
            assert!(
                outcome.fault_counts.faults_fired() > 0,
                "the partition fired"
            );
            assert!(
                judged(&outcome, "zk.session_consistency") > 0,
                "{outcome:?}"
            );
            assert_eq!(
                notes,
                [
                    "SyncConnected",
                    "Disconnected then Ok(true)",
                    "SyncConnected then Ok(true)",
                    "same session true",
                    "persistent Disconnected",
                    "persistent SyncConnected",
                ],
                "seed {seed}"
            );
        },
    );
}

#[test]
fn a_loss_longer_than_the_session_timeout_is_expired_and_every_call_fails() {
    for_each_seed(
        1..=3,
        this_test!("a_loss_longer_than_the_session_timeout_is_expired_and_every_call_fails"),
        |seed| {
            let (notes, outcome) = run(Duration::from_secs(2), 8_000, seed.value());
            assert!(outcome.is_clean(), "seed {seed}: {outcome:?}");
            assert!(
                outcome.fault_counts.faults_fired() > 0,
                "the partition fired"
            );
            assert!(
                judged(&outcome, "zk.session_consistency") > 0,
                "{outcome:?}"
            );
            assert_eq!(
                notes,
                [
                    "SyncConnected",
                    "Disconnected then Err(SessionExpired)",
                    "Expired then Err(SessionExpired)",
                    "watch Expired",
                    "persistent Disconnected",
                    "persistent Expired",
                ],
                "seed {seed}"
            );
        },
    );
}
