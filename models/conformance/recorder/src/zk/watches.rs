//! The probe's watches (`watch=wK`): one-shot watches set by reads, persistent ones set by
//! `add_watch`, the events `wait` reads from them and their removal (`remove_watch`).
//!
//! `zookeeper-client` 0.11 removes a watch through its watcher (`OneshotWatcher::remove`,
//! `PersistentWatcher::remove`), and the client decides which RemoveWatches request to send,
//! if any: so the probes remove a watch by its role, as a user of the crate would.

use super::{OP_LIMIT, render};
use std::time::Duration;
use tokio::{
    sync::{mpsc, oneshot},
    time::timeout,
};
use zookeeper_client::{Error, OneshotWatcher, PersistentWatcher, WatchedEvent};

/// What a persistent watch's task is asked to do besides forwarding events: remove the
/// watcher, and answer with the crate's result.
type RemoveOrder = oneshot::Sender<Result<(), Error>>;

/// A watch set by a step.
pub enum Watch {
    /// A one-shot watch nobody has waited on yet: held, so that it can still be removed.
    Set(OneshotWatcher),
    /// A one-shot watch being waited on: a task holds the watcher (`changed` consumes it; a
    /// dropped watcher is removed) and sends its event.
    Pending(oneshot::Receiver<WatchedEvent>),
    /// A persistent watch: a task forwards every event until it is told to remove it.
    Persistent {
        events: mpsc::UnboundedReceiver<WatchedEvent>,
        remove: Option<oneshot::Sender<RemoveOrder>>,
    },
    /// Fired (one-shot) or removed: nothing more comes.
    Done,
}

impl Watch {
    /// A persistent watcher, its events forwarded by a task of its own.
    pub fn persistent(mut watcher: PersistentWatcher) -> Watch {
        let (sender, events) = mpsc::unbounded_channel();
        let (remove, mut removal) = oneshot::channel::<RemoveOrder>();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    event = watcher.changed() => {
                        let terminal = event.session_state.is_terminated();
                        let _ = sender.send(event);
                        // The crate panics on a `changed` after a terminal session event.
                        if terminal {
                            return;
                        }
                    }
                    order = &mut removal => {
                        if let Ok(answer) = order {
                            #[allow(deprecated)] // the crate's only way to see the server's answer
                            let _ = answer.send(watcher.remove().await);
                        }
                        return;
                    }
                }
            }
        });
        Watch::Persistent {
            events,
            remove: Some(remove),
        }
    }

    /// The next event within `within`, as the probe writes it, or `none`.
    pub async fn wait(&mut self, within: Duration) -> String {
        if let Watch::Set(_) = self {
            let Watch::Set(watcher) = std::mem::replace(self, Watch::Done) else {
                unreachable!("matched above")
            };
            let (sender, receiver) = oneshot::channel();
            tokio::spawn(async move {
                let _ = sender.send(watcher.changed().await);
            });
            *self = Watch::Pending(receiver);
        }
        let event = match self {
            Watch::Pending(receiver) => match timeout(within, receiver).await {
                Ok(event) => {
                    *self = Watch::Done;
                    event.ok()
                }
                Err(_) => None,
            },
            Watch::Persistent { events, .. } => timeout(within, events.recv()).await.ok().flatten(),
            Watch::Set(_) | Watch::Done => {
                tokio::time::sleep(within).await;
                None
            }
        };
        match event {
            Some(event) => line(&event),
            None => "none".to_string(),
        }
    }

    /// Removes the watch through its watcher, as the crate does; `None` when the crate has no
    /// watcher left to remove it by (`changed` and `remove` consume a one-shot watcher,
    /// `remove` a persistent one).
    pub async fn remove(&mut self) -> Option<String> {
        let answer = match std::mem::replace(self, Watch::Done) {
            #[allow(deprecated)] // the crate's only way to see the server's answer
            Watch::Set(watcher) => timeout(OP_LIMIT, watcher.remove()).await,
            Watch::Persistent { remove, events } => {
                let (sender, receiver) = oneshot::channel();
                let ordered = remove.map(|remove| remove.send(sender));
                *self = Watch::Persistent {
                    events,
                    remove: None,
                };
                match ordered {
                    Some(Ok(())) => {
                        timeout(OP_LIMIT, async {
                            receiver.await.unwrap_or(Err(Error::ClientClosed))
                        })
                        .await
                    }
                    // Its task ended with the session: the crate answers without asking.
                    Some(Err(_)) => Ok(Err(Error::SessionExpired)),
                    // Removed already: `remove` consumed the watcher.
                    None => return None,
                }
            }
            other => {
                *self = other;
                return None;
            }
        };
        Some(match answer.unwrap_or(Err(Error::Timeout)) {
            Ok(()) => "ok".to_string(),
            Err(e) => render::error(&e),
        })
    }
}

fn line(event: &WatchedEvent) -> String {
    match event.event_type {
        zookeeper_client::EventType::Session => {
            format!("event Session state={}", event.session_state)
        }
        kind => format!("event {kind} {}", event.path),
    }
}
