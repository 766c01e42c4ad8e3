//! etcd-client 0.21.1's KV responses (`rpc/mod.rs`: `KeyValue`, `ResponseHeader`;
//! `rpc/kv.rs`: `PutResponse`, `GetResponse`, `DeleteResponse`, `CompactionResponse`), read
//! from the model's answers.

use super::error::Result;

/// Key-value pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue(sim::history::kv::KeyValue);

impl KeyValue {
    /// The key in bytes. An empty key is not allowed.
    #[inline]
    pub fn key(&self) -> &[u8] {
        self.0.key.as_bytes()
    }

    /// The key in string. An empty key is not allowed.
    ///
    /// (coordsim: keys are text, so this never fails.)
    #[inline]
    pub fn key_str(&self) -> Result<&str> {
        Ok(&self.0.key)
    }

    /// The key in string. An empty key is not allowed.
    ///
    /// # Safety
    /// Always safe here (keys are text); `unsafe` as etcd-client's, so calls compile alike.
    #[inline]
    pub unsafe fn key_str_unchecked(&self) -> &str {
        &self.0.key
    }

    /// The value held by the key, in bytes.
    #[inline]
    pub fn value(&self) -> &[u8] {
        self.0.value.as_bytes()
    }

    /// The value held by the key, in string.
    ///
    /// (coordsim: values are text, so this never fails.)
    #[inline]
    pub fn value_str(&self) -> Result<&str> {
        Ok(&self.0.value)
    }

    /// The value held by the key, in string.
    ///
    /// # Safety
    /// Always safe here (values are text); `unsafe` as etcd-client's, so calls compile alike.
    #[inline]
    pub unsafe fn value_str_unchecked(&self) -> &str {
        &self.0.value
    }

    /// Convert to key-value pair.
    pub fn into_key_value(self) -> (Vec<u8>, Vec<u8>) {
        (self.0.key.into_bytes(), self.0.value.into_bytes())
    }

    /// The revision of last creation on this key.
    #[inline]
    pub const fn create_revision(&self) -> i64 {
        self.0.create_revision as i64
    }

    /// The revision of last modification on this key.
    #[inline]
    pub const fn mod_revision(&self) -> i64 {
        self.0.mod_revision as i64
    }

    /// The version of the key. A deletion resets
    /// the version to zero and any modification of the key
    /// increases its version.
    #[inline]
    pub const fn version(&self) -> i64 {
        self.0.version as i64
    }

    /// The ID of the lease that attached to key.
    /// When the attached lease expires, the key will be deleted.
    /// If lease is 0, then no lease is attached to the key.
    #[inline]
    pub fn lease(&self) -> i64 {
        self.0.lease.unwrap_or(0) as i64
    }
}

impl KeyValue {
    /// The drop-in's view of the model's key-value (watch events carry it too).
    pub(crate) fn from_model(kv: sim::history::kv::KeyValue) -> Self {
        Self(kv)
    }
}

fn key_values(kvs: &[sim::history::kv::KeyValue]) -> Vec<KeyValue> {
    kvs.iter().cloned().map(KeyValue).collect()
}

/// General `etcd` response header (only the revision: the model has no cluster or member
/// ids, and its Raft term is not in its answers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHeader {
    revision: i64,
}

impl ResponseHeader {
    /// A header at the model's store revision.
    pub(crate) fn at(revision: u64) -> Self {
        Self {
            revision: revision as i64,
        }
    }

    /// The key-value store revision when the request was applied.
    /// For watch progress responses, the header.revision() indicates progress. All future events
    /// received in this stream are guaranteed to have a higher revision number than the
    /// header.revision() number.
    #[inline]
    pub const fn revision(&self) -> i64 {
        self.revision
    }
}

/// Response for `Put` operation.
#[derive(Debug, Clone)]
pub struct PutResponse {
    header: Option<ResponseHeader>,
    prev_kv: Option<KeyValue>,
}

impl PutResponse {
    pub(super) fn new(revision: u64, prev_kv: Option<&sim::history::kv::KeyValue>) -> Self {
        Self {
            header: Some(ResponseHeader::at(revision)),
            prev_kv: prev_kv.cloned().map(KeyValue),
        }
    }

    /// Get response header.
    #[inline]
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Takes the header out of the response, leaving a [`None`] in its place.
    #[inline]
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        self.header.take()
    }

    /// If prev_kv is set in the request, the previous key-value pair will be returned.
    #[inline]
    pub fn prev_key(&self) -> Option<&KeyValue> {
        self.prev_kv.as_ref()
    }

    /// Takes the prev_key out of the response, leaving a [`None`] in its place.
    #[inline]
    pub fn take_prev_key(&mut self) -> Option<KeyValue> {
        self.prev_kv.take()
    }
}

/// Response for `Get` operation.
#[derive(Debug, Clone)]
pub struct GetResponse {
    header: Option<ResponseHeader>,
    kvs: Vec<KeyValue>,
    more: bool,
    count: i64,
}

impl GetResponse {
    pub(super) fn new(
        revision: u64,
        kvs: &[sim::history::kv::KeyValue],
        count: u64,
        more: bool,
    ) -> Self {
        Self {
            header: Some(ResponseHeader::at(revision)),
            kvs: key_values(kvs),
            more,
            count: count as i64,
        }
    }

    /// Get response header.
    #[inline]
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Takes the header out of the response, leaving a [`None`] in its place.
    #[inline]
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        self.header.take()
    }

    /// The list of key-value pairs matched by the `Get` request.
    /// kvs is empty when count is requested.
    #[inline]
    pub fn kvs(&self) -> &[KeyValue] {
        &self.kvs
    }

    /// If `kvs` is set in the request, take the key-value pairs, leaving an empty vector in its place.
    #[inline]
    pub fn take_kvs(&mut self) -> Vec<KeyValue> {
        std::mem::take(&mut self.kvs)
    }

    /// Indicates if there are more keys to return in the requested range.
    #[inline]
    pub const fn more(&self) -> bool {
        self.more
    }

    /// The number of keys within the range when requested.
    ///
    /// Unlike Kvs, it is unaffected by limits and filters (e.g., Min/Max, Create/Modify, Revisions)
    /// and reflects the full count within the specified range.
    #[inline]
    pub const fn count(&self) -> i64 {
        self.count
    }
}

/// Response for `Delete` operation.
#[derive(Debug, Clone)]
pub struct DeleteResponse {
    header: Option<ResponseHeader>,
    deleted: i64,
    prev_kvs: Vec<KeyValue>,
}

impl DeleteResponse {
    pub(super) fn new(
        revision: u64,
        deleted: u64,
        prev_kvs: &[sim::history::kv::KeyValue],
    ) -> Self {
        Self {
            header: Some(ResponseHeader::at(revision)),
            deleted: deleted as i64,
            prev_kvs: key_values(prev_kvs),
        }
    }

    /// Delete response header.
    #[inline]
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Takes the header out of the response, leaving a [`None`] in its place.
    #[inline]
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        self.header.take()
    }

    /// The number of keys deleted by the delete request.
    #[inline]
    pub const fn deleted(&self) -> i64 {
        self.deleted
    }

    /// If `prev_kv` is set in the request, the previous key-value pairs will be returned.
    #[inline]
    pub fn prev_kvs(&self) -> &[KeyValue] {
        &self.prev_kvs
    }

    /// If `prev_kvs` is set in the request, take the previous key-value pairs, leaving an empty vector in its place.
    #[inline]
    pub fn take_prev_kvs(&mut self) -> Vec<KeyValue> {
        std::mem::take(&mut self.prev_kvs)
    }
}

/// Response for `Compact` operation.
#[derive(Debug, Clone)]
pub struct CompactionResponse {
    header: Option<ResponseHeader>,
}

impl CompactionResponse {
    pub(super) fn new(revision: u64) -> Self {
        Self {
            header: Some(ResponseHeader::at(revision)),
        }
    }

    /// Compact response header.
    #[inline]
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Takes the header out of the response, leaving a [`None`] in its place.
    #[inline]
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        self.header.take()
    }
}
