//! Code written against etcd-client's lease API runs in a coordsim world: grant, the
//! keep-alive pair (`LeaseKeeper` / `LeaseKeepAliveStream`), time-to-live, leases, revoke.
//! A key kept alive survives a partition of its client shorter than the TTL, and is gone
//! after one longer than the TTL (so the test can tell); errors are etcd's.

mod common;

use common::{connect, judged, run_once, sleep_ms, violations};
use etcd_client::{LeaseTimeToLiveOptions, PutOptions};
use futures_util::StreamExt;
use scenarios::{
    Scenario, driver,
    scenario::Store,
    workload::{UserCode, UserNode},
};
use sim::{
    NodeId, Seed,
    fault::{Fault, FaultPlan, FaultSource, PartitionShape, ScheduledFault, Target},
    report::for_each_seed,
    this_test,
};
use std::sync::{Arc, Mutex};

/// The TTL the service asks for, seconds.
const TTL_S: i64 = 5;

/// A service that registers itself under a lease and keeps it alive, then (after 12 rounds)
/// looks whether its registration is still there. What it saw goes to `seen`.
async fn registered_service(node: UserNode, seen: Arc<Mutex<Vec<(usize, bool)>>>) {
    let mut client = connect().await;
    let lease = client.lease_grant(TTL_S, None).await.expect("granted");
    let key = format!("services/c{}", node.index());
    let options = PutOptions::new().with_lease(lease.id());
    client
        .put(key.clone(), "up", Some(options))
        .await
        .expect("put");
    let (mut keeper, mut stream) = client.lease_keep_alive(lease.id()).await.expect("kept");
    assert_eq!(keeper.id(), lease.id());
    for _ in 0..12 {
        keeper.keep_alive().await.expect("the keeper sends");
        // Stream, as etcd-client's: the next answer (late while the client is cut off).
        let _ = stream.next().await;
        sleep_ms(500).await;
    }
    let there = client
        .get(key, None)
        .await
        .is_ok_and(|answer| !answer.kvs().is_empty());
    seen.lock().unwrap().push((node.index(), there));
    std::future::pending::<()>().await;
}

/// Runs the service on 3 clients with `c1` cut off from everyone for `partition_ms`; what
/// each client saw, and the outcome.
fn run_with_partition(partition_ms: u64, seed: u64) -> (Vec<(usize, bool)>, scenarios::Outcome) {
    let seen: Arc<Mutex<Vec<(usize, bool)>>> = Arc::default();
    let code = {
        let seen = seen.clone();
        UserCode::new("dropin-lease", Store::Raft, move |node| {
            registered_service(node, seen.clone())
        })
    };
    let mut scenario = Scenario::of_user_code(code, 3, 3);
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
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    (seen, outcome)
}

#[test]
fn keep_alive_keeps_a_key_across_a_partition_shorter_than_the_ttl() {
    for_each_seed(
        1..=4,
        this_test!("keep_alive_keeps_a_key_across_a_partition_shorter_than_the_ttl"),
        |seed| {
            let (seen, outcome) = run_with_partition(3_000, seed.value());
            assert!(outcome.is_clean(), "{outcome:?}");
            assert_eq!(seen, vec![(0, true), (1, true), (2, true)], "seed {seed}");
            assert!(
                outcome.fault_counts.faults_fired() > 0,
                "the partition fired"
            );
            assert!(
                judged(&outcome, "etcd.lease_keys_removed") > 0,
                "{outcome:?}"
            );
        },
    );
}

#[test]
fn a_partition_longer_than_the_ttl_loses_the_key_so_the_test_can_tell() {
    for_each_seed(
        1..=2,
        this_test!("a_partition_longer_than_the_ttl_loses_the_key_so_the_test_can_tell"),
        |seed| {
            let (seen, outcome) = run_with_partition(7_000, seed.value());
            assert_eq!(seen, vec![(0, false), (1, true), (2, true)], "seed {seed}");
            assert_eq!(violations(&outcome, "etcd.lease_keys_removed"), 0);
        },
    );
}

#[test]
fn lease_calls_answer_as_etcd_does() {
    let notes = run_once(|mut client, notes| async move {
        let note = |line: String| notes.lock().unwrap().push(line);
        let lease = client.lease_grant(3, None).await.expect("granted");
        note(format!("granted ttl={}", lease.ttl()));
        let options = PutOptions::new().with_lease(lease.id());
        client.put("a", "1", Some(options)).await.expect("put");
        let options = LeaseTimeToLiveOptions::new().with_keys();
        let live = client.lease_time_to_live(lease.id(), Some(options)).await;
        let live = live.expect("answered");
        note(format!(
            "ttl granted={} live={} keys={:?}",
            live.granted_ttl(),
            live.ttl() > 0 && live.ttl() <= 3,
            live.keys()
        ));
        // A clone is a client of its own (as etcd-client's clones are).
        let listed = client
            .lease_client()
            .clone()
            .leases()
            .await
            .expect("listed");
        note(format!(
            "listed={}",
            listed.leases().iter().any(|l| l.id() == lease.id())
        ));
        client.lease_revoke(lease.id()).await.expect("revoked");
        let gone = client
            .lease_time_to_live(lease.id(), None)
            .await
            .expect("answered");
        note(format!(
            "after revoke ttl={} granted={}",
            gone.ttl(),
            gone.granted_ttl()
        ));
        let again = client.lease_revoke(lease.id()).await.expect_err("twice");
        note(format!("revoke twice: {again}"));
        let kept = client.lease_keep_alive(lease.id()).await.expect_err("gone");
        note(format!("keep alive a gone lease: {kept}"));
    });
    assert_eq!(notes[0], "granted ttl=3");
    assert_eq!(notes[1], "ttl granted=3 live=true keys=[[97]]");
    assert_eq!(notes[2], "listed=true");
    assert_eq!(notes[3], "after revoke ttl=-1 granted=0");
    assert!(
        notes[4].contains("etcdserver: requested lease not found"),
        "{notes:?}"
    );
    // tonic's Display of `Code::NotFound`.
    assert!(
        notes[4].contains("Some requested entity was not found"),
        "{notes:?}"
    );
    assert_eq!(
        notes[5],
        "keep alive a gone lease: lease keep alive error: lease not found"
    );
}

#[test]
fn a_dropped_keeper_ends_its_stream() {
    let notes = run_once(|mut client, notes| async move {
        let lease = client.lease_grant(3, None).await.expect("granted");
        let (keeper, mut stream) = client.lease_keep_alive(lease.id()).await.expect("kept");
        drop(keeper);
        let end = stream.message().await;
        notes
            .lock()
            .unwrap()
            .push(format!("{:?}", end.map(|m| m.is_none())));
    });
    assert_eq!(notes, vec!["Ok(true)".to_string()]);
}
