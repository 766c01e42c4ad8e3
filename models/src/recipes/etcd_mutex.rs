//! etcd's session and mutex, as in `go.etcd.io/etcd/client/v3/concurrency` (and the seeds'
//! gocorex lock):
//!
//! - an [`EtcdSession`] is a lease kept alive in the background; it is *done* when the
//!   server says the lease is gone, or when no renewal was acknowledged for a TTL (the
//!   client cannot know better: the lease may have expired on the leader meanwhile);
//! - [`EtcdMutex::lock`] puts `prefix/<lease id>` under the session's lease (if absent) in a
//!   transaction that also reads the prefix; the key with the lowest create revision
//!   holds; every other waiter waits for the deletion of every key with a lower create
//!   revision (watching the latest of them, one at a time), **then checks that its own key
//!   still exists** — its lease may have expired while it waited — before returning;
//! - the fencing token is the key's create revision.

use super::bugs::{RecipeBug, RecipeBugs};
use super::lock::{LockError, LockRecorder};
use crate::etcd::ChangeKind;
use crate::etcd::{EtcdClient, EtcdCluster, WatchItem, kv_response};
use sim::{
    NodeContext,
    history::{
        OpError, OpResult,
        kv::{
            Compare, CompareOperator, CompareTarget, KeyValue, KvError, KvOperation, KvResponse,
            ReadConsistency,
        },
        recipe::{LockStep, LossReason},
    },
    signal::Signal,
    task::JoinHandle,
    time::SimTime,
};
use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

/// Pause before retrying a request the store did not answer.
const RETRY: Duration = Duration::from_millis(50);

/// Added to a client process's number for its session's keep-alive requests, which run
/// beside its other requests (the history wants one operation at a time per process).
pub const KEEP_ALIVE_PROCESS: u32 = 1 << 16;

/// A lease kept alive in the background.
pub struct EtcdSession {
    lease: u64,
    done: Signal,
    why_done: Arc<Mutex<Option<LossReason>>>,
    keep_alive: JoinHandle<()>,
    client: EtcdClient,
}

impl EtcdSession {
    /// Grants a lease of `ttl` and keeps it alive (renewing every third of it), as client
    /// process `process` on `context`'s node. Retries the grant until `patience` passes.
    pub async fn start(
        cluster: &EtcdCluster,
        context: &NodeContext,
        process: u32,
        ttl: Duration,
        patience: Duration,
    ) -> Result<Self, LockError> {
        let clock = context.clock().clone();
        let deadline = clock.now() + patience;
        let mut client = EtcdClient::new(cluster, context.clone(), process);
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let (lease, granted_at) = loop {
            let asked_at = clock.now();
            // A grant whose answer was lost leaves an orphan lease that expires on its own.
            if let Some(KvResponse::LeaseGrant { lease, .. }) =
                kv_response(&client.lease_grant(ttl_ms).await)
            {
                break (*lease, asked_at);
            }
            if clock.now() >= deadline {
                return Err(LockError::TimedOut);
            }
            clock.sleep(Duration::from_millis(100)).await;
        };
        let (done, why_done) = (Signal::new(), Arc::new(Mutex::new(None)));
        let keep_alive = {
            let (done, why_done) = (done.clone(), why_done.clone());
            // Its own process in the history: a process has one operation at a time.
            let mut renewer =
                EtcdClient::new(cluster, context.clone(), KEEP_ALIVE_PROCESS | process);
            sim::task::spawn_local(async move {
                let interval = ttl / 3;
                // The lease is valid for a TTL from when the last acknowledged renewal was
                // *sent*: the leader restarted the TTL no earlier than that.
                let mut valid_until = granted_at + ttl;
                let why = loop {
                    let sent_at = clock.now();
                    let left = valid_until.saturating_duration_since(sent_at);
                    if left.is_zero() {
                        break LossReason::ConnectionLost;
                    }
                    match clock.timeout(left, renewer.lease_keep_alive(lease)).await {
                        Ok(OpResult::Ok { .. }) => {
                            valid_until = sent_at + ttl;
                            clock.sleep(interval).await;
                        }
                        Ok(OpResult::Fail {
                            error: OpError::Kv(KvError::LeaseNotFound { .. }),
                        }) => break LossReason::LeaseExpired,
                        Ok(_) => clock.sleep(RETRY.min(left)).await,
                        Err(_) => break LossReason::ConnectionLost,
                    }
                };
                *why_done.lock().expect("not poisoned") = Some(why);
                done.set();
            })
        };
        Ok(Self {
            lease,
            done,
            why_done,
            keep_alive,
            client,
        })
    }

    /// The lease id.
    pub fn lease(&self) -> u64 {
        self.lease
    }

    /// Whether the session is over (lease gone, or not renewed for a TTL).
    pub fn is_done(&self) -> bool {
        self.done.is_set()
    }

    /// Completes when the session is over; why.
    pub async fn done(&self) -> LossReason {
        self.done.wait().await;
        self.why_done
            .lock()
            .expect("not poisoned")
            .unwrap_or(LossReason::LeaseExpired)
    }

    /// Stops renewing and revokes the lease (its keys go with it). Best effort: a revoke
    /// that does not get through leaves the lease to expire.
    pub async fn close(mut self) {
        self.keep_alive.abort();
        let _ = self.client.lease_revoke(self.lease).await;
    }
}

impl Drop for EtcdSession {
    /// A session no one holds stops renewing (its lease then expires by itself).
    fn drop(&mut self) {
        self.keep_alive.abort();
    }
}

/// A mutex under `prefix`, through one session. Its requests go through the caller's
/// client, one per client process for its whole life (as with etcd's `clientv3.Client`):
/// the client numbers its watches, and a process's watches must not share numbers.
pub struct EtcdMutex {
    bugs: RecipeBugs,
    prefix: String,
    key: String,
    context: NodeContext,
    recorder: LockRecorder,
    lease: u64,
}

impl EtcdMutex {
    /// The mutex at `prefix` for `session`, used by the client process `process` on
    /// `context`'s node.
    pub fn new(context: &NodeContext, process: u32, session: &EtcdSession, prefix: &str) -> Self {
        let prefix = format!("{}/", prefix.trim_end_matches('/'));
        Self {
            bugs: RecipeBugs::default(),
            key: format!("{prefix}{:016x}", session.lease),
            prefix: prefix.clone(),
            context: context.clone(),
            recorder: LockRecorder::new(context, process, prefix.trim_end_matches('/')),
            lease: session.lease,
        }
    }

    /// With the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.bugs = bugs;
        self
    }

    /// Waits for the mutex, for at most `patience`. On giving up it deletes its key, leaving
    /// the queue. Like etcd's `Mutex.Lock`, it does not watch the session while it waits:
    /// the post-wait check is what catches a lease that expired meanwhile.
    pub async fn lock(
        &mut self,
        client: &mut EtcdClient,
        session: &EtcdSession,
        patience: Duration,
    ) -> Result<EtcdMutexGuard, LockError> {
        self.recorder.record(LockStep::Requested);
        let clock = self.context.clock().clone();
        let result = if session.is_done() {
            Err(LockError::SessionEnded)
        } else {
            clock
                .timeout(patience, self.try_lock(client))
                .await
                .unwrap_or(Err(LockError::TimedOut))
        };
        match result {
            Ok(token) => {
                self.recorder.record(LockStep::Acquired { token });
                Ok(EtcdMutexGuard {
                    key: self.key.clone(),
                    token,
                    recorder: self.recorder.clone(),
                    acquired_at: self.context.sim().now(),
                    bugs: self.bugs,
                })
            }
            Err(error) => {
                self.recorder.gave_up(&error);
                // Leave the queue: a waiter that gave up must not block the others until
                // its lease expires.
                let _ = client.delete(&self.key).await;
                Err(error)
            }
        }
    }

    /// The locking steps; the token on success.
    async fn try_lock(&self, client: &mut EtcdClient) -> Result<u64, LockError> {
        let my_revision = self.enqueue(client).await?;
        self.wait_for_deletes(client, my_revision).await?;
        if self.bugs.has(RecipeBug::EtcdMutexNoPostwaitCheck) {
            return Ok(my_revision);
        }
        // The post-wait check: the lease may have expired while we waited, deleting our key;
        // whoever came after us may hold the lock now.
        let still_ours = self.read_key(client).await?;
        match still_ours {
            Some(kv) if kv.create_revision == my_revision => Ok(my_revision),
            _ => Err(LockError::SessionEnded),
        }
    }

    /// Puts our key if absent; its create revision.
    async fn enqueue(&self, client: &mut EtcdClient) -> Result<u64, LockError> {
        loop {
            let result = client
                .txn(
                    vec![Compare {
                        key: self.key.clone(),
                        target: CompareTarget::CreateRevision(0),
                        operator: CompareOperator::Equal,
                    }],
                    vec![KvOperation::Put {
                        key: self.key.clone(),
                        value: String::new(),
                        lease: Some(self.lease),
                    }],
                    vec![get(&self.key, None)],
                )
                .await;
            match &result {
                OpResult::Ok {
                    response:
                        sim::history::Response::Kv(KvResponse::Txn {
                            revision,
                            succeeded,
                            responses,
                        }),
                } => {
                    if *succeeded {
                        return Ok(*revision);
                    }
                    if let Some(KvResponse::Get { kvs, .. }) = responses.first()
                        && let Some(kv) = kvs.first()
                    {
                        return Ok(kv.create_revision);
                    }
                }
                OpResult::Fail {
                    error: OpError::Kv(KvError::LeaseNotFound { .. }),
                } => return Err(LockError::SessionEnded),
                // Unknown: the put may have happened; the compare makes the retry safe.
                _ => {}
            }
            self.backoff().await;
        }
    }

    /// Waits until no key under the prefix has a create revision below `my_revision`.
    async fn wait_for_deletes(
        &self,
        client: &mut EtcdClient,
        my_revision: u64,
    ) -> Result<(), LockError> {
        loop {
            let (revision, kvs) = self.read_prefix(client).await;
            let Some(latest_before) = kvs
                .into_iter()
                .filter(|kv| kv.create_revision < my_revision)
                .max_by_key(|kv| kv.create_revision)
            else {
                return Ok(());
            };
            let mut watch = client.watch(&latest_before.key, None, revision + 1);
            // A compaction past our revision ends the stream: read the prefix again.
            while let WatchItem::Changes(changes) = watch.next().await {
                if changes
                    .iter()
                    .any(|change| change.kind == ChangeKind::Delete)
                {
                    self.recorder.woken(&latest_before.key);
                    break;
                }
            }
            watch.close();
        }
    }

    async fn read_prefix(&self, client: &mut EtcdClient) -> (u64, Vec<KeyValue>) {
        loop {
            if let Some(KvResponse::Get { revision, kvs }) =
                kv_response(&client.get_prefix(&self.prefix).await)
            {
                return (*revision, kvs.clone());
            }
            self.backoff().await;
        }
    }

    async fn read_key(&self, client: &mut EtcdClient) -> Result<Option<KeyValue>, LockError> {
        loop {
            if let Some(KvResponse::Get { kvs, .. }) = kv_response(&client.get(&self.key).await) {
                return Ok(kvs.first().cloned());
            }
            self.backoff().await;
        }
    }

    async fn backoff(&self) {
        self.context.clock().sleep(RETRY).await;
    }

    /// Releases the mutex: the holder stops believing it holds it (recorded first), then
    /// deletes its key (retried until the store answers, or the session is over).
    pub async fn unlock(
        &mut self,
        client: &mut EtcdClient,
        guard: EtcdMutexGuard,
        session: &EtcdSession,
    ) {
        self.recorder
            .record(LockStep::Released { token: guard.token });
        while !session.is_done() {
            if let OpResult::Ok { .. } = client.delete(&guard.key).await {
                return;
            }
            self.backoff().await;
        }
    }
}

fn get(key: &str, range_end: Option<String>) -> KvOperation {
    KvOperation::Get {
        key: key.to_string(),
        range_end,
        revision: None,
        consistency: ReadConsistency::Linearizable,
    }
}

/// A held etcd mutex: its key and fencing token.
pub struct EtcdMutexGuard {
    key: String,
    token: u64,
    recorder: LockRecorder,
    acquired_at: SimTime,
    bugs: RecipeBugs,
}

impl EtcdMutexGuard {
    /// The fencing token: the key's create revision.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// When the client acquired it (global simulated time, for latency figures).
    pub fn acquired_at(&self) -> SimTime {
        self.acquired_at
    }

    /// Completes when the holder must stop trusting that it holds the mutex: its session is
    /// over. Records the loss.
    pub async fn lost(&self, session: &EtcdSession) -> LossReason {
        if self.bugs.has(RecipeBug::TrustLocalStateAfterExpiry) {
            // The bug: the holder never looks; its belief lasts until it lets go.
            return std::future::pending().await;
        }
        let why = session.done().await;
        self.recorder.lost(self.token, why);
        why
    }
}
