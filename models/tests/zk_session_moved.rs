//! A request held by a server the client has left must not be applied after the client's
//! later requests through another server (ZooKeeper's session ownership: the leader
//! refuses a request from a server that no longer owns the session, `SessionMovedException`).
//!
//! The shape of the swarm failure of `zab_safety` seed 0x18884: a follower paused with a
//! client's create in its receive buffer; the client gave up (connection loss), resumed
//! its session on another follower and went on; when the paused follower resumed, it
//! forwarded the stale create and the leader applied it after the client's later,
//! acknowledged requests. Without the leader's owner check every seed here applies it.

use models::zk::{ZkClientError, ZkEnsemble, ZkEnsembleConfig};
use sim::{
    NodeId, World,
    history::{Event, zk::CreateMode, zk::ZkEvent},
    report::for_each_seed,
    this_test,
};
use std::time::Duration;

#[test]
fn a_request_left_on_a_paused_server_is_not_applied_after_the_client_moved_on() {
    for_each_seed(
        1..=6,
        this_test!("a_request_left_on_a_paused_server_is_not_applied_after_the_client_moved_on"),
        |seed| {
            let outcome = World::builder()
                .seed(seed)
                .servers(3)
                .clients(1)
                .time_limit(Duration::from_secs(60))
                .build()
                .expect("a valid world")
                .run(move |sim| async move {
                    // The paused follower must still be following when it resumes, so that it
                    // forwards what it finds in its buffer (it was in the swarm run); a long
                    // sync limit makes that certain.
                    let mut ensemble_config = ZkEnsembleConfig::new(sim.servers());
                    ensemble_config.sync_limit_ticks = 30;
                    let ensemble = ZkEnsemble::new(&sim, ensemble_config).unwrap();
                    ensemble.start(&sim);
                    sim.sleep(Duration::from_secs(1)).await;
                    // s3 leads a fresh ensemble; the client may attach to either follower.
                    let client_node = NodeId::client(0);
                    let mut config = ensemble.client_config(0);
                    config.servers = vec![NodeId::server(0), NodeId::server(1)];
                    let (connector, context) = (ensemble.clone(), sim.node(client_node));
                    let zk = sim
                        .spawn(client_node, async move {
                            connector.connect(&context, config).await
                        })
                        .await
                        .unwrap()
                        .expect("the client connects");
                    let first = sim
                        .history_snapshot()
                        .records()
                        .iter()
                        .find_map(|record| match &record.event {
                            Event::Zk(ZkEvent::SessionEstablished { server, .. }) => Some(*server),
                            _ => None,
                        })
                        .expect("session established");
                    // The create reaches `first` while it is paused: it waits in its buffer.
                    sim.nemesis().pause(first);
                    let stale = zk.clone();
                    let create = sim.spawn(client_node, async move {
                        stale.create("/x", "stale", CreateMode::Ephemeral).await
                    });
                    assert_eq!(
                        create.await.unwrap(),
                        Err(ZkClientError::ConnectionLoss),
                        "the client gives up on the paused server"
                    );
                    // The client resumes its session on the other follower and learns, with an
                    // acknowledged read after a sync, that the create did not happen (yet).
                    let moved = zk.clone();
                    sim.spawn(client_node, async move {
                        moved.sync("/").await.unwrap();
                        assert_eq!(moved.exists("/x").await.unwrap(), None);
                        moved
                            .create("/after", "", CreateMode::Persistent)
                            .await
                            .unwrap();
                    })
                    .await
                    .unwrap();
                    // The paused server wakes up and reads the old create from its buffer.
                    sim.nemesis().resume(first);
                    sim.sleep(Duration::from_secs(2)).await;
                    let check = zk.clone();
                    let late = sim
                        .spawn(client_node, async move {
                            check.sync("/").await.unwrap();
                            check.exists("/x").await.unwrap()
                        })
                        .await
                        .unwrap();
                    assert_eq!(
                        late, None,
                        "seed {seed}: the create given up on was applied after the client's later \
                     requests"
                    );
                });
            assert!(outcome.history.len() > 10, "seed {seed}");
        },
    );
}
