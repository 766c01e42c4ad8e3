//! The etcd-like store runs in the simulated world: elects, writes, reads.

use models::etcd::{EtcdClient, EtcdCluster, EtcdConfig, kv_response};
use sim::{
    NodeId, Seed, World,
    history::{Event, ProtocolEvent, kv::KvResponse},
};
use std::time::Duration;

#[test]
fn a_three_server_cluster_elects_writes_and_reads() {
    let outcome = World::builder()
        .seed(Seed::new(7))
        .servers(3)
        .clients(1)
        .time_limit(Duration::from_secs(30))
        .build()
        .unwrap()
        .run(|sim| async move {
            let cluster = EtcdCluster::start(&sim, EtcdConfig::new(&sim.servers()));
            let client_node = NodeId::client(0);
            let context = sim.node(client_node);
            let done = sim.spawn(client_node, async move {
                let mut client = EtcdClient::new(&cluster, context, 0);
                let mut revisions = Vec::new();
                for i in 0..20 {
                    let put = client.put("k", &format!("v{i}")).await;
                    match kv_response(&put) {
                        Some(KvResponse::Put { revision, .. }) => revisions.push(*revision),
                        other => panic!("put failed: {put:?} {other:?}"),
                    }
                }
                let got = client.get("k").await;
                let Some(KvResponse::Get { kvs, .. }) = kv_response(&got) else {
                    panic!("get failed: {got:?}");
                };
                assert_eq!(kvs[0].value, "v19");
                assert_eq!(kvs[0].version, 20);
                revisions
            });
            let revisions = done.await.unwrap();
            assert_eq!(revisions, (2..22).collect::<Vec<u64>>());
        });
    let leaders = outcome
        .history
        .records()
        .iter()
        .filter(|r| matches!(r.event, Event::Protocol(ProtocolEvent::BecameLeader { .. })))
        .count();
    assert!(leaders >= 1, "{outcome}");
    println!("{outcome}");
}
