//! What etcd's mutex and election share (etcd's `concurrency/key.go` and the first step of
//! both `Mutex.Lock` and `Election.Campaign`): each client puts one key per session under a
//! prefix, `prefix/<lease id>`, attached to the session's lease; the keys line up by create
//! revision, and a client's turn comes when every key created before its own is deleted.
//!
//! Requests the store did not answer are retried after [`RETRY`]: every step here is safe to
//! repeat (a put guarded by "absent", reads, watches).

use crate::etcd::{ChangeKind, EtcdClient, WatchItem, kv_response};
use sim::{
    NodeContext,
    history::{
        OpError, OpResult, Response,
        kv::{Compare, CompareOperator, CompareTarget, KeyValue, KvError, KvOperation, KvResponse},
    },
};
use std::time::Duration;

/// Pause before retrying a request the store did not answer.
pub(crate) const RETRY: Duration = Duration::from_millis(50);

/// The session's lease is gone: its keys went with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeaseGone;

/// A client's key in line: where it stands and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeyInLine {
    /// Its create revision: its place in line, and the fencing token.
    pub(crate) create_revision: u64,
    /// Its value when the put (or the read of the key already there) happened.
    pub(crate) value: String,
}

/// The key a session puts under `prefix`: `prefix` (ending in `/`) and the lease in hex.
pub(crate) fn own_key(prefix: &str, lease: u64) -> String {
    format!("{prefix}{lease:016x}")
}

/// `prefix` with exactly one trailing `/`, so that `/a` and `/ab` do not share keys.
pub(crate) fn normalized_prefix(prefix: &str) -> String {
    format!("{}/", prefix.trim_end_matches('/'))
}

/// Puts `key` = `value` under `lease` unless the key exists, in one transaction that reads
/// the key otherwise; where the key stands in line. A put whose answer was lost is retried:
/// the "absent" guard makes the retry find the first put's key instead of making a second.
pub(crate) async fn put_if_absent(
    client: &mut EtcdClient,
    context: &NodeContext,
    key: &str,
    value: &str,
    lease: u64,
) -> Result<KeyInLine, LeaseGone> {
    // Whether an earlier attempt's answer was lost: the next answer tells whether it took
    // effect (the key is there) or not (this attempt made it), a coverage mark either way.
    let mut answer_lost = false;
    loop {
        let result = client
            .txn(
                vec![Compare {
                    key: key.to_string(),
                    target: CompareTarget::CreateRevision(0),
                    operator: CompareOperator::Equal,
                    range_end: None,
                }],
                vec![KvOperation::Put {
                    prev_kv: false,
                    key: key.to_string(),
                    value: value.to_string(),
                    lease: Some(lease),
                }],
                vec![get(key)],
            )
            .await;
        match &result {
            OpResult::Ok {
                response:
                    Response::Kv(KvResponse::Txn {
                        revision,
                        succeeded,
                        responses,
                    }),
            } => {
                if *succeeded {
                    if answer_lost {
                        context
                            .history()
                            .reach(sim::coverage::Mark::IndeterminateWriteLost);
                    }
                    return Ok(KeyInLine {
                        create_revision: *revision,
                        value: value.to_string(),
                    });
                }
                if let Some(KvResponse::Get { kvs, .. }) = responses.first()
                    && let Some(kv) = kvs.first()
                {
                    if answer_lost {
                        context
                            .history()
                            .reach(sim::coverage::Mark::IndeterminateWriteCommitted);
                    }
                    return Ok(KeyInLine {
                        create_revision: kv.create_revision,
                        value: kv.value.clone(),
                    });
                }
            }
            OpResult::Fail {
                error: OpError::Kv(KvError::LeaseNotFound { .. }),
            } => return Err(LeaseGone),
            // Unknown: the put may have happened; the compare makes the retry safe.
            OpResult::Unknown { .. } => answer_lost = true,
            _ => {}
        }
        backoff(context).await;
    }
}

/// Waits until no key under `prefix` has a create revision below `my_revision` (etcd's
/// `waitDeletes`): reads the prefix, watches the latest key before ours from the read's
/// revision until it is deleted, and reads again. Calls `woken` with the key whose deletion
/// woke it.
pub(crate) async fn wait_for_deletes(
    client: &mut EtcdClient,
    context: &NodeContext,
    prefix: &str,
    my_revision: u64,
    woken: impl Fn(&str),
) {
    loop {
        let (revision, kvs) = read_prefix(client, context, prefix).await;
        let Some(latest_before) = kvs
            .into_iter()
            .filter(|kv| kv.create_revision < my_revision)
            .max_by_key(|kv| kv.create_revision)
        else {
            return;
        };
        let mut watch = client.watch(&latest_before.key, None, revision + 1).await;
        // A compaction past our revision ends the stream: read the prefix again.
        loop {
            match watch.next().await {
                WatchItem::Changes(changes)
                    if changes
                        .iter()
                        .any(|change| change.kind == ChangeKind::Delete) =>
                {
                    woken(&latest_before.key);
                    break;
                }
                WatchItem::Changes(_) | WatchItem::Progress { .. } => {}
                WatchItem::Compacted { .. } | WatchItem::Canceled => break,
            }
        }
        watch.close();
    }
}

/// Every key under `prefix` and the revision the read was served at (retried until the
/// store answers).
pub(crate) async fn read_prefix(
    client: &mut EtcdClient,
    context: &NodeContext,
    prefix: &str,
) -> (u64, Vec<KeyValue>) {
    loop {
        if let Some(KvResponse::Get { revision, kvs }) =
            kv_response(&client.get_prefix(prefix).await)
        {
            return (*revision, kvs.clone());
        }
        backoff(context).await;
    }
}

/// `key` as the store has it now, if it exists (retried until the store answers).
pub(crate) async fn read_key(
    client: &mut EtcdClient,
    context: &NodeContext,
    key: &str,
) -> Option<KeyValue> {
    loop {
        if let Some(KvResponse::Get { kvs, .. }) = kv_response(&client.get(key).await) {
            return kvs.first().cloned();
        }
        backoff(context).await;
    }
}

/// The waiting between retries.
pub(crate) async fn backoff(context: &NodeContext) {
    context.clock().sleep(RETRY).await;
}

fn get(key: &str) -> KvOperation {
    KvOperation::Get {
        key: key.to_string(),
        range_end: None,
        revision: None,
        consistency: sim::history::kv::ReadConsistency::Linearizable,
    }
}
