//! The etcd-like store runs in the simulated world: elects, writes, reads.

use models::etcd::{EtcdClient, EtcdCluster, EtcdConfig, kv_response};
use sim::{
    NodeId, Seed, World,
    history::{
        Event, OpId, OpResult, Operation, ProtocolEvent, RequestRef,
        kv::{KvEvent, KvOperation, KvResponse},
    },
};
use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

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

/// Every write a client sends names itself in the log: the client records the identity it
/// stamped (`KvEvent::RequestSent`, once per write) and every replica records the same one
/// when it applies the write's entry. Reads and keep-alives name nothing. The first write is sent before
/// any leader exists, so the server answers "not applied" and the client retries it: under
/// the same identity, or its `Applied` records would name another.
#[test]
fn every_write_names_its_request_in_the_entries_the_replicas_apply() {
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
                assert!(kv_response(&client.put("k", "v").await).is_some());
                let granted = client.lease_grant(5_000).await;
                let Some(KvResponse::LeaseGrant { lease, .. }) = kv_response(&granted) else {
                    panic!("grant failed: {granted:?}");
                };
                let lease = *lease;
                let writes = [
                    client.put_with_lease("leased", "v", lease).await,
                    client.lease_keep_alive(lease).await,
                    client.txn(Vec::new(), vec![], Vec::new()).await,
                    client.delete("k").await,
                    client.lease_revoke(lease).await,
                    client.compact(2).await,
                ];
                for write in writes {
                    assert!(matches!(write, OpResult::Ok { .. }), "{write:?}");
                }
                let read = client.get("k").await;
                assert!(kv_response(&read).is_some(), "{read:?}");
            });
            done.await.unwrap();
        });
    let history = &outcome.history;
    let mut sent: BTreeMap<OpId, Vec<RequestRef>> = BTreeMap::new();
    let mut applied_by: BTreeMap<RequestRef, BTreeSet<NodeId>> = BTreeMap::new();
    let mut invoked = Vec::new();
    let mut first_leader_at = None;
    for record in history.records() {
        match &record.event {
            Event::Invoke {
                op_id, operation, ..
            } => invoked.push((*op_id, operation.clone(), record.at)),
            Event::Kv(KvEvent::RequestSent { op_id, request, .. }) => {
                sent.entry(*op_id).or_default().push(*request);
            }
            Event::Protocol(ProtocolEvent::Applied {
                request: Some(request),
                ..
            }) => {
                applied_by
                    .entry(*request)
                    .or_default()
                    .insert(record.node.expect("a replica"));
            }
            Event::Protocol(ProtocolEvent::BecameLeader { .. }) => {
                first_leader_at.get_or_insert(record.at);
            }
            _ => {}
        }
    }
    assert_eq!(invoked.len(), 9, "{outcome}");
    let (first_write, _, first_invoked_at) = &invoked[0];
    assert!(
        Some(*first_invoked_at) < first_leader_at,
        "the first write is sent before any leader exists, so it is retried"
    );
    for (op_id, operation, _) in &invoked {
        // A keep-alive is renewed by the leader's lessor, not logged: it names nothing.
        let read = matches!(
            operation,
            Operation::Kv(KvOperation::Get { .. } | KvOperation::LeaseKeepAlive { .. })
        );
        match sent.get(op_id).map(Vec::as_slice) {
            None if read => {}
            Some([request]) if !read => assert_eq!(
                applied_by.get(request).map(BTreeSet::len),
                Some(3),
                "{op_id} ({operation:?}) sent as {request:?}: applied by every replica, \
                 even when retried ({first_write} was)"
            ),
            other => panic!("{op_id} ({operation:?}) recorded as sent as {other:?}"),
        }
    }
    let requests: BTreeSet<&RequestRef> = sent.values().flatten().collect();
    assert_eq!(requests.len(), 7, "each write its own identity: {sent:?}");
}
