//! The server's side of `removeWatches` (ZooKeeper 3.8's `FinalRequestProcessor` and
//! `DataTree.removeWatch`), spoken to over a raw connection: the client crate decides what to
//! send and never sends a removal the server cannot answer, so `NoWatcher` is only reached
//! this way. Data and Children each remove their half of the connection's watches on the path
//! (a persistent watch has both halves), Any removes both, and a removal that finds nothing
//! answers `NoWatcher`.

use models::zk::{
    NodeAcl, WriteOp, ZkEnsemble, ZkEnsembleConfig,
    wire::{ClientMessage, ClientRequest},
};
use sim::{
    Seed, Sim, World,
    history::zk::{AddWatchMode, CreateMode, WatcherType, ZkError, ZkResponse},
    net::Connection,
};
use std::time::Duration;

/// Sends `request` as `xid` and waits for its reply (watch events on the way are skipped).
async fn ask(
    connection: &Connection<ClientMessage>,
    xid: u64,
    request: ClientRequest,
) -> Result<ZkResponse, ZkError> {
    connection
        .send(ClientMessage::Request { xid, request })
        .expect("the connection is open");
    loop {
        match connection.recv().await.expect("the server answers") {
            ClientMessage::Reply {
                xid: answered,
                result,
                ..
            } if answered == xid => return result,
            _ => continue,
        }
    }
}

fn remove(path: &str, kind: WatcherType) -> ClientRequest {
    ClientRequest::RemoveWatches {
        path: path.into(),
        kind,
    }
}

#[test]
fn remove_watches_removes_by_half_and_answers_no_watcher_when_there_is_none() {
    let outcome = World::builder()
        .seed(Seed::new(24))
        .servers(1)
        .clients(1)
        .time_limit(Duration::from_secs(60))
        .build()
        .expect("a valid world")
        .run(|sim: Sim| async move {
            let ensemble = ZkEnsemble::new(&sim, ZkEnsembleConfig::new(sim.servers())).unwrap();
            ensemble.start(&sim);
            let (server, me) = (sim.servers()[0], sim.clients()[0]);
            let network = ensemble.client_network();
            let context = sim.node(me);
            sim.spawn(me, async move {
                // Until the server serves and attaches a new session.
                let connection = loop {
                    context.clock().sleep(Duration::from_millis(200)).await;
                    let Ok(connection) = network.connect(me, server, Duration::from_secs(1)).await
                    else {
                        continue;
                    };
                    let hello = ClientMessage::Connect {
                        session: None,
                        timeout_ms: 6000,
                        last_zxid_seen: 0,
                        auth: Vec::new(),
                    };
                    if connection.send(hello).is_ok()
                        && let Ok(ClientMessage::Connected { .. }) = connection.recv().await
                    {
                        break connection;
                    }
                };
                let create = ClientRequest::Write(WriteOp::Create {
                    path: "/a".into(),
                    data: String::new(),
                    mode: CreateMode::Persistent,
                    acl: NodeAcl::Open,
                });
                assert!(ask(&connection, 1, create).await.is_ok());
                let no_watcher = Err(ZkError::NoWatcher);
                assert_eq!(
                    ask(&connection, 2, remove("/a", WatcherType::Any)).await,
                    no_watcher
                );
                let get = ClientRequest::GetData {
                    path: "/a".into(),
                    watch: true,
                };
                assert!(ask(&connection, 3, get).await.is_ok());
                assert_eq!(
                    ask(&connection, 4, remove("/a", WatcherType::Children)).await,
                    no_watcher,
                    "a data watch is not a child watch"
                );
                let removed = Ok(ZkResponse::WatchesRemoved);
                assert_eq!(
                    ask(&connection, 5, remove("/a", WatcherType::Data)).await,
                    removed
                );
                assert_eq!(
                    ask(&connection, 6, remove("/a", WatcherType::Data)).await,
                    no_watcher
                );
                let add = ClientRequest::AddWatch {
                    path: "/p".into(),
                    mode: AddWatchMode::Persistent,
                };
                assert_eq!(ask(&connection, 7, add).await, Ok(ZkResponse::WatchAdded));
                assert_eq!(
                    ask(&connection, 8, remove("/p", WatcherType::Data)).await,
                    removed
                );
                assert_eq!(
                    ask(&connection, 9, remove("/p", WatcherType::Children)).await,
                    removed,
                    "the persistent watch's child half stayed"
                );
                assert_eq!(
                    ask(&connection, 10, remove("/p", WatcherType::Any)).await,
                    no_watcher
                );
            })
            .await
            .expect("the exchange ran");
        });
    assert!(
        matches!(outcome.end, sim::RunEnd::Completed { .. }),
        "{:?}",
        outcome.end
    );
}
