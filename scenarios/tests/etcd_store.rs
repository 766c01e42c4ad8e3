//! The etcd-like store's features in the simulated world: leases (expiry deletes attached
//! keys, keep-alive keeps them — across leader changes —, a paused client loses its lease),
//! watches (resumed after reconnects: every change after the resume revision exactly once and
//! in order; a compacted start revision is an error), transactions, compaction, and typed
//! errors for bad input. Plus, scripted, `etcd.compact_drops_tombstone` and a lease view of
//! `raft.read_without_readindex` caught by their checkers (the other etcd variants are in
//! the known-bug table, `tests/known_bugs.rs`).

use checks::{
    Violation, boxed,
    etcd::{
        lease_expires_in_bound, lease_keys_removed, lease_not_expired_early,
        read_sees_prior_writes, watch_delivery,
    },
};
use models::etcd::{
    EtcdBug, EtcdClient, EtcdCluster, EtcdConfig, KeepAliveEnd, KnownBug, WatchItem, kv_response,
    prefix_range_end,
};
use scenarios::sweep::ScriptedSweep;
use sim::{
    NodeId, RunOutcome, Seed, Sim, World,
    fault::PartitionShape,
    history::{
        Event, OpError, OpResult, ProtocolEvent,
        kv::{
            Compare, CompareOperator, CompareTarget, KvError, KvOperation, KvResponse, WatchRecord,
            WatchStep,
        },
    },
};
use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

const TARGET: &str = "etcd_store";

/// Every checker that applies to any run of the store (no clock steps in these suites, so
/// early lease expiry is a violation; drift is the default ±100 ppm).
fn store_checks(outcome: &RunOutcome) -> Vec<Box<dyn Violation>> {
    let history = &outcome.history;
    let mut violations = checks::run(
        checks::protocol::CHECKS,
        history,
        &checks::CheckContext::default(),
    );
    violations.extend(boxed(read_sees_prior_writes::check(history)));
    violations.extend(boxed(watch_delivery::check(history)));
    violations.extend(boxed(lease_keys_removed::check(history)));
    violations.extend(boxed(lease_not_expired_early::check(history, 1_000)));
    violations
}

fn world(seed: Seed, servers: usize, clients: usize) -> World {
    World::builder()
        .seed(seed)
        .servers(servers)
        .clients(clients)
        .time_limit(Duration::from_secs(120))
        .build()
        .expect("a valid world")
}

fn lease_of(result: &OpResult) -> u64 {
    match kv_response(result) {
        Some(KvResponse::LeaseGrant { lease, .. }) => *lease,
        other => panic!("lease grant failed: {result:?} {other:?}"),
    }
}

fn keys_of(result: &OpResult) -> Vec<String> {
    match kv_response(result) {
        Some(KvResponse::Get { kvs, .. }) => kvs.iter().map(|kv| kv.key.clone()).collect(),
        other => panic!("get failed: {result:?} {other:?}"),
    }
}

fn ok(result: &OpResult) {
    assert!(matches!(result, OpResult::Ok { .. }), "{result:?}");
}

/// Sleeps on the client node's own clock.
async fn pause_for(context: &sim::NodeContext, millis: u64) {
    context.clock().sleep(Duration::from_millis(millis)).await;
}

/// Runs `body` as client process 0 on c1 of a fresh cluster of `servers`, after giving the
/// cluster time to elect.
fn run_client<F, Fut>(seed: Seed, servers: usize, clients: usize, body: F) -> RunOutcome
where
    F: FnOnce(Sim, EtcdCluster) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    world(seed, servers, clients).run(move |sim| async move {
        let cluster = EtcdCluster::start(&sim, EtcdConfig::new(&sim.servers()));
        sim.sleep(Duration::from_millis(1_000)).await;
        body(sim, cluster).await;
    })
}

#[test]
fn lease_expiry_deletes_the_attached_keys_and_keep_alive_keeps_them() {
    let summary = ScriptedSweep::new(
        "scenarios",
        TARGET,
        "lease_expiry_deletes_the_attached_keys_and_keep_alive_keeps_them",
        3,
    )
    .run(
        |seed| {
            run_client(seed, 3, 1, |sim, cluster| async move {
                let node = NodeId::client(0);
                let context = sim.node(node);
                sim.spawn(node, async move {
                    let mut client = EtcdClient::new(&cluster, context.clone(), 0);
                    let abandoned = lease_of(&client.lease_grant(1_000).await);
                    let kept = lease_of(&client.lease_grant(1_000).await);
                    ok(&client.put_with_lease("locks/a", "x", abandoned).await);
                    ok(&client.put_with_lease("locks/b", "y", abandoned).await);
                    ok(&client.put_with_lease("locks/c", "z", kept).await);
                    ok(&client.put("plain", "p").await);
                    let keep_alive = EtcdClient::spawn_keep_alive(
                        &cluster,
                        context.clone(),
                        1,
                        kept,
                        Duration::from_millis(300),
                    );
                    pause_for(&context, 2_500).await;
                    // The abandoned lease expired (TTL 1 s plus the leader's margin), its
                    // keys with it; the kept one lives.
                    assert_eq!(keys_of(&client.get_prefix("locks/").await), ["locks/c"]);
                    assert_eq!(keys_of(&client.get("plain").await), ["plain"]);
                    match client.lease_time_to_live(abandoned).await {
                        OpResult::Fail {
                            error: OpError::Kv(KvError::LeaseNotFound { .. }),
                        } => {}
                        other => panic!("an expired lease has no TTL: {other:?}"),
                    }
                    let Some(KvResponse::LeaseTimeToLive { remaining_ms }) =
                        kv_response(&client.lease_time_to_live(kept).await).cloned()
                    else {
                        panic!("the kept lease has a TTL");
                    };
                    assert!(remaining_ms <= 1_000 + 600, "{remaining_ms}");
                    // Stop renewing: then it expires too.
                    keep_alive.abort();
                    pause_for(&context, 2_500).await;
                    assert!(keys_of(&client.get_prefix("locks/").await).is_empty());
                })
                .await
                .expect("the client task finishes");
            })
        },
        |outcome| {
            let mut violations = store_checks(outcome);
            violations.extend(boxed(lease_expires_in_bound::check(
                &outcome.history,
                Duration::from_secs(2),
            )));
            violations
        },
    );
    summary.assert_clean();
}

/// Leaders keep changing while a client renews its lease: no new leader expires it early
/// (leases restart from the checkpointed remaining time plus an election timeout), and once
/// the client stops, the lease still expires in bound.
#[test]
fn leader_changes_neither_expire_a_kept_lease_nor_keep_an_abandoned_one() {
    let summary = ScriptedSweep::new(
        "scenarios",
        TARGET,
        "leader_changes_neither_expire_a_kept_lease_nor_keep_an_abandoned_one",
        3,
    )
    .run(
        |seed| {
            run_client(seed, 3, 1, |sim, cluster| async move {
                let node = NodeId::client(0);
                let context = sim.node(node);
                let nemesis = sim.nemesis();
                let client_task = sim.spawn(node, async move {
                    let mut client = EtcdClient::new(&cluster, context.clone(), 0);
                    let kept = lease_of(&client.lease_grant(1_500).await);
                    let abandoned = lease_of(&client.lease_grant(2_000).await);
                    ok(&client.put_with_lease("kept", "k", kept).await);
                    ok(&client.put_with_lease("abandoned", "a", abandoned).await);
                    let keep_alive = EtcdClient::spawn_keep_alive(
                        &cluster,
                        context.clone(),
                        1,
                        kept,
                        Duration::from_millis(300),
                    );
                    pause_for(&context, 9_000).await;
                    keep_alive.abort();
                    (kept, abandoned)
                });
                // A leader change every two seconds.
                for _ in 0..4 {
                    sim.sleep(Duration::from_millis(1_500)).await;
                    nemesis.partition(PartitionShape::IsolateLeader);
                    sim.sleep(Duration::from_millis(500)).await;
                    nemesis.heal();
                }
                let (kept, abandoned) = client_task.await.expect("the client finishes");
                sim.sleep(Duration::from_secs(6)).await;
                let expired = expired_leases_now(&sim);
                assert!(
                    expired.contains(&abandoned),
                    "the abandoned lease never expired"
                );
                assert!(
                    expired.contains(&kept),
                    "the kept lease never expired after its renewals stopped"
                );
            })
        },
        |outcome| {
            let mut violations = store_checks(outcome);
            violations.extend(boxed(lease_expires_in_bound::check(
                &outcome.history,
                Duration::from_secs(6),
            )));
            let leaders = outcome
                .history
                .records()
                .iter()
                .filter(|r| matches!(r.event, Event::Protocol(ProtocolEvent::BecameLeader { .. })))
                .count();
            assert!(
                leaders >= 4,
                "only {leaders} elections: the partitions did not depose leaders"
            );
            violations
        },
    );
    summary.assert_clean();
}

fn expired_leases_now(sim: &Sim) -> Vec<u64> {
    sim.history_snapshot()
        .records()
        .iter()
        .filter_map(|record| match record.event {
            Event::Protocol(ProtocolEvent::SessionExpired { session }) => Some(session),
            _ => None,
        })
        .collect()
}

/// A client paused past its lease's TTL (a GC pause) loses the lease: the leader expires it
/// and deletes its key; when the client wakes, its keep-alive learns the lease is gone.
#[test]
fn a_paused_client_loses_its_lease() {
    let summary = ScriptedSweep::new("scenarios", TARGET, "a_paused_client_loses_its_lease", 3)
        .run(
            |seed| {
                run_client(seed, 3, 2, |sim, cluster| async move {
                    let holder = NodeId::client(0);
                    let context = sim.node(holder);
                    let holder_cluster = cluster.clone();
                    let lease = Arc::new(Mutex::new(None));
                    let granted = lease.clone();
                    let holder_task = sim.spawn(holder, async move {
                        let mut client = EtcdClient::new(&holder_cluster, context.clone(), 0);
                        let lease = lease_of(&client.lease_grant(1_000).await);
                        *granted.lock().unwrap() = Some(lease);
                        ok(&client.put_with_lease("lock", "holder", lease).await);
                        let keep_alive = EtcdClient::spawn_keep_alive(
                            &holder_cluster,
                            context,
                            1,
                            lease,
                            Duration::from_millis(250),
                        );
                        keep_alive
                            .await
                            .expect("the keep-alive loop ends on its own")
                    });
                    sim.sleep(Duration::from_millis(1_500)).await;
                    sim.nemesis().pause(holder);
                    sim.sleep(Duration::from_millis(3_000)).await;
                    let observer = NodeId::client(1);
                    let context = sim.node(observer);
                    let observed = sim
                        .spawn(observer, async move {
                            let mut client = EtcdClient::new(&cluster, context, 0);
                            keys_of(&client.get("lock").await)
                        })
                        .await
                        .expect("the observer finishes");
                    assert!(
                        observed.is_empty(),
                        "the paused holder's key outlived its lease"
                    );
                    sim.nemesis().resume(holder);
                    let end = holder_task.await.expect("the holder finishes");
                    assert_eq!(end, KeepAliveEnd::LeaseGone);
                    let lease = lease.lock().unwrap().expect("granted");
                    assert!(expired_leases_now(&sim).contains(&lease));
                })
            },
            |outcome| {
                assert_eq!(outcome.fault_counts.pauses, 1, "the pause fired");
                store_checks(outcome)
            },
        );
    summary.assert_clean();
}

/// A watcher from revision R keeps its stream while the servers it is connected to crash
/// and get cut off; after each reconnect it resumes from the revision after the last change
/// it saw. Every change after R arrives exactly once and in order (checked against the
/// acknowledged writes), across at least one reconnect.
#[test]
fn a_resumed_watch_delivers_every_change_after_its_revision_once_in_order() {
    let summary = ScriptedSweep::new(
        "scenarios",
        TARGET,
        "a_resumed_watch_delivers_every_change_after_its_revision_once_in_order",
        3,
    )
    .run(
        |seed| {
            run_client(seed, 3, 2, |sim, cluster| async move {
                let writer = NodeId::client(0);
                let watcher = NodeId::client(1);
                let writer_context = sim.node(writer);
                let writer_cluster = cluster.clone();
                let start = Arc::new(Mutex::new(0u64));
                let start_revision = start.clone();
                // Writes before the watch starts, then the watch from a past revision.
                let mut client = EtcdClient::new(&cluster, sim.node(watcher), 9);
                let watch_start = sim
                    .spawn(watcher, async move {
                        let mut revision = 0;
                        for i in 0..5 {
                            let result = client.put(&format!("w/{i}"), "before").await;
                            if let Some(KvResponse::Put { revision: r }) = kv_response(&result) {
                                revision = *r;
                            }
                        }
                        revision - 2
                    })
                    .await
                    .expect("the first writes finish");
                *start_revision.lock().unwrap() = watch_start;
                let watch_context = sim.node(watcher);
                let watch_cluster = cluster.clone();
                let received = Arc::new(Mutex::new(Vec::new()));
                let sink = received.clone();
                sim.spawn(watcher, async move {
                    let mut client = EtcdClient::new(&watch_cluster, watch_context, 0);
                    let mut stream = client.watch("w/", Some(prefix_range_end("w/")), watch_start);
                    loop {
                        match stream.next().await {
                            WatchItem::Changes(changes) => sink
                                .lock()
                                .unwrap()
                                .extend(changes.iter().map(|c| c.revision())),
                            WatchItem::Compacted { .. } => panic!("nothing was compacted"),
                        }
                    }
                });
                let writes = sim.spawn(writer, async move {
                    let mut client = EtcdClient::new(&writer_cluster, writer_context.clone(), 0);
                    for i in 0..60 {
                        let key = format!("w/{}", i % 7);
                        if i % 9 == 8 {
                            client.delete(&key).await;
                        } else {
                            client.put(&key, &format!("v{i}")).await;
                        }
                        pause_for(&writer_context, 50).await;
                    }
                });
                // Break the watcher's connections: cut it off, crash servers one by one.
                let nemesis = sim.nemesis();
                sim.sleep(Duration::from_millis(400)).await;
                nemesis.isolate(watcher);
                sim.sleep(Duration::from_millis(500)).await;
                nemesis.heal();
                for server in sim.servers() {
                    sim.sleep(Duration::from_millis(400)).await;
                    nemesis.crash(server);
                    sim.sleep(Duration::from_millis(300)).await;
                    nemesis.restart(server);
                }
                let _ = writes.await;
                sim.sleep(Duration::from_secs(2)).await;
                let received = received.lock().unwrap().clone();
                assert!(
                    received.first().is_some_and(|first| *first == watch_start),
                    "the watch starts at its revision {watch_start}: {received:?}"
                );
            })
        },
        |outcome| {
            let watches: Vec<WatchRecord> = outcome
                .history
                .records()
                .iter()
                .filter_map(|record| match &record.event {
                    Event::Recipe(event) => WatchRecord::from_recipe_event(event),
                    _ => None,
                })
                .collect();
            let reopened = watches
                .iter()
                .filter(|w| matches!(w.step, WatchStep::Opened { .. }))
                .count();
            assert!(
                reopened >= 2,
                "the watch never had to resume ({reopened} opens)"
            );
            let delivered: usize = watches
                .iter()
                .map(|w| match &w.step {
                    WatchStep::Delivered { changes, .. } => changes.len(),
                    _ => 0,
                })
                .sum();
            assert!(delivered >= 40, "only {delivered} changes delivered");
            store_checks(outcome)
        },
    );
    summary.assert_clean();
}

/// Transactions are atomic compare-and-swaps: concurrent clients increment a counter with
/// `if mod_revision == seen then put seen+1`; the final value equals the number of
/// successful transactions.
#[test]
fn compare_and_swap_transactions_count_every_successful_increment() {
    let successes = Arc::new(Mutex::new(0u64));
    let counted = successes.clone();
    let outcome = run_client(Seed::new(3), 3, 3, move |sim, cluster| async move {
        let mut tasks = Vec::new();
        for node in sim.clients() {
            let (cluster, context, counted) = (cluster.clone(), sim.node(node), counted.clone());
            tasks.push(sim.spawn(node, async move {
                let mut client = EtcdClient::new(&cluster, context, 0);
                for _ in 0..15 {
                    let (value, mod_revision) = match kv_response(&client.get("counter").await) {
                        Some(KvResponse::Get { kvs, .. }) => kvs.first().map_or((0, 0), |kv| {
                            (kv.value.parse::<u64>().unwrap(), kv.mod_revision)
                        }),
                        _ => continue,
                    };
                    let result = client
                        .txn(
                            vec![Compare {
                                key: "counter".into(),
                                target: CompareTarget::ModRevision(mod_revision),
                                operator: CompareOperator::Equal,
                            }],
                            vec![KvOperation::Put {
                                key: "counter".into(),
                                value: (value + 1).to_string(),
                                lease: None,
                            }],
                            vec![],
                        )
                        .await;
                    if let Some(KvResponse::Txn {
                        succeeded: true, ..
                    }) = kv_response(&result)
                    {
                        *counted.lock().unwrap() += 1;
                    }
                }
            }));
        }
        for task in tasks {
            task.await.expect("a client finishes");
        }
        let context = sim.node(NodeId::client(0));
        let final_value = sim
            .spawn(NodeId::client(0), async move {
                let mut client = EtcdClient::new(&cluster, context, 9);
                match kv_response(&client.get("counter").await) {
                    Some(KvResponse::Get { kvs, .. }) => kvs[0].value.parse::<u64>().unwrap(),
                    other => panic!("{other:?}"),
                }
            })
            .await
            .unwrap();
        assert_eq!(final_value, *counted.lock().unwrap());
    });
    let total = *successes.lock().unwrap();
    assert!(total >= 15, "only {total} increments succeeded");
    assert!(store_checks(&outcome).is_empty());
}

// ----- etcd-store known bugs -------------------------------------------------------------

/// A watcher from the compaction revision needs the delete at that revision.
fn watch_from_compacted_delete(seed: Seed, bugs: Vec<KnownBug>) -> RunOutcome {
    world(seed, 3, 1).run(move |sim| async move {
        let config = EtcdConfig::new(&sim.servers()).with_bugs(bugs);
        let cluster = EtcdCluster::start(&sim, config);
        sim.sleep(Duration::from_millis(1_000)).await;
        let node = NodeId::client(0);
        let context = sim.node(node);
        sim.spawn(node, async move {
            let mut client = EtcdClient::new(&cluster, context.clone(), 0);
            ok(&client.put("election/leader", "me").await); // revision 2
            ok(&client.delete("election/leader").await); // revision 3
            ok(&client.compact(3).await);
            let mut watch = client.watch("election/", Some(prefix_range_end("election/")), 3);
            ok(&client.put("election/next", "you").await); // revision 4
            match watch.next().await {
                WatchItem::Changes(_) => {}
                WatchItem::Compacted { .. } => panic!("revision 3 is the compaction revision"),
            }
            pause_for(&context, 200).await;
            watch.close();
        })
        .await
        .expect("the client finishes");
    })
}

/// etcd-io/etcd#18089: compaction drops the delete event at the compaction revision that a
/// watcher from that revision still needs (an election waiter never sees its predecessor go).
#[test]
fn compact_drops_tombstone_makes_a_watch_miss_the_delete() {
    let sweep = |bugs: Vec<KnownBug>| {
        ScriptedSweep::new(
            "scenarios",
            TARGET,
            "compact_drops_tombstone_makes_a_watch_miss_the_delete",
            2,
        )
        .run(
            |seed| watch_from_compacted_delete(seed, bugs.clone()),
            store_checks,
        )
    };
    let buggy = sweep(vec![KnownBug::Etcd(EtcdBug::CompactDropsTombstone)]);
    let caught = buggy
        .first_violation_of("watch delivery")
        .expect("the watch got the compacted delete");
    println!("{}", caught.violations[0]);
    sweep(Vec::new()).assert_clean();
}

/// Cuts the current leader off from the other servers together with `clients` (which can
/// then reach only it).
fn cut_off_leader_with(sim: &Sim, clients: Vec<NodeId>) -> NodeId {
    let leader = sim.current_leader().expect("a leader");
    let mut cut = vec![leader];
    cut.extend(clients.iter().copied());
    let rest: Vec<NodeId> = sim
        .servers()
        .into_iter()
        .filter(|s| *s != leader)
        .chain(sim.clients().into_iter().filter(|c| !clients.contains(c)))
        .collect();
    sim.nemesis().partition(PartitionShape::Groups {
        groups: vec![cut, rest],
    });
    leader
}

/// A lease abandoned just before its leader is cut off (with a reader, and its clock running
/// slow); the new leader expires it while the old one still answers reads.
fn stale_reader_of_an_expired_lease(seed: Seed, bugs: Vec<KnownBug>) -> RunOutcome {
    world(seed, 3, 2).run(move |sim| async move {
        let mut config = EtcdConfig::new(&sim.servers()).with_bugs(bugs);
        config.raft.election_timeout_min = Duration::from_millis(150);
        config.raft.election_timeout_max = Duration::from_millis(160);
        config.lease_checkpoint_interval = Duration::from_millis(100);
        let cluster = EtcdCluster::start(&sim, config);
        sim.sleep(Duration::from_millis(1_000)).await;
        let owner = NodeId::client(0);
        let context = sim.node(owner);
        let owner_cluster = cluster.clone();
        sim.spawn(owner, async move {
            let mut client = EtcdClient::new(&owner_cluster, context, 0);
            let lease = lease_of(&client.lease_grant(1_000).await);
            ok(&client.put_with_lease("lock", "owner", lease).await);
        })
        .await
        .expect("the owner finishes");
        sim.sleep(Duration::from_millis(900)).await;
        let reader = NodeId::client(1);
        let leader = cut_off_leader_with(&sim, vec![reader]);
        sim.nemesis().set_drift(leader, -500_000);
        let context = sim.node(reader);
        sim.spawn(reader, async move {
            let mut client = EtcdClient::new(&cluster, context.clone(), 0).with_config(
                models::etcd::ClientConfig {
                    operation_timeout: Duration::from_millis(300),
                    ..models::etcd::ClientConfig::default()
                },
            );
            let until = context.clock().now() + Duration::from_millis(1_500);
            while context.clock().now() < until {
                client.get("lock").await;
                pause_for(&context, 10).await;
            }
        })
        .await
        .expect("the reader finishes");
        sim.nemesis().heal_all();
    })
}

/// The lease-keys checker fires on a known-bad variant: with `raft.read_without_readindex`
/// the cut-off old leader keeps showing the lock key of a lease the new leader expired.
#[test]
fn read_without_readindex_shows_keys_of_an_expired_lease() {
    let sweep = |bugs: Vec<KnownBug>| {
        ScriptedSweep::new(
            "scenarios",
            TARGET,
            "read_without_readindex_shows_keys_of_an_expired_lease",
            5,
        )
        .run(
            |seed| stale_reader_of_an_expired_lease(seed, bugs.clone()),
            store_checks,
        )
    };
    let buggy = sweep(vec![KnownBug::Raft(
        models::raft::RaftBug::ReadWithoutReadIndex,
    )]);
    let caught = buggy
        .first_violation_of("lease keys removed")
        .expect("no stale read showed the expired lease's key");
    println!("{}", caught.violations[0]);
    sweep(Vec::new()).assert_clean();
}
