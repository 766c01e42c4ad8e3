//! etcd-client 0.21.1's request options (`rpc/kv.rs`: `PutOptions`, `GetOptions`,
//! `DeleteOptions`, `CompactionOptions`; `rpc/mod.rs`: `KeyRange`), with its builders and
//! doc wording. Each becomes the model's operation when the call is made, since that is
//! where bytes that are not UTF-8 can be refused with an error.

use super::error::text;
use super::error::{Error, Result};
use sim::history::kv::KvOperation;

pub use sim::history::kv::{SortOrder, SortTarget};

/// Key range builder (etcd-client's private `KeyRange`, with the same precedence: the last
/// of `with_range`/`with_from_key`/`with_prefix`/`with_all_keys` wins).
#[derive(Debug, Default, Clone)]
pub(super) struct KeyRange {
    range_end: Vec<u8>,
    with_prefix: bool,
    with_from_key: bool,
    with_all_keys: bool,
}

impl KeyRange {
    fn with_range(&mut self, end_key: impl Into<Vec<u8>>) {
        *self = Self {
            range_end: end_key.into(),
            ..Self::default()
        };
    }

    fn with_from_key(&mut self) {
        self.with_from_key = true;
        self.with_prefix = false;
        self.with_all_keys = false;
    }

    fn with_prefix(&mut self) {
        self.with_prefix = true;
        self.with_from_key = false;
        self.with_all_keys = false;
    }

    fn with_all_keys(&mut self) {
        self.with_all_keys = true;
        self.with_prefix = false;
        self.with_from_key = false;
    }

    /// The key and range end the request carries, as text (etcd-client's `KeyRange::build`).
    pub(super) fn build(&self, key: Vec<u8>) -> Result<(String, Option<String>)> {
        let everything = || Ok(("\0".to_string(), Some("\0".to_string())));
        if self.with_all_keys || (self.with_prefix && key.is_empty()) {
            return everything();
        }
        if self.with_from_key {
            let key = if key.is_empty() { vec![0] } else { key };
            return Ok((text(key, "key")?, Some("\0".to_string())));
        }
        if self.with_prefix {
            let end = prefix_end(&key);
            let key = text(key, "key")?;
            return Ok((key, Some(end)));
        }
        let key = text(key, "key")?;
        match self.range_end.is_empty() {
            true => Ok((key, None)),
            false => Ok((key, Some(text(self.range_end.clone(), "range end")?))),
        }
    }
}

/// The end of the range of keys prefixed by `key` (etcd-client's `get_prefix`: the last byte
/// below 0xFF plus one). When that is not UTF-8 (the prefix ends inside a character's
/// encoding), the model's own end, a little wider but text, is used.
pub(super) fn prefix_end(key: &[u8]) -> String {
    for (i, byte) in key.iter().enumerate().rev() {
        if *byte < 0xFF {
            let mut end = key[..=i].to_vec();
            end[i] = *byte + 1;
            return match String::from_utf8(end) {
                Ok(end) => end,
                Err(_) => models::etcd::prefix_range_end(&String::from_utf8_lossy(key)),
            };
        }
    }
    "\0".to_string()
}

/// Options for `Put` operation.
#[derive(Debug, Default, Clone)]
pub struct PutOptions {
    lease: i64,
    prev_kv: bool,
}

impl PutOptions {
    /// Creates a `PutOptions`.
    #[inline]
    pub const fn new() -> Self {
        Self {
            lease: 0,
            prev_kv: false,
        }
    }

    /// Lease is the lease ID to associate with the key in the key-value store. A lease
    /// value of 0 indicates no lease.
    #[inline]
    pub const fn with_lease(mut self, lease: i64) -> Self {
        self.lease = lease;
        self
    }

    /// If prev_kv is set, etcd gets the previous key-value pair before changing it.
    /// The previous key-value pair will be returned in the put response.
    #[inline]
    pub const fn with_prev_key(mut self) -> Self {
        self.prev_kv = true;
        self
    }

    /// The model's put. A lease id is an `i64` to etcd and a `u64` to the model: the same
    /// 64 bits, so a negative id is a lease that does not exist, as it is to etcd.
    pub(super) fn operation(self, key: Vec<u8>, value: Vec<u8>) -> Result<KvOperation> {
        Ok(KvOperation::Put {
            key: text(key, "key")?,
            value: text(value, "value")?,
            lease: (self.lease != 0).then_some(self.lease as u64),
            prev_kv: self.prev_kv,
        })
    }
}

/// Options for `Get` operation.
#[derive(Debug, Default, Clone)]
pub struct GetOptions {
    key_range: KeyRange,
    /// Every option but the range: the model's `GetOptions` knows how etcd reads them (a
    /// number ≤ 0 is "not set"; ascending by key is sent as no order).
    model: models::etcd::GetOptions,
}

impl GetOptions {
    /// Creates a `GetOptions`.
    #[inline]
    pub fn new() -> Self {
        Self::default()
    }

    /// Specifies the range of 'Get'.
    /// Returns the keys in the range [key, end_key).
    /// `end_key` must be lexicographically greater than start key.
    #[inline]
    pub fn with_range(mut self, end_key: impl Into<Vec<u8>>) -> Self {
        self.key_range.with_range(end_key);
        self
    }

    /// Gets all keys >= key.
    #[inline]
    pub fn with_from_key(mut self) -> Self {
        self.key_range.with_from_key();
        self
    }

    /// Gets all keys prefixed with key.
    #[inline]
    pub fn with_prefix(mut self) -> Self {
        self.key_range.with_prefix();
        self
    }

    /// Gets all keys.
    #[inline]
    pub fn with_all_keys(mut self) -> Self {
        self.key_range.with_all_keys();
        self
    }

    /// Limits the number of keys returned for the request. When limit is set to 0,
    /// it is treated as no limit.
    #[inline]
    pub fn with_limit(mut self, limit: i64) -> Self {
        self.model = self.model.with_limit(limit);
        self
    }

    /// The point-in-time of the key-value store to use for the range.
    /// If revision is less or equal to zero, the range is over the newest key-value store.
    /// If the revision has been compacted, ErrCompacted is returned as a response.
    #[inline]
    pub fn with_revision(mut self, revision: i64) -> Self {
        self.model = self.model.with_revision(revision);
        self
    }

    /// Sets the order for returned sorted results.
    /// It requires 'with_range' and/or 'with_prefix' to be specified too.
    #[inline]
    pub fn with_sort(mut self, target: SortTarget, order: SortOrder) -> Self {
        self.model = self.model.with_sort(target, order);
        self
    }

    /// Sets the get request to use serializable member-local reads.
    /// Get requests are linearizable by default; linearizable requests have higher
    /// latency and lower throughput than serializable requests but reflect the current
    /// consensus of the cluster. For better performance, in exchange for possible stale reads,
    /// a serializable get request is served locally without needing to reach consensus
    /// with other nodes in the cluster.
    #[inline]
    pub fn with_serializable(mut self) -> Self {
        self.model = self.model.with_serializable();
        self
    }

    /// Returns only the keys and not the values.
    #[inline]
    pub fn with_keys_only(mut self) -> Self {
        self.model = self.model.with_keys_only();
        self
    }

    /// Returns only the count of the keys in the range.
    #[inline]
    pub fn with_count_only(mut self) -> Self {
        self.model = self.model.with_count_only();
        self
    }

    /// Sets the lower bound for returned key mod revisions; all keys with
    /// lesser mod revisions will be filtered away.
    #[inline]
    pub fn with_min_mod_revision(mut self, revision: i64) -> Self {
        self.model = self.model.with_min_mod_revision(revision);
        self
    }

    /// Sets the upper bound for returned key mod revisions; all keys with
    /// greater mod revisions will be filtered away.
    #[inline]
    pub fn with_max_mod_revision(mut self, revision: i64) -> Self {
        self.model = self.model.with_max_mod_revision(revision);
        self
    }

    /// Sets the lower bound for returned key create revisions; all keys with
    /// lesser create revisions will be filtered away.
    #[inline]
    pub fn with_min_create_revision(mut self, revision: i64) -> Self {
        self.model = self.model.with_min_create_revision(revision);
        self
    }

    /// `max_create_revision` is the upper bound for returned key create revisions; all keys with
    /// greater create revisions will be filtered away.
    #[inline]
    pub fn with_max_create_revision(mut self, revision: i64) -> Self {
        self.model = self.model.with_max_create_revision(revision);
        self
    }

    /// The model's get (a plain `Get` when no range option is set, so that its history
    /// reads as any other get).
    pub(super) fn operation(self, key: Vec<u8>) -> Result<KvOperation> {
        let (key, range_end) = self.key_range.build(key)?;
        let model = match range_end {
            Some(end) => self.model.with_range(end),
            None => self.model,
        };
        Ok(model.operation(&key))
    }
}

/// Options for `Delete` operation.
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    key_range: KeyRange,
    prev_kv: bool,
}

impl DeleteOptions {
    /// Creates a `DeleteOptions`.
    #[inline]
    pub fn new() -> Self {
        Self::default()
    }

    /// `end_key` is the key following the last key to delete for the range [key, end_key).
    #[inline]
    pub fn with_range(mut self, end_key: impl Into<Vec<u8>>) -> Self {
        self.key_range.with_range(end_key);
        self
    }

    /// Deletes all keys >= key.
    #[inline]
    pub fn with_from_key(mut self) -> Self {
        self.key_range.with_from_key();
        self
    }

    /// Deletes all keys prefixed with key.
    #[inline]
    pub fn with_prefix(mut self) -> Self {
        self.key_range.with_prefix();
        self
    }

    /// Deletes all keys.
    #[inline]
    pub fn with_all_keys(mut self) -> Self {
        self.key_range.with_all_keys();
        self
    }

    /// If `prev_kv` is set, etcd gets the previous key-value pairs before deleting it.
    /// The previous key-value pairs will be returned in the delete response.
    #[inline]
    pub const fn with_prev_key(mut self) -> Self {
        self.prev_kv = true;
        self
    }

    /// The model's delete.
    pub(super) fn operation(self, key: Vec<u8>) -> Result<KvOperation> {
        let (key, range_end) = self.key_range.build(key)?;
        Ok(KvOperation::Delete {
            key,
            range_end,
            prev_kv: self.prev_kv,
        })
    }
}

/// Options for `Compact` operation.
#[derive(Debug, Default, Clone)]
pub struct CompactionOptions {
    _physical: bool,
}

impl CompactionOptions {
    /// Creates a `CompactionOptions`.
    #[inline]
    pub const fn new() -> Self {
        Self { _physical: false }
    }

    /// Physical is set so the RPC will wait until the compaction is physically
    /// applied to the local database such that compacted entries are totally
    /// removed from the backend database.
    ///
    /// (coordsim: the model's compaction is whole when it is answered, so every compaction
    /// is physical.)
    #[inline]
    pub const fn with_physical(mut self) -> Self {
        self._physical = true;
        self
    }
}

/// A revision etcd takes as an `i64`, as the model's `u64`: refused when negative, since
/// the model cannot hold it (etcd would compare with it).
pub(super) fn revision_operand(value: i64, what: &str) -> Result<u64> {
    u64::try_from(value).map_err(|_| {
        Error::InvalidArgs(format!(
            "{what} {value}: coordsim's store compares with numbers ≥ 0 only"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built(range: KeyRange, key: &[u8]) -> (String, Option<String>) {
        range.build(key.to_vec()).expect("text")
    }

    #[test]
    fn key_ranges_build_as_etcd_clients_do() {
        let mut range = KeyRange::default();
        assert_eq!(built(range.clone(), b"a"), ("a".into(), None));
        range.with_prefix();
        assert_eq!(built(range.clone(), b"a"), ("a".into(), Some("b".into())));
        // An empty prefix is every key.
        assert_eq!(built(range.clone(), b""), ("\0".into(), Some("\0".into())));
        // The last choice wins: a range after a prefix, a prefix after a range.
        range.with_range("c");
        assert_eq!(built(range.clone(), b"a"), ("a".into(), Some("c".into())));
        range.with_prefix();
        assert_eq!(built(range.clone(), b"a"), ("a".into(), Some("b".into())));
        range.with_from_key();
        assert_eq!(built(range.clone(), b""), ("\0".into(), Some("\0".into())));
        range.with_all_keys();
        assert_eq!(built(range.clone(), b"x"), ("\0".into(), Some("\0".into())));
        let mut bad = KeyRange::default();
        bad.with_range(vec![0xff]);
        let error = bad.build(b"a".to_vec()).expect_err("not UTF-8");
        assert!(
            error.to_string().contains("range end is not UTF-8"),
            "{error}"
        );
    }

    #[test]
    fn a_prefix_end_is_etcds_unless_it_would_not_be_text() {
        assert_eq!(prefix_end(b"ab"), "ac");
        // "é" is C3 A9: etcd's end C3 AA is "ê".
        assert_eq!(prefix_end("é".as_bytes()), "ê");
        // "a¿" is 61 C2 BF: etcd's end 61 C2 C0 is not UTF-8; the model's end "b" covers
        // every key etcd's would, and more.
        assert_eq!(prefix_end("a¿".as_bytes()), "b");
    }
}
