//! etcd's session, as in `go.etcd.io/etcd/client/v3/concurrency` (`NewSession`): a lease
//! kept alive in the background, which both etcd recipes (the mutex and the election) put
//! their keys under. It is *done* when the server says the lease is gone, or when no
//! renewal was acknowledged for a TTL (the client cannot know better: the lease may have
//! expired on the leader meanwhile).

use crate::etcd::{EtcdClient, EtcdCluster, kv_response, lease_gone};
use crate::recipes::etcd::keys::RETRY;
use crate::recipes::shared::error::RecipeError;
use sim::{
    NodeContext,
    history::{OpResult, kv::KvResponse, recipe::LossReason},
    signal::Signal,
    task::JoinHandle,
};
use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

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
    ) -> Result<Self, RecipeError> {
        let clock = context.clock().clone();
        let deadline = clock.now() + patience;
        let mut client = EtcdClient::new(cluster, context.clone(), process);
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let (lease, granted_at, ttl) = loop {
            let asked_at = clock.now();
            // A grant whose answer was lost leaves an orphan lease that expires on its own.
            if let Some(KvResponse::LeaseGrant {
                lease,
                ttl_ms: granted_ms,
            }) = kv_response(&client.lease_grant(ttl_ms).await)
            {
                // The server may grant more than asked (whole seconds, its minimum): keep
                // alive by the granted TTL, as etcd's clientv3 does from each answer's TTL
                // (`clientv3/lease.go` `recvKeepAlive`: next keep-alive after TTL/3).
                break (*lease, asked_at, Duration::from_millis(*granted_ms));
            }
            if clock.now() >= deadline {
                return Err(RecipeError::TimedOut);
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
                        // A keep-alive answered TTL 0: the lease is gone (etcd answers so,
                        // with no error; clientv3 reads `TTL <= 0` so).
                        Ok(result) if lease_gone(&result) => break LossReason::LeaseExpired,
                        Ok(OpResult::Ok { .. }) => {
                            valid_until = sent_at + ttl;
                            clock.sleep(interval).await;
                        }
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
