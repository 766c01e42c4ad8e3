//! zookeeper-client's watch types (`src/session/types.rs`, `src/client/watcher.rs`) and
//! the watching reads of [`Client`], over the model client's watches.

use super::error::{Result, from_client};
use super::session::{SessionState, StateCell, terminal_now};
use super::{Client, Stat};
use models::zk::{Watch, WatchLost, ZkClient};
use sim::history::zk::{AddWatchMode as ModelWatchMode, WatchEventType};
use std::future::Future;
use std::pin::pin;
use std::task::Poll;

/// Event type for watch notifications (zookeeper-client's `EventType`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EventType {
    /// A session state change ([WatchedEvent::session_state]).
    Session,
    /// The node was created.
    NodeCreated,
    /// The node was deleted.
    NodeDeleted,
    /// The node's data changed.
    NodeDataChanged,
    /// A child was created or deleted.
    NodeChildrenChanged,
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

/// WatchedEvent represents update to watched node or session (zookeeper-client's
/// `WatchedEvent`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchedEvent {
    /// What happened.
    pub event_type: EventType,
    /// Updated state for state event. No meaning in node events.
    pub session_state: SessionState,
    /// Node path from chroot. Empty if this is a state event.
    pub path: String,
    /// `zxid` of the transaction that triggered this node event, [WatchedEvent::NO_ZXID]
    /// for session event.
    pub zxid: i64,
}

impl WatchedEvent {
    /// The `zxid` of session events.
    pub const NO_ZXID: i64 = -1;

    /// A node event of `event` on `path`.
    pub fn new(event: EventType, path: impl Into<String>) -> Self {
        Self {
            event_type: event,
            session_state: SessionState::SyncConnected,
            path: path.into(),
            zxid: Self::NO_ZXID,
        }
    }

    /// This event with `zxid`.
    pub fn with_zxid(self, zxid: i64) -> Self {
        Self { zxid, ..self }
    }

    /// A session event of `state`.
    pub fn new_session(state: SessionState) -> Self {
        Self {
            event_type: EventType::Session,
            session_state: state,
            path: Default::default(),
            zxid: Self::NO_ZXID,
        }
    }

    fn from_model(event: models::zk::WatchedEvent) -> Self {
        let event_type = match event.event {
            WatchEventType::NodeCreated => EventType::NodeCreated,
            WatchEventType::NodeDeleted => EventType::NodeDeleted,
            WatchEventType::NodeDataChanged => EventType::NodeDataChanged,
            WatchEventType::NodeChildrenChanged => EventType::NodeChildrenChanged,
        };
        Self::new(event_type, event.path).with_zxid(event.zxid as i64)
    }
}

/// Watch mode (zookeeper-client's `AddWatchMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddWatchMode {
    /// Combination of stat, data and child watches on watching node.
    Persistent,
    /// Combination of stat and data watches on watching node and its children.
    PersistentRecursive,
}

/// The event a watch lost with its session stands for: the session's terminal state.
fn lost(session: &ZkClient, state: &StateCell) -> WatchedEvent {
    let terminal = terminal_now(session).unwrap_or_else(|| state.current());
    WatchedEvent::new_session(terminal)
}

/// Watcher for stat, data and child event (zookeeper-client's `OneshotWatcher`).
#[derive(Debug)]
pub struct OneshotWatcher {
    watch: Watch,
    session: ZkClient,
    state: StateCell,
}

impl OneshotWatcher {
    /// Waits for node event or session broken.
    ///
    /// No [SessionState::Disconnected] event as server will deliver latest data events in
    /// auto watch reset on reconnection.
    pub async fn changed(self) -> WatchedEvent {
        match self.watch.fired().await {
            Ok(event) => WatchedEvent::from_model(event),
            Err(WatchLost) => lost(&self.session, &self.state),
        }
    }

    /// Removes this watcher.
    #[deprecated(since = "0.10.0", note = "Rust has Drop")]
    pub async fn remove(self) -> Result<()> {
        self.watch.remove().await.map_err(from_client)
    }
}

/// Watcher for persistent and recursive watch (zookeeper-client's `PersistentWatcher`).
#[derive(Debug)]
pub struct PersistentWatcher {
    watcher: models::zk::PersistentWatcher,
    session: ZkClient,
    state: StateCell,
    /// The last session state change delivered.
    seen: u64,
    terminal_delivered: bool,
}

impl PersistentWatcher {
    /// Waits for next event which could be node event or session activities.
    ///
    /// # Panics
    /// Panic after terminal session event received.
    pub async fn changed(&mut self) -> WatchedEvent {
        assert!(
            !self.terminal_delivered,
            "terminal session event has been delivered"
        );
        loop {
            let (_, signal) = self.state.next_change();
            if let Some(state) = self.state.change_after(self.seen) {
                self.seen += 1;
                self.terminal_delivered = state.is_terminated();
                return WatchedEvent::new_session(state);
            }
            // Node events the model delivered come first; else whichever is next.
            let mut event = pin!(self.watcher.changed());
            let mut state_changed = pin!(signal.wait());
            let next = std::future::poll_fn(|cx| match event.as_mut().poll(cx) {
                Poll::Ready(event) => Poll::Ready(Some(event)),
                Poll::Pending => state_changed.as_mut().poll(cx).map(|()| None),
            })
            .await;
            match next {
                Some(Ok(event)) => return WatchedEvent::from_model(event),
                // Lost with its session: the terminal state is (or is about to be)
                // published; deliver it.
                Some(Err(WatchLost)) => {
                    self.terminal_delivered = true;
                    return lost(&self.session, &self.state);
                }
                None => continue,
            }
        }
    }

    /// Removes this watcher.
    #[deprecated(since = "0.10.0", note = "Rust has Drop")]
    pub async fn remove(self) -> Result<()> {
        self.watcher.remove().await.map_err(from_client)
    }
}

impl Client {
    fn oneshot(&self, watch: Watch) -> OneshotWatcher {
        OneshotWatcher {
            watch,
            session: self.session.clone(),
            state: self.state.clone(),
        }
    }

    /// Gets stat and data for node with given path, and watches node deletion and data
    /// change.
    pub fn get_and_watch_data<'s>(
        &'s self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, OneshotWatcher)>> + Send + 's + use<'s> {
        let path = path.to_string();
        async move {
            let (data, stat, watch) = self
                .session
                .get_data_watch(&path)
                .await
                .map_err(from_client)?;
            Ok((
                data.into_bytes(),
                Stat::from_model(&stat),
                self.oneshot(watch),
            ))
        }
    }

    /// Checks stat for node with given path, and watches node creation, deletion and data
    /// change.
    pub fn check_and_watch_stat<'s>(
        &'s self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, OneshotWatcher)>> + Send + 's + use<'s> {
        let path = path.to_string();
        async move {
            let (stat, watch) = self
                .session
                .exists_watch(&path)
                .await
                .map_err(from_client)?;
            Ok((stat.as_ref().map(Stat::from_model), self.oneshot(watch)))
        }
    }

    /// Lists children for node with given path, and watches node deletion, children
    /// creation and deletion.
    pub fn list_and_watch_children<'s>(
        &'s self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, OneshotWatcher)>> + Send + 's + use<'s> {
        let children = self.get_and_watch_children(path);
        async move {
            children
                .await
                .map(|(children, _, watcher)| (children, watcher))
        }
    }

    /// Gets stat and children for node with given path, and watches node deletion, children
    /// creation and deletion.
    pub fn get_and_watch_children<'s>(
        &'s self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat, OneshotWatcher)>> + Send + 's + use<'s>
    {
        let path = path.to_string();
        async move {
            let (children, stat, watch) = self
                .session
                .get_children_watch(&path)
                .await
                .map_err(from_client)?;
            Ok((children, Stat::from_model(&stat), self.oneshot(watch)))
        }
    }

    /// Watches possible nonexistent path using specified mode.
    pub fn watch<'s>(
        &'s self,
        path: &str,
        mode: AddWatchMode,
    ) -> impl Future<Output = Result<PersistentWatcher>> + Send + 's + use<'s> {
        let path = path.to_string();
        let mode = match mode {
            AddWatchMode::Persistent => ModelWatchMode::Persistent,
            AddWatchMode::PersistentRecursive => ModelWatchMode::PersistentRecursive,
        };
        async move {
            let (seen, _) = self.state.next_change();
            let watcher = self.session.watch(&path, mode).await.map_err(from_client)?;
            Ok(PersistentWatcher {
                watcher,
                session: self.session.clone(),
                state: self.state.clone(),
                seen,
                terminal_delivered: false,
            })
        }
    }

    /// Syncs with ZooKeeper **leader**: a read after it sees every write acknowledged
    /// before it started.
    pub fn sync<'s>(
        &'s self,
        path: &str,
    ) -> impl Future<Output = Result<()>> + Send + 's + use<'s> {
        let path = path.to_string();
        async move { self.session.sync(&path).await.map_err(from_client) }
    }
}
