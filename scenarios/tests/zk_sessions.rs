//! Sessions under faults: a client cut off (partitioned or paused) past its timeout is
//! expired and its ephemeral nodes vanish; a client that reconnects within its timeout keeps
//! its session and ephemerals, across a leader change too; sequential names stay unique and
//! increasing. Every run also passes every protocol and ZooKeeper check.

use models::zk::{ZkClient, ZkClientError, ZkEnsemble, ZkEnsembleConfig};
use sim::{
    NodeId, RunOutcome, Seed, Sim, World,
    fault::PartitionShape,
    history::{Event, ProtocolEvent, zk::CreateMode, zk::ZkEvent},
    report::FailureReport,
};
use std::{future::Future, time::Duration};

const C1: NodeId = NodeId::client(0);
const C2: NodeId = NodeId::client(1);
const C3: NodeId = NodeId::client(2);

fn run<F, Fut>(seed: Seed, servers: usize, scenario: F) -> RunOutcome
where
    F: FnOnce(Sim, ZkEnsemble) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    World::builder()
        .seed(seed)
        .servers(servers)
        .clients(3)
        .time_limit(Duration::from_secs(60))
        .build()
        .expect("a valid world")
        .run(move |sim| async move {
            let ensemble =
                ZkEnsemble::new(&sim, ZkEnsembleConfig::new(sim.servers())).expect("ensemble");
            ensemble.start(&sim);
            sim.sleep(Duration::from_millis(500)).await;
            scenario(sim, ensemble).await;
        })
}

fn assert_clean(outcome: &RunOutcome, test: &str) {
    // ZAB's indexes are zxids (protocol.applied_in_order needs to know).
    let context = checks::CheckContext {
        index_kind: checks::IndexKind::Zxid,
        ..Default::default()
    };
    let mut violations = checks::run(checks::protocol::CHECKS, &outcome.history, &context);
    violations.extend(checks::run(checks::zk::CHECKS, &outcome.history, &context));
    let report = FailureReport::for_test(outcome.seed, "scenarios", "zk_sessions", test);
    assert!(
        violations.is_empty(),
        "{report}\n{}",
        violations
            .iter()
            .map(|v| format!("  violated {}: {v}", v.property()))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

async fn client(sim: &Sim, ensemble: &ZkEnsemble, node: NodeId, timeout_ms: u64) -> ZkClient {
    let (ensemble, context) = (ensemble.clone(), sim.node(node));
    let mut config = ensemble.client_config(node.ordinal() as u32);
    config.session_timeout = Duration::from_millis(timeout_ms);
    sim.spawn(node, async move {
        ensemble.connect(&context, config).await.expect("connects")
    })
    .await
    .expect("client task")
}

async fn on<T: Send + 'static>(
    sim: &Sim,
    node: NodeId,
    operation: impl Future<Output = T> + Send + 'static,
) -> T {
    sim.spawn(node, operation).await.expect("client task")
}

/// Syncs and checks whether `path` exists, as seen from `node`'s session.
async fn synced_exists(sim: &Sim, zk: &ZkClient, node: NodeId, path: &str) -> Option<u64> {
    let (zk, path) = (zk.clone(), path.to_string());
    on(sim, node, async move {
        for _ in 0..20 {
            if zk.sync("/").await.is_ok()
                && let Ok(stat) = zk.exists(&path).await
            {
                return stat.map(|stat| stat.ephemeral_owner);
            }
        }
        panic!("no synced read of {path}");
    })
    .await
}

fn expired_sessions(outcome: &RunOutcome) -> Vec<u64> {
    outcome
        .history
        .records()
        .iter()
        .filter_map(|record| match record.event {
            Event::Protocol(ProtocolEvent::SessionExpired { session }) => Some(session),
            _ => None,
        })
        .collect()
}

/// What cuts the owner off.
#[derive(Clone, Copy)]
enum CutOff {
    Partition,
    Pause,
}

fn owner_cut_off_past_timeout_is_expired(cut_off: CutOff, test: &str) {
    for seed in sim::env::test_seeds(6) {
        let outcome = run(seed, 3, move |sim, ensemble| async move {
            let owner = client(&sim, &ensemble, C1, 1_000).await;
            let observer = client(&sim, &ensemble, C2, 2_000).await;
            let zk = owner.clone();
            on(&sim, C1, async move {
                zk.create("/e", "owner", CreateMode::Ephemeral)
                    .await
                    .unwrap();
            })
            .await;
            let session = owner.session_id().unwrap();
            assert_eq!(
                synced_exists(&sim, &observer, C2, "/e").await,
                Some(session)
            );
            let nemesis = sim.nemesis();
            match cut_off {
                CutOff::Partition => {
                    nemesis.partition(PartitionShape::IsolateNode { node: C1.into() });
                }
                CutOff::Pause => {
                    nemesis.pause(C1);
                }
            }
            sim.sleep(Duration::from_secs(3)).await;
            assert_eq!(
                synced_exists(&sim, &observer, C2, "/e").await,
                None,
                "the ephemeral of an expired session vanished"
            );
            match cut_off {
                CutOff::Partition => nemesis.heal(),
                CutOff::Pause => nemesis.resume(C1),
            };
            let zk = owner.clone();
            let after = on(&sim, C1, async move { zk.get_data("/e").await }).await;
            assert_eq!(after, Err(ZkClientError::SessionExpired));
            assert!(owner.is_expired());
        });
        assert_clean(&outcome, test);
        let expired = expired_sessions(&outcome);
        assert_eq!(expired.len(), 1, "exactly the owner's session expired");
        assert!(outcome.history.records().iter().any(|r| matches!(
            &r.event,
            Event::Zk(ZkEvent::SessionExpired { session, .. }) if *session == expired[0]
        )));
        let faults = &outcome.fault_counts;
        assert!(faults.partitions + faults.pauses > 0, "the cut-off fired");
    }
}

#[test]
fn partitioned_client_past_its_timeout_is_expired_and_its_ephemerals_vanish() {
    owner_cut_off_past_timeout_is_expired(
        CutOff::Partition,
        "partitioned_client_past_its_timeout_is_expired_and_its_ephemerals_vanish",
    );
}

#[test]
fn paused_client_past_its_timeout_is_expired_and_its_ephemerals_vanish() {
    owner_cut_off_past_timeout_is_expired(
        CutOff::Pause,
        "paused_client_past_its_timeout_is_expired_and_its_ephemerals_vanish",
    );
}

/// The server the client is attached to (from the history).
fn attached_server(sim: &Sim, node: NodeId) -> NodeId {
    sim.history_snapshot()
        .records()
        .iter()
        .rev()
        .find_map(|record| match (&record.event, record.node) {
            (
                Event::Zk(
                    ZkEvent::SessionEstablished { server, .. }
                    | ZkEvent::SessionResumed { server, .. },
                ),
                Some(client),
            ) if client == node => Some(*server),
            _ => None,
        })
        .expect("the client attached somewhere")
}

#[test]
fn client_that_reconnects_within_its_timeout_keeps_session_and_ephemerals() {
    let test = "client_that_reconnects_within_its_timeout_keeps_session_and_ephemerals";
    let mut leader_isolated = 0;
    for seed in sim::env::test_seeds(8) {
        let outcome = run(seed, 5, move |sim, ensemble| async move {
            let owner = client(&sim, &ensemble, C1, 2_000).await;
            let observer = client(&sim, &ensemble, C2, 2_000).await;
            let zk = owner.clone();
            on(&sim, C1, async move {
                zk.create("/e", "owner", CreateMode::Ephemeral)
                    .await
                    .unwrap();
            })
            .await;
            let session = owner.session_id().unwrap();
            // Cut off the owner's server (sometimes the leader): the owner fails over.
            let server = attached_server(&sim, C1);
            sim.nemesis().partition(PartitionShape::IsolateNode {
                node: server.into(),
            });
            sim.sleep(Duration::from_secs(4)).await;
            assert_eq!(
                synced_exists(&sim, &observer, C2, "/e").await,
                Some(session)
            );
            let zk = owner.clone();
            let write = on(&sim, C1, async move {
                zk.set_data("/e", "still mine", None).await
            })
            .await;
            assert!(write.is_ok(), "the session is alive: {write:?}");
            assert_eq!(owner.session_id(), Some(session));
            sim.nemesis().heal();
            sim.sleep(Duration::from_secs(1)).await;
        });
        assert_clean(&outcome, test);
        assert!(expired_sessions(&outcome).is_empty(), "no session expired");
        let resumed = outcome
            .history
            .records()
            .iter()
            .filter(|r| matches!(r.event, Event::Zk(ZkEvent::SessionResumed { .. })))
            .count();
        assert!(resumed > 0, "the owner reconnected to another server");
        let stepped_down = outcome
            .history
            .records()
            .iter()
            .any(|r| matches!(r.event, Event::Protocol(ProtocolEvent::SteppedDown { .. })));
        leader_isolated += usize::from(stepped_down);
    }
    println!("seeds where the owner's server was the leader: {leader_isolated}");
}

#[test]
fn leader_change_does_not_expire_live_sessions() {
    let test = "leader_change_does_not_expire_live_sessions";
    for seed in sim::env::test_seeds(6) {
        let outcome = run(seed, 3, move |sim, ensemble| async move {
            let mut clients = Vec::new();
            for node in [C1, C2, C3] {
                let zk = client(&sim, &ensemble, node, 1_500).await;
                let session = zk.session_id().unwrap();
                let path = format!("/e{}", node.ordinal());
                let (writer, created) = (zk.clone(), path.clone());
                on(&sim, node, async move {
                    writer
                        .create(&created, "", CreateMode::Ephemeral)
                        .await
                        .unwrap();
                })
                .await;
                clients.push((node, zk, path, session));
            }
            // The leader crashes; a new one restarts session tracking from committed state.
            let leader = NodeId::server(2);
            sim.nemesis().crash(leader);
            sim.sleep(Duration::from_secs(4)).await;
            sim.nemesis().restart(leader);
            sim.sleep(Duration::from_secs(2)).await;
            for (node, zk, path, session) in &clients {
                assert_eq!(synced_exists(&sim, zk, *node, path).await, Some(*session));
                assert!(!zk.is_expired());
            }
        });
        assert_clean(&outcome, test);
        assert!(expired_sessions(&outcome).is_empty(), "no session expired");
        assert_eq!(outcome.fault_counts.crashes, 1);
        let leaders = outcome
            .history
            .records()
            .iter()
            .filter(|r| matches!(r.event, Event::Protocol(ProtocolEvent::BecameLeader { .. })))
            .count();
        assert!(leaders >= 2, "a new leader took over");
    }
}

#[test]
fn sequential_names_stay_unique_and_increasing_under_faults() {
    let test = "sequential_names_stay_unique_and_increasing_under_faults";
    for seed in sim::env::test_seeds(6) {
        let outcome = run(seed, 3, move |sim, ensemble| async move {
            let parent = client(&sim, &ensemble, C1, 2_000).await;
            let zk = parent.clone();
            on(&sim, C1, async move {
                zk.create("/q", "", CreateMode::Persistent).await.unwrap();
            })
            .await;
            let mut creators = Vec::new();
            for node in [C1, C2, C3] {
                let zk = client(&sim, &ensemble, node, 2_000).await;
                creators.push(sim.spawn(node, async move {
                    let mut names = Vec::new();
                    for round in 0..15 {
                        let mode = if round % 2 == 0 {
                            CreateMode::PersistentSequential
                        } else {
                            CreateMode::EphemeralSequential
                        };
                        if let Ok(name) = zk.create_protected("/q/n-", "", mode).await {
                            names.push(name);
                        }
                    }
                    names
                }));
            }
            let nemesis = sim.nemesis();
            sim.sleep(Duration::from_millis(150)).await;
            nemesis.partition(PartitionShape::IsolateLeader);
            sim.sleep(Duration::from_millis(800)).await;
            nemesis.heal();
            sim.sleep(Duration::from_millis(300)).await;
            nemesis.crash(NodeId::server(0));
            sim.sleep(Duration::from_millis(500)).await;
            nemesis.restart(NodeId::server(0));
            let mut all = Vec::new();
            for creator in creators {
                all.extend(creator.await.expect("creator task"));
            }
            let mut unique = all.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(
                unique.len(),
                all.len(),
                "protected creates made no duplicates"
            );
            assert!(all.len() >= 30, "most creates succeeded: {}", all.len());
        });
        assert_clean(&outcome, test);
        assert!(outcome.fault_counts.partitions > 0 && outcome.fault_counts.crashes > 0);
    }
}

/// Protected create: the create commits but its reply is lost with the connection; the
/// client finds its own node by GUID instead of creating a second one.
#[test]
fn protected_create_finds_its_node_after_the_reply_is_lost() {
    let test = "protected_create_finds_its_node_after_the_reply_is_lost";
    let mut recovered = 0;
    for seed in sim::env::test_seeds(6) {
        let outcome = World::builder()
            .seed(seed)
            .servers(3)
            .clients(1)
            // Fixed latency: the request reaches the follower after 5 ms, the reply would
            // leave it after about 25 ms; the link is cut in between.
            .latency(Duration::from_millis(5)..=Duration::from_millis(5))
            .disk_sync_latency(Duration::from_millis(1)..=Duration::from_millis(1))
            .time_limit(Duration::from_secs(60))
            .build()
            .expect("a valid world")
            .run(move |sim| async move {
                let ensemble =
                    ZkEnsemble::new(&sim, ZkEnsembleConfig::new(sim.servers())).expect("ensemble");
                ensemble.start(&sim);
                sim.sleep(Duration::from_secs(1)).await;
                // Attach to a follower first (s1), fail over to s2.
                let (context, ensemble) = (sim.node(C1), ensemble.clone());
                let mut config = ensemble.client_config(0);
                config.servers = vec![NodeId::server(0), NodeId::server(1)];
                let zk = sim
                    .spawn(C1, async move { ensemble.connect(&context, config).await })
                    .await
                    .unwrap()
                    .expect("connects");
                let parent = zk.clone();
                on(&sim, C1, async move {
                    parent
                        .create("/locks", "", CreateMode::Persistent)
                        .await
                        .unwrap();
                })
                .await;
                let server = attached_server(&sim, C1);
                let creator = zk.clone();
                let created = sim.spawn(C1, async move {
                    creator
                        .create_protected("/locks/lock-", "", CreateMode::EphemeralSequential)
                        .await
                });
                sim.sleep(Duration::from_millis(15)).await;
                let nemesis = sim.nemesis();
                nemesis.clog(C1, server);
                nemesis.clog(server, C1);
                let name = created
                    .await
                    .unwrap()
                    .expect("the protected create succeeds");
                let lister = zk.clone();
                let (children, _) = on(&sim, C1, async move {
                    lister.sync("/").await.unwrap();
                    lister.get_children("/locks").await.unwrap()
                })
                .await;
                assert_eq!(children.len(), 1, "exactly one node: {children:?}");
                assert_eq!(format!("/locks/{}", children[0]), name);
            });
        assert_clean(&outcome, test);
        // The first create's outcome was unknown (its reply was lost)...
        let unknown_create = outcome.history.operations().iter().any(|op| {
            matches!(
                op.operation,
                sim::history::Operation::Zk(sim::history::zk::ZkOperation::Create { .. })
            ) && matches!(
                op.completion,
                Some((_, sim::history::OpResult::Unknown { .. }))
            )
        });
        recovered += usize::from(unknown_create);
    }
    // ...and the client recovered its node instead of creating another.
    assert!(
        recovered > 0,
        "the create's reply was never lost: the test proves nothing"
    );
}
