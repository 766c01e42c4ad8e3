//! The simulated side: [`Client`] connects to the store the running scenario provided.

pub mod coordsim;
mod error;
mod kv;
mod options;
mod responses;
mod txn;
// dropin-watch
mod watch;
mod watch_client;
mod watch_stream;

pub use error::{Error, Result};
pub use kv::KvClient;
pub use options::{
    CompactionOptions, DeleteOptions, GetOptions, PutOptions, SortOrder, SortTarget,
};
pub use responses::{
    CompactionResponse, DeleteResponse, GetResponse, KeyValue, PutResponse, ResponseHeader,
};
pub use txn::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse, TxnResponse};
// dropin-watch
pub use watch::{Event, EventType, WatchFilterType, WatchOptions, WatchResponse};
pub use watch_client::WatchClient;
pub use watch_stream::WatchStream;

use ::sim::NodeContext;
use models::etcd::{EtcdClient, EtcdCluster};
use std::sync::{
    Arc,
    atomic::{AtomicU32, Ordering},
};

/// Options for [`Client::connect`] (etcd-client's `ConnectOptions`; the simulated cluster
/// ignores them for now).
#[derive(Clone, Debug, Default)]
pub struct ConnectOptions {}

impl ConnectOptions {
    /// No options.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The history's process numbers for drop-in clients: one per client handle, since each
/// handle's calls are sequential (`&mut self`) and the linearizability checker needs each
/// process sequential. From 1000, above the workloads' own numbers.
struct ProcessNumbers(AtomicU32);

/// An etcd client (etcd-client's `Client`), connected to the scenario's Raft store from the
/// node that runs the current task.
pub struct Client {
    cluster: Arc<EtcdCluster>,
    /// The node it connected from: every handle it makes sends from there.
    context: NodeContext,
    kv: KvClient,
}

impl Client {
    /// The history process of this client's own KV calls
    /// ([`coordsim::history_process`]).
    pub(in crate::sim) fn history_process(&self) -> u32 {
        self.kv.history_process()
    }

    /// Connects from the current node to the store the running scenario provided. Endpoints
    /// are accepted as given (every server of the simulated cluster serves).
    pub async fn connect<E: AsRef<str>, S: AsRef<[E]>>(
        endpoints: S,
        _options: Option<ConnectOptions>,
    ) -> Result<Self> {
        if endpoints.as_ref().is_empty() {
            return Err(Error::InvalidArgs("empty endpoints".into()));
        }
        let cluster = ::sim::Sim::current()
            .and_then(|sim| sim.service::<EtcdCluster>())
            .ok_or_else(|| {
                Error::EndpointError(
                    "no coordsim run with a Raft store is running on this thread".into(),
                )
            })?;
        let context = ::sim::Sim::current_node().ok_or_else(|| {
            Error::EndpointError("connect from a task on a client node of the world".into())
        })?;
        let kv = KvClient::new(cluster.clone(), context.clone());
        Ok(Self {
            cluster,
            context,
            kv,
        })
    }

    /// A KV client: a handle of its own (a process of its own in the history), as
    /// etcd-client's is a clone, sending from the node the client connected from.
    pub fn kv_client(&self) -> KvClient {
        KvClient::new(self.cluster.clone(), self.context.clone())
    }

    /// Puts `key` = `value` (etcd-client's `Client::put`).
    pub async fn put(
        &mut self,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        options: Option<PutOptions>,
    ) -> Result<PutResponse> {
        self.kv.put(key, value, options).await
    }

    /// Gets `key` (etcd-client's `Client::get`).
    pub async fn get(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<GetOptions>,
    ) -> Result<GetResponse> {
        self.kv.get(key, options).await
    }

    /// Deletes `key` (etcd-client's `Client::delete`).
    pub async fn delete(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<DeleteOptions>,
    ) -> Result<DeleteResponse> {
        self.kv.delete(key, options).await
    }

    // dropin-kv (issue 25 part A): the rest of etcd-client's KV calls on `Client`.

    /// Compacts the event history in the etcd key-value store. The key-value
    /// store should be periodically compacted or the event history will continue to grow
    /// indefinitely.
    pub async fn compact(
        &mut self,
        revision: i64,
        options: Option<CompactionOptions>,
    ) -> Result<CompactionResponse> {
        self.kv.compact(revision, options).await
    }

    /// Processes multiple operations in a single transaction.
    /// A txn request increments the revision of the key-value store
    /// and generates events with the same revision for every completed operation.
    /// It is not allowed to modify the same key several times within one txn.
    pub async fn txn(&mut self, txn: Txn) -> Result<TxnResponse> {
        self.kv.txn(txn).await
    }

    // dropin-watch: the watch client.

    /// Gets a watch client (etcd-client's `Client::watch_client`): each stream it opens is
    /// a process of its own in the history.
    pub fn watch_client(&self) -> WatchClient {
        WatchClient::new(self.cluster.clone(), self.context.clone())
    }

    /// Watches for events happening or that have happened (etcd-client's `Client::watch`):
    /// see [`WatchClient::watch`].
    pub async fn watch(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<WatchOptions>,
    ) -> Result<WatchStream> {
        self.watch_client().watch(key, options).await
    }
}

// dropin-kv: etcd-client's `Client` is `Clone`, and user code clones it to call from several
// tasks. Each clone makes calls of its own, so it is a process of its own in the history
// (the linearizability checker needs each process sequential).
impl Clone for Client {
    fn clone(&self) -> Self {
        Self {
            cluster: self.cluster.clone(),
            context: self.context.clone(),
            kv: self.kv.clone(),
        }
    }
}

// ---- dropin-lease-elect (issue 25, part B): the lease, lock and election clients ----

mod concurrency;
mod election;
mod lease;
mod lock;

pub use election::{
    CampaignResponse, ElectionClient, LeaderKey, LeaderResponse, ObserveStream, ProclaimOptions,
    ProclaimResponse, ResignOptions, ResignResponse,
};
pub use lease::{
    LeaseClient, LeaseGrantOptions, LeaseGrantResponse, LeaseKeepAliveResponse,
    LeaseKeepAliveStream, LeaseKeeper, LeaseLeasesResponse, LeaseRevokeResponse, LeaseStatus,
    LeaseTimeToLiveOptions, LeaseTimeToLiveResponse,
};
pub use lock::{LockClient, LockOptions, LockResponse, UnlockResponse};

/// Makes model clients on the node a [`Client`] connected from, each with a fresh process
/// number: the lease, lock and election clients and each lease keeper get their own.
#[derive(Clone)]
struct ClientMaker {
    cluster: Arc<EtcdCluster>,
    context: NodeContext,
}

impl ClientMaker {
    fn make(&self) -> EtcdClient {
        new_client(&self.cluster, &self.context)
    }

    fn context(&self) -> &NodeContext {
        &self.context
    }

    /// What the store's election service does after a campaign's wait.
    fn campaign_check(&self) -> models::etcd::CampaignCheck {
        self.cluster.config().campaign_check
    }
}

/// The lease, lock and election clients and etcd-client's `Client` shortcuts to them. Each
/// shortcut call goes through a handle of its own (a process of its own in the history), as
/// the calls of etcd-client's `Client` may run concurrently on its clones.
impl Client {
    fn maker(&self) -> ClientMaker {
        ClientMaker {
            cluster: self.cluster.clone(),
            context: self.context.clone(),
        }
    }

    /// A lease client (etcd-client's `Client::lease_client`): a process of its own.
    pub fn lease_client(&self) -> LeaseClient {
        LeaseClient::new(self.maker())
    }

    /// A lock client (etcd-client's `Client::lock_client`): a process of its own.
    pub fn lock_client(&self) -> LockClient {
        LockClient::new(self.maker())
    }

    /// An election client (etcd-client's `Client::election_client`): a process of its own.
    pub fn election_client(&self) -> ElectionClient {
        ElectionClient::new(self.maker())
    }

    /// Grants a lease of `ttl` seconds (etcd-client's `Client::lease_grant`).
    pub async fn lease_grant(
        &mut self,
        ttl: i64,
        options: Option<LeaseGrantOptions>,
    ) -> Result<LeaseGrantResponse> {
        self.lease_client().grant(ttl, options).await
    }

    /// Revokes a lease (etcd-client's `Client::lease_revoke`).
    pub async fn lease_revoke(&mut self, id: i64) -> Result<LeaseRevokeResponse> {
        self.lease_client().revoke(id).await
    }

    /// Keeps a lease alive (etcd-client's `Client::lease_keep_alive`).
    pub async fn lease_keep_alive(
        &mut self,
        id: i64,
    ) -> Result<(LeaseKeeper, LeaseKeepAliveStream)> {
        self.lease_client().keep_alive(id).await
    }

    /// Retrieves lease information (etcd-client's `Client::lease_time_to_live`).
    pub async fn lease_time_to_live(
        &mut self,
        id: i64,
        options: Option<LeaseTimeToLiveOptions>,
    ) -> Result<LeaseTimeToLiveResponse> {
        self.lease_client().time_to_live(id, options).await
    }

    /// Lists all existing leases (etcd-client's `Client::leases`).
    pub async fn leases(&mut self) -> Result<LeaseLeasesResponse> {
        self.lease_client().leases().await
    }

    /// Acquires the lock `name` (etcd-client's `Client::lock`).
    pub async fn lock(
        &mut self,
        name: impl Into<Vec<u8>>,
        options: Option<LockOptions>,
    ) -> Result<LockResponse> {
        self.lock_client().lock(name, options).await
    }

    /// Releases the lock held by `key` (etcd-client's `Client::unlock`).
    pub async fn unlock(&mut self, key: impl Into<Vec<u8>>) -> Result<UnlockResponse> {
        self.lock_client().unlock(key).await
    }

    /// Campaigns in the election `name` (etcd-client's `Client::campaign`).
    pub async fn campaign(
        &mut self,
        name: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        lease: i64,
    ) -> Result<CampaignResponse> {
        self.election_client().campaign(name, value, lease).await
    }

    /// Lets the leader announce a new value (etcd-client's `Client::proclaim`).
    pub async fn proclaim(
        &mut self,
        value: impl Into<Vec<u8>>,
        options: Option<ProclaimOptions>,
    ) -> Result<ProclaimResponse> {
        self.election_client().proclaim(value, options).await
    }

    /// Returns the leader of the election `name` (etcd-client's `Client::leader`).
    pub async fn leader(&mut self, name: impl Into<Vec<u8>>) -> Result<LeaderResponse> {
        self.election_client().leader(name).await
    }

    /// Observes the leaders of the election `name` (etcd-client's `Client::observe`).
    pub async fn observe(&mut self, name: impl Into<Vec<u8>>) -> Result<ObserveStream> {
        self.election_client().observe(name).await
    }

    /// Resigns a leadership (etcd-client's `Client::resign`).
    pub async fn resign(&mut self, option: Option<ResignOptions>) -> Result<ResignResponse> {
        self.election_client().resign(option).await
    }
}

// ---- end of dropin-lease-elect ----

/// A model client on `context`'s node with a fresh process number.
fn new_client(cluster: &EtcdCluster, context: &NodeContext) -> EtcdClient {
    let sim = context.sim();
    let numbers = match sim.service::<ProcessNumbers>() {
        Some(numbers) => numbers,
        None => {
            sim.provide(ProcessNumbers(AtomicU32::new(1000)));
            sim.service::<ProcessNumbers>().expect("just provided")
        }
    };
    let process = numbers.0.fetch_add(1, Ordering::Relaxed);
    EtcdClient::new(cluster, context.clone(), process)
}
