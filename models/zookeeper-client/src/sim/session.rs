//! zookeeper-client's session types (`src/session/types.rs`: `SessionId`, `SessionInfo`,
//! `SessionState`) and `StateWatcher` (`src/client/watcher.rs`), fed by a task that follows
//! the model client's attachment.

use models::zk::{ZkClient, ZkClientError};
use sim::signal::Signal;
use std::sync::{Arc, Mutex, MutexGuard};

/// Thin wrapper for zookeeper session id. It prints in hex format headed with 0x
/// (zookeeper-client's `SessionId`).
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct SessionId(pub i64);

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl std::fmt::Debug for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// ZooKeeper session info (zookeeper-client's `SessionInfo`; reestablishing a session from
/// it, `Connector::with_session`, is not mirrored).
#[derive(Clone, Debug)]
pub struct SessionInfo {
    id: SessionId,
}

impl SessionInfo {
    pub(crate) fn new(id: SessionId) -> Self {
        Self { id }
    }

    /// Session id.
    pub fn id(&self) -> SessionId {
        self.id
    }

    /// Is this an readonly session ? Never: the model has no read-only servers.
    pub fn is_readonly(&self) -> bool {
        false
    }
}

/// ZooKeeper session states (zookeeper-client's `SessionState`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SessionState {
    /// Intermediate state states that client is disconnected from zookeeper cluster.
    Disconnected,
    /// Intermediate state states that client has recovered from disconnected state.
    SyncConnected,
    /// Terminal state states that client failed in authentication.
    AuthFailed,
    /// Intermediate state states that client is connected to a readonly server (never
    /// reported here: the model has no read-only servers).
    ConnectedReadOnly,
    /// Terminal state states that zookeeper session is expired.
    Expired,
    /// Terminal state states that zookeeper client has been closed.
    Closed,
}

impl std::fmt::Display for SessionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

impl SessionState {
    /// Whether no state follows this one (`AuthFailed`, `Expired`, `Closed`).
    pub fn is_terminated(self) -> bool {
        matches!(self, Self::AuthFailed | Self::Expired | Self::Closed)
    }

    /// The terminal state a model error announces, if it announces one.
    pub(crate) fn terminal_of(error: &ZkClientError) -> Option<SessionState> {
        match error {
            ZkClientError::SessionExpired => Some(Self::Expired),
            ZkClientError::AuthFailed => Some(Self::AuthFailed),
            ZkClientError::Closed => Some(Self::Closed),
            _ => None,
        }
    }
}

/// The latest state of one session and a signal set when it is replaced: what tokio's
/// watch channel gives the real client, built on the simulator's signal.
struct Latest {
    state: SessionState,
    version: u64,
    changed: Signal,
    /// Every state published, in order (`history[n]` is version `n + 1`): persistent
    /// watchers are told each one, as the real client's unbounded channels tell them.
    history: Vec<SessionState>,
}

/// The state of one session, shared by its clients and watchers, and the session.
#[derive(Clone)]
pub(crate) struct StateCell {
    latest: Arc<Mutex<Latest>>,
    session: ZkClient,
}

impl std::fmt::Debug for StateCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StateCell({:?})", self.current())
    }
}

impl StateCell {
    fn lock(&self) -> MutexGuard<'_, Latest> {
        self.latest
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Publishes `state`, unless it is the current one or a terminal state was reached
    /// (zookeeper-client's `change_state`).
    pub(crate) fn publish(&self, state: SessionState) {
        let mut latest = self.lock();
        if latest.state == state || latest.state.is_terminated() {
            return;
        }
        latest.state = state;
        latest.version += 1;
        latest.history.push(state);
        let changed = std::mem::replace(&mut latest.changed, Signal::new());
        changed.set();
    }

    /// The session's state now. Read from the model client as well as published by the
    /// follower task: the real client changes its state before it fails the calls, so a
    /// caller that just got `AuthFailed` or `SessionExpired` already sees the terminal
    /// state, before the follower has run.
    pub(crate) fn current(&self) -> SessionState {
        let now = match terminal_now(&self.session) {
            Some(terminal) => terminal,
            None if self.session.is_connected() => SessionState::SyncConnected,
            None => SessionState::Disconnected,
        };
        self.publish(now);
        self.lock().state
    }

    /// The state published as version `seen + 1`, if it was.
    pub(crate) fn change_after(&self, seen: u64) -> Option<SessionState> {
        let latest = self.lock();
        usize::try_from(seen)
            .ok()
            .and_then(|index| latest.history.get(index).copied())
    }

    /// The state last published (what watchers are told).
    pub(crate) fn published(&self) -> SessionState {
        self.lock().state
    }

    /// A signal set at the next change (cloned out so that no lock is held across a wait).
    pub(crate) fn next_change(&self) -> (u64, Signal) {
        let latest = self.lock();
        (latest.version, latest.changed.clone())
    }

    /// Follows `session` for as long as it lives: `Disconnected` when its connection
    /// breaks, `SyncConnected` when it attaches again, and the terminal state it ends in.
    pub(crate) fn follow(session: ZkClient) -> StateCell {
        let cell = StateCell {
            latest: Arc::new(Mutex::new(Latest {
                state: SessionState::SyncConnected,
                version: 0,
                changed: Signal::new(),
                history: Vec::new(),
            })),
            session: session.clone(),
        };
        let follower = cell.clone();
        sim::task::spawn_local(async move {
            loop {
                session.connection_interrupted().await;
                if let Some(terminal) = terminal_now(&session) {
                    follower.publish(terminal);
                    return;
                }
                follower.publish(SessionState::Disconnected);
                match session.attached().await {
                    Ok(()) => follower.publish(SessionState::SyncConnected),
                    Err(error) => {
                        let terminal = SessionState::terminal_of(&error);
                        follower.publish(terminal.unwrap_or(SessionState::Closed));
                        return;
                    }
                }
            }
        });
        cell
    }
}

/// The terminal state `session` is in, if it is in one.
pub(crate) fn terminal_now(session: &ZkClient) -> Option<SessionState> {
    if session.is_expired() {
        Some(SessionState::Expired)
    } else if session.is_auth_failed() {
        Some(SessionState::AuthFailed)
    } else if session.is_closed() {
        Some(SessionState::Closed)
    } else {
        None
    }
}

/// StateWatcher tracks session state updates (zookeeper-client's `StateWatcher`).
#[derive(Clone)]
pub struct StateWatcher {
    cell: StateCell,
    seen: u64,
}

impl std::fmt::Debug for StateWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateWatcher")
            .field("state", &self.peek_state())
            .finish()
    }
}

impl StateWatcher {
    pub(crate) fn new(cell: StateCell) -> StateWatcher {
        let (seen, _) = cell.next_change();
        StateWatcher { cell, seen }
    }

    /// Returns and consumes most recently state.
    pub fn state(&mut self) -> SessionState {
        let state = self.cell.current();
        let (version, _) = self.cell.next_change();
        self.seen = version;
        state
    }

    /// Waits until state changed and returns consumed state.
    ///
    /// This method will block indefinitely after one of terminal states consumed.
    pub async fn changed(&mut self) -> SessionState {
        loop {
            let (version, signal) = self.cell.next_change();
            if version > self.seen {
                self.seen = version;
                return self.cell.published();
            }
            signal.wait().await;
        }
    }

    /// Returns but not consumes most recently state.
    pub fn peek_state(&self) -> SessionState {
        self.cell.current()
    }
}
