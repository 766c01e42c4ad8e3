//! The steps of etcd's `client/v3/concurrency` package that its v3lock and v3election
//! services run (etcd v3.5.33, commit 9f4b125405c7fbd92e2c9cbb5235feffe1904a1d:
//! `client/v3/concurrency/{key,mutex,election}.go`), each one model call under the caller's
//! process, with upstream's keys, transactions, reads and watches in upstream's order.
//!
//! Errors: an error of the store or its gRPC layer is passed on as etcd passes it on (the
//! services return the inner client's error unchanged); the package's own errors are plain
//! Go errors, which gRPC sends with code Unknown ([`concurrency_error`]).

use super::error::{Error, Result, concurrency_error, from_result};
use futures_util::future::{Either, select};
use models::etcd::{ChangeKind, EtcdClient, GetOptions, WatchItem, WatchOptions, kv_response};
use sim::history::{
    OpError, OpResult,
    kv::{
        Compare, CompareOperator, CompareTarget, KeyValue, KvError, KvOperation, KvResponse,
        SortOrder, SortTarget,
    },
};
use std::pin::pin;

/// `concurrency.ErrElectionNotLeader`.
pub(super) const NOT_LEADER: &str = "election: not leader";
/// `concurrency.ErrElectionNoLeader`.
pub(super) const NO_LEADER: &str = "election: no leader";
/// `concurrency.ErrSessionExpired` (v3.5's `Mutex.Lock`).
pub(super) const SESSION_EXPIRED: &str = "mutex: session is expired";
/// `v3election.ErrMissingLeaderKey`.
pub(super) const MISSING_LEADER_KEY: &str = "\"leader\" field must be provided";
/// `waitDelete`'s error when its watch ends without the delete.
const LOST_WATCHER: &str = "lost watcher waiting for delete";

/// The key a session puts under `prefix` (which ends in `/`): `fmt.Sprintf("%s%x", pfx,
/// s.Lease())` in `Election.Campaign` and `Mutex.tryAcquire`.
pub(super) fn own_key(prefix: &str, lease: u64) -> String {
    format!("{prefix}{lease:x}")
}

/// `concurrency.defaultSessionTTL`, seconds.
const DEFAULT_SESSION_TTL_S: i64 = 60;

/// The lease of the session the services make `WithLease(lease)`: `lease` itself, or, for
/// none (0), the one `NewSession` grants with its default TTL of 60 s — which the service
/// orphans at once, so it expires a minute later with what was put under it (a lock or a
/// campaign without a lease holds for a minute).
pub(super) async fn session_lease(client: &mut EtcdClient, lease: i64) -> Result<u64> {
    if lease != 0 {
        // A negative id is sent as is: no lease has it, and the store says so.
        return Ok(lease as u64);
    }
    let result = client
        .lease_grant(super::lease::ttl_ms(DEFAULT_SESSION_TTL_S))
        .await;
    match kv_response(&result) {
        Some(KvResponse::LeaseGrant { lease, .. }) => Ok(*lease),
        _ => Err(from_result(&result)),
    }
}

/// A lease as the model's put takes it (etcd's 0: no lease).
pub(super) fn put_lease(lease: u64) -> Option<u64> {
    Some(lease).filter(|lease| *lease != 0)
}

/// A committed transaction's answer.
pub(super) struct TxnAnswer {
    /// The store revision after it (its header's).
    pub(super) revision: u64,
    pub(super) succeeded: bool,
    pub(super) responses: Vec<KvResponse>,
}

impl TxnAnswer {
    /// The keys the `index`-th response read.
    pub(super) fn read(&self, index: usize) -> &[KeyValue] {
        match self.responses.get(index) {
            Some(KvResponse::Get { kvs, .. } | KvResponse::GetWithOptions { kvs, .. }) => kvs,
            _ => &[],
        }
    }
}

/// `v3.Compare(v3.CreateRevision(key), "=", revision)`.
pub(super) fn created_at(key: &str, revision: u64) -> Compare {
    Compare::key(
        key,
        CompareTarget::CreateRevision(revision),
        CompareOperator::Equal,
    )
}

/// `v3.OpPut(key, value, v3.WithLease(lease))`.
pub(super) fn put(key: &str, value: &str, lease: u64) -> KvOperation {
    KvOperation::Put {
        key: key.to_string(),
        value: value.to_string(),
        lease: put_lease(lease),
        prev_kv: false,
    }
}

/// `v3.OpDelete(key)`.
pub(super) fn delete(key: &str) -> KvOperation {
    KvOperation::Delete {
        key: key.to_string(),
        range_end: None,
        prev_kv: false,
    }
}

/// `v3.OpGet(key, options...)`.
pub(super) fn get(key: &str, options: GetOptions) -> KvOperation {
    options.operation(key)
}

/// `v3.WithFirstCreate()`: the key under the prefix created first.
pub(super) fn first_create() -> GetOptions {
    GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Ascend)
        .with_limit(1)
}

/// `v3.WithLastCreate()` and `v3.WithMaxCreateRev(max_create_revision)`: the key under the
/// prefix created last, at or before `max_create_revision`.
fn last_create_before(max_create_revision: u64) -> GetOptions {
    GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Descend)
        .with_limit(1)
        .with_max_create_revision(max_create_revision as i64)
}

/// Commits `If(compares).Then(success).Else(failure)`.
pub(super) async fn txn(
    client: &mut EtcdClient,
    compares: Vec<Compare>,
    success: Vec<KvOperation>,
    failure: Vec<KvOperation>,
) -> Result<TxnAnswer> {
    let result = client.txn(compares, success, failure).await;
    match kv_response(&result) {
        Some(KvResponse::Txn {
            revision,
            succeeded,
            responses,
        }) => Ok(TxnAnswer {
            revision: *revision,
            succeeded: *succeeded,
            responses: responses.clone(),
        }),
        _ => Err(from_result(&result)),
    }
}

/// `client.Get(ctx, key, options...)`: the header's revision and the keys.
pub(super) async fn read(
    client: &mut EtcdClient,
    key: &str,
    options: GetOptions,
) -> Result<(u64, Vec<KeyValue>)> {
    let result = client.get_with_options(key, options).await;
    match kv_response(&result) {
        Some(
            KvResponse::Get { revision, kvs } | KvResponse::GetWithOptions { revision, kvs, .. },
        ) => Ok((*revision, kvs.clone())),
        _ => Err(from_result(&result)),
    }
}

/// `client.Delete(ctx, key)`: the header's revision.
pub(super) async fn delete_key(client: &mut EtcdClient, key: &str) -> Result<u64> {
    let result = client.delete(key).await;
    match kv_response(&result) {
        Some(KvResponse::Delete { revision, .. }) => Ok(*revision),
        _ => Err(from_result(&result)),
    }
}

/// `waitDeletes`: until no key under `prefix` has a create revision at or below
/// `max_create_revision`, reads the last such key and waits for its deletion. The
/// revision of the read that found none. With `own_key` (the fix etcd-io/etcd#22387), each
/// wait also watches that key, and fails with `election: not leader` as soon as it is
/// deleted.
pub(super) async fn wait_deletes(
    client: &mut EtcdClient,
    prefix: &str,
    max_create_revision: u64,
    own_key: Option<&str>,
) -> Result<u64> {
    loop {
        let (revision, kvs) = read(client, prefix, last_create_before(max_create_revision)).await?;
        let Some(last) = kvs.first() else {
            return Ok(revision);
        };
        wait_delete(client, &last.key, revision, own_key).await?;
    }
}

/// Which watch of a [`wait_delete`] yielded.
enum Watched {
    Predecessor(WatchItem),
    Own(WatchItem),
}

/// `waitDelete`: watches `key` from `revision` until a delete event (and, with `own_key`,
/// that key too: its deletion ends the wait with `election: not leader`).
async fn wait_delete(
    client: &mut EtcdClient,
    key: &str,
    revision: u64,
    own_key: Option<&str>,
) -> Result<()> {
    let from = || WatchOptions::new().with_start_revision(revision);
    let mut watch = client.watch_with_options(key, from()).await;
    let mut own = match own_key {
        Some(own_key) => Some(client.watch_with_options(own_key, from()).await),
        None => None,
    };
    let ended = loop {
        let watched = match own.as_mut() {
            None => Watched::Predecessor(watch.next().await),
            Some(own) => {
                // Whichever answers first; the other's `next` holds nothing yet (a watch
                // hands out what it received as soon as it receives it).
                let (predecessor, mine) = (pin!(watch.next()), pin!(own.next()));
                match select(predecessor, mine).await {
                    Either::Left((item, _)) => Watched::Predecessor(item),
                    Either::Right((item, _)) => Watched::Own(item),
                }
            }
        };
        let (item, deleted) = match watched {
            Watched::Predecessor(item) => (item, Ok(())),
            Watched::Own(item) => (item, Err(concurrency_error(NOT_LEADER))),
        };
        match item {
            WatchItem::Changes(changes)
                if changes
                    .iter()
                    .any(|change| change.kind == ChangeKind::Delete) =>
            {
                break deleted;
            }
            WatchItem::Changes(_) | WatchItem::Progress { .. } => {}
            WatchItem::Compacted { compact_revision } => {
                break Err(from_result(&OpResult::Fail {
                    error: OpError::Kv(KvError::Compacted { compact_revision }),
                }));
            }
            WatchItem::Canceled => break Err(concurrency_error(LOST_WATCHER)),
        }
    };
    watch.close();
    if let Some(own) = own {
        own.close();
    }
    ended
}

/// The error for a step's answer that lacks what etcd always answers (a transaction's read
/// of the key it found): the model broke its contract.
pub(super) fn missing(what: &str) -> Error {
    Error::InvalidArgs(format!("the store's answer lacks {what}"))
}
