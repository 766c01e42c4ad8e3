//! Frames between clients and servers, on FIFO connections. Typed values: never serialized.

use super::{mvcc::ChangeEvent, watch::WatchOptions};
use sim::{
    NodeId,
    history::{
        RequestRef,
        kv::{KvError, KvOperation, KvResponse},
    },
};

/// A frame on a client connection (both directions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientFrame {
    /// Client → server: do this.
    Request {
        /// The client's id for the request (unique per connection).
        request_id: u64,
        /// What to do.
        request: ClientRequest,
        /// For a write, the identity the client stamped on it: the server keeps it in the
        /// write's log entry, so that the replicas' `Applied` records name it. The same on
        /// every retry of the write; `None` for a read.
        write_id: Option<RequestRef>,
    },
    /// Server → client: the answer to a request.
    Response {
        /// The request answered.
        request_id: u64,
        /// The answer.
        response: ClientResponse,
    },
    /// Client → server: stream the changes to `key` as `options` say (from its start
    /// revision; 0: from the next change).
    WatchCreate {
        /// The client's id for the watch.
        watch_id: u64,
        /// First key.
        key: String,
        /// The range's end, start revision and what each event carries.
        options: WatchOptions,
    },
    /// Server → client: the watch is created (etcd's `WatchResponse` with `created`, sent
    /// before any event of the watch: v3rpc/watch.go answers the create request at once).
    WatchCreated {
        /// The watch.
        watch_id: u64,
        /// The store's revision when the watch was created (the response header's revision).
        revision: u64,
    },
    /// Client → server: say how far the watch is (etcd's `WatchProgressRequest`).
    WatchProgressRequest {
        /// The watch.
        watch_id: u64,
    },
    /// Server → client: the watch has had every change up to `revision` (an empty
    /// `WatchResponse`: a progress notification or the answer to a progress request).
    WatchProgress {
        /// The watch.
        watch_id: u64,
        /// The revision.
        revision: u64,
    },
    /// Client → server: stop the watch (etcd's `WatchCancelRequest`).
    WatchCancel {
        /// The watch.
        watch_id: u64,
    },
    /// Server → client: the watch is cancelled; nothing more comes for it (etcd's
    /// `WatchResponse` with `canceled`).
    WatchCanceled {
        /// The watch.
        watch_id: u64,
    },
    /// Server → client: changes, in revision order.
    WatchEvents {
        /// The watch.
        watch_id: u64,
        /// The changes.
        events: Vec<ChangeEvent>,
    },
    /// Server → client: the watch cannot start: its revision was compacted.
    WatchCompacted {
        /// The watch.
        watch_id: u64,
        /// The compaction revision.
        compact_revision: u64,
    },
}

/// What a client asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientRequest {
    /// A key-value or lease operation.
    Kv(KvOperation),
    /// Compact history up to `revision`.
    Compact {
        /// The revision.
        revision: u64,
    },
}

/// A compaction done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compacted {
    /// The compaction revision.
    pub compact_revision: u64,
    /// The store revision the answer was served at (etcd's response header revision).
    pub revision: u64,
}

/// A server's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientResponse {
    /// The outcome of a key-value or lease operation.
    Kv(Result<KvResponse, KvError>),
    /// The outcome of a compaction.
    Compact(Result<Compacted, KvError>),
    /// The request definitely did not take effect here: retry, preferably at the leader.
    NotApplied {
        /// The leader, if this server knows it.
        leader_hint: Option<NodeId>,
    },
}
