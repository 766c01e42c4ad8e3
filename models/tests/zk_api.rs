//! ZooKeeper client-visible semantics in a healthy three-server world: bad input gets
//! ZooKeeper's error kinds, Stat bookkeeping, create modes and sequence numbers, multi,
//! watches, sync and close.

use models::{
    recipes::ZkQueueLock,
    zk::{
        NodeAcl, WriteOp, ZkClient, ZkClientConfig, ZkClientError, ZkEnsemble, ZkEnsembleConfig,
        acl::generate_digest, wire::AuthInfo,
    },
};
use sim::{
    NodeContext, RunOutcome, Seed, Sim, World,
    history::{
        Event, OpError, OpResult,
        zk::{Acl, CreateMode, Perms, WatchEventType, ZkError, ZkResponse},
    },
};
use std::{future::Future, time::Duration};

/// Runs `body` with two connected clients (on c1 and c2) of a healthy ensemble.
fn with_clients<F, Fut>(seed: u64, body: F) -> RunOutcome
where
    F: FnOnce(ZkClient, ZkClient) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    with_configured_clients(seed, |_, _| {}, |first, second, _| body(first, second))
}

/// [`with_clients`], with each client's configuration (`configure(index, config)`) and c1's
/// node context for `body`.
fn with_configured_clients<C, F, Fut>(seed: u64, configure: C, body: F) -> RunOutcome
where
    C: Fn(u32, &mut ZkClientConfig) + Send + Sync + 'static,
    F: FnOnce(ZkClient, ZkClient, NodeContext) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let configure = std::sync::Arc::new(configure);
    World::builder()
        .seed(Seed::new(seed))
        .servers(3)
        .clients(2)
        .time_limit(Duration::from_secs(200))
        .build()
        .expect("a valid world")
        .run(move |sim: Sim| async move {
            let ensemble = ZkEnsemble::new(&sim, ZkEnsembleConfig::new(sim.servers())).unwrap();
            ensemble.start(&sim);
            let (c1, c2) = (sim.clients()[0], sim.clients()[1]);
            let (context1, context2) = (sim.node(c1), sim.node(c2));
            let second = ensemble.clone();
            let mut config2 = ensemble.client_config(1);
            configure(1, &mut config2);
            let mut config1 = ensemble.client_config(0);
            configure(0, &mut config1);
            let client2 = sim
                .spawn(c2, async move {
                    second
                        .connect(&context2, config2)
                        .await
                        .expect("c2 connects")
                })
                .await
                .unwrap();
            let done = sim.spawn(c1, async move {
                let client1 = ensemble
                    .connect(&context1, config1)
                    .await
                    .expect("c1 connects");
                body(client1, client2, context1).await;
            });
            done.await.expect("the scenario finished");
        })
}

fn api(error: ZkError) -> ZkClientError {
    ZkClientError::Api(error)
}

#[test]
fn bad_input_gets_zookeeper_error_kinds_never_a_panic() {
    let outcome = with_clients(11, |zk, _| async move {
        // Refused by the client before sending, as zookeeper-client 0.11 does.
        for bad in ["a", "/a/", "//a", "/a//b", "", "/a/./b"] {
            assert_eq!(
                zk.create(bad, "", CreateMode::Persistent).await,
                Err(api(ZkError::BadArguments)),
                "create {bad:?}"
            );
            assert_eq!(zk.get_data(bad).await, Err(api(ZkError::BadArguments)));
            assert_eq!(zk.exists(bad).await, Err(api(ZkError::BadArguments)));
            assert_eq!(zk.delete(bad, None).await, Err(api(ZkError::BadArguments)));
        }
        // A dot segment at the end passes the client; the server looks it up (NoNode), and
        // only a create (or setData) checks the whole path (BadArguments), as ZooKeeper.
        assert_eq!(
            zk.create("/..", "", CreateMode::Persistent).await,
            Err(api(ZkError::BadArguments))
        );
        assert_eq!(zk.get_data("/..").await, Err(api(ZkError::NoNode)));
        assert_eq!(zk.exists("/..").await, Ok(None));
        assert_eq!(zk.delete("/..", None).await, Err(api(ZkError::NoNode)));
        // zookeeper-client refuses to create or delete the root; the server refuses to
        // delete `/zookeeper` (a special path) and lists it under the root.
        assert_eq!(
            zk.create("/", "", CreateMode::Persistent).await,
            Err(api(ZkError::BadArguments))
        );
        assert_eq!(
            zk.delete("/zookeeper", None).await,
            Err(api(ZkError::BadArguments))
        );
        let (top, root) = zk.get_children("/").await.unwrap();
        assert_eq!((top, root.cversion), (vec!["zookeeper".to_string()], -1));
        assert_eq!(zk.delete("/", None).await, Err(api(ZkError::BadArguments)));
        assert_eq!(
            zk.create("/missing/child", "", CreateMode::Persistent)
                .await,
            Err(api(ZkError::NoNode))
        );
        zk.create("/a", "1", CreateMode::Persistent).await.unwrap();
        assert_eq!(
            zk.create("/a", "again", CreateMode::Persistent).await,
            Err(api(ZkError::NodeExists))
        );
        assert_eq!(
            zk.set_data("/a", "2", Some(7)).await,
            Err(api(ZkError::BadVersion))
        );
        assert_eq!(
            zk.delete("/a", Some(3)).await,
            Err(api(ZkError::BadVersion))
        );
        zk.create("/a/b", "", CreateMode::Persistent).await.unwrap();
        assert_eq!(zk.delete("/a", None).await, Err(api(ZkError::NotEmpty)));
        zk.create("/e", "", CreateMode::Ephemeral).await.unwrap();
        assert_eq!(
            zk.create("/e/child", "", CreateMode::Persistent).await,
            Err(api(ZkError::NoChildrenForEphemerals))
        );
        assert_eq!(
            zk.create("/e/", "", CreateMode::PersistentSequential).await,
            Err(api(ZkError::NoChildrenForEphemerals))
        );
        assert_eq!(zk.get_data("/nope").await, Err(api(ZkError::NoNode)));
        assert_eq!(zk.get_children("/nope").await, Err(api(ZkError::NoNode)));
        assert_eq!(zk.exists("/nope").await, Ok(None));
        assert_eq!(
            zk.set_data("/nope", "", None).await,
            Err(api(ZkError::NoNode))
        );
        assert_eq!(zk.delete("/nope", None).await, Err(api(ZkError::NoNode)));
    });
    // Every failure is a definite Fail in the history, with ZooKeeper's kind.
    let failures = outcome
        .history
        .operations()
        .iter()
        .filter(|op| {
            matches!(
                op.completion,
                Some((
                    _,
                    OpResult::Fail {
                        error: OpError::Zk(_)
                    }
                ))
            )
        })
        .count();
    assert_eq!(failures, 6 * 4 + 3 + 14);
}

#[test]
fn stat_bookkeeping_follows_zookeeper() {
    with_clients(12, |zk, _| async move {
        zk.create("/p", "hello", CreateMode::Persistent)
            .await
            .unwrap();
        let (data, created) = zk.get_data("/p").await.unwrap();
        assert_eq!(data, "hello");
        assert_eq!(created.czxid, created.mzxid);
        assert_eq!(created.czxid, created.pzxid);
        assert_eq!((created.version, created.cversion), (0, 0));
        assert_eq!((created.data_length, created.num_children), (5, 0));
        assert_eq!(created.ephemeral_owner, 0);

        let set = zk.set_data("/p", "hi", Some(0)).await.unwrap();
        assert_eq!(set.version, 1);
        assert!(set.mzxid > created.mzxid);
        assert_eq!(set.czxid, created.czxid);
        assert_eq!(set.data_length, 2);
        assert_eq!(zk.set_data("/p", "x", None).await.unwrap().version, 2);

        zk.create("/p/c1", "", CreateMode::Persistent)
            .await
            .unwrap();
        zk.create("/p/c2", "", CreateMode::Ephemeral).await.unwrap();
        zk.delete("/p/c1", Some(0)).await.unwrap();
        let (children, parent) = zk.get_children("/p").await.unwrap();
        assert_eq!(children, vec!["c2".to_string()]);
        assert_eq!(parent.num_children, 1);
        assert_eq!(
            parent.cversion, 3,
            "two creates and a delete: ZooKeeper's stat counts both (DataNode.copyStat)"
        );
        assert_eq!(
            parent.version, 2,
            "child changes do not touch the data version"
        );
        let c2 = zk.exists("/p/c2").await.unwrap().unwrap();
        assert_eq!(parent.pzxid, c2.czxid.max(parent.pzxid));
        assert!(parent.pzxid > c2.czxid, "the delete came after c2's create");
        assert_eq!(Some(c2.ephemeral_owner), zk.session_id());
    });
}

#[test]
fn sequential_names_come_from_the_parent_cversion() {
    with_clients(13, |zk, _| async move {
        zk.create("/q", "", CreateMode::Persistent).await.unwrap();
        let first = zk
            .create("/q/n-", "", CreateMode::PersistentSequential)
            .await;
        let second = zk
            .create("/q/n-", "", CreateMode::EphemeralSequential)
            .await;
        let bare = zk.create("/q/", "", CreateMode::PersistentSequential).await;
        assert_eq!(first.as_deref(), Ok("/q/n-0000000000"));
        assert_eq!(second.as_deref(), Ok("/q/n-0000000001"));
        assert_eq!(bare.as_deref(), Ok("/q/0000000002"));
        zk.delete("/q/n-0000000000", None).await.unwrap();
        // The name counts creates only, as in ZooKeeper (the stat's cversion counts the
        // delete too): sequence numbers never repeat.
        let after = zk
            .create("/q/n-", "", CreateMode::PersistentSequential)
            .await;
        assert_eq!(after.as_deref(), Ok("/q/n-0000000003"));
        let (_, parent) = zk.get_children("/q").await.unwrap();
        assert_eq!((parent.cversion, parent.num_children), (5, 3));
    });
}

#[test]
fn multi_is_all_or_nothing() {
    with_clients(14, |zk, other| async move {
        let failed = zk
            .multi(vec![
                WriteOp::Create {
                    path: "/m".into(),
                    data: "".into(),
                    mode: CreateMode::Persistent,
                    acl: NodeAcl::Open,
                },
                WriteOp::SetData {
                    path: "/nope".into(),
                    data: "".into(),
                    version: None,
                },
            ])
            .await;
        assert_eq!(
            failed,
            Err(api(ZkError::MultiFailed {
                index: 1,
                error: Box::new(ZkError::NoNode)
            }))
        );
        other.sync("/").await.unwrap();
        assert_eq!(other.exists("/m").await, Ok(None), "nothing was applied");
        let done = zk
            .multi(vec![
                WriteOp::Create {
                    path: "/m".into(),
                    data: "".into(),
                    mode: CreateMode::Persistent,
                    acl: NodeAcl::Open,
                },
                WriteOp::Create {
                    path: "/m/s-".into(),
                    data: "".into(),
                    mode: CreateMode::PersistentSequential,
                    acl: NodeAcl::Open,
                },
                WriteOp::SetData {
                    path: "/m".into(),
                    data: "set".into(),
                    version: Some(0),
                },
            ])
            .await
            .unwrap();
        assert_eq!(
            done[..2],
            [
                ZkResponse::Created { path: "/m".into() },
                ZkResponse::Created {
                    path: "/m/s-0000000000".into()
                }
            ]
        );
        assert!(matches!(done[2], ZkResponse::Stat { stat } if stat.version == 1));
        other.sync("/").await.unwrap();
        assert_eq!(other.get_data("/m").await.unwrap().0, "set");
    });
}

#[test]
fn watches_fire_once_with_the_right_event() {
    let outcome = with_clients(15, |zk, other| async move {
        let (stat, created) = zk.exists_watch("/w").await.unwrap();
        assert_eq!(stat, None);
        other
            .create("/w", "a", CreateMode::Persistent)
            .await
            .unwrap();
        let event = created.fired().await.unwrap();
        assert_eq!(event.event, WatchEventType::NodeCreated);

        let (_, _, data) = zk.get_data_watch("/w").await.unwrap();
        let (_, _, children) = zk.get_children_watch("/w").await.unwrap();
        let (_, exists) = zk.exists_watch("/w").await.unwrap();
        other.set_data("/w", "b", None).await.unwrap();
        other.set_data("/w", "c", None).await.unwrap();
        assert_eq!(
            data.fired().await.unwrap().event,
            WatchEventType::NodeDataChanged
        );
        assert_eq!(
            exists.fired().await.unwrap().event,
            WatchEventType::NodeDataChanged
        );
        other
            .create("/w/kid", "", CreateMode::Ephemeral)
            .await
            .unwrap();
        assert_eq!(
            children.fired().await.unwrap().event,
            WatchEventType::NodeChildrenChanged
        );
        let (_, _, gone) = zk.get_data_watch("/w/kid").await.unwrap();
        other.close().await.unwrap();
        // Closing the session deletes its ephemeral node.
        assert_eq!(
            gone.fired().await.unwrap().event,
            WatchEventType::NodeDeleted
        );
        zk.sync("/").await.unwrap();
        assert_eq!(zk.exists("/w/kid").await, Ok(None));
        assert_eq!(other.exists("/w").await, Err(ZkClientError::Closed));
    });
    // Five registrations, five deliveries, each once.
    let registered = outcome
        .history
        .records()
        .iter()
        .filter(|r| {
            matches!(
                r.event,
                Event::Zk(sim::history::zk::ZkEvent::WatchRegistered { .. })
            )
        })
        .count();
    let delivered = outcome
        .history
        .records()
        .iter()
        .filter(|r| {
            matches!(
                r.event,
                Event::Zk(sim::history::zk::ZkEvent::WatchDelivered { .. })
            )
        })
        .count();
    assert_eq!((registered, delivered), (5, 5));
}

#[test]
fn reads_wait_behind_the_same_sessions_writes() {
    with_clients(16, |zk, _| async move {
        zk.create("/r", "0", CreateMode::Persistent).await.unwrap();
        // Issue a write and a read without awaiting the write first: the read must see it.
        let write = zk.set_data("/r", "1", None);
        let read = zk.get_data("/r");
        let (written, (data, stat)) =
            futures_util::future::join(write, async { read.await.unwrap() }).await;
        assert_eq!(data, "1");
        assert_eq!(stat.mzxid, written.unwrap().mzxid);
    });
}

#[test]
fn bad_configurations_are_typed_errors_not_panics() {
    use models::zab::ConfigError;
    use sim::NodeId;
    World::builder()
        .seed(Seed::new(17))
        .servers(3)
        .clients(1)
        .build()
        .unwrap()
        .run(|sim: Sim| async move {
            let mut config = ZkEnsembleConfig::new(vec![NodeId::server(0), NodeId::server(7)]);
            assert_eq!(
                ZkEnsemble::new(&sim, config.clone()).err(),
                Some(ConfigError::NotInWorld {
                    node: NodeId::server(7)
                })
            );
            config.servers = vec![];
            assert_eq!(
                ZkEnsemble::new(&sim, config.clone()).err(),
                Some(ConfigError::EmptyEnsemble)
            );
            config.servers = sim.servers();
            config.tick = Duration::ZERO;
            assert_eq!(
                ZkEnsemble::new(&sim, config).err(),
                Some(ConfigError::ZeroTiming { field: "tick" })
            );
            let ensemble = ZkEnsemble::new(&sim, ZkEnsembleConfig::new(sim.servers())).unwrap();
            let node = sim.clients()[0];
            let context = sim.node(node);
            sim.spawn(node, async move {
                let mut config = ensemble.client_config(0);
                config.servers = vec![NodeId::server(9)];
                assert_eq!(
                    ensemble.connect(&context, config.clone()).await.err(),
                    Some(ZkClientError::UnknownServer(NodeId::server(9)))
                );
                config.servers = vec![];
                assert_eq!(
                    ensemble.connect(&context, config).await.err(),
                    Some(ZkClientError::NoServers)
                );
            })
            .await
            .unwrap();
        });
}

/// Asserts that the run finished with every check of `body` passed.
fn assert_finished(outcome: RunOutcome) {
    assert!(
        matches!(outcome.end, sim::RunEnd::Completed { .. }),
        "the test body failed: {:?}",
        outcome.end
    );
}

#[test]
fn each_permission_is_denied_without_it_and_granted_with_it() {
    // For each permission: a node whose ACL gives everyone everything but that permission,
    // and alice everything. c2 (not alice) is refused exactly the operations needing it.
    assert_finished(with_clients(21, |alice, other| async move {
        alice.add_auth("digest", "alice:pw").await.unwrap();
        let alice_id = generate_digest("alice:pw");
        let perms = [
            ("read", Perms::READ),
            ("write", Perms::WRITE),
            ("create", Perms::CREATE),
            ("delete", Perms::DELETE),
            ("admin", Perms::ADMIN),
        ];
        for (name, missing) in perms {
            let node = format!("/{name}");
            let acl = vec![
                Acl::new(Perms(Perms::ALL.0 & !missing.0), "world", "anyone"),
                Acl::new(Perms::ALL, "digest", &alice_id),
            ];
            alice
                .create_with_acl(
                    &node,
                    "d",
                    CreateMode::Persistent,
                    NodeAcl::List(acl.into()),
                )
                .await
                .unwrap();
            for client in [&alice, &other] {
                client
                    .create_with_acl(
                        &format!("{node}/victim"),
                        "",
                        CreateMode::Persistent,
                        NodeAcl::Open,
                    )
                    .await
                    .ok();
            }
            other.sync("/").await.unwrap();
            let denied = |needed: Perms| {
                if needed == missing {
                    Err(api(ZkError::NoAuth))
                } else {
                    Ok(())
                }
            };
            assert_eq!(
                other.get_data(&node).await.map(|_| ()),
                denied(Perms::READ),
                "{name}: getData"
            );
            assert_eq!(
                other.get_children(&node).await.map(|_| ()),
                denied(Perms::READ),
                "{name}: getChildren"
            );
            assert!(
                matches!(other.exists(&node).await, Ok(Some(_))),
                "{name}: exists is not ACL-controlled"
            );
            assert_eq!(
                other.set_data(&node, "x", None).await.map(|_| ()),
                denied(Perms::WRITE),
                "{name}: setData"
            );
            assert_eq!(
                other
                    .create(&format!("{node}/child"), "", CreateMode::Persistent)
                    .await
                    .map(|_| ()),
                denied(Perms::CREATE),
                "{name}: create a child"
            );
            assert_eq!(
                other.delete(&format!("{node}/victim"), None).await,
                denied(Perms::DELETE),
                "{name}: delete a child (DELETE on the parent)"
            );
            assert_eq!(
                other
                    .set_acl(&node, vec![Acl::open()], None)
                    .await
                    .map(|_| ()),
                denied(Perms::ADMIN),
                "{name}: setACL"
            );
            // getACL needs READ or ADMIN: one missing permission never stops it.
            assert!(other.get_acl(&node).await.is_ok(), "{name}: getACL");
            // alice may do everything (the node may be open by now: setACL above).
            assert!(alice.get_data(&node).await.is_ok(), "{name}: alice reads");
            assert!(
                alice.set_data(&node, "y", None).await.is_ok(),
                "{name}: alice writes"
            );
        }
        // Without READ and ADMIN, getACL is refused; a child does not inherit the ACL.
        let secret = vec![Acl::new(Perms::ALL, "digest", &alice_id)];
        alice
            .create_with_acl(
                "/secret",
                "",
                CreateMode::Persistent,
                NodeAcl::List(secret.into()),
            )
            .await
            .unwrap();
        alice
            .create("/secret/open", "", CreateMode::Persistent)
            .await
            .unwrap();
        other.sync("/").await.unwrap();
        assert_eq!(other.get_acl("/secret").await, Err(api(ZkError::NoAuth)));
        assert_eq!(
            other.get_acl("/secret/open").await.map(|(acl, ..)| acl),
            Ok(vec![Acl::open()])
        );
        assert!(other.get_data("/secret/open").await.is_ok());
    }));
}

#[test]
fn malformed_acls_and_unknown_schemes_are_invalid_acl() {
    assert_finished(with_clients(22, |zk, _| async move {
        let invalid = [
            vec![],
            vec![Acl::new(Perms::ALL, "kerberos", "alice")],
            vec![Acl::new(Perms::ALL, "digest", "no-hash")],
            vec![Acl::new(Perms::ALL, "ip", "10.1.0.300")],
            vec![Acl::new(Perms::ALL, "world", "somebody")],
            // `auth` (CREATOR_ALL_ACL) from a session with no authenticated id.
            vec![Acl::creator_all()],
        ];
        zk.create("/n", "", CreateMode::Persistent).await.unwrap();
        for acl in invalid {
            assert_eq!(
                zk.create_with_acl(
                    "/bad",
                    "",
                    CreateMode::Persistent,
                    NodeAcl::List(acl.clone().into())
                )
                .await,
                Err(api(ZkError::InvalidAcl)),
                "create with {acl:?}"
            );
            assert_eq!(
                zk.set_acl("/n", acl.clone(), None).await,
                Err(api(ZkError::InvalidAcl)),
                "setACL with {acl:?}"
            );
        }
        assert_eq!(zk.exists("/bad").await, Ok(None));
        // The ACL version is checked like a data version.
        let ip_acl = vec![Acl::new(Perms::ALL, "ip", "10.1.0.0/16")];
        let (aversion, stat) = zk.set_acl("/n", ip_acl.clone(), Some(0)).await.unwrap();
        assert_eq!((aversion, stat.version), (1, 0));
        assert_eq!(
            zk.set_acl("/n", ip_acl.clone(), Some(0)).await,
            Err(api(ZkError::BadVersion))
        );
        let (acl, aversion, _) = zk.get_acl("/n").await.unwrap();
        assert_eq!((acl, aversion), (ip_acl, 1));
    }));
}

/// ZooKeeper 3.8.0 answers an `addAuth` with an unknown scheme AuthFailed and closes the
/// connection; the client (Java's, and zookeeper-client 0.11) is then done, and every call
/// fails AuthFailed. The session is not closed: it lives, with its ephemeral nodes, until
/// it expires (about 4.9 s for a 4 s session on the real server).
#[test]
fn a_failed_auth_ends_the_client_but_not_its_session() {
    assert_finished(with_clients(23, |zk, other| async move {
        zk.create("/e", "", CreateMode::Ephemeral).await.unwrap();
        assert_eq!(
            zk.add_auth("kerberos", "alice").await,
            Err(ZkClientError::AuthFailed)
        );
        assert!(zk.is_auth_failed() && !zk.is_expired() && !zk.is_connected());
        assert_eq!(zk.exists("/").await, Err(ZkClientError::AuthFailed));
        assert_eq!(
            zk.create("/f", "", CreateMode::Persistent).await,
            Err(ZkClientError::AuthFailed)
        );
        assert!(
            other.exists("/e").await.unwrap().is_some(),
            "the session lives"
        );
        sim::time::sleep(zk.session_timeout() * 3).await;
        assert_eq!(other.exists("/e").await, Ok(None), "until it expires");
        assert_eq!(other.exists("/f").await, Ok(None));
    }));
}

#[test]
fn a_foreign_client_cannot_delete_a_lock_node_made_with_creator_all_acl() {
    let configure = |index: u32, config: &mut ZkClientConfig| {
        if index == 0 {
            config.auth = vec![AuthInfo {
                scheme: "digest".into(),
                auth: "locker:pw".into(),
            }];
            config.create_acl = NodeAcl::creator_all();
        }
    };
    assert_finished(with_configured_clients(
        23,
        configure,
        |zk, foreign, context| async move {
            let lock = ZkQueueLock::new(&zk, &context, "/locks/acl");
            let _guard = lock.acquire(Duration::from_secs(5)).await.unwrap();
            let (children, _) = zk.get_children("/locks/acl").await.unwrap();
            assert_eq!(children.len(), 1);
            let node = format!("/locks/acl/{}", children[0]);
            let (acl, ..) = zk.get_acl(&node).await.unwrap();
            assert_eq!(
                acl,
                vec![Acl::new(
                    Perms::ALL,
                    "digest",
                    &generate_digest("locker:pw")
                )],
                "CREATOR_ALL_ACL expanded to the creator's digest id"
            );
            foreign.sync("/").await.unwrap();
            assert_eq!(foreign.delete(&node, None).await, Err(api(ZkError::NoAuth)));
            assert_eq!(
                foreign.get_data(&node).await.map(|_| ()),
                Err(api(ZkError::NoAuth))
            );
            assert!(matches!(foreign.exists(&node).await, Ok(Some(_))));
            // Another user is still not the creator.
            foreign.add_auth("digest", "intruder:pw").await.unwrap();
            assert_eq!(foreign.delete(&node, None).await, Err(api(ZkError::NoAuth)));
            assert_eq!(zk.exists(&node).await.map(|stat| stat.is_some()), Ok(true));
            // The creator's credentials grant it (ids are kept across reconnections too).
            foreign.add_auth("digest", "locker:pw").await.unwrap();
            assert_eq!(foreign.delete(&node, None).await, Ok(()));
        },
    ));
}

/// An ensemble of three voters (`s1..s3`) and two observers (`s4`, `s5`): a client whose
/// only server is the observer s4 opens its session there, reads from its tree, has its
/// writes forwarded to the leader (answered once s4 learns them committed, by INFORM), and
/// gets its watches fired by another client's writes through a voter; `sync` then read on
/// the observer sees a write acknowledged through the voter. No observer ever leads.
#[test]
fn a_client_of_an_observer_reads_writes_and_gets_its_watches() {
    use sim::{NodeId, history::ProtocolEvent};
    let (observer, voter) = (NodeId::server(3), NodeId::server(0));
    let outcome = World::builder()
        .seed(Seed::new(23))
        .servers(5)
        .clients(2)
        .time_limit(Duration::from_secs(200))
        .build()
        .expect("a valid world")
        .run(move |sim: Sim| async move {
            let mut config = ZkEnsembleConfig::new(sim.servers());
            config.observers = 2;
            assert_eq!(config.voters(), &sim.servers()[..3]);
            let ensemble = ZkEnsemble::new(&sim, config).unwrap();
            ensemble.start(&sim);
            let (c1, c2) = (sim.clients()[0], sim.clients()[1]);
            let (context1, context2) = (sim.node(c1), sim.node(c2));
            let mut config1 = ensemble.client_config(0);
            config1.servers = vec![observer];
            let mut config2 = ensemble.client_config(1);
            config2.servers = vec![voter];
            let other = ensemble.clone();
            let writer = sim
                .spawn(c2, async move { other.connect(&context2, config2).await })
                .await
                .unwrap()
                .expect("c2 connects to s1");
            sim.spawn(c1, async move {
                let zk = ensemble
                    .connect(&context1, config1)
                    .await
                    .expect("c1 connects to the observer");
                // A write forwarded by the observer, then read back from its own tree.
                let created = zk.create("/o", "1", CreateMode::Persistent).await.unwrap();
                assert_eq!(created, "/o");
                let stat = zk.set_data("/o", "2", None).await.unwrap();
                let (data, read) = zk.get_data("/o").await.unwrap();
                assert_eq!((data.as_str(), read.mzxid), ("2", stat.mzxid));
                // Watches set on the observer fire for writes made through a voter.
                let (none, created) = zk.exists_watch("/w").await.unwrap();
                assert_eq!(none, None);
                writer
                    .create("/w", "a", CreateMode::Persistent)
                    .await
                    .unwrap();
                assert_eq!(
                    created.fired().await.unwrap().event,
                    WatchEventType::NodeCreated
                );
                let (_, changed) = zk.exists_watch("/w").await.unwrap();
                let written = writer.set_data("/w", "b", None).await.unwrap();
                assert_eq!(
                    changed.fired().await.unwrap().event,
                    WatchEventType::NodeDataChanged
                );
                // sync, then read: the observer has caught up with the acknowledged write.
                zk.sync("/w").await.unwrap();
                let (data, stat) = zk.get_data("/w").await.unwrap();
                assert_eq!((data.as_str(), stat.mzxid), ("b", written.mzxid));
            })
            .await
            .unwrap();
        });
    assert_finished(outcome.clone());
    let records = outcome.history.records();
    let c1 = NodeId::client(0);
    assert!(
        records.iter().any(|r| r.node == Some(c1)
            && matches!(
                r.event,
                Event::Zk(sim::history::zk::ZkEvent::SessionEstablished { server, .. })
                    if server == observer
            )),
        "c1's session was not established on the observer"
    );
    let leaders: Vec<NodeId> = records
        .iter()
        .filter(|r| matches!(r.event, Event::Protocol(ProtocolEvent::BecameLeader { .. })))
        .filter_map(|r| r.node)
        .collect();
    assert!(!leaders.is_empty());
    assert!(leaders.iter().all(|node| node.ordinal() < 3), "{leaders:?}");
    let mut observing: Vec<NodeId> = records
        .iter()
        .filter(|r| matches!(r.event, Event::Protocol(ProtocolEvent::StartedObserving)))
        .filter_map(|r| r.node)
        .collect();
    observing.sort();
    assert_eq!(observing, vec![NodeId::server(3), NodeId::server(4)]);
}

/// ZooKeeper's `sync` proposes nothing (`Leader.processSync`): the next write takes the
/// next zxid; a read after a sync still sees every write before it.
#[test]
fn a_sync_takes_no_zxid() {
    assert_finished(with_clients(24, |zk, other| async move {
        zk.create("/a", "x", CreateMode::Persistent).await.unwrap();
        let a = zk.exists("/a").await.unwrap().unwrap();
        zk.sync("/").await.unwrap();
        other.sync("/").await.unwrap();
        assert_eq!(other.get_data("/a").await.unwrap().0, "x");
        zk.create("/b", "", CreateMode::Persistent).await.unwrap();
        let b = zk.exists("/b").await.unwrap().unwrap();
        assert_eq!(b.czxid, a.czxid + 1, "two syncs between, no zxid taken");
    }));
}

/// `getChildren` answers in an order keyed by the world's seed: the same for every read and
/// client of a run, another for another seed, and unrelated to the names (ZooKeeper's
/// hash order is unrelated too), so a recipe that forgets to sort fails here.
#[test]
fn children_come_in_an_order_of_the_seed_not_of_the_names() {
    let names: Vec<String> = (0..10).map(|n| format!("n{n}")).collect();
    let order_for = |seed: u64| {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        let names = names.clone();
        assert_finished(with_clients(seed, move |zk, other| async move {
            zk.create("/p", "", CreateMode::Persistent).await.unwrap();
            for name in &names {
                zk.create(&format!("/p/{name}"), "", CreateMode::Persistent)
                    .await
                    .unwrap();
            }
            let (first, _) = zk.get_children("/p").await.unwrap();
            other.sync("/").await.unwrap();
            let (second, _) = other.get_children("/p").await.unwrap();
            assert_eq!(first, second, "one order within a run");
            *sink.lock().unwrap() = first;
        }));
        let order = seen.lock().unwrap().clone();
        order
    };
    let (one, two) = (order_for(31), order_for(32));
    assert_ne!(one, two, "another seed, another order");
    assert!(one != names || two != names, "not the names' order");
    let mut sorted = one.clone();
    sorted.sort();
    assert_eq!(sorted, names);
}

/// `create2` answers the new node's stat (ZooKeeper's `create2`): the one a read right
/// after it shows; a plain create answers its path alone, in a multi too.
#[test]
fn create2_answers_the_new_nodes_stat() {
    let outcome = with_clients(25, |zk, _| async move {
        let (path, stat) = zk
            .create2("/p", "hello", CreateMode::Persistent)
            .await
            .unwrap();
        assert_eq!(path, "/p");
        assert_eq!(zk.exists("/p").await.unwrap(), Some(stat));
        assert_eq!(
            (stat.czxid, stat.version, stat.data_length),
            (stat.mzxid, 0, 5)
        );
        let (path, stat) = zk
            .create2("/p/e-", "", CreateMode::EphemeralSequential)
            .await
            .unwrap();
        assert_eq!(path, "/p/e-0000000000");
        assert_eq!(Some(stat.ephemeral_owner), zk.session_id());
        assert_eq!(
            zk.create2("/p", "", CreateMode::Persistent).await,
            Err(api(ZkError::NodeExists))
        );
        assert_eq!(
            zk.create("/q", "", CreateMode::Persistent).await.as_deref(),
            Ok("/q")
        );
    });
    assert!(
        matches!(outcome.end, sim::RunEnd::Completed { .. }),
        "the test body failed: {:?}",
        outcome.end
    );
    let creates_with_stat = outcome
        .history
        .operations()
        .iter()
        .filter(|op| {
            matches!(
                &op.completion,
                Some((
                    _,
                    OpResult::Ok {
                        response: sim::history::Response::Zk(ZkResponse::CreatedWithStat { .. })
                    }
                ))
            )
        })
        .count();
    assert_eq!(creates_with_stat, 2, "only create2 records the stat");
}

/// Stat `ctime` and `mtime` (ms of simulated time, the leader's clock when it prepared the
/// change, as ZooKeeper stamps `TxnHeader.time`): a create sets both, a `setData` moves
/// `mtime` only, and every server shows the same times.
#[test]
fn stats_carry_the_leaders_ctime_and_mtime() {
    assert_finished(with_clients(26, |zk, other| async move {
        let start_ms = sim::time::now().as_millis();
        let (_, created) = zk.create2("/t", "a", CreateMode::Persistent).await.unwrap();
        assert!(created.ctime_ms > 0 && created.ctime_ms == created.mtime_ms);
        assert!(
            created.ctime_ms + 1_000 > start_ms,
            "about now: {created:?}"
        );
        sim::time::sleep(Duration::from_millis(500)).await;
        let set = zk.set_data("/t", "b", None).await.unwrap();
        assert_eq!(set.ctime_ms, created.ctime_ms);
        assert!(
            set.mtime_ms >= created.mtime_ms + 400,
            "{set:?} after {created:?}"
        );
        other.sync("/").await.unwrap();
        let (_, seen) = other.get_data("/t").await.unwrap();
        assert_eq!((seen.ctime_ms, seen.mtime_ms), (set.ctime_ms, set.mtime_ms));
    }));
}

/// `getEphemerals` lists the session's own ephemeral nodes whose path starts with a string
/// prefix; `getAllChildrenNumber` counts every node below a node, NoNode if it is missing
/// (as ZooKeeper 3.8.0 answers).
#[test]
fn ephemerals_by_prefix_and_descendants_by_count() {
    assert_finished(with_clients(27, |zk, other| async move {
        for (path, mode) in [
            ("/a", CreateMode::Persistent),
            ("/a/e1", CreateMode::Ephemeral),
            ("/a/p", CreateMode::Persistent),
            ("/a/p/e2", CreateMode::Ephemeral),
            ("/ab", CreateMode::Ephemeral),
        ] {
            zk.create(path, "", mode).await.unwrap();
        }
        other
            .create("/a/x", "", CreateMode::Ephemeral)
            .await
            .unwrap();
        assert_eq!(
            zk.get_ephemerals("/a").await.unwrap(),
            vec!["/a/e1", "/a/p/e2", "/ab"]
        );
        assert_eq!(zk.get_ephemerals("/").await.unwrap().len(), 3);
        assert_eq!(other.get_ephemerals("/a").await.unwrap(), vec!["/a/x"]);
        zk.sync("/").await.unwrap();
        assert_eq!(zk.get_all_children_number("/a").await, Ok(4));
        assert_eq!(zk.get_all_children_number("/a/e1").await, Ok(0));
        assert_eq!(
            zk.get_all_children_number("/a/none").await,
            Err(api(ZkError::NoNode))
        );
        // The root's count takes in /zookeeper, /zookeeper/quota and /zookeeper/config.
        assert_eq!(zk.get_all_children_number("/").await, Ok(9));
    }));
}

/// A container (ZooKeeper 3.5+) is deleted by the leader once it has had a child and has
/// none (within `znode.container.checkIntervalMs`, 60 s); one that never had a child stays;
/// its stat shows no owner; a watch on it sees the delete.
#[test]
fn an_emptied_container_is_deleted_by_the_leader() {
    assert_finished(with_clients(28, |zk, _| async move {
        zk.create("/c", "", CreateMode::Container).await.unwrap();
        zk.create("/never", "", CreateMode::Container)
            .await
            .unwrap();
        zk.create("/c/k", "", CreateMode::Ephemeral).await.unwrap();
        assert_eq!(zk.exists("/c").await.unwrap().unwrap().ephemeral_owner, 0);
        sim::time::sleep(Duration::from_secs(61)).await;
        assert!(zk.exists("/c").await.unwrap().is_some(), "a child keeps it");
        let (_, watch) = zk.exists_watch("/c").await.unwrap();
        zk.delete("/c/k", None).await.unwrap();
        let event = watch.fired().await.unwrap();
        assert_eq!(event.event, WatchEventType::NodeDeleted);
        assert_eq!(zk.exists("/c").await, Ok(None));
        assert!(zk.exists("/never").await.unwrap().is_some());
    }));
}

/// An expected version of -1 is ZooKeeper's "any version" (`checkAndIncVersion`), also when
/// a client sends it as it is (`zookeeper-client` sends `Some(-1)` unchanged).
#[test]
fn version_minus_one_matches_any_version() {
    assert_finished(with_clients(29, |zk, _| async move {
        zk.create("/v", "a", CreateMode::Persistent).await.unwrap();
        zk.set_data("/v", "b", None).await.unwrap();
        assert_eq!(zk.set_data("/v", "c", Some(-1)).await.unwrap().version, 2);
        assert_eq!(
            zk.set_data("/v", "d", Some(0)).await,
            Err(api(ZkError::BadVersion))
        );
        assert!(zk.set_acl("/v", vec![Acl::open()], Some(-1)).await.is_ok());
        zk.multi(vec![WriteOp::Check {
            path: "/v".into(),
            version: Some(-1),
        }])
        .await
        .unwrap();
        zk.delete("/v", Some(-1)).await.unwrap();
        assert_eq!(zk.exists("/v").await, Ok(None));
    }));
}

/// Without a configured maximum, the servers grant session timeouts between ZooKeeper's
/// default bounds, 2 and 20 ticks (a ZooKeeper 3.8.0 with `tickTime=2000` grants 4000 ms
/// for 1000 asked and 40000 ms for 100000).
#[test]
fn session_timeouts_lie_between_2_and_20_ticks_by_default() {
    let outcome = World::builder()
        .seed(Seed::new(30))
        .servers(1)
        .clients(1)
        .time_limit(Duration::from_secs(60))
        .build()
        .expect("a valid world")
        .run(|sim: Sim| async move {
            let mut config = ZkEnsembleConfig::new(sim.servers());
            config.max_session_timeout = None;
            let ensemble = ZkEnsemble::new(&sim, config).unwrap();
            ensemble.start(&sim);
            let node = sim.clients()[0];
            let context = sim.node(node);
            let granted = sim
                .spawn(node, async move {
                    let mut granted = Vec::new();
                    for asked_ms in [50, 1_000, 100_000] {
                        let mut config = ensemble.client_config(0);
                        config.session_timeout = Duration::from_millis(asked_ms);
                        let zk = ensemble.connect(&context, config).await.unwrap();
                        granted.push(zk.session_timeout().as_millis());
                        zk.close().await.unwrap();
                    }
                    granted
                })
                .await
                .unwrap();
            assert_eq!(granted, vec![200, 1_000, 2_000], "a 100 ms tick");
        });
    assert_finished(outcome);
}
