//! etcd-client's lease client (`src/rpc/lease.rs` of etcd-client 0.21.1): grant, revoke,
//! time-to-live, leases, and the keep-alive pair [`LeaseKeeper`] / [`LeaseKeepAliveStream`],
//! over the model's `EtcdClient`. etcd-client counts TTLs in seconds, the model in
//! milliseconds: [`ttl_ms`] and [`seconds`] are the one conversion each way.

use super::error::{Error, Result, from_result};
use super::responses::ResponseHeader;
use futures_util::Stream;
use models::etcd::{EtcdClient, kv_response};
use sim::{
    NodeContext,
    history::{OpResult, kv::KvResponse},
};
use std::{
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

/// Pause before a keep-alive whose answer was lost is sent again.
const KEEP_ALIVE_RETRY: Duration = Duration::from_millis(100);

/// A TTL of etcd-client (seconds) as the model counts it (milliseconds). etcd grants its
/// minimum TTL for anything below it, a negative TTL included.
pub(super) fn ttl_ms(ttl_seconds: i64) -> u64 {
    u64::try_from(ttl_seconds).unwrap_or(0).saturating_mul(1000)
}

/// A model duration (milliseconds) as etcd answers it, in whole seconds: etcd truncates a
/// remaining TTL (`int64(le.Remaining().Seconds())`, v3.5 `v3_server.go`); granted TTLs
/// are whole seconds already. A negative one (a gone lease's -1) stays -1.
fn seconds(ms: i64) -> i64 {
    if ms < 0 { -1 } else { ms / 1000 }
}

/// A lease id of etcd-client (`i64`) as the model's (`u64`); none is negative.
fn lease_id(id: i64) -> u64 {
    u64::try_from(id).unwrap_or(0)
}

/// etcd-client's `LeaseClient`: one sequential process in the history.
pub struct LeaseClient {
    client: EtcdClient,
    context: NodeContext,
    /// Makes the keepers' model clients, each a process of its own.
    new_client: super::ClientMaker,
}

/// A clone is a handle of its own: a process of its own in the history, as clones of
/// etcd-client's may call concurrently.
impl Clone for LeaseClient {
    fn clone(&self) -> Self {
        Self::new(self.new_client.clone())
    }
}

impl LeaseClient {
    /// The history process this handle's calls are recorded as
    /// ([`super::coordsim::history_process`]).
    pub(in crate::sim) fn history_process(&self) -> u32 {
        self.client.process()
    }

    pub(super) fn new(new_client: super::ClientMaker) -> Self {
        Self {
            client: new_client.make(),
            context: new_client.context().clone(),
            new_client,
        }
    }

    /// Creates a lease which expires if the server does not receive a keepAlive within a
    /// given time to live period (`ttl`, seconds). All keys attached to the lease will be
    /// expired and deleted if the lease expires (etcd-client's `LeaseClient::grant`).
    pub async fn grant(
        &mut self,
        ttl: i64,
        options: Option<LeaseGrantOptions>,
    ) -> Result<LeaseGrantResponse> {
        let LeaseGrantOptions {} = options.unwrap_or_default();
        let result = self.client.lease_grant(ttl_ms(ttl)).await;
        match kv_response(&result) {
            Some(KvResponse::LeaseGrant { lease, ttl_ms }) => Ok(LeaseGrantResponse {
                id: *lease as i64,
                ttl: seconds(*ttl_ms as i64),
            }),
            _ => Err(from_result(&result)),
        }
    }

    /// Revokes a lease. All keys attached to the lease will expire and be deleted
    /// (etcd-client's `LeaseClient::revoke`).
    pub async fn revoke(&mut self, id: i64) -> Result<LeaseRevokeResponse> {
        let result = self.client.lease_revoke(lease_id(id)).await;
        match kv_response(&result) {
            Some(KvResponse::LeaseRevoke { revision }) => Ok(LeaseRevokeResponse {
                header: ResponseHeader::at(*revision),
            }),
            _ => Err(from_result(&result)),
        }
    }

    /// Keeps the lease alive (etcd-client's `LeaseClient::keep_alive`): sends one keep-alive
    /// and waits for its answer, failing with `LeaseKeepAliveError("lease not found")` if
    /// the lease is gone, as etcd-client does; then each [`LeaseKeeper::keep_alive`] sends
    /// one more, and [`LeaseKeepAliveStream::message`] yields the answers in order.
    ///
    /// The pair runs over a model client of its own (a process of its own in the history),
    /// in a task on this node: a request is sent whether or not the stream is read, as on
    /// etcd-client's gRPC stream. A keep-alive whose answer was lost (a partition, a crashed
    /// server) is sent again until one is answered, as the gRPC stream would hold it until
    /// the connection came back: the stream never fails, its answers are only late.
    pub async fn keep_alive(&mut self, id: i64) -> Result<(LeaseKeeper, LeaseKeepAliveStream)> {
        let (requests, to_send) = async_channel::unbounded::<()>();
        let (answer, answers) = async_channel::unbounded();
        let _ = requests.try_send(());
        sim::task::spawn_local(send_keep_alives(
            self.new_client.make(),
            self.context.clone(),
            lease_id(id),
            to_send,
            answer,
        ));
        let mut stream = LeaseKeepAliveStream {
            answers: Box::pin(answers),
        };
        match stream.message().await? {
            Some(first) if first.ttl() > 0 => Ok((LeaseKeeper { id, requests }, stream)),
            Some(_) => Err(Error::LeaseKeepAliveError("lease not found".into())),
            // etcd-client says so when the stream ends before its first answer.
            None => Err(Error::WatchError("failed to create lease keeper".into())),
        }
    }

    /// Retrieves lease information (etcd-client's `LeaseClient::time_to_live`).
    pub async fn time_to_live(
        &mut self,
        id: i64,
        options: Option<LeaseTimeToLiveOptions>,
    ) -> Result<LeaseTimeToLiveResponse> {
        let with_keys = options.unwrap_or_default().keys;
        let result = match with_keys {
            true => self.client.lease_time_to_live_with_keys(lease_id(id)).await,
            false => self.client.lease_time_to_live(lease_id(id)).await,
        };
        match kv_response(&result) {
            Some(KvResponse::LeaseTimeToLive {
                remaining_ms,
                granted_ttl_ms,
                keys,
            }) => Ok(LeaseTimeToLiveResponse {
                id,
                ttl: seconds(*remaining_ms),
                granted_ttl: seconds(*granted_ttl_ms as i64),
                keys: keys
                    .iter()
                    .flatten()
                    .map(|key| key.as_bytes().to_vec())
                    .collect(),
            }),
            _ => Err(from_result(&result)),
        }
    }

    /// Lists all existing leases (etcd-client's `LeaseClient::leases`).
    pub async fn leases(&mut self) -> Result<LeaseLeasesResponse> {
        let result = self.client.leases().await;
        match kv_response(&result) {
            Some(KvResponse::LeaseLeases { leases }) => Ok(LeaseLeasesResponse {
                leases: leases
                    .iter()
                    .map(|id| LeaseStatus { id: *id as i64 })
                    .collect(),
            }),
            _ => Err(from_result(&result)),
        }
    }
}

/// The keep-alive pair's task: one keep-alive per request, answers in order, until the
/// keeper is dropped (then the stream ends, as etcd-client's does when its sender goes).
async fn send_keep_alives(
    mut client: EtcdClient,
    context: NodeContext,
    lease: u64,
    to_send: async_channel::Receiver<()>,
    answer: async_channel::Sender<Result<LeaseKeepAliveResponse>>,
) {
    while to_send.recv().await.is_ok() {
        let response = loop {
            let result = client.lease_keep_alive(lease).await;
            match kv_response(&result) {
                Some(KvResponse::LeaseKeepAlive { ttl_ms }) => {
                    break LeaseKeepAliveResponse {
                        id: lease as i64,
                        ttl: seconds(*ttl_ms as i64),
                    };
                }
                // No answer (or no leader to take it): the request is still on its way.
                _ if matches!(result, OpResult::Unknown { .. } | OpResult::Fail { .. }) => {
                    context.clock().sleep(KEEP_ALIVE_RETRY).await;
                }
                _ => {
                    let _ = answer.send(Err(from_result(&result))).await;
                    return;
                }
            }
        };
        if answer.send(Ok(response)).await.is_err() {
            return;
        }
    }
}

/// The lease keep alive handle (etcd-client's `LeaseKeeper`).
#[derive(Debug)]
pub struct LeaseKeeper {
    id: i64,
    requests: async_channel::Sender<()>,
}

impl LeaseKeeper {
    /// The lease id which user want to keep alive.
    pub const fn id(&self) -> i64 {
        self.id
    }

    /// Sends a keep alive request (its answer comes on the [`LeaseKeepAliveStream`]).
    pub async fn keep_alive(&mut self) -> Result<()> {
        self.requests
            .send(())
            .await
            .map_err(|error| Error::LeaseKeepAliveError(error.to_string()))
    }
}

/// The lease keep alive response stream (etcd-client's `LeaseKeepAliveStream`).
#[derive(Debug)]
pub struct LeaseKeepAliveStream {
    answers: Pin<Box<async_channel::Receiver<Result<LeaseKeepAliveResponse>>>>,
}

impl LeaseKeepAliveStream {
    /// Fetches the next message from this stream (`None`: the keeper was dropped).
    pub async fn message(&mut self) -> Result<Option<LeaseKeepAliveResponse>> {
        self.answers.recv().await.ok().transpose()
    }
}

impl Stream for LeaseKeepAliveStream {
    type Item = Result<LeaseKeepAliveResponse>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().answers.as_mut().poll_next(cx)
    }
}

/// Options for `Grant` operation (etcd-client's `LeaseGrantOptions`; its `with_id` is not
/// mirrored: the model's store picks every lease id).
#[derive(Debug, Default, Clone)]
pub struct LeaseGrantOptions {}

impl LeaseGrantOptions {
    /// Creates a `LeaseGrantOptions`.
    pub const fn new() -> Self {
        Self {}
    }
}

/// Options for `TimeToLive` operation (etcd-client's `LeaseTimeToLiveOptions`).
#[derive(Debug, Default, Clone)]
pub struct LeaseTimeToLiveOptions {
    keys: bool,
}

impl LeaseTimeToLiveOptions {
    /// Creates a `LeaseTimeToLiveOptions`.
    pub const fn new() -> Self {
        Self { keys: false }
    }

    /// Keys is true to query all the keys attached to this lease.
    pub const fn with_keys(mut self) -> Self {
        self.keys = true;
        self
    }
}

/// Response for `Grant` operation (etcd-client's `LeaseGrantResponse`).
#[derive(Debug, Clone)]
pub struct LeaseGrantResponse {
    id: i64,
    ttl: i64,
}

impl LeaseGrantResponse {
    /// Get response header: `None`, as the model's grant answers no revision.
    pub fn header(&self) -> Option<&ResponseHeader> {
        None
    }
    /// TTL is the server chosen lease time-to-live in seconds.
    pub const fn ttl(&self) -> i64 {
        self.ttl
    }
    /// ID is the lease ID for the granted lease.
    pub const fn id(&self) -> i64 {
        self.id
    }
    /// Error message if return error (always empty: a failed grant is an `Err`).
    pub fn error(&self) -> &str {
        ""
    }
}

/// Response for `Revoke` operation (etcd-client's `LeaseRevokeResponse`).
#[derive(Debug, Clone)]
pub struct LeaseRevokeResponse {
    header: ResponseHeader,
}

impl LeaseRevokeResponse {
    /// Get response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
}

/// Response for `KeepAlive` operation (etcd-client's `LeaseKeepAliveResponse`).
#[derive(Debug, Clone)]
pub struct LeaseKeepAliveResponse {
    id: i64,
    ttl: i64,
}

impl LeaseKeepAliveResponse {
    /// Get response header: `None`, as the model's keep-alive answers no revision.
    pub fn header(&self) -> Option<&ResponseHeader> {
        None
    }
    /// TTL is the new time-to-live for the lease (0: the lease is gone).
    pub const fn ttl(&self) -> i64 {
        self.ttl
    }
    /// ID is the lease ID for the keep alive request.
    pub const fn id(&self) -> i64 {
        self.id
    }
}

/// Response for `TimeToLive` operation (etcd-client's `LeaseTimeToLiveResponse`).
#[derive(Debug, Clone)]
pub struct LeaseTimeToLiveResponse {
    id: i64,
    ttl: i64,
    granted_ttl: i64,
    keys: Vec<Vec<u8>>,
}

impl LeaseTimeToLiveResponse {
    /// Get response header: `None`, as the model's answer carries no revision.
    pub fn header(&self) -> Option<&ResponseHeader> {
        None
    }
    /// TTL is the remaining TTL in seconds for the lease; the lease will expire in under
    /// TTL+1 seconds (-1: the lease is gone).
    pub const fn ttl(&self) -> i64 {
        self.ttl
    }
    /// ID is the lease ID from the keep alive request.
    pub const fn id(&self) -> i64 {
        self.id
    }
    /// GrantedTTL is the initial granted time in seconds upon lease creation/renewal.
    pub const fn granted_ttl(&self) -> i64 {
        self.granted_ttl
    }
    /// Keys is the list of keys attached to this lease.
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.keys
    }
}

/// Response for `Leases` operation (etcd-client's `LeaseLeasesResponse`).
#[derive(Debug, Clone)]
pub struct LeaseLeasesResponse {
    leases: Vec<LeaseStatus>,
}

impl LeaseLeasesResponse {
    /// Get response header: `None`, as the model's answer carries no revision.
    pub fn header(&self) -> Option<&ResponseHeader> {
        None
    }
    /// Get leases status (by id; etcd lists them in its own order).
    pub fn leases(&self) -> &[LeaseStatus] {
        &self.leases
    }
}

/// Lease status (etcd-client's `LeaseStatus`).
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseStatus {
    id: i64,
}

impl LeaseStatus {
    /// Lease id.
    pub const fn id(&self) -> i64 {
        self.id
    }
}
