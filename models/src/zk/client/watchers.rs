//! Persistent watches (`addWatch`, ZooKeeper 3.6+) and removing watches, as
//! `zookeeper-client` 0.11 offers them: `watch(path, AddWatchMode)` gives a
//! [`PersistentWatcher`], and a watch is removed through its watcher (`remove`), the client
//! deciding which `removeWatches` request to send, if any.

use super::{
    ClientRequest, Operation, Shared, Watch, WatchLost, WatchRequest, WatchedEvent, ZkClient,
    ZkClientError,
};
use sim::history::{
    OpId,
    zk::{AddWatchMode, WatchKind, WatcherType, ZkEvent, ZkOperation},
};
use std::{fmt, sync::Arc};

/// The client a watch belongs to, to remove the watch by.
#[derive(Clone)]
pub(super) struct ClientHandle(Arc<Shared>);

impl ClientHandle {
    pub(super) fn of(shared: &Arc<Shared>) -> ClientHandle {
        ClientHandle(shared.clone())
    }
}

impl fmt::Debug for ClientHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClientHandle({})", self.0.config.process)
    }
}

/// A persistent watch (`addWatch`): it delivers every change it watches, in zxid order,
/// until it is removed or its session ends.
#[derive(Debug)]
pub struct PersistentWatcher {
    watch: Watch,
}

impl PersistentWatcher {
    /// The `addWatch` that set it.
    pub fn op_id(&self) -> OpId {
        self.watch.op_id
    }

    /// Waits for the next event; a caller that stops waiting (a timeout) misses nothing.
    /// `WatchLost` once the session has ended and every event was read.
    pub async fn changed(&self) -> Result<WatchedEvent, WatchLost> {
        self.watch.wait().await
    }

    /// Removes the watch (`removeWatches` for Any on its path, as `zookeeper-client` sends
    /// it). Events the server sent before are still read by nobody.
    pub async fn remove(self) -> Result<(), ZkClientError> {
        self.watch.remove().await
    }
}

impl Watch {
    /// Removes the watch, as `zookeeper-client`'s `remove` does: nothing is sent for a watch
    /// that fired already, or while another watch of the client on the path still needs
    /// what the server would remove; otherwise `removeWatches` for Data, Children or (for
    /// the last watch on the path, or a persistent one) Any.
    pub async fn remove(self) -> Result<(), ZkClientError> {
        let shared = &self.client.0;
        let Some(kind) = forget(shared, &self.path, self.kind, self.op_id) else {
            return Ok(());
        };
        ZkClient {
            shared: shared.clone(),
        }
        .call(
            Some(Operation::Zk(ZkOperation::RemoveWatches {
                path: self.path.clone(),
                kind,
            })),
            ClientRequest::RemoveWatches {
                path: self.path.clone(),
                kind,
            },
            None,
        )
        .await
        .map(|_| ())
    }
}

/// What the server's half of a watch is removed as (`WatcherKind::into_remove_mode`).
fn remove_kind(kind: WatchKind) -> WatcherType {
    match kind {
        WatchKind::Data | WatchKind::Exists => WatcherType::Data,
        WatchKind::Children => WatcherType::Children,
        WatchKind::Persistent | WatchKind::PersistentRecursive => WatcherType::Any,
    }
}

const KINDS: [WatchKind; 5] = [
    WatchKind::Data,
    WatchKind::Exists,
    WatchKind::Children,
    WatchKind::Persistent,
    WatchKind::PersistentRecursive,
];

/// Drops the client's registration (it delivers nothing from now on, recorded as
/// `WatchRemoved`) and decides, as `zookeeper-client`'s `try_remove_watcher`, which
/// `removeWatches` to send: `None` for none.
fn forget(shared: &Shared, path: &str, kind: WatchKind, op_id: OpId) -> Option<WatcherType> {
    let mut state = shared.lock();
    let key = (path.to_string(), kind);
    let registrations = state.watches.get_mut(&key)?;
    // Not found: it fired (a one-shot watch) and there is nothing left to remove.
    let index = registrations.iter().position(|r| r.op_id == op_id)?;
    registrations.remove(index);
    if registrations.is_empty() {
        state.watches.remove(&key);
    }
    let session = state.session.unwrap_or(0);
    shared.record_zk(ZkEvent::WatchRemoved {
        process: shared.config.process,
        session,
        op_id,
        path: path.to_string(),
        kind,
    });
    let remaining: Vec<WatchKind> = KINDS
        .into_iter()
        .filter(|kind| state.watches.contains_key(&(path.to_string(), *kind)))
        .collect();
    let kind = remove_kind(kind);
    if remaining.is_empty() {
        let watch_in_flight = state
            .pending
            .values()
            .any(|call| call.watch.as_ref().is_some_and(|(p, _)| p == path));
        return Some(match watch_in_flight {
            true => kind,
            false => WatcherType::Any,
        });
    }
    let still_needed =
        kind == WatcherType::Any || remaining.iter().any(|other| remove_kind(*other) == kind);
    (!still_needed).then_some(kind)
}

impl ZkClient {
    /// Sets a persistent watch on `path` (`addWatch`; the node need not exist):
    /// `zookeeper-client`'s `Client::watch`.
    pub async fn watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> Result<PersistentWatcher, ZkClientError> {
        let (_, watch) = self
            .call(
                Some(Operation::Zk(ZkOperation::AddWatch {
                    path: path.into(),
                    mode,
                })),
                ClientRequest::AddWatch {
                    path: path.into(),
                    mode,
                },
                Some((path.to_string(), WatchRequest::Persistent(mode))),
            )
            .await?;
        let watch = watch.ok_or(ZkClientError::ConnectionLoss)?;
        Ok(PersistentWatcher { watch })
    }
}
