//! etcd-client 0.21.1's watch types (`rpc/watch.rs`): [`WatchOptions`], [`WatchResponse`],
//! [`Event`], over the model's watch (`models::etcd::WatchStream`), which records every
//! watch, delivery, progress answer, cancel and compaction in the history for the
//! `etcd.watch_delivery` check. The client is in `watch_client.rs`, the stream in
//! `watch_stream.rs`.

use super::{
    error::text,
    error::{Error, Result},
    responses::{KeyValue, ResponseHeader},
};
use models::etcd::{ChangeEvent, ChangeKind, prefix_range_end};

/// Which keys a watch covers, as etcd-client's `KeyRange` builds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum KeySpan {
    /// The key alone.
    #[default]
    Key,
    /// `[key, end)`.
    UpTo(Vec<u8>),
    /// Every key from `key` on.
    FromKey,
    /// Every key with `key` as prefix.
    Prefix,
    /// Every key.
    AllKeys,
}

/// Options for `Watch` operation (etcd-client's `WatchOptions`).
#[derive(Clone, Debug, Default)]
pub struct WatchOptions {
    key: Vec<u8>,
    span: KeySpan,
    start_revision: i64,
    progress_notify: bool,
    filters: Vec<WatchFilterType>,
    prev_kv: bool,
    watch_id: i64,
    fragment: bool,
}

impl WatchOptions {
    /// Sets key.
    pub fn with_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key = key.into();
        self
    }

    /// Creates a new `WatchOptions`.
    pub const fn new() -> Self {
        Self {
            key: Vec::new(),
            span: KeySpan::Key,
            start_revision: 0,
            progress_notify: false,
            filters: Vec::new(),
            prev_kv: false,
            watch_id: 0,
            fragment: false,
        }
    }

    /// Sets the end of the range `[key, end)` to watch. If `end` is not given, only the key
    /// argument is watched. If `end` is equal to `\0`, all keys greater than or equal to the
    /// key argument are watched.
    pub fn with_range(mut self, end: impl Into<Vec<u8>>) -> Self {
        self.span = KeySpan::UpTo(end.into());
        self
    }

    /// Watches all keys >= key.
    pub fn with_from_key(mut self) -> Self {
        self.span = KeySpan::FromKey;
        self
    }

    /// Watches all keys prefixed with key.
    pub fn with_prefix(mut self) -> Self {
        self.span = KeySpan::Prefix;
        self
    }

    /// Watches all keys.
    pub fn with_all_keys(mut self) -> Self {
        self.span = KeySpan::AllKeys;
        self
    }

    /// Sets the revision to watch from (inclusive). No `start_revision` is "now".
    pub const fn with_start_revision(mut self, revision: i64) -> Self {
        self.start_revision = revision;
        self
    }

    /// The server periodically sends a `WatchResponse` with no events to the watcher if
    /// there are no recent events (every `EtcdConfig::watch_progress_notify_interval`).
    pub const fn with_progress_notify(mut self) -> Self {
        self.progress_notify = true;
        self
    }

    /// Filter the events at server side before it sends back to the watcher.
    pub fn with_filters(mut self, filters: impl Into<Vec<WatchFilterType>>) -> Self {
        self.filters = filters.into();
        self
    }

    /// If `prev_kv` is set, created watcher gets the previous KV before the event happens.
    /// If the previous KV is already compacted, nothing will be returned.
    pub const fn with_prev_key(mut self) -> Self {
        self.prev_kv = true;
        self
    }

    /// If `watch_id` is provided and non-zero, it will be assigned to this watcher. Creating
    /// a watcher with an ID already in use on the stream is answered with a response that is
    /// both `created` and `canceled`, with watch id -1.
    pub const fn with_watch_id(mut self, watch_id: i64) -> Self {
        self.watch_id = watch_id;
        self
    }

    /// Enables splitting large revisions into multiple watch responses. The simulated
    /// server has no message size limit, so no revision is ever split.
    pub const fn with_fragment(mut self) -> Self {
        self.fragment = true;
        self
    }

    /// The watch id asked for (0: the stream assigns one).
    pub(super) fn watch_id(&self) -> i64 {
        self.watch_id
    }

    /// The key and the model's options, as etcd-client's `KeyRange::build` encodes the
    /// range; keys must be UTF-8, as the model's store keeps text.
    pub(super) fn to_model(&self) -> Result<(String, models::etcd::WatchOptions)> {
        let key = text(self.key.clone(), "key")?;
        let (key, range_end) = match &self.span {
            KeySpan::Key => (key, None),
            KeySpan::UpTo(end) if end.is_empty() => (key, None),
            KeySpan::UpTo(end) => (key, Some(text(end.clone(), "range end")?)),
            KeySpan::FromKey => (or_nul(key), Some("\0".to_string())),
            KeySpan::Prefix if key.is_empty() => ("\0".to_string(), Some("\0".to_string())),
            KeySpan::Prefix => {
                let end = prefix_range_end(&key);
                (key, Some(end))
            }
            KeySpan::AllKeys => ("\0".to_string(), Some("\0".to_string())),
        };
        let start_revision = u64::try_from(self.start_revision).map_err(|_| {
            Error::InvalidArgs(format!(
                "start revision {}: expected 0 (now) or a positive revision",
                self.start_revision
            ))
        })?;
        let mut options = models::etcd::WatchOptions::new()
            .with_start_revision(start_revision)
            .with_filters(
                self.filters
                    .iter()
                    .map(|filter| filter.to_model())
                    .collect::<Vec<_>>(),
            );
        if let Some(end) = range_end {
            options = options.with_range(end);
        }
        if self.prev_kv {
            options = options.with_prev_key();
        }
        if self.progress_notify {
            options = options.with_progress_notify();
        }
        Ok((key, options))
    }
}

/// An empty key stands for `\0` (the lowest key) in a from-key range, as in etcd-client.
fn or_nul(key: String) -> String {
    if key.is_empty() {
        "\0".to_string()
    } else {
        key
    }
}

/// Watch filter type (etcd-client's `WatchFilterType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum WatchFilterType {
    /// Filter out put event.
    NoPut = 0,
    /// Filter out delete event.
    NoDelete = 1,
}

impl WatchFilterType {
    fn to_model(self) -> models::etcd::WatchFilterType {
        match self {
            Self::NoPut => models::etcd::WatchFilterType::NoPut,
            Self::NoDelete => models::etcd::WatchFilterType::NoDelete,
        }
    }
}

/// The kind of an [`Event`] (etcd-client's `EventType`, mvccpb's `Event.EventType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum EventType {
    /// New data was stored to the key.
    Put = 0,
    /// The key was deleted.
    Delete = 1,
}

/// Response for `Watch` operation (etcd-client's `WatchResponse`).
#[derive(Clone, Debug)]
pub struct WatchResponse {
    pub(super) header: Option<ResponseHeader>,
    pub(super) watch_id: i64,
    pub(super) created: bool,
    pub(super) canceled: bool,
    pub(super) compact_revision: i64,
    pub(super) cancel_reason: String,
    pub(super) events: Vec<Event>,
}

impl WatchResponse {
    /// A response to watch `watch_id` at store revision `revision`, with nothing set.
    pub(super) fn at(watch_id: i64, revision: i64) -> Self {
        Self {
            header: Some(ResponseHeader::at(revision.max(0) as u64)),
            watch_id,
            created: false,
            canceled: false,
            compact_revision: 0,
            cancel_reason: String::new(),
            events: Vec::new(),
        }
    }

    /// Watch response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Takes the header out of the response, leaving a [`None`] in its place.
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        self.header.take()
    }

    /// The ID of the watcher that corresponds to the response (-1 for the answer to
    /// [`WatchStream::request_progress`], which concerns the whole stream).
    pub const fn watch_id(&self) -> i64 {
        self.watch_id
    }

    /// created is set to true if the response is for a create watch request.
    pub const fn created(&self) -> bool {
        self.created
    }

    /// `canceled` is set to true if the response is for a cancel watch request or if the
    /// start_revision has already been compacted. No further events will be sent to the
    /// canceled watcher.
    pub const fn canceled(&self) -> bool {
        self.canceled
    }

    /// `compact_revision` is set to the minimum index if a watcher tries to watch at a
    /// compacted index. The client should treat the watcher as canceled and should not try
    /// to create any watcher with the same start_revision again.
    pub const fn compact_revision(&self) -> i64 {
        self.compact_revision
    }

    /// Indicates the reason for canceling the watcher.
    pub fn cancel_reason(&self) -> &str {
        &self.cancel_reason
    }

    /// Events happened on the watched keys.
    pub fn events(&self) -> &[Event] {
        &self.events
    }
}

/// Watching event (etcd-client's `Event`).
#[derive(Clone, Debug)]
pub struct Event {
    event_type: EventType,
    kv: Option<KeyValue>,
    prev_kv: Option<KeyValue>,
}

impl Event {
    pub(super) fn from_model(change: ChangeEvent) -> Self {
        Self {
            event_type: match change.kind {
                ChangeKind::Put => EventType::Put,
                ChangeKind::Delete => EventType::Delete,
            },
            kv: Some(KeyValue::from_model(change.kv)),
            prev_kv: change.prev_kv.map(KeyValue::from_model),
        }
    }

    /// The kind of event. If type is a `Put`, it indicates new data has been stored to the
    /// key. If type is a `Delete`, it indicates the key was deleted.
    pub fn event_type(&self) -> EventType {
        self.event_type
    }

    /// The KeyValue for the event. A `Put` event contains current kv pair. A `Put` event
    /// with `kv.version()==1` indicates the creation of a key. A `Delete` event contains the
    /// deleted key with its modification revision set to the revision of deletion.
    pub fn kv(&self) -> Option<&KeyValue> {
        self.kv.as_ref()
    }

    /// The key-value pair before the event happens.
    pub fn prev_kv(&self) -> Option<&KeyValue> {
        self.prev_kv.as_ref()
    }
}
