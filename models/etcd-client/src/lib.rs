//! A drop-in for [`etcd-client`](https://docs.rs/etcd-client/0.21.1) 0.21.1 backed by coordsim's
//! Raft store: the same names, types and errors, so code written against etcd-client compiles
//! unchanged and runs inside a coordsim world, every call an operation in the run's history.
//!
//! WORK IN PROGRESS (issue 25): `Client::connect`, `put`/`get`/`delete`, the `KvClient`,
//! and the lease, lock and election clients (below); `GetOptions` is the model's (its builders take `String` keys, etcd-client's take
//! bytes). Not yet: `txn`, `compact`, the watch client,
//! `tonic::Status` in `Error::GRpcStatus`, the re-export of the real crate outside
//! `--cfg madsim`, and the check that one user module compiles both ways.
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

#[cfg(madsim)]
mod sim;
#[cfg(madsim)]
pub use crate::sim::*;
