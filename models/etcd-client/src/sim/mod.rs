//! The simulated side: [`Client`] connects to the store the running scenario provided.

mod error;
mod kv;
mod options;
mod responses;
mod txn;
// dropin-watch
mod watch;
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
pub use watch::{
    Event, EventType, WatchClient, WatchFilterType, WatchOptions, WatchResponse, WatchStream,
};

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
