//! ZooKeeper's session guarantee for plain reads (`zk.session_consistency`), shown to fire
//! on a model with the guarantee switched off: an exact trace. The zoo's test of
//! `zab.reconnect_ignores_last_zxid` is its row in the known-bug table (`known_bugs.rs`),
//! by seeds in `zab_cut_off_leader_readers_join`, whose faults are plan data.
//!
//! The schedule: a client writes in a new epoch, after the old leader was cut off; then the
//! servers that have the write crash, and the only server the client can reach is the
//! deposed leader, which keeps leading epoch 1 (and serving its state) until `sync_limit`
//! passes without its followers. The correct server refuses the client, which has seen a
//! later zxid (`ZooKeeperServer.processConnectRequest`); the client waits until the others
//! are back, and reads its write. With `zab.reconnect_ignores_last_zxid` the deposed leader
//! accepts the client, which reads back in time.
//!
//! (A follower partitioned away from its leader is no such server: in this model, as in
//! ZooKeeper, it stops serving at once. And a follower connected to its leader cannot be
//! behind a session that reconnects to it: the leader's answer to the session's
//! revalidation reaches it after every commit the session could have seen.)

use models::{
    zab::{KnownBugs, ZabBug},
    zk::{ZkClient, ZkClientError, ZkEnsemble, ZkEnsembleConfig},
};
use sim::{
    NodeId, RunOutcome, Seed, World,
    fault::{Fault, PartitionShape},
    history::{
        Event, FaultRecord,
        zk::{CreateMode, ZkEvent},
    },
    report::FailureReport,
};
use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

const S1: NodeId = NodeId::server(0);
const S2: NodeId = NodeId::server(1);
const S3: NodeId = NodeId::server(2);
const C1: NodeId = NodeId::client(0);

const PROPERTY: &str = "session consistency";

/// Runs the schedule with `bugs`; returns the run and what the client's last read showed.
fn run(seed: Seed, bugs: KnownBugs) -> (RunOutcome, Option<String>) {
    let read = Arc::new(Mutex::new(None));
    let shown = read.clone();
    let mut config = ZkEnsembleConfig::new(vec![S1, S2, S3]);
    config.bugs = bugs;
    // How long a leader cut off from its followers keeps leading (and serving): 3 s.
    config.sync_limit_ticks = 30;
    let outcome = World::builder()
        .seed(seed)
        .servers(3)
        .clients(1)
        .time_limit(Duration::from_secs(60))
        .build()
        .expect("a valid world")
        .run(move |sim| async move {
            let ensemble = ZkEnsemble::new(&sim, config).expect("a valid ensemble");
            ensemble.start(&sim);
            sim.sleep(Duration::from_secs(1)).await;
            let nemesis = sim.nemesis();
            let zk = client(&sim, &ensemble).await;
            let client = zk.clone();
            sim.spawn(C1, async move {
                client.create("/x", "old", CreateMode::Persistent).await
            })
            .await
            .expect("client task")
            .expect("created in epoch 1");
            // The leader (s3) is cut off; s1 and s2 move on to epoch 2 and take the write.
            nemesis.partition(PartitionShape::Groups {
                groups: vec![vec![S3], vec![S1, S2, C1]],
            });
            let client = zk.clone();
            sim.spawn(C1, async move {
                retry(|| client.set_data("/x", "new", None)).await
            })
            .await
            .expect("client task");
            // Both servers with the write crash: the client can only reach s3, still
            // leading epoch 1.
            nemesis.crash(S1);
            nemesis.crash(S2);
            nemesis.heal();
            let client = zk.clone();
            let reading = sim.spawn(C1, async move { retry(|| client.get_data("/x")).await.0 });
            sim.sleep(Duration::from_secs(1)).await;
            nemesis.restart(S1);
            nemesis.restart(S2);
            *shown.lock().unwrap() = Some(reading.await.expect("client task"));
            sim.sleep(Duration::from_secs(3)).await;
        });
    let read = read.lock().unwrap().clone();
    (outcome, read)
}

/// A session through any server, with a 4 s timeout.
async fn client(sim: &sim::Sim, ensemble: &ZkEnsemble) -> ZkClient {
    let (ensemble, context) = (ensemble.clone(), sim.node(C1));
    let mut config = ensemble.client_config(0);
    config.session_timeout = Duration::from_secs(4);
    sim.spawn(C1, async move {
        ensemble.connect(&context, config).await.expect("connects")
    })
    .await
    .expect("client task")
}

/// Retries an operation through connection losses (fail-over, no server to talk to).
async fn retry<T, F, Fut>(mut operation: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ZkClientError>>,
{
    for _ in 0..20 {
        match operation().await {
            Ok(value) => return value,
            Err(ZkClientError::ConnectionLoss) => continue,
            Err(error) => panic!("the session broke: {error}"),
        }
    }
    panic!("no server answered");
}

/// Whether the client resumed its session on s3 between the crash of s1 and s2 and their
/// restart (the client's own record of where it reconnected).
fn resumed_on_s3_while_alone(outcome: &RunOutcome) -> bool {
    let mut alone = false;
    outcome.history.records().iter().any(|record| {
        match &record.event {
            Event::Fault(record) if record.crashed() == Some(S2) => alone = true,
            Event::Fault(FaultRecord {
                fault: Fault::Restart { .. },
                ..
            }) => alone = false,
            _ => {}
        }
        alone
            && matches!(
                record.event,
                Event::Zk(ZkEvent::SessionResumed { server: S3, .. })
            )
    })
}

fn checks(outcome: &RunOutcome) -> Vec<Box<dyn checks::Violation>> {
    let context = checks::CheckContext {
        index_kind: checks::IndexKind::Zxid,
        ..Default::default()
    };
    let mut violations = checks::run(checks::protocol::CHECKS, &outcome.history, &context);
    violations.extend(checks::run(checks::zk::CHECKS, &outcome.history, &context));
    violations
}

#[test]
fn a_reconnect_to_a_server_behind_the_session_is_refused_and_caught_when_it_is_not() {
    let test = "a_reconnect_to_a_server_behind_the_session_is_refused_and_caught_when_it_is_not";
    for seed in sim::env::test_seeds(4) {
        let report = FailureReport::for_test(seed, "scenarios", "zk_session_guarantees", test);
        let (correct, read) = run(seed, KnownBugs::none());
        let violations = checks(&correct);
        assert!(
            violations.is_empty(),
            "the correct model broke:\n{report}\n{}",
            violations
                .iter()
                .map(|v| format!("  violated {}: {v}", v.property()))
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert_eq!(read.as_deref(), Some("new"), "{report}");
        assert!(
            !resumed_on_s3_while_alone(&correct),
            "the correct s3 accepted a client ahead of it:\n{report}"
        );

        let (buggy, read) = run(seed, KnownBugs::only(ZabBug::ReconnectIgnoresLastZxid));
        let violations = checks(&buggy);
        // Caught as (c): the read came right after the reconnect to s3.
        let caught = violations
            .iter()
            .find(|v| v.property() == PROPERTY)
            .unwrap_or_else(|| {
                panic!("{PROPERTY} did not fire (the read showed {read:?}):\n{report}")
            });
        assert!(
            caught
                .to_string()
                .starts_with("reconnect not behind the session")
                && caught.to_string().contains("reconnected to s3"),
            "{caught}\n{report}"
        );
        println!(
            "{} caught by `{PROPERTY}` ({}):\n  {caught}",
            ZabBug::ReconnectIgnoresLastZxid.name(),
            caught.reference()
        );
        assert_eq!(read.as_deref(), Some("old"), "{report}");
        assert!(resumed_on_s3_while_alone(&buggy), "{report}");
    }
}
