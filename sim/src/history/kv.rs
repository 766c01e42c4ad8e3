//! etcd-style key-value operations, as clients invoke them and as histories record them.
//!
//! Mirrors etcd's v3 API: ranges by `key`/`range_end`, revisions, transactions with
//! compares, and leases.

use serde::{Deserialize, Serialize};

/// Linearizable (ReadIndex) or serializable (local, possibly stale) read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadConsistency {
    /// Confirmed with the leader's quorum: sees every write completed before it began.
    #[default]
    Linearizable,
    /// Served from the local replica: may be stale.
    Serializable,
}

/// A key-value operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "snake_case")]
pub enum KvOperation {
    /// Read `key`, or the range `[key, range_end)` if `range_end` is set.
    Get {
        /// First key.
        key: String,
        /// End of the range (exclusive); `None` for the single key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        range_end: Option<String>,
        /// Read at this past revision; `None` for the latest.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        revision: Option<u64>,
        /// Linearizable or serializable.
        #[serde(default)]
        consistency: ReadConsistency,
    },
    /// Write `value` at `key`, attached to `lease` if set.
    Put {
        /// Key.
        key: String,
        /// Value.
        value: String,
        /// Lease the key is attached to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease: Option<u64>,
        /// Also answer the key's value before the put (etcd's `prev_kv`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        prev_kv: bool,
    },
    /// Delete `key`, or the range `[key, range_end)`.
    Delete {
        /// First key.
        key: String,
        /// End of the range (exclusive).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        range_end: Option<String>,
        /// Also answer the deleted keys' last values (etcd's `prev_kv`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        prev_kv: bool,
    },
    /// If every compare holds, run `success`, else run `failure`; atomically.
    Txn {
        /// Conditions.
        compares: Vec<Compare>,
        /// Operations when all conditions hold.
        success: Vec<KvOperation>,
        /// Operations otherwise.
        failure: Vec<KvOperation>,
    },
    /// Grant a lease with a time-to-live.
    LeaseGrant {
        /// Time to live, milliseconds.
        ttl_ms: u64,
    },
    /// Revoke a lease, deleting its keys.
    LeaseRevoke {
        /// Lease id.
        lease: u64,
    },
    /// Renew a lease.
    LeaseKeepAlive {
        /// Lease id.
        lease: u64,
    },
    /// Ask how long a lease has left.
    LeaseTimeToLive {
        /// Lease id.
        lease: u64,
        /// Also ask for the keys attached to it (etcd's `keys` option).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        keys: bool,
    },
    // Added for issue 24 (etcd's KV API): variants go last, since histories hash variants
    // by index.
    /// A [`KvOperation::Get`] with etcd's range options (limit, sort, keys-only, count-only,
    /// revision filters). A separate variant so that every plain get keeps its digest; a
    /// client sends a plain `Get` when no option is set.
    GetWithOptions {
        /// First key.
        key: String,
        /// End of the range (exclusive); `None` for the single key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        range_end: Option<String>,
        /// Read at this past revision; `None` for the latest.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        revision: Option<u64>,
        /// Linearizable or serializable.
        #[serde(default)]
        consistency: ReadConsistency,
        /// The options.
        options: RangeOptions,
    },
    /// List the leases that exist (etcd's `LeaseLeases`).
    LeaseLeases,
}

/// etcd's range options (`RangeRequest`'s `limit`, `sort_order`, `sort_target`,
/// `keys_only`, `count_only` and the min/max create/mod revision filters); `0` for a
/// number is "not set", as in etcd's request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeOptions {
    /// At most this many keys (0: no limit).
    #[serde(default)]
    pub limit: u64,
    /// The order asked for.
    #[serde(default)]
    pub sort_order: SortOrder,
    /// What is sorted on.
    #[serde(default)]
    pub sort_target: SortTarget,
    /// Answer keys without their values.
    #[serde(default)]
    pub keys_only: bool,
    /// Answer only the count.
    #[serde(default)]
    pub count_only: bool,
    /// Leave out keys modified before this revision (0: no bound).
    #[serde(default)]
    pub min_mod_revision: u64,
    /// Leave out keys modified after this revision (0: no bound).
    #[serde(default)]
    pub max_mod_revision: u64,
    /// Leave out keys created before this revision (0: no bound).
    #[serde(default)]
    pub min_create_revision: u64,
    /// Leave out keys created after this revision (0: no bound).
    #[serde(default)]
    pub max_create_revision: u64,
}

impl RangeOptions {
    /// Whether any revision filter is set.
    pub fn filters(&self) -> bool {
        self.min_mod_revision != 0
            || self.max_mod_revision != 0
            || self.min_create_revision != 0
            || self.max_create_revision != 0
    }
}

/// etcd's `RangeRequest.SortOrder`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SortOrder {
    /// Not sorted (key order; but see [`SortTarget`]).
    #[default]
    None,
    /// Lowest first.
    Ascend,
    /// Highest first.
    Descend,
}

/// etcd's `RangeRequest.SortTarget`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SortTarget {
    /// The key.
    #[default]
    Key,
    /// The version.
    Version,
    /// The create revision.
    Create,
    /// The mod revision.
    Mod,
    /// The value.
    Value,
}

/// A condition of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Compare {
    /// The key compared.
    pub key: String,
    /// What of it is compared, and against what.
    pub target: CompareTarget,
    /// How.
    pub operator: CompareOperator,
    /// With an end, the compare is over the keys `[key, range_end)` (`"\0"`: every key ≥
    /// `key`) and holds only if it holds for every key there; over no key, it is a compare
    /// of a missing key (etcd 3.4 `etcdserver/apply.go` `applyCompare`).
    #[serde(default)]
    pub range_end: Option<String>,
}

/// By hand, so that a compare without `range_end` serializes exactly as before the field
/// existed: a derived `skip_serializing_if` still feeds a word for the skipped field to the
/// history digest ([`crate::digest::Digest::of_structure`]), and every recorded history
/// with a compare would change its digest.
impl Serialize for Compare {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let fields = if self.range_end.is_some() { 4 } else { 3 };
        let mut state = serializer.serialize_struct("Compare", fields)?;
        state.serialize_field("key", &self.key)?;
        state.serialize_field("target", &self.target)?;
        state.serialize_field("operator", &self.operator)?;
        if let Some(range_end) = &self.range_end {
            state.serialize_field("range_end", range_end)?;
        }
        state.end()
    }
}

impl Compare {
    /// A compare of one key.
    pub fn key(key: &str, target: CompareTarget, operator: CompareOperator) -> Self {
        Self {
            key: key.to_string(),
            target,
            operator,
            range_end: None,
        }
    }

    /// The same compare over the keys `[key, end)` (`etcd-client`'s `Compare::with_range`).
    pub fn with_range(mut self, end: impl Into<String>) -> Self {
        self.range_end = Some(end.into());
        self
    }
}

/// The field a compare looks at, with the operand.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareTarget {
    /// The value.
    Value(String),
    /// The version (0 if the key does not exist).
    Version(u64),
    /// The create revision (0 if the key does not exist).
    CreateRevision(u64),
    /// The mod revision (0 if the key does not exist).
    ModRevision(u64),
    /// The lease (0 if none).
    Lease(u64),
}

/// Comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareOperator {
    /// `==`
    Equal,
    /// `!=`
    NotEqual,
    /// `>`
    Greater,
    /// `<`
    Less,
}

/// A key with its value and metadata.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyValue {
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
    /// Revision of the key's creation.
    pub create_revision: u64,
    /// Revision of the last modification.
    pub mod_revision: u64,
    /// Number of modifications since creation (1 after creation).
    pub version: u64,
    /// Attached lease, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<u64>,
}

/// A successful key-value response. `revision` is the store revision the response was
/// served at (etcd's response header revision).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "snake_case")]
pub enum KvResponse {
    /// Keys read.
    Get {
        /// Store revision.
        revision: u64,
        /// The keys, in key order.
        kvs: Vec<KeyValue>,
    },
    /// Write done.
    Put {
        /// Store revision after the write.
        revision: u64,
        /// The key before the put, if asked for (`prev_kv`) and it existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prev_kv: Option<KeyValue>,
    },
    /// Keys deleted.
    Delete {
        /// Store revision after the delete.
        revision: u64,
        /// How many keys were deleted.
        deleted: u64,
        /// The deleted keys' last values, in key order, if asked for (`prev_kv`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        prev_kvs: Vec<KeyValue>,
    },
    /// Transaction done.
    Txn {
        /// Store revision after the transaction.
        revision: u64,
        /// Whether the compares held (and `success` ran).
        succeeded: bool,
        /// One response per operation of the branch that ran.
        responses: Vec<KvResponse>,
    },
    /// Lease granted.
    LeaseGrant {
        /// Lease id.
        lease: u64,
        /// Granted time to live, milliseconds.
        ttl_ms: u64,
    },
    /// Lease revoked.
    LeaseRevoke {
        /// Store revision after the revoke.
        revision: u64,
    },
    /// Lease renewed. As etcd answers a keep-alive: `ttl_ms` 0 (and no error) when the
    /// lease does not exist (see [`KvResponse::says_lease_gone`]).
    LeaseKeepAlive {
        /// Time to live from now, milliseconds; 0: the lease is gone.
        ttl_ms: u64,
    },
    /// Lease time to live. As etcd answers it: `remaining_ms` -1 (and no error) when the
    /// lease does not exist.
    LeaseTimeToLive {
        /// Remaining time, milliseconds; -1: the lease is gone.
        remaining_ms: i64,
        /// The TTL the lease was granted, milliseconds (0 when it is gone).
        #[serde(default)]
        granted_ttl_ms: u64,
        /// The keys attached to it, in key order, when asked for (etcd's `keys` option).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        keys: Option<Vec<String>>,
    },
    // Added for issue 24 (etcd's KV API): variants go last.
    /// Keys read by a [`KvOperation::GetWithOptions`].
    GetWithOptions {
        /// Store revision.
        revision: u64,
        /// The keys, in the order asked for (key order by default), at most `limit` of them;
        /// values empty for a keys-only read, none for a count-only read.
        kvs: Vec<KeyValue>,
        /// How many keys the range holds (before the limit and the revision filters).
        count: u64,
        /// Whether the limit left keys out.
        more: bool,
    },
    /// The leases that exist, by id (etcd lists them by expiry; the model by id).
    LeaseLeases {
        /// Lease ids.
        leases: Vec<u64>,
    },
}

impl KvResponse {
    /// Whether this answer says the lease asked about is gone (expired, revoked or never
    /// granted), as etcd says it without an error: a keep-alive's TTL 0, a time-to-live
    /// query's TTL -1. (etcd's `clientv3` reads a keep-alive's `TTL <= 0` so:
    /// `clientv3/lease.go` `recvKeepAlive` and `KeepAliveOnce`.) Other operations on a gone
    /// lease fail with [`KvError::LeaseNotFound`].
    pub fn says_lease_gone(&self) -> bool {
        match self {
            KvResponse::LeaseKeepAlive { ttl_ms } => *ttl_ms == 0,
            KvResponse::LeaseTimeToLive { remaining_ms, .. } => *remaining_ms < 0,
            _ => false,
        }
    }
}

/// A definite key-value failure: the operation did not take effect.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum KvError {
    /// The key is empty.
    EmptyKey,
    /// The lease does not exist (never granted, revoked or expired).
    LeaseNotFound {
        /// Lease id.
        lease: u64,
    },
    /// The requested revision has been compacted.
    Compacted {
        /// The compaction revision.
        compact_revision: u64,
    },
    /// The requested revision is in the future.
    FutureRevision {
        /// The current revision.
        current_revision: u64,
    },
    /// A transaction with no operations at all. No longer answered: etcd runs an empty
    /// transaction (kept so that older histories read back).
    EmptyTransaction,
    /// Anything else.
    Other {
        /// What went wrong.
        message: String,
    },
    /// A transaction branch writes one key twice: two puts, or a put and a delete that
    /// covers it (etcd's "duplicate key given in txn request").
    DuplicateKey,
}

/// What an etcd-style client did that is not an operation's invocation or completion.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kv_event", rename_all = "snake_case")]
pub enum KvEvent {
    /// The client sent a recorded write to a server under `request`, the identity the
    /// server keeps in the write's log entry and the replicas record when they apply it
    /// ([`crate::history::ProtocolEvent::Applied`]'s `request`). Recorded once per write,
    /// when it is first sent: a retry sends the same identity again. Links an operation
    /// whose outcome the client never learned to the log, for the linearizability checker.
    RequestSent {
        /// Logical process.
        process: u32,
        /// The operation sent.
        op_id: crate::history::OpId,
        /// The identity the write's log entry carries.
        request: crate::history::RequestRef,
    },
}

/// The `name` of the [`crate::history::RecipeEvent::Other`] events that carry a
/// [`WatchRecord`] (watches are streams, not invoke/complete operations).
pub const WATCH_EVENT_NAME: &str = "kv_watch";

/// One observable step of a client's watch stream, as the client saw it.
///
/// Recorded as `RecipeEvent::Other { name: "kv_watch", detail }` (see
/// [`WatchRecord::to_recipe_event`]) so that adding watches changed no existing enum.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchRecord {
    /// The client's logical process.
    pub process: u32,
    /// The watch, unique on its client node.
    pub watch: u64,
    /// What happened.
    pub step: WatchStep,
}

/// What happened to a watch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum WatchStep {
    /// The client started watching `key` (or `[key, range_end)`) from `start_revision`
    /// (0: from the next change).
    Created {
        /// First key.
        key: String,
        /// End of the range (exclusive), as in [`KvOperation::Get`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        range_end: Option<String>,
        /// First revision wanted.
        start_revision: u64,
        /// The kinds of change the watch's filters leave out (etcd's `NOPUT`, `NODELETE`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left_out: Vec<WatchedChangeKind>,
    },
    /// The stream (re)opened on `server`, asking for changes from `from_revision`.
    Opened {
        /// The server.
        server: crate::NodeId,
        /// First revision asked for.
        from_revision: u64,
    },
    /// Changes were delivered, in the order received.
    Delivered {
        /// The server that sent them.
        server: crate::NodeId,
        /// The changes.
        changes: Vec<WatchedChange>,
    },
    /// The server cancelled the watch: the revision asked for was compacted.
    Compacted {
        /// The compaction revision.
        compact_revision: u64,
    },
    /// The client stopped watching.
    Closed,
    /// The server said the watch has had every change up to `revision` (an empty response:
    /// a progress notification, or the answer to a progress request).
    Progress {
        /// The server that said so.
        server: crate::NodeId,
        /// The revision.
        revision: u64,
    },
    /// The server answered the client's cancel: nothing more comes on this watch.
    Canceled,
}

/// One change a watch delivered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchedChange {
    /// Put or delete.
    pub kind: WatchedChangeKind,
    /// The key.
    pub key: String,
    /// The value after a put (empty after a delete).
    pub value: String,
    /// Revision of the change.
    pub mod_revision: u64,
    /// Create revision after a put (0 after a delete).
    pub create_revision: u64,
    /// Version after a put (0 after a delete).
    pub version: u64,
    /// The key before the change, when the watch asked for it (`prev_kv`) and the server
    /// had it (none for a create, none when that revision was compacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_kv: Option<KeyValue>,
}

/// Kinds of watched change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchedChangeKind {
    /// Created or updated.
    Put,
    /// Deleted.
    Delete,
}

impl WatchRecord {
    /// The history event that carries this record.
    pub fn to_recipe_event(&self) -> crate::history::RecipeEvent {
        crate::history::RecipeEvent::Other {
            name: WATCH_EVENT_NAME.to_string(),
            detail: serde_json::to_value(self).expect("watch records serialize"),
        }
    }

    /// The record carried by `event`, if it is one.
    pub fn from_recipe_event(event: &crate::history::RecipeEvent) -> Option<Self> {
        match event {
            // Read in place: `serde_json::from_value` would take a copy of the whole value.
            crate::history::RecipeEvent::Other { name, detail } if name == WATCH_EVENT_NAME => {
                Self::deserialize(detail).ok()
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod compare_tests {
    use super::*;

    #[test]
    fn a_compare_without_a_range_serializes_as_before_the_field_existed() {
        let one = Compare::key("k", CompareTarget::Version(1), CompareOperator::Equal);
        let json = serde_json::to_string(&one).unwrap();
        assert_eq!(
            json,
            r#"{"key":"k","target":{"version":1},"operator":"equal"}"#
        );
        assert_eq!(serde_json::from_str::<Compare>(&json).unwrap(), one);
        let ranged = one.clone().with_range("l");
        let json = serde_json::to_string(&ranged).unwrap();
        assert!(json.ends_with(r#","range_end":"l"}"#), "{json}");
        assert_eq!(serde_json::from_str::<Compare>(&json).unwrap(), ranged);
        // The digest of a compare without a range is that of the three fields alone.
        #[derive(Serialize)]
        struct ThreeFields<'a> {
            key: &'a str,
            target: &'a CompareTarget,
            operator: &'a CompareOperator,
        }
        let three = ThreeFields {
            key: "k",
            target: &one.target,
            operator: &one.operator,
        };
        assert_eq!(
            crate::digest::Digest::of_structure(&one),
            crate::digest::Digest::of_structure(&three)
        );
        assert_ne!(
            crate::digest::Digest::of_structure(&ranged),
            crate::digest::Digest::of_structure(&one)
        );
    }
}

#[cfg(test)]
mod watch_record_tests {
    use super::*;

    #[test]
    fn a_watch_record_round_trips_through_a_recipe_event() {
        let record = WatchRecord {
            process: 2,
            watch: 7,
            step: WatchStep::Delivered {
                server: crate::NodeId::server(1),
                changes: vec![WatchedChange {
                    kind: WatchedChangeKind::Delete,
                    key: "k".into(),
                    value: String::new(),
                    mod_revision: 9,
                    create_revision: 0,
                    version: 0,
                    prev_kv: Some(KeyValue {
                        key: "k".into(),
                        value: "v".into(),
                        create_revision: 3,
                        mod_revision: 8,
                        version: 2,
                        lease: None,
                    }),
                }],
            },
        };
        let event = record.to_recipe_event();
        assert_eq!(WatchRecord::from_recipe_event(&event), Some(record));
        let other = crate::history::RecipeEvent::Other {
            name: "something_else".into(),
            detail: serde_json::Value::Null,
        };
        assert_eq!(WatchRecord::from_recipe_event(&other), None);
    }
}
