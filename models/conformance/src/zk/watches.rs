//! The probe's watches: one-shot ones set by reads, persistent ones set by `add_watch`, and
//! what `wait` reads from them.

use super::Raw;
use models::zk::{
    PersistentWatcher, Watch, ZkClient,
    wire::{ClientMessage, ClientRequest},
};
use sim::{
    NodeId,
    history::zk::{WatcherType, ZkError, ZkResponse},
    net::StreamNetwork,
};
use std::time::Duration;

/// A watch a step set (`watch=wK`).
pub(super) enum ProbeWatch {
    /// Set by a read: fires once.
    OneShot(Watch),
    /// Set by `add_watch`: fires until removed.
    Persistent(PersistentWatcher),
}

/// Waits up to `within` for the watch's next event. A one-shot watch that has not fired,
/// and a persistent watch always, is handed back to stay set.
pub(super) async fn wait_for(
    zk: &ZkClient,
    watch: ProbeWatch,
    within: Duration,
    name: String,
) -> (Raw, Option<(String, ProbeWatch)>) {
    let fired = match &watch {
        ProbeWatch::OneShot(one_shot) => sim::time::timeout(within, one_shot.wait()).await,
        ProbeWatch::Persistent(watcher) => sim::time::timeout(within, watcher.changed()).await,
    };
    let stays = matches!(
        (&watch, &fired),
        (ProbeWatch::Persistent(_), Ok(Ok(_))) | (_, Err(_))
    );
    let keep = stays.then_some((name, watch));
    match fired {
        Ok(Ok(event)) => (Raw::Event(event.event, event.path), keep),
        Ok(Err(_lost)) => (Raw::SessionEnded(session_state(zk)), None),
        // Nothing yet: it stays set, and a later `wait` may see it fire.
        Err(_elapsed) => (Raw::NoEvent, keep),
    }
}

/// The client's session state by `zookeeper-client`'s name for it (`SessionState`).
pub(super) fn session_state(zk: &ZkClient) -> &'static str {
    if zk.is_expired() {
        "Expired"
    } else if zk.is_closed() {
        "Closed"
    } else if zk.is_auth_failed() {
        "AuthFailed"
    } else if zk.is_connected() {
        "SyncConnected"
    } else {
        "Disconnected"
    }
}

/// `removeWatches` sent as is, as the recorder sends it by hand (the model's client, like
/// `zookeeper-client`, never sends a removal the server cannot answer): on a connection and a
/// session of its own, opened, asked and closed. `None` if the server could not be reached.
pub(super) async fn remove_watches_raw(
    network: StreamNetwork<ClientMessage>,
    me: NodeId,
    server: NodeId,
    path: &str,
    kind: WatcherType,
) -> Option<Result<ZkResponse, ZkError>> {
    let connection = network
        .connect(me, server, Duration::from_secs(1))
        .await
        .ok()?;
    let hello = ClientMessage::Connect {
        session: None,
        timeout_ms: 6000,
        last_zxid_seen: 0,
        auth: Vec::new(),
    };
    connection.send(hello).ok()?;
    let Ok(ClientMessage::Connected { .. }) = connection.recv().await else {
        return None;
    };
    let request = ClientRequest::RemoveWatches {
        path: path.to_string(),
        kind,
    };
    connection
        .send(ClientMessage::Request { xid: 1, request })
        .ok()?;
    let answer = loop {
        match connection.recv().await.ok()? {
            ClientMessage::Reply { xid: 1, result, .. } => break result,
            _ => continue,
        }
    };
    let close = ClientRequest::CloseSession;
    connection
        .send(ClientMessage::Request {
            xid: 2,
            request: close,
        })
        .ok()?;
    while !matches!(connection.recv().await.ok()?, ClientMessage::Closed { .. }) {}
    Some(answer)
}
