//! The async client: runs on a client node, one operation at a time per client (a
//! "process" in Jepsen's sense), and records every operation in the history.
//!
//! - It connects to any server and follows "not applied here" answers to the leader they
//!   name (or the next server).
//! - Reads are retried on a timeout or a broken connection until the operation's deadline.
//!   Writes are retried only when the server said they were not applied; a write whose
//!   answer never came (timeout, broken connection) completes with an explicit *unknown*
//!   outcome: it may or may not have taken effect, and retrying could apply it twice.
//! - Each write (put, delete, transaction, lease grant, revoke and keep-alive, compaction)
//!   carries an identity, this client's number and its count of writes, which the server
//!   keeps in the write's log entry and the replicas record when they apply it. The client
//!   records it when it first sends the write (`KvEvent::RequestSent`); retries send the
//!   same one. So a checker can tell whether a write whose answer never came took effect.
//! - [`EtcdClient::spawn_keep_alive`] renews a lease in the background;
//!   [`EtcdClient::watch`] opens a watch stream that resumes after a reconnect from the
//!   revision after the last one it delivered.

use super::{
    protocol::{ClientFrame, ClientRequest, ClientResponse},
    server::EtcdCluster,
    watch::{Cancellation, WatchOptions, WatchStream},
};
use crate::raft::timer::SignalledTimer;
use rand::Rng;
use sim::{
    HistoryRecorder, NodeContext, NodeId,
    clock::{Elapsed, LocalTime},
    history::{
        OpError, OpId, OpResult, Operation, RequestRef, Response,
        kv::{Compare, KvError, KvEvent, KvOperation, KvResponse, ReadConsistency, WatchStep},
    },
    net::{Connection, ConnectionBroken, StreamNetwork},
};
use std::{task::Poll, time::Duration};

/// Client timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// How long one attempt waits for its answer.
    pub request_timeout: Duration,
    /// How long a connection attempt may take.
    pub connect_timeout: Duration,
    /// How long an operation may take in all, retries included.
    pub operation_timeout: Duration,
    /// Pause before retrying when no server knows a leader.
    pub retry_backoff: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_millis(1_000),
            connect_timeout: Duration::from_millis(300),
            operation_timeout: Duration::from_millis(3_000),
            retry_backoff: Duration::from_millis(50),
        }
    }
}

/// The `name` of compaction operations in the history (`Operation::Other`).
pub const COMPACT_OPERATION: &str = "kv_compact";

/// A client process.
pub struct EtcdClient {
    context: NodeContext,
    history: HistoryRecorder,
    network: StreamNetwork<ClientFrame>,
    servers: Vec<NodeId>,
    process: u32,
    config: ClientConfig,
    connection: Option<Connection<ClientFrame>>,
    preferred: Option<NodeId>,
    rotation: usize,
    next_request_id: u64,
    next_watch_id: u64,
    /// This client's number in the identities of its writes (unique in the cluster).
    client_number: u64,
    /// Writes stamped so far: the last one's sequence number.
    writes_stamped: u64,
    /// One timer for every request's timeout, re-armed only when it fires before the
    /// current request's deadline: a new sleep per request would leave a madsim timer
    /// behind per operation, each waking this task in vain a request timeout later.
    request_timer: SignalledTimer,
}

/// A write's identity in the log, and whether the history has it as sent yet.
/// What a request does to the store, which decides how the client sends and retries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RequestKind {
    /// Only reads: retried when unanswered.
    Read,
    /// Goes through the log: stamped with an identity its entry keeps, and of unknown
    /// outcome when unanswered.
    Write,
    /// A keep-alive: renewed by the leader's lessor, not logged, so not stamped; of
    /// unknown outcome when unanswered (the leader may have renewed).
    Renewal,
}

struct StampedWrite {
    op_id: OpId,
    request: RequestRef,
    recorded_as_sent: bool,
}

/// How an attempt ended, before the history sees it.
enum Attempt {
    Done(OpResult),
    /// Try again (another server, after a break, after "not applied").
    Retry,
    /// The request went out and no answer came: for a write, the outcome is unknown.
    NoAnswer(String),
}

impl EtcdClient {
    /// A client process `process` on `context`'s node, talking to `cluster`.
    pub fn new(cluster: &EtcdCluster, context: NodeContext, process: u32) -> Self {
        let servers = cluster.servers().to_vec();
        let mut rng = context.rng(&format!("etcd-client-{process}"));
        let rotation = rng.gen_range(0..servers.len().max(1));
        Self {
            history: context.history(),
            network: cluster.client_network().clone(),
            context,
            servers,
            process,
            config: ClientConfig::default(),
            connection: None,
            preferred: None,
            rotation,
            next_request_id: 0,
            next_watch_id: 0,
            client_number: cluster.take_client_number(),
            writes_stamped: 0,
            request_timer: SignalledTimer::new(),
        }
    }

    /// With this timing.
    pub fn with_config(mut self, config: ClientConfig) -> Self {
        self.config = config;
        self
    }

    /// The process number.
    pub fn process(&self) -> u32 {
        self.process
    }

    /// Writes `value` at `key`.
    pub async fn put(&mut self, key: &str, value: &str) -> OpResult {
        self.execute(KvOperation::Put {
            prev_kv: false,
            key: key.into(),
            value: value.into(),
            lease: None,
        })
        .await
    }

    /// Writes `value` at `key`, attached to `lease`.
    pub async fn put_with_lease(&mut self, key: &str, value: &str, lease: u64) -> OpResult {
        self.execute(KvOperation::Put {
            prev_kv: false,
            key: key.into(),
            value: value.into(),
            lease: Some(lease),
        })
        .await
    }

    /// Reads `key` (linearizable).
    pub async fn get(&mut self, key: &str) -> OpResult {
        self.execute(get(key, None, None, ReadConsistency::Linearizable))
            .await
    }

    /// Reads `key` from whichever server answers, possibly stale.
    pub async fn get_serializable(&mut self, key: &str) -> OpResult {
        self.execute(get(key, None, None, ReadConsistency::Serializable))
            .await
    }

    /// Reads every key starting with `prefix` (linearizable).
    pub async fn get_prefix(&mut self, prefix: &str) -> OpResult {
        let end = super::mvcc::prefix_range_end(prefix);
        self.execute(get(prefix, Some(end), None, ReadConsistency::Linearizable))
            .await
    }

    /// Reads `key` (or the range the options name) with etcd's range options
    /// (`etcd-client`'s `get(key, Some(options))`).
    pub async fn get_with_options(&mut self, key: &str, options: super::GetOptions) -> OpResult {
        self.execute(options.operation(key)).await
    }

    /// Reads `key` as of `revision`.
    pub async fn get_at_revision(&mut self, key: &str, revision: u64) -> OpResult {
        self.execute(get(
            key,
            None,
            Some(revision),
            ReadConsistency::Linearizable,
        ))
        .await
    }

    /// Deletes `key`.
    pub async fn delete(&mut self, key: &str) -> OpResult {
        self.execute(KvOperation::Delete {
            prev_kv: false,
            key: key.into(),
            range_end: None,
        })
        .await
    }

    /// Deletes every key starting with `prefix`.
    pub async fn delete_prefix(&mut self, prefix: &str) -> OpResult {
        self.execute(KvOperation::Delete {
            prev_kv: false,
            key: prefix.into(),
            range_end: Some(super::mvcc::prefix_range_end(prefix)),
        })
        .await
    }

    /// If every compare holds run `success`, else `failure`, atomically.
    pub async fn txn(
        &mut self,
        compares: Vec<Compare>,
        success: Vec<KvOperation>,
        failure: Vec<KvOperation>,
    ) -> OpResult {
        self.execute(KvOperation::Txn {
            compares,
            success,
            failure,
        })
        .await
    }

    /// Grants a lease.
    pub async fn lease_grant(&mut self, ttl_ms: u64) -> OpResult {
        self.execute(KvOperation::LeaseGrant { ttl_ms }).await
    }

    /// Revokes a lease, deleting its keys.
    pub async fn lease_revoke(&mut self, lease: u64) -> OpResult {
        self.execute(KvOperation::LeaseRevoke { lease }).await
    }

    /// Renews a lease once.
    pub async fn lease_keep_alive(&mut self, lease: u64) -> OpResult {
        self.execute(KvOperation::LeaseKeepAlive { lease }).await
    }

    /// Asks how long a lease has left (TTL -1 if it is gone: see [`lease_gone`]).
    pub async fn lease_time_to_live(&mut self, lease: u64) -> OpResult {
        self.execute(KvOperation::LeaseTimeToLive { lease, keys: false })
            .await
    }

    /// Asks how long a lease has left and which keys are attached to it (etcd-client's
    /// `LeaseTimeToLiveOptions::with_keys`).
    pub async fn lease_time_to_live_with_keys(&mut self, lease: u64) -> OpResult {
        self.execute(KvOperation::LeaseTimeToLive { lease, keys: true })
            .await
    }

    /// Lists the leases that exist (`etcd-client`'s `leases()`), answered by whichever
    /// server the client talks to, from its own lease table.
    pub async fn leases(&mut self) -> OpResult {
        self.execute(KvOperation::LeaseLeases).await
    }

    /// Runs `operation`, recording its invocation and completion.
    pub async fn execute(&mut self, operation: KvOperation) -> OpResult {
        let op_id = self
            .history
            .invoke(self.process, Operation::Kv(operation.clone()));
        let kind = if super::command::is_read_only(&operation) {
            RequestKind::Read
        } else if matches!(operation, KvOperation::LeaseKeepAlive { .. }) {
            RequestKind::Renewal
        } else {
            RequestKind::Write
        };
        let result = self.run(ClientRequest::Kv(operation), kind, op_id).await;
        self.history.complete(op_id, result.clone());
        result
    }

    /// Compacts history up to `revision` (recorded as `Operation::Other` named
    /// [`COMPACT_OPERATION`]).
    pub async fn compact(&mut self, revision: u64) -> OpResult {
        let op_id = self.history.invoke(
            self.process,
            Operation::Other {
                name: COMPACT_OPERATION.into(),
                argument: serde_json::json!({ "revision": revision }),
            },
        );
        let result = self
            .run(
                ClientRequest::Compact { revision },
                RequestKind::Write,
                op_id,
            )
            .await;
        self.history.complete(op_id, result.clone());
        result
    }

    /// Runs operation `op_id`'s `request` until it is answered or its deadline passes. A
    /// write is stamped with one identity, which every retry sends again: the server keeps
    /// it in the write's log entry (see [`KvEvent::RequestSent`]).
    async fn run(&mut self, request: ClientRequest, kind: RequestKind, op_id: OpId) -> OpResult {
        let read_only = kind == RequestKind::Read;
        let clock = self.context.clock().clone();
        let deadline = clock.now() + self.config.operation_timeout;
        let mut write = (kind == RequestKind::Write).then(|| {
            self.writes_stamped += 1;
            StampedWrite {
                op_id,
                request: RequestRef {
                    client: self.client_number,
                    sequence: self.writes_stamped,
                },
                recorded_as_sent: false,
            }
        });
        loop {
            if clock.now() >= deadline {
                return if read_only {
                    OpResult::Unknown {
                        reason: "no server answered before the deadline".into(),
                    }
                } else {
                    OpResult::Fail {
                        error: OpError::Kv(KvError::Other {
                            message:
                                "unavailable: no leader accepted the request before the deadline"
                                    .into(),
                        }),
                    }
                };
            }
            match self.attempt(&request, write.as_mut(), deadline).await {
                Attempt::Done(result) => return result,
                Attempt::Retry => {}
                Attempt::NoAnswer(reason) => {
                    if !read_only {
                        return OpResult::Unknown { reason };
                    }
                }
            }
        }
    }

    async fn attempt(
        &mut self,
        request: &ClientRequest,
        write: Option<&mut StampedWrite>,
        deadline: LocalTime,
    ) -> Attempt {
        let clock = self.context.clock().clone();
        let Some(connection) = self.connect(deadline).await else {
            return Attempt::Retry;
        };
        self.next_request_id += 1;
        let request_id = self.next_request_id;
        let frame = ClientFrame::Request {
            request_id,
            request: request.clone(),
            write_id: write.as_ref().map(|write| write.request),
        };
        if connection.send(frame).is_err() {
            // Never left: certainly not applied.
            self.connection = None;
            return Attempt::Retry;
        }
        if let Some(write) = write
            && !write.recorded_as_sent
        {
            // The identity the replicas will record if they apply it: how a checker learns
            // whether a write whose answer never came took effect.
            write.recorded_as_sent = true;
            self.history.kv(KvEvent::RequestSent {
                process: self.process,
                op_id: write.op_id,
                request: write.request,
            });
        }
        let wait = self
            .config
            .request_timeout
            .min(deadline.saturating_duration_since(clock.now()));
        let timeout_at = clock.now() + wait;
        if self
            .request_timer
            .deadline()
            .is_none_or(|armed| timeout_at < armed)
        {
            self.request_timer.set(clock.sleep_until(timeout_at));
        }
        let mut response = std::pin::pin!(response_to(&connection, request_id));
        let timer = &mut self.request_timer;
        let answer = std::future::poll_fn(|cx| {
            if let Poll::Ready(answer) = response.as_mut().poll(cx) {
                return Poll::Ready(Ok(answer));
            }
            while timer.poll_expired(cx) {
                if clock.now() >= timeout_at {
                    return Poll::Ready(Err(Elapsed));
                }
                // Armed for an earlier request: wait on for this one.
                timer.set(clock.sleep_until(timeout_at));
            }
            Poll::Pending
        })
        .await;
        match answer {
            Ok(Ok(response)) => self.interpret(response, connection.peer()).await,
            Ok(Err(broken)) => {
                self.connection = None;
                Attempt::NoAnswer(broken.to_string())
            }
            Err(_) => {
                // The server may be partitioned, paused or crashed: try another next time.
                self.connection = None;
                self.rotation += 1;
                Attempt::NoAnswer(format!(
                    "no answer from {} within {} ms",
                    connection.peer(),
                    wait.as_millis()
                ))
            }
        }
    }

    async fn interpret(&mut self, response: ClientResponse, server: NodeId) -> Attempt {
        match response {
            ClientResponse::Kv(Ok(response)) => Attempt::Done(OpResult::Ok {
                response: Response::Kv(response),
            }),
            ClientResponse::Kv(Err(error)) => Attempt::Done(OpResult::Fail {
                error: OpError::Kv(error),
            }),
            ClientResponse::Compact(Ok(done)) => Attempt::Done(OpResult::Ok {
                response: Response::Other {
                    value: serde_json::json!({
                        "compact_revision": done.compact_revision,
                        "revision": done.revision,
                    }),
                },
            }),
            ClientResponse::Compact(Err(error)) => Attempt::Done(OpResult::Fail {
                error: OpError::Kv(error),
            }),
            ClientResponse::NotApplied { leader_hint } => {
                match leader_hint {
                    Some(leader) if leader != server => {
                        self.preferred = Some(leader);
                        self.connection = None;
                    }
                    _ => {
                        // Nobody leads yet (or the hint is this server, which just lost
                        // leadership): wait a little, then try the next server.
                        self.connection = None;
                        self.rotation += 1;
                        self.context.clock().sleep(self.config.retry_backoff).await;
                    }
                }
                Attempt::Retry
            }
        }
    }

    async fn connect(&mut self, deadline: LocalTime) -> Option<Connection<ClientFrame>> {
        if let Some(connection) = &self.connection
            && !connection.is_broken()
        {
            return Some(connection.clone());
        }
        self.connection = None;
        let target = self
            .preferred
            .take()
            .unwrap_or_else(|| self.servers[self.rotation % self.servers.len()]);
        let clock = self.context.clock().clone();
        let timeout = self
            .config
            .connect_timeout
            .min(deadline.saturating_duration_since(clock.now()));
        match self
            .network
            .connect(self.context.id(), target, timeout)
            .await
        {
            Ok(connection) => {
                self.connection = Some(connection.clone());
                Some(connection)
            }
            Err(_) => {
                self.rotation += 1;
                None
            }
        }
    }

    /// Opens a watch on `key` (or `[key, range_end)`) from `start_revision` (0: from the
    /// revision after the store's when the server creates the watch): see
    /// [`EtcdClient::watch_with_options`].
    pub async fn watch(
        &mut self,
        key: &str,
        range_end: Option<String>,
        start_revision: u64,
    ) -> WatchStream {
        let mut options = WatchOptions::new().with_start_revision(start_revision);
        if let Some(end) = range_end {
            options = options.with_range(end);
        }
        self.watch_with_options(key, options).await
    }

    /// Opens a watch on `key` with `options`, on its own connection, and returns once a
    /// server has answered the create: every change from then on (or from the options'
    /// start revision) is delivered. As etcd-client 0.21's `WatchClient::watch(key, options)`
    /// followed by the stream's first message (`created`); unlike it, this never fails: when
    /// no server answers within the operation timeout, the stream opens on its first `next`
    /// (from the start revision, or, for none, from the revision of the server that answers
    /// then).
    pub async fn watch_with_options(&mut self, key: &str, options: WatchOptions) -> WatchStream {
        self.next_watch_id += 1;
        let watch = (u64::from(self.process) << 32) | self.next_watch_id;
        let mut stream = WatchStream {
            context: self.context.clone(),
            history: self.history.clone(),
            network: self.network.clone(),
            servers: self.servers.clone(),
            process: self.process,
            watch,
            key: key.to_string(),
            next_revision: options.start_revision,
            options,
            rotation: self.rotation + 1,
            connection: None,
            config: self.config,
            cancellation: Cancellation::NotAsked,
            created_revision: None,
        };
        stream.record(WatchStep::Created {
            key: key.to_string(),
            range_end: stream.options.range_end.clone(),
            start_revision: stream.next_revision,
            left_out: stream.options.left_out(),
        });
        let clock = self.context.clock().clone();
        let deadline = clock.now() + self.config.operation_timeout;
        while stream.open().await.is_none() && clock.now() < deadline {
            clock.sleep(self.config.retry_backoff).await;
        }
        stream
    }

    /// Renews `lease` every `interval` in a background task on this node, as client process
    /// `process`, until the lease is gone or the task is aborted. Call it from a task
    /// running on the client's node (the loop is spawned there and dies with the node).
    pub fn spawn_keep_alive(
        cluster: &EtcdCluster,
        context: NodeContext,
        process: u32,
        lease: u64,
        interval: Duration,
    ) -> sim::task::JoinHandle<KeepAliveEnd> {
        let mut client = EtcdClient::new(cluster, context.clone(), process);
        sim::task::spawn_local(async move {
            loop {
                if lease_gone(&client.lease_keep_alive(lease).await) {
                    return KeepAliveEnd::LeaseGone;
                }
                context.clock().sleep(interval).await;
            }
        })
    }
}

/// Why a keep-alive loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepAliveEnd {
    /// The server said the lease does not exist (expired or revoked): a keep-alive answered
    /// TTL 0.
    LeaseGone,
}

/// Whether `result` says the lease it is about is gone (expired, revoked or never granted):
/// a keep-alive answered TTL 0 or a time-to-live query TTL -1, as etcd answers them (no
/// error: [`KvResponse::says_lease_gone`]), or any other operation failed with
/// [`KvError::LeaseNotFound`] (a put with the lease, a revoke).
pub fn lease_gone(result: &OpResult) -> bool {
    match result {
        OpResult::Fail {
            error: OpError::Kv(KvError::LeaseNotFound { .. }),
        } => true,
        OpResult::Ok {
            response: Response::Kv(response),
        } => response.says_lease_gone(),
        _ => false,
    }
}

/// The answer to `request_id` on `connection` (answers to earlier, abandoned requests are
/// skipped).
async fn response_to(
    connection: &Connection<ClientFrame>,
    request_id: u64,
) -> Result<ClientResponse, ConnectionBroken> {
    loop {
        if let ClientFrame::Response {
            request_id: answered,
            response,
        } = connection.recv().await?
            && answered == request_id
        {
            return Ok(response);
        }
    }
}

fn get(
    key: &str,
    range_end: Option<String>,
    revision: Option<u64>,
    consistency: ReadConsistency,
) -> KvOperation {
    KvOperation::Get {
        key: key.into(),
        range_end,
        revision,
        consistency,
    }
}

/// The key-value response of a successful result.
pub fn kv_response(result: &OpResult) -> Option<&KvResponse> {
    match result {
        OpResult::Ok {
            response: Response::Kv(response),
        } => Some(response),
        _ => None,
    }
}
