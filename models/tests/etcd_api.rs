//! The etcd-like store's client-visible API in a healthy three-server world: bad input gets
//! typed errors, and compaction refuses reads and watches below its revision with typed
//! errors while the compaction revision itself stays readable and watchable. No faults and
//! no checkers: what runs under faults is in the scenarios crate's `etcd_store` suite.

use models::etcd::{EtcdClient, EtcdCluster, EtcdConfig, WatchItem, kv_response, lease_gone};
use sim::{
    NodeId, RunEnd, Seed, World,
    history::{
        OpError, OpResult,
        kv::{Compare, CompareOperator, CompareTarget, KvError, KvOperation, KvResponse},
    },
};
use std::{future::Future, time::Duration};

/// Runs `body` with a client (process 0 on c1) of a healthy three-server cluster, once the
/// cluster has had a second to elect, and fails unless it finishes before the time limit.
fn with_client<F, Fut>(seed: u64, body: F)
where
    F: FnOnce(EtcdClient) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    with_configured_client(seed, |_| {}, body)
}

/// [`with_client`], the cluster's configuration changed by `configure` first.
fn with_configured_client<F, Fut>(seed: u64, configure: fn(&mut EtcdConfig), body: F)
where
    F: FnOnce(EtcdClient) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let outcome = World::builder()
        .seed(Seed::new(seed))
        .servers(3)
        .clients(1)
        .time_limit(Duration::from_secs(60))
        .build()
        .expect("a valid world")
        .run(move |sim| async move {
            let mut config = EtcdConfig::new(&sim.servers());
            configure(&mut config);
            let cluster = EtcdCluster::start(&sim, config);
            // Two of the longest election timeouts: time to elect a leader.
            sim.sleep(Duration::from_millis(1_000).max(config_election_wait(&cluster)))
                .await;
            let node = NodeId::client(0);
            let context = sim.node(node);
            sim.spawn(node, async move {
                body(EtcdClient::new(&cluster, context, 0)).await;
            })
            .await
            .expect("the client finishes");
        });
    assert!(
        matches!(outcome.end, RunEnd::Completed { .. }),
        "the client was still going at the time limit: {outcome}"
    );
}

fn config_election_wait(cluster: &EtcdCluster) -> Duration {
    cluster.config().raft.election_timeout_max * 2
}

fn granted_ttl_ms(result: &OpResult) -> u64 {
    match kv_response(result) {
        Some(KvResponse::LeaseGrant { ttl_ms, .. }) => *ttl_ms,
        other => panic!("grant failed: {result:?} {other:?}"),
    }
}

/// etcd grants whole seconds, and at least one and a half election timeouts rounded up to
/// whole seconds, a TTL of 0 included (etcd 3.4.23 `lessor.go` `Grant`, confirmed on the
/// real server: `grant 0` and `grant 1` both get 2 s with its default 1 s election timeout).
#[test]
fn leases_are_granted_whole_seconds_and_at_least_the_minimum() {
    with_client(3, |mut client| async move {
        // The model's default election timeout (300 ms): a minimum of 1 s.
        assert_eq!(granted_ttl_ms(&client.lease_grant(0).await), 1_000);
        assert_eq!(granted_ttl_ms(&client.lease_grant(1).await), 1_000);
        assert_eq!(granted_ttl_ms(&client.lease_grant(1_500).await), 2_000);
        assert_eq!(granted_ttl_ms(&client.lease_grant(3_000).await), 3_000);
    });
    with_configured_client(
        3,
        |config| {
            // etcd's defaults: heartbeat 100 ms, election timeout 1 s.
            config.raft.heartbeat_interval = Duration::from_millis(100);
            config.raft.election_timeout_min = Duration::from_millis(1_000);
            config.raft.election_timeout_max = Duration::from_millis(2_000);
        },
        |mut client| async move {
            assert_eq!(granted_ttl_ms(&client.lease_grant(0).await), 2_000);
            assert_eq!(granted_ttl_ms(&client.lease_grant(1_000).await), 2_000);
            assert_eq!(granted_ttl_ms(&client.lease_grant(2_500).await), 3_000);
        },
    );
}

/// A branch that puts a key and deletes it (or puts it twice) is refused as etcd refuses it
/// ("duplicate key given in txn request") and changes nothing; an empty transaction runs
/// (both confirmed on etcd 3.4.23).
#[test]
fn transactions_refuse_a_key_written_twice_and_run_empty_ones() {
    with_client(4, |mut client| async move {
        let put = |key: &str| KvOperation::Put {
            prev_kv: false,
            key: key.into(),
            value: "1".into(),
            lease: None,
        };
        let delete_range = KvOperation::Delete {
            prev_kv: false,
            key: "0".into(),
            range_end: Some("z".into()),
        };
        assert_eq!(
            client
                .txn(vec![], vec![put("a"), delete_range], vec![])
                .await,
            fail(KvError::DuplicateKey)
        );
        assert_eq!(
            client.txn(vec![], vec![put("a"), put("a")], vec![]).await,
            fail(KvError::DuplicateKey)
        );
        assert_eq!(
            kv_response(&client.txn(vec![], vec![], vec![]).await),
            Some(&KvResponse::Txn {
                revision: 1,
                succeeded: true,
                responses: vec![]
            })
        );
    });
}

/// A gone lease (never granted, revoked, expired) is no error to a keep-alive (TTL 0) or a
/// time-to-live query (TTL -1, granted 0), as etcd answers them (confirmed on etcd 3.4.23);
/// a revoke or a put with it fails. A live one's time-to-live shows its granted TTL and,
/// asked for, its keys.
#[test]
fn a_gone_lease_answers_ttl_zero_or_minus_one_without_an_error() {
    with_client(5, |mut client| async move {
        let gone_ttl = |keys| {
            Some(KvResponse::LeaseTimeToLive {
                remaining_ms: -1,
                granted_ttl_ms: 0,
                keys,
            })
        };
        let result = client.lease_keep_alive(7).await;
        assert_eq!(
            kv_response(&result),
            Some(&KvResponse::LeaseKeepAlive { ttl_ms: 0 })
        );
        assert!(lease_gone(&result));
        let result = client.lease_time_to_live(7).await;
        assert_eq!(kv_response(&result).cloned(), gone_ttl(None));
        assert!(lease_gone(&result));
        let Some(KvResponse::LeaseGrant { lease, .. }) =
            kv_response(&client.lease_grant(5_000).await).cloned()
        else {
            panic!("a grant works");
        };
        ok(&client.put_with_lease("b", "1", lease).await);
        ok(&client.put_with_lease("a", "1", lease).await);
        let live = client.lease_time_to_live_with_keys(lease).await;
        let Some(KvResponse::LeaseTimeToLive {
            remaining_ms,
            granted_ttl_ms: 5_000,
            keys: Some(keys),
        }) = kv_response(&live)
        else {
            panic!("a live lease's TTL: {live:?}");
        };
        assert!((1..=5_000).contains(remaining_ms), "{remaining_ms}");
        assert_eq!(keys, &["a", "b"]);
        assert!(!lease_gone(&live));
        ok(&client.lease_revoke(lease).await);
        assert_eq!(
            kv_response(&client.lease_time_to_live_with_keys(lease).await).cloned(),
            gone_ttl(Some(vec![]))
        );
        assert!(lease_gone(&client.lease_keep_alive(lease).await));
        assert_eq!(
            client.put_with_lease("c", "1", lease).await,
            fail(KvError::LeaseNotFound { lease })
        );
    });
}

/// `prev_kv` answers the key before a put (nothing for a new key) and every key a delete
/// deleted, in key order (as etcd 3.4.23 answers them).
#[test]
fn prev_kv_answers_the_keys_before_the_write() {
    with_client(6, |mut client| async move {
        let put = |key: &str, value: &str| KvOperation::Put {
            key: key.into(),
            value: value.into(),
            lease: None,
            prev_kv: true,
        };
        let prev_of = |result: &OpResult| match kv_response(result) {
            Some(KvResponse::Put { prev_kv, .. }) => prev_kv.clone(),
            other => panic!("put failed: {result:?} {other:?}"),
        };
        assert_eq!(prev_of(&client.execute(put("a", "1")).await), None);
        let previous = prev_of(&client.execute(put("a", "2")).await).expect("a was there");
        assert_eq!(
            (
                previous.value.as_str(),
                previous.mod_revision,
                previous.version
            ),
            ("1", 2, 1)
        );
        ok(&client.put("b", "1").await);
        let deleted = client
            .execute(KvOperation::Delete {
                key: "a".into(),
                range_end: Some("c".into()),
                prev_kv: true,
            })
            .await;
        let Some(KvResponse::Delete {
            deleted: 2,
            prev_kvs,
            ..
        }) = kv_response(&deleted)
        else {
            panic!("a delete of two keys: {deleted:?}");
        };
        let previous: Vec<(&str, &str)> = prev_kvs
            .iter()
            .map(|kv| (kv.key.as_str(), kv.value.as_str()))
            .collect();
        assert_eq!(previous, [("a", "2"), ("b", "1")]);
    });
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

fn fail(error: KvError) -> OpResult {
    OpResult::Fail {
        error: OpError::Kv(error),
    }
}

/// Compaction: reads and watches below the compaction revision are refused with a typed
/// error; the compaction revision itself stays readable and watchable.
#[test]
fn compaction_refuses_old_revisions_with_typed_errors() {
    with_client(1, |mut client| async move {
        ok(&client.put("k", "1").await); // revision 2
        ok(&client.put("k", "2").await); // revision 3
        ok(&client.delete("k").await); // revision 4
        ok(&client.put("k", "3").await); // revision 5
        ok(&client.compact(4).await);
        let compacted = fail(KvError::Compacted {
            compact_revision: 4,
        });
        assert_eq!(client.get_at_revision("k", 3).await, compacted);
        assert_eq!(client.compact(3).await, compacted);
        assert!(keys_of(&client.get_at_revision("k", 4).await).is_empty());
        assert_eq!(keys_of(&client.get_at_revision("k", 5).await), ["k"]);
        assert_eq!(
            client.get_at_revision("k", 99).await,
            fail(KvError::FutureRevision {
                current_revision: 5
            })
        );
        let mut stale = client.watch("k", None, 2).await;
        assert_eq!(
            stale.next().await,
            WatchItem::Compacted {
                compact_revision: 4
            }
        );
        let mut from_compaction = client.watch("k", None, 4).await;
        let WatchItem::Changes(changes) = from_compaction.next().await else {
            panic!("a watch from the compaction revision starts");
        };
        let revisions: Vec<u64> = changes.iter().map(|c| c.revision()).collect();
        assert_eq!(revisions, [4, 5], "the delete at 4 and the put at 5");
    });
}

/// A watch from "now" is open when `watch` returns (as etcd-client's, once the server
/// answered `created`): a write made before the first `next` is delivered.
#[test]
fn a_watch_is_open_when_watch_returns() {
    with_client(3, |mut client| async move {
        ok(&client.put("k", "before").await);
        let mut watch = client.watch("k", None, 0).await;
        ok(&client.put("k", "after").await);
        let item = sim::time::timeout(Duration::from_secs(2), watch.next()).await;
        let Ok(WatchItem::Changes(changes)) = item else {
            panic!("the write after `watch` returned is delivered, got {item:?}");
        };
        let values: Vec<&str> = changes.iter().map(|c| c.kv.value.as_str()).collect();
        assert_eq!(
            values,
            ["after"],
            "only the write after the watch was created"
        );
    });
}

/// Bad input gets typed errors, never a panic, and changes nothing.
#[test]
fn bad_input_gets_typed_errors() {
    with_client(2, |mut client| async move {
        assert_eq!(client.put("", "v").await, fail(KvError::EmptyKey));
        assert_eq!(client.get("").await, fail(KvError::EmptyKey));
        assert_eq!(client.delete("").await, fail(KvError::EmptyKey));
        assert_eq!(
            client.put_with_lease("k", "v", 424_242).await,
            fail(KvError::LeaseNotFound { lease: 424_242 })
        );
        assert_eq!(
            client.lease_revoke(7).await,
            fail(KvError::LeaseNotFound { lease: 7 })
        );
        let empty_compare = Compare {
            key: String::new(),
            target: CompareTarget::Version(0),
            operator: CompareOperator::Equal,
            range_end: None,
        };
        let delete = KvOperation::Delete {
            prev_kv: false,
            key: "k".into(),
            range_end: None,
        };
        assert_eq!(
            client.txn(vec![empty_compare], vec![delete], vec![]).await,
            fail(KvError::EmptyKey)
        );
        assert!(matches!(
            client.compact(1_000).await,
            OpResult::Fail {
                error: OpError::Kv(KvError::FutureRevision { .. })
            }
        ));
        // Nothing above changed the store.
        let Some(KvResponse::Get { revision, .. }) = kv_response(&client.get("k").await).cloned()
        else {
            panic!("a get works");
        };
        assert_eq!(revision, 1);
    });
}
