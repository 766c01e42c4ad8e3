//! etcd-client 0.21.1's `KvClient` (`rpc/kv.rs`) over the model's `EtcdClient`: every call
//! is one operation of the client's process in the run's history.

use super::error::{Result, from_result};
use super::options::{CompactionOptions, DeleteOptions, GetOptions, PutOptions};
use super::responses::{CompactionResponse, DeleteResponse, GetResponse, PutResponse};
use super::txn::{Txn, TxnOpResponse, TxnResponse};
use ::sim::NodeContext;
use models::etcd::{EtcdClient, EtcdCluster, kv_response};
use sim::history::{OpResult, Response, kv::KvOperation};
use std::sync::Arc;

/// Client for KV operations.
///
/// One sequential process in the history; a clone is another process (a new model client
/// on the same node), since clones can make calls concurrently.
pub struct KvClient {
    cluster: Arc<EtcdCluster>,
    context: NodeContext,
    client: EtcdClient,
}

impl Clone for KvClient {
    fn clone(&self) -> Self {
        Self::new(self.cluster.clone(), self.context.clone())
    }
}

impl KvClient {
    /// The history process this handle's calls are recorded as
    /// ([`super::coordsim::history_process`]).
    pub(in crate::sim) fn history_process(&self) -> u32 {
        self.client.process()
    }

    /// A client of its own (a fresh process) on `context`'s node.
    pub(super) fn new(cluster: Arc<EtcdCluster>, context: NodeContext) -> Self {
        let client = super::new_client(&cluster, &context);
        Self {
            cluster,
            context,
            client,
        }
    }

    /// Runs `operation` and reads the answer with `read`; a failed or unknown answer, or
    /// one of another kind, is the error etcd-client would return.
    async fn call<T>(
        &mut self,
        operation: KvOperation,
        read: impl FnOnce(TxnOpResponse) -> Option<T>,
    ) -> Result<T> {
        let result = self.client.execute(operation).await;
        kv_response(&result)
            .and_then(TxnOpResponse::of)
            .and_then(read)
            .ok_or_else(|| from_result(&result))
    }

    /// Puts the given key into the key-value store.
    /// A put request increments the revision of the key-value store
    /// and generates one event in the event history.
    #[inline]
    pub async fn put(
        &mut self,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        options: Option<PutOptions>,
    ) -> Result<PutResponse> {
        let operation = options
            .unwrap_or_default()
            .operation(key.into(), value.into())?;
        self.call(operation, |response| match response {
            TxnOpResponse::Put(put) => Some(put),
            _ => None,
        })
        .await
    }

    /// Gets the key or a range of keys from the store.
    #[inline]
    pub async fn get(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<GetOptions>,
    ) -> Result<GetResponse> {
        let operation = options.unwrap_or_default().operation(key.into())?;
        self.call(operation, |response| match response {
            TxnOpResponse::Get(get) => Some(get),
            _ => None,
        })
        .await
    }

    /// Deletes the given key or a range of keys from the key-value store.
    #[inline]
    pub async fn delete(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<DeleteOptions>,
    ) -> Result<DeleteResponse> {
        let operation = options.unwrap_or_default().operation(key.into())?;
        self.call(operation, |response| match response {
            TxnOpResponse::Delete(delete) => Some(delete),
            _ => None,
        })
        .await
    }

    /// Compacts the event history in the etcd key-value store. The key-value
    /// store should be periodically compacted or the event history will continue to grow
    /// indefinitely.
    ///
    /// (coordsim: recorded as the model's compaction operation; a negative revision is sent
    /// as 0, which etcd answers as compacted already.)
    #[inline]
    pub async fn compact(
        &mut self,
        revision: i64,
        _options: Option<CompactionOptions>,
    ) -> Result<CompactionResponse> {
        let result = self
            .client
            .compact(u64::try_from(revision).unwrap_or(0))
            .await;
        compaction_response(&result).ok_or_else(|| from_result(&result))
    }

    /// Processes multiple operations in a single transaction.
    /// A txn request increments the revision of the key-value store
    /// and generates events with the same revision for every completed operation.
    /// It is not allowed to modify the same key several times within one txn.
    #[inline]
    pub async fn txn(&mut self, txn: Txn) -> Result<TxnResponse> {
        let operation = txn.operation()?;
        self.call(operation, |response| match response {
            TxnOpResponse::Txn(txn) => Some(txn),
            _ => None,
        })
        .await
    }
}

/// A compaction's answer: the model answers the store revision as `Response::Other`.
fn compaction_response(result: &OpResult) -> Option<CompactionResponse> {
    let OpResult::Ok {
        response: Response::Other { value },
    } = result
    else {
        return None;
    };
    Some(CompactionResponse::new(value.get("revision")?.as_u64()?))
}
