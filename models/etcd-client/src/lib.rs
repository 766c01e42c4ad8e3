//! A drop-in for [`etcd-client`](https://docs.rs/etcd-client/0.21.1) **0.21.1** backed by
//! coordsim's Raft store: the same names, signatures, types and errors, so that code written
//! against etcd-client compiles unchanged and runs inside a coordsim world, every call an
//! operation in the run's history that the store's checks (`etcd.linearizable` and the
//! others) judge.
//!
//! # Both ways, one `Cargo.toml` line
//!
//! ```toml
//! etcd-client = { package = "coordsim-etcd-client", path = "…/models/etcd-client" }
//! ```
//!
//! Under `--cfg madsim` (coordsim's `.cargo/config.toml`) the crate is the simulated client
//! below. Without it, it is only `pub use etcd_client::*` of the real crate, version
//! `=0.21.1`, so production builds talk to a real etcd. `models/etcd-client/both-ways.sh`
//! checks that a user module compiles in both modes.
//!
//! # What is mirrored (the simulated side)
//!
//! The model's answers follow etcd's v3 API; the conformance probes
//! (`models/conformance/probes/etcd/`) compare them with a real etcd server.
//!
//! - `Client::connect(endpoints, options)` (from a task on a client node of a running
//!   scenario with the Raft store; any endpoints), `Client::kv_client`, and `Client`'s
//!   `put`, `get`, `delete`, `txn` and `compact`. `Client` and `KvClient` are `Clone`; each
//!   clone is a history process of its own, since clones may call concurrently.
//! - `PutOptions` (`with_lease`, `with_prev_key`), `GetOptions` (`with_range`,
//!   `with_from_key`, `with_prefix`, `with_all_keys`, `with_limit`, `with_revision`,
//!   `with_sort(SortTarget, SortOrder)`, `with_serializable`, `with_keys_only`,
//!   `with_count_only`, `with_min/max_mod_revision`, `with_min/max_create_revision`),
//!   `DeleteOptions` (`with_range`, `with_from_key`, `with_prefix`, `with_all_keys`,
//!   `with_prev_key`), `CompactionOptions` (`with_physical`).
//! - `Txn::new().when(..).and_then(..).or_else(..)`; `Compare::{version, create_revision,
//!   mod_revision, value, lease}` with `CompareOp::{Equal, Greater, Less, NotEqual}` and
//!   `with_range`/`with_prefix`; `TxnOp::{put, get, delete, txn}` (nested transactions too).
//! - Responses: `PutResponse`, `GetResponse`, `DeleteResponse`, `TxnResponse`,
//!   `TxnOpResponse::{Put, Get, Delete, Txn}`, `CompactionResponse`, `KeyValue`,
//!   `ResponseHeader`, with etcd-client's accessors (`header`, `take_header`, `kvs`,
//!   `take_kvs`, `more`, `count`, `prev_key`, `take_prev_key`, `deleted`, `prev_kvs`,
//!   `take_prev_kvs`, `succeeded`, `op_responses`).
//! - `Error` with etcd-client's variants (but two, below), and `Error::GRpcStatus` holding a
//!   real `tonic::Status` with etcd's code and message: an empty key is `InvalidArgument`
//!   "etcdserver: key is not provided", a missing lease `NotFound` "etcdserver: requested
//!   lease not found", a compacted revision `OutOfRange` "etcdserver: mvcc: required
//!   revision has been compacted", a future one `OutOfRange` "… is a future revision", a key
//!   written twice in a transaction `InvalidArgument` "etcdserver: duplicate key given in
//!   txn request", no leader `Unavailable` "etcdserver: no leader". A call whose outcome is
//!   unknown (no answer in time, or the connection broke) is `Unavailable` "etcdserver:
//!   request timed out", as etcd and tonic report those; a read that found no server before
//!   the client's deadline is `DeadlineExceeded`.
//!
//! # History processes (the same convention as the zookeeper-client drop-in)
//!
//! A history process is one model client: what the store's checks take as one client.
//! Both drop-ins (this one and `models/zookeeper-client`) give each model client a process number
//! of its own, from 1000 (above the workloads' own numbers), and name it with the same
//! accessor, `coordsim::history_process(&handle)`. A test harness records
//! its lock beliefs as the process of the handle that takes the lock
//! (`UserNode::lock_as(name, coordsim::history_process(&handle))`), so that the checks
//! that join a waiter's beliefs with its calls (`recipe.no_orphan_waiter`,
//! `recipe.holder_owns_node`) find both under one process.
//!
//! What a model client is follows from what each store orders:
//! - ZooKeeper orders per session: FIFO per connection, read-your-writes, a `sync`
//!   fencing the session's later reads. Its checks key a session by its process
//!   (`zk.session_consistency`; `zk.linearizable` takes a read after a `sync` of the same
//!   process from the sync's invocation). So a `connect` is one session, one model client,
//!   one process, and its clones share it (zookeeper-client's clones share one session).
//! - etcd has no session: nothing orders the calls of two handles, even of clones over one
//!   connection. The model's etcd client is sequential (`&mut self`) and numbers its watches
//!   per process, so each handle is a model client and a process of its own: each clone,
//!   each `lock_client()`, `election_client()`, `lease_client()`, each lease keeper, each
//!   watch stream, and each of `Client`'s lock, election and lease shortcut calls.
//!
//! One process's calls may overlap (the ZooKeeper drop-in's clones call so; an etcd
//! handle's never do). The ZooKeeper checks judge each call by its own invocation and
//! return, not by the order its process invoked them: `zk.linearizable` orders calls by
//! their intervals alone (`scenarios/checks/tests/linearizability.rs`,
//! `overlapping_calls_of_one_process_are_judged_by_their_intervals`), and
//! `zk.session_consistency` judges a read by what its session knew when it was invoked.
//!
//! # Where it differs
//!
//! - Keys, values, range ends and compared values are UTF-8 text in the model: other bytes
//!   are refused with `Error::InvalidArgs` naming which ("key is not UTF-8: …"), so
//!   `KeyValue::key_str`/`value_str` never fail. A prefix whose etcd range end would not be
//!   UTF-8 (the key ends in a byte 0xBF of a character) uses the model's end, which is wider.
//! - A compare with a negative version or revision is `InvalidArgs` (the model's are
//!   unsigned); etcd would compare.
//! - Calling `when`/`and_then`/`or_else` twice or out of order panics in etcd-client; here
//!   `txn` answers `InvalidArgs` with etcd-client's panic message.
//! - `ResponseHeader` has `revision` only; `compact` of a negative revision sends 0; every
//!   compaction is physical (`with_physical` changes nothing); `ConnectOptions` is accepted
//!   and ignored; etcd's limit of 128 operations per transaction is not enforced.
//!
//! # Not mirrored
//!
//! These do not exist here, so code that uses them fails to compile (never a run-time
//! `unimplemented!`):
//! - `PutOptions::with_ignore_value`, `with_ignore_lease` (the model's put has neither);
//!   `KvClient::get_stream` and `GetStreamResponse` (etcd 3.7's streamed range);
//!   `KvClient::max_decoding_message_size`/`max_encoding_message_size`;
//!   `ResponseHeader::cluster_id`, `member_id`, `raft_term`; `KeyValue`/`ResponseHeader`
//!   constructors and the `proto` module (`pub-response-field`).
//! - `Error::TransportError` and `Error::OpenSsl` (no real transport or TLS).
//! - The auth, maintenance and cluster clients (`AuthClient`, `MaintenanceClient`,
//!   `ClusterClient`, their options and responses, and `Client`'s calls for them).
//! - TLS (`TlsOptions`, `Certificate`, `Identity`, OpenSSL), namespaces (`KvClientPrefix`,
//!   `LeaseClientPrefix`), balanced channels (`Client::connect_with_balanced_channel`,
//!   `from_channel`, `add_endpoint`, `remove_endpoint`, `BalancedChannelBuilder`, `Channel`),
//!   and `ConnectOptions`' builders.
//! - Keys and values that are not UTF-8 (see above).
//!
//! # Lease, lock and election clients
//!
//! Mirrored from etcd-client 0.21.1 (`src/rpc/{lease,lock,election}.rs`, `src/client.rs`):
//! `Client::{lease_client, lock_client, election_client}` and the `Client` shortcuts
//! (`lease_grant`, `lease_revoke`, `lease_keep_alive`, `lease_time_to_live`, `leases`,
//! `lock`, `unlock`, `campaign`, `proclaim`, `leader`, `observe`, `resign`);
//! `LeaseClient::{grant, revoke, keep_alive, time_to_live, leases}` with `LeaseKeeper`
//! (`id`, `keep_alive`) and `LeaseKeepAliveStream` (`message`, futures' `Stream`);
//! `LockClient::{lock, unlock}` with `LockOptions::with_lease`; `ElectionClient::{campaign,
//! proclaim, leader, observe, resign}` with `LeaderKey`, `ProclaimOptions`,
//! `ResignOptions` and `ObserveStream`; the responses with their accessors. TTLs are in
//! seconds, as etcd-client's (the model counts milliseconds; one conversion in `lease.rs`).
//! Each client handle, each lease keeper and each `Client` shortcut call is a process of its
//! own in the history.
//!
//! Lock and election follow the etcd server: its v3lock and v3election services run
//! `client/v3/concurrency`'s `Mutex` and `Election` under the caller's lease. The steps are
//! those of **etcd v3.5.33** (commit 9f4b125405c7fbd92e2c9cbb5235feffe1904a1d), with its
//! keys (`<name>/<lease hex>`), transactions, reads and watches, in its order. v3.4.23 (our
//! conformance server) has the same election steps; its `Mutex.Lock` lacks v3.5's read of
//! its own key after the wait (`mutex: session is expired`, etcd-io/etcd#11456/#11408),
//! which this crate has.
//!
//! - **etcd-io/etcd#11051 is reproduced by default**: `campaign` returns leadership after
//!   its wait without looking at its own key, so a campaigner whose lease expired while it
//!   waited believes it leads. The open fix, etcd-io/etcd#22387, is a switch, off by
//!   default: the scenario's `tuning.campaign_check = "recheck_own_key"`
//!   (`models::etcd::CampaignCheck::RecheckOwnKey`, `coordsim::testing::UserTest::
//!   campaign_check`); the campaign then fails with `election: not leader`, as soon as its
//!   own key goes while it waits (it watches the key, as the PR's description says; the
//!   diff was not at hand), or when it reads the key after the wait and finds it gone.
//! - **Where the steps run**: from the caller's node, through its own model client, not on a
//!   server. What differs: etcd runs them on the server the client is connected to, so a
//!   client cut off from the servers mid-`campaign` leaves the server's steps running, and
//!   when the gRPC call is cancelled the server resigns (`Campaign`'s clean-up on a done
//!   context). Here a dropped `campaign`/`lock` future stops its steps where they are and
//!   leaves its key to its lease; and each step's request crosses the client's network
//!   (a partition delays or fails the steps, where on the server only Raft traffic would).
//!   The session etcd makes `WithLease(lease)` sends no keep-alive of its own here (etcd's
//!   orphans it at once); for lease 0 it grants a lease of 60 s, as etcd's does, so a lock
//!   or campaign without a lease holds for a minute.
//! - The lease keep-alive pair runs in a task on the client's node with a model client of
//!   its own; a keep-alive whose answer was lost is sent again until one comes, so the
//!   stream's answers are late under a partition, never an error.
//! - Errors: the store's as etcd's (`from_result`); the recipes' own (`election: not
//!   leader`, `election: no leader`, `mutex: session is expired`, `"leader" field must be
//!   provided`) with gRPC code Unknown, as a plain Go error crosses gRPC.
//!
//! ## Not mirrored (lease, lock, election)
//!
//! - `LeaseGrantOptions::with_id`: the model's store picks every lease id.
//! - `take_header` on every lease, lock and election response; `header()` of the lease
//!   responses other than revoke answers `None` (the model's lease answers carry no
//!   revision).
//! - `CampaignOptions`, `LeaderOptions`, `UnlockOptions` (their builders are crate-private
//!   in etcd-client: user code cannot use them either).
//!
//! # Watch
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

// Outside simulation the crate is the real client: one `Cargo.toml` line serves tests and
// production.
#[cfg(not(madsim))]
pub use real_etcd_client::*;
