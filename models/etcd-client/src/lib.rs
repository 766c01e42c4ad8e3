//! A drop-in for [`etcd-client`](https://docs.rs/etcd-client/0.21.1) 0.21.1 backed by coordsim's
//! Raft store: the same names, types and errors, so code written against etcd-client compiles
//! unchanged and runs inside a coordsim world, every call an operation in the run's history.
//!
//! WORK IN PROGRESS (issue 25): `Client::connect`, `put`/`get`/`delete`, the `KvClient` and
//! the watch client (below) only; `GetOptions` is the model's (its builders take `String`
//! keys, etcd-client's take bytes). Not yet: `txn`, `compact`, the lease, lock and election
//! clients, `tonic::Status` in `Error::GRpcStatus`, the re-export of the real crate outside
//! `--cfg madsim`, and the check that one user module compiles both ways.
//!
//! ## Watch (dropin-watch)
//!
//! Mirrored: `Client::watch_client`, `Client::watch`, `WatchClient::watch` returning one
//! `WatchStream` (as 0.21.1: the first message is the `created` response; more watches share
//! the stream through `WatchStream::watch`, grouped by watch id from 0, or the id
//! `WatchOptions::with_watch_id` asks for), `WatchStream::{message, cancel,
//! request_progress}` and its `Stream` impl; every `WatchOptions` builder (`with_fragment` is
//! accepted and never splits: the simulated server has no message size limit);
//! `WatchResponse` (a compacted start revision is a `canceled` response with
//! `compact_revision` set, as etcd sends it, not an `Error`), `Event`, `EventType`,
//! `WatchFilterType`. Each stream is a process of its own in the history, and each watch is
//! judged by `etcd.watch_delivery`.
//!
//! Where it differs from etcd-client over a real etcd 3.4: a watch survives a broken
//! connection (it reconnects to any server and resumes after the last revision it
//! delivered, as the model's client does) where etcd-client's stream ends with an error; a
//! `canceled` response's header has the last revision the watch reached, not the server's;
//! the answer to `request_progress` (watch id -1) is asked through the stream's first live
//! watch, and none comes while it reconnects or when no watch is live; keys and range ends
//! must be UTF-8 and start revisions not negative (else `Error::InvalidArgs`).
//!
//! Not mirrored (watch): `WatchStream::split`, `WatchRequestSender`, `WatchResponseStream`;
//! the prost-generated helpers of `EventType` and `WatchFilterType` (`as_str_name`,
//! `from_str_name`, `i32` conversions); the `pub-response-field` feature's public fields
//! (using any of them is a compile error).

#[cfg(madsim)]
mod sim;
#[cfg(madsim)]
pub use crate::sim::*;
