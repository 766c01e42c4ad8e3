//! A drop-in for [`zookeeper-client`](https://docs.rs/zookeeper-client/0.11.2) **0.11.2**
//! backed by coordsim's ZAB store: the same names, signatures, types and errors, so that
//! code written against zookeeper-client compiles unchanged and runs inside a coordsim
//! world, every call an operation in the run's history that the store's checks
//! (`zk.linearizable`, the session and watch checks) judge.
//!
//! # Both ways, one `Cargo.toml` line
//!
//! ```toml
//! zookeeper-client = { package = "coordsim-zookeeper-client", path = "…/models/zookeeper-client" }
//! ```
//!
//! Under `--cfg madsim` (coordsim's `.cargo/config.toml`) the crate is the simulated client
//! below. Without it, it is only `pub use zookeeper_client::*` of the real crate, version
//! `=0.11.2`, so production builds talk to a real ZooKeeper.
//!
//! # What is mirrored (the simulated side)
//!
//! Each call is the model client's call ([`models::zk::ZkClient`]): mapped, not
//! re-implemented, and recorded in the history as the model's calls are.
//!
//! - `Client::connect(cluster)` and `Client::connector()` → `Connector`
//!   (`with_session_timeout`, default 6 s as the real one, which the servers clamp to their
//!   maximum; `with_connection_timeout`; `with_auth`; the deprecated `&mut self` forms)
//!   `.connect(cluster)`, from a task on a client node of a running scenario with the ZAB
//!   store (any hosts).
//! - `Client::{create, delete, get_data, check_stat, set_data, list_children,
//!   get_children, get_acl, set_acl, auth, list_ephemerals, count_descendants_number,
//!   session_timeout}` with their real signatures (the returned futures own what they
//!   need, and are `Send`); `mkdir` is the real client's loop of creates over them.
//! - Sessions: `Client::{session, session_id, into_session, state, state_watcher, path}`,
//!   `SessionId`, `SessionInfo`, `SessionState`, `StateWatcher` (`state`, `changed`,
//!   `peek_state`). States are delivered as the real client delivers them
//!   (`src/session/mod.rs`'s `change_state`): `Disconnected` when the connection is lost,
//!   `SyncConnected` when the session is attached again, and one terminal state
//!   (`Expired`, `AuthFailed`, `Closed`) after which nothing follows. As the real client,
//!   the drop-in gives a session up by itself when it cannot reconnect in time (the model
//!   client's `SessionExpiry::AfterDisconnectedTimeout`): `Expired`, and every later call
//!   fails with `SessionExpired`.
//! - Watches: `get_and_watch_data`, `check_and_watch_stat`, `list_and_watch_children`,
//!   `get_and_watch_children` → `OneshotWatcher` (`changed`, and the deprecated `remove`);
//!   `watch(path, AddWatchMode)` → `PersistentWatcher` (`changed`, which also delivers
//!   every session state change and panics after the terminal one, as the real one);
//!   `WatchedEvent`, `EventType`. A oneshot watcher whose session ended gets the terminal
//!   state as a `Session` event. `sync`.
//! - Multi: `new_multi_writer` → `MultiWriter` (`add_check_version`, `add_create`,
//!   `add_set_data`, `add_delete`, `commit`, `abort`), `new_check_writer` → `CheckWriter`,
//!   `MultiWriteResult`, `MultiWriteError`, `CheckWriteError` with the real conversions
//!   (a failed path check is `Error::RuntimeInconsistent`). One model `multi`, recorded as
//!   one operation. A create's result carries an invalid `Stat` (`Stat::is_invalid`, as the
//!   real one may, ZOOKEEPER-4026): the model's multi answers a create with its path only.
//!   Paths are checked at commit (the model answers), not when added.
//! - Multi-read: `new_multi_reader` → `MultiReader` (`add_get_data`, `add_get_children`,
//!   `commit`, `abort`) → `Vec<MultiReadResult>` (`Data`, `Children`, `Error`): the model's
//!   `multiRead` (ZooKeeper 3.6+), recorded as one operation; each read answers on its own
//!   (a `NoNode` or `NoAuth` in its slot, the others still answer), and a child listing
//!   comes without a stat, as ZooKeeper's. Paths are checked when added, as the real one
//!   checks them.
//! - The lock: `Client::lock` with `LockPrefix::{new_curator, new_shared, new_custom}` and
//!   `LockOptions` → `LockClient` (`client`, `lock_path`, and the writes guarded by the
//!   lock node: `create`, `set_data`, `delete`, `new_check_writer`, each a `CheckWriter`
//!   on the lock path, so a write through a lost lock fails with `RuntimeInconsistent`;
//!   `into_owned` → `OwnedLockClient`). Ported from the real source: `src/sim/lock.rs` says
//!   where it differs.
//! - `CreateMode` (all five) with `with_acls` → `CreateOptions`; `CreateSequence`;
//!   `Acls::{new, anyone_all, anyone_read, creator_all}`, `Acl`, `AuthId`, `AuthUser`,
//!   `Permission`; `Stat`.
//! - `Error` with the real variants and messages. The model's answers map one to one
//!   (`NoNode`, `NodeExists`, `BadVersion`, `NotEmpty`, `NoChildrenForEphemerals`,
//!   `NoAuth`, `InvalidAcl`, `AuthFailed`, `NoWatcher`, `SessionExpired`); a call whose
//!   outcome is unknown is `ConnectionLoss`; a closed client `ClientClosed`; a connect
//!   that found no server within the session timeout `Timeout`.
//!
//! # Sessions: one per `Client`, shared by its clones, one history process
//!
//! zookeeper-client's `Client` is `Clone`, and its clones share ONE session (one
//! connection, one session id, one set of ephemerals and watches). So here: each
//! `connect` opens one model client session, and its clones share that model client, so
//! every call of every clone is recorded under its one process
//! (`tests/watches.rs` runs clones under partitions, judged clean, overlap asserted).
//!
//! # History processes (the same convention as the etcd-client drop-in)
//!
//! A history process is one model client: what the store's checks take as one client.
//! Both drop-ins (this one and `models/etcd-client`) give each model client a process number
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
//! - Data and auth are UTF-8 text in the model: other bytes are refused with
//!   `Error::BadArguments` saying so. Every path error is one `BadArguments` message (the
//!   model does not say which rule broke).
//! - A request is sent when its future is first polled, not when the method is called:
//!   the real client orders requests at call time.
//! - `Stat`'s `ctime`/`mtime` are simulated milliseconds, not from the epoch.
//! - The real client expires a session by itself 7/5 of the session timeout after it last
//!   heard from a server; the model client a session timeout after it concluded the
//!   connection lost (itself 2/3 of a session timeout of silence): 5/3 in all.
//! - Dropping a watcher does not remove its watch at the server (the real client's `Drop`
//!   does); the deprecated `remove` does.
//! - The client's session is not closed when its last clone is dropped: it expires.
//! - `with_connection_timeout` is accepted and ignored: the model client concludes a
//!   connection lost after 2/3 of the session timeout, as ZooKeeper's Java client.
//!
//! # Not mirrored
//!
//! These do not exist here, so code that uses them fails to compile (never a run-time
//! `unimplemented!`):
//! - TTL nodes (`CreateOptions::with_ttl`); chroot (`Client::chroot`, a connect string
//!   with a path is refused with `BadArguments`); `Connector::{with_readonly,
//!   with_session, with_server_version, with_detached, with_fail_eagerly, with_tls,
//!   with_sasl, secure_connect}`; `Error::UnmarshalError` and `Error::Custom`.
//! - `list_auth_users`, `get_config`, `get_and_watch_config`, `update_ensemble`
//!   (reconfiguration). (`SessionState::ConnectedReadOnly` exists but is never reported:
//!   the model has no read-only servers.)

#[cfg(madsim)]
mod sim;
#[cfg(madsim)]
pub use crate::sim::*;

// Outside simulation the crate is the real client: one `Cargo.toml` line serves tests and
// production.
#[cfg(not(madsim))]
pub use real_zookeeper_client::*;
