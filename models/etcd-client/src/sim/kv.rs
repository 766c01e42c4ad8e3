//! etcd-client's KV client, its options and responses, over the model's `EtcdClient`.

use super::error::{Error, Result, from_result};
use models::etcd::{EtcdClient, kv_response};
use sim::history::{OpResult, kv::KvResponse};

/// A key and its value with their revisions (etcd-client's `KeyValue`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue(pub(super) sim::history::kv::KeyValue);

impl KeyValue {
    /// The key, as bytes.
    pub fn key(&self) -> &[u8] {
        self.0.key.as_bytes()
    }
    /// The key, as text.
    pub fn key_str(&self) -> Result<&str> {
        Ok(&self.0.key)
    }
    /// The value, as bytes.
    pub fn value(&self) -> &[u8] {
        self.0.value.as_bytes()
    }
    /// The value, as text.
    pub fn value_str(&self) -> Result<&str> {
        Ok(&self.0.value)
    }
    /// The revision of the key's creation.
    pub fn create_revision(&self) -> i64 {
        self.0.create_revision as i64
    }
    /// The revision of its last modification.
    pub fn mod_revision(&self) -> i64 {
        self.0.mod_revision as i64
    }
    /// How many times it was modified since its creation.
    pub fn version(&self) -> i64 {
        self.0.version as i64
    }
    /// Its lease (0: none).
    pub fn lease(&self) -> i64 {
        self.0.lease.unwrap_or(0) as i64
    }
}

/// A response's header (etcd-client's `ResponseHeader`): the store revision it was served at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseHeader {
    revision: i64,
}

impl ResponseHeader {
    /// A header at the store revision `revision` (for the other clients' responses).
    pub(super) fn at_revision(revision: u64) -> Self {
        Self {
            revision: revision as i64,
        }
    }

    /// The store revision.
    pub fn revision(&self) -> i64 {
        self.revision
    }
}

/// Options of a put (etcd-client's `PutOptions`).
#[derive(Clone, Debug, Default)]
pub struct PutOptions {
    lease: Option<u64>,
    prev_kv: bool,
}

impl PutOptions {
    /// No options.
    pub fn new() -> Self {
        Self::default()
    }
    /// Attaches the key to `lease`.
    pub fn with_lease(mut self, lease: i64) -> Self {
        self.lease = u64::try_from(lease).ok().filter(|lease| *lease != 0);
        self
    }
    /// Also answers the key's previous value.
    pub fn with_prev_key(mut self) -> Self {
        self.prev_kv = true;
        self
    }
}

/// Options of a get (etcd-client's `GetOptions`).
pub type GetOptions = models::etcd::GetOptions;

/// Options of a delete (etcd-client's `DeleteOptions`).
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    prefix: bool,
}

impl DeleteOptions {
    /// No options.
    pub fn new() -> Self {
        Self::default()
    }
    /// Deletes every key with the given prefix.
    pub fn with_prefix(mut self) -> Self {
        self.prefix = true;
        self
    }
}

/// A put's answer (etcd-client's `PutResponse`).
#[derive(Clone, Debug)]
pub struct PutResponse {
    header: ResponseHeader,
    prev: Option<KeyValue>,
}

impl PutResponse {
    /// Its header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
    /// The key's previous value, if asked for and it existed.
    pub fn prev_key(&self) -> Option<&KeyValue> {
        self.prev.as_ref()
    }
}

/// A get's answer (etcd-client's `GetResponse`).
#[derive(Clone, Debug)]
pub struct GetResponse {
    header: ResponseHeader,
    kvs: Vec<KeyValue>,
    count: i64,
    more: bool,
}

impl GetResponse {
    /// Its header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
    /// The keys.
    pub fn kvs(&self) -> &[KeyValue] {
        &self.kvs
    }
    /// How many keys the range holds.
    pub fn count(&self) -> i64 {
        self.count
    }
    /// Whether a limit left keys out.
    pub fn more(&self) -> bool {
        self.more
    }
}

/// A delete's answer (etcd-client's `DeleteResponse`).
#[derive(Clone, Debug)]
pub struct DeleteResponse {
    header: ResponseHeader,
    deleted: i64,
}

impl DeleteResponse {
    /// Its header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
    /// How many keys it deleted.
    pub fn deleted(&self) -> i64 {
        self.deleted
    }
}

/// etcd-client's `KvClient`: one sequential process in the history.
pub struct KvClient {
    client: EtcdClient,
}

/// Keys and values are text in the model's history: bytes that are not UTF-8 are refused.
pub(super) fn text(bytes: Vec<u8>, what: &str) -> Result<String> {
    String::from_utf8(bytes)
        .map_err(|_| Error::InvalidArgs(format!("{what}: coordsim's store keeps UTF-8 text only")))
}

fn answer(result: &OpResult) -> Result<&KvResponse> {
    kv_response(result).ok_or_else(|| from_result(result))
}

impl KvClient {
    pub(super) fn new(client: EtcdClient) -> Self {
        Self { client }
    }

    /// Puts `key` = `value`.
    pub async fn put(
        &mut self,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        options: Option<PutOptions>,
    ) -> Result<PutResponse> {
        let options = options.unwrap_or_default();
        let result = self
            .client
            .execute(sim::history::kv::KvOperation::Put {
                key: text(key.into(), "key")?,
                value: text(value.into(), "value")?,
                lease: options.lease,
                prev_kv: options.prev_kv,
            })
            .await;
        match answer(&result)? {
            KvResponse::Put {
                revision, prev_kv, ..
            } => Ok(PutResponse {
                header: ResponseHeader {
                    revision: *revision as i64,
                },
                prev: prev_kv.clone().map(KeyValue),
            }),
            _ => Err(from_result(&result)),
        }
    }

    /// Gets `key` (with options: a range, a revision, a limit, a sort...).
    pub async fn get(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<GetOptions>,
    ) -> Result<GetResponse> {
        let key = text(key.into(), "key")?;
        let result = self
            .client
            .get_with_options(&key, options.unwrap_or_default())
            .await;
        match answer(&result)? {
            KvResponse::Get { revision, kvs } => Ok(GetResponse {
                header: ResponseHeader {
                    revision: *revision as i64,
                },
                count: kvs.len() as i64,
                kvs: kvs.iter().cloned().map(KeyValue).collect(),
                more: false,
            }),
            KvResponse::GetWithOptions {
                revision,
                kvs,
                count,
                more,
            } => Ok(GetResponse {
                header: ResponseHeader {
                    revision: *revision as i64,
                },
                kvs: kvs.iter().cloned().map(KeyValue).collect(),
                count: *count as i64,
                more: *more,
            }),
            _ => Err(from_result(&result)),
        }
    }

    /// Deletes `key` (or, with a prefix, every key under it).
    pub async fn delete(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<DeleteOptions>,
    ) -> Result<DeleteResponse> {
        let key = text(key.into(), "key")?;
        let result = match options.unwrap_or_default().prefix {
            true => self.client.delete_prefix(&key).await,
            false => self.client.delete(&key).await,
        };
        match answer(&result)? {
            KvResponse::Delete {
                revision, deleted, ..
            } => Ok(DeleteResponse {
                header: ResponseHeader {
                    revision: *revision as i64,
                },
                deleted: *deleted as i64,
            }),
            _ => Err(from_result(&result)),
        }
    }
}
