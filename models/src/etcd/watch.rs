//! Watches: [`WatchOptions`] (etcd-client 0.21's names, the subset the model serves) and
//! [`WatchStream`], which yields changes in revision order and resumes after a reconnect
//! from the revision after the last one it delivered. [`super::EtcdClient::watch`] opens one.

use super::{
    client::ClientConfig,
    mvcc::{ChangeEvent, ChangeKind},
    protocol::ClientFrame,
};
use sim::{
    HistoryRecorder, NodeContext, NodeId,
    history::{
        RecipeEvent,
        kv::{WatchRecord, WatchStep, WatchedChange, WatchedChangeKind},
    },
    net::{Connection, ConnectionBroken, StreamNetwork},
};

/// What a watch asks for, as etcd-client 0.21's `WatchOptions` (with its builder names).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchOptions {
    /// End of the range (etcd encoding); `None`: the key alone.
    pub(crate) range_end: Option<String>,
    /// First revision wanted; 0: the revision after the store's when the watch is created.
    pub(crate) start_revision: u64,
    /// Whether each event carries its key's previous value (`WatchCreateRequest.prev_kv`).
    pub(crate) prev_kv: bool,
    /// The kinds of event left out (`WatchCreateRequest.filters`).
    pub(crate) filters: Vec<WatchFilterType>,
    /// Whether the server sends an empty response at its revision after an idle interval
    /// (`WatchCreateRequest.progress_notify`).
    pub(crate) progress_notify: bool,
}

/// A kind of event a watch leaves out, as etcd-client 0.21's `WatchFilterType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WatchFilterType {
    /// Leave out puts (etcd's `NOPUT`).
    NoPut,
    /// Leave out deletes (etcd's `NODELETE`).
    NoDelete,
}

impl WatchFilterType {
    /// Whether this filter leaves `event` out (etcd's `filterNoPut` / `filterNoDelete`).
    pub(crate) fn leaves_out(self, event: &ChangeEvent) -> bool {
        matches!(
            (self, event.kind),
            (Self::NoPut, ChangeKind::Put) | (Self::NoDelete, ChangeKind::Delete)
        )
    }

    /// The kind of change it leaves out, as the history names it.
    fn left_out(self) -> WatchedChangeKind {
        match self {
            Self::NoPut => WatchedChangeKind::Put,
            Self::NoDelete => WatchedChangeKind::Delete,
        }
    }
}

impl WatchOptions {
    /// The key alone, from now, events without their previous values.
    pub fn new() -> Self {
        Self::default()
    }

    /// Watches `[key, end)` (`\0`: every key from `key` on).
    pub fn with_range(mut self, end: impl Into<String>) -> Self {
        self.range_end = Some(end.into());
        self
    }

    /// From `revision` (inclusive); 0 is "now".
    pub fn with_start_revision(mut self, revision: u64) -> Self {
        self.start_revision = revision;
        self
    }

    /// Each event carries the key's value before it (none for a create, none when that
    /// revision was compacted: etcd reads it at the event's revision − 1 when it sends).
    pub fn with_prev_key(mut self) -> Self {
        self.prev_kv = true;
        self
    }

    /// Asks the server for progress notifications: an empty response at its revision when
    /// the watch had no events for an interval (`EtcdConfig::watch_progress_notify_interval`).
    pub fn with_progress_notify(mut self) -> Self {
        self.progress_notify = true;
        self
    }

    /// Leaves out the events `filters` name: the server does not send them.
    pub fn with_filters(mut self, filters: impl Into<Vec<WatchFilterType>>) -> Self {
        self.filters = filters.into();
        self
    }

    /// The kinds of change the watch leaves out, as the history records them.
    pub(super) fn left_out(&self) -> Vec<WatchedChangeKind> {
        let mut kinds: Vec<_> = self.filters.iter().map(|f| f.left_out()).collect();
        kinds.sort_by_key(|kind| matches!(kind, WatchedChangeKind::Delete));
        kinds.dedup();
        kinds
    }
}

/// What a watch stream yields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchItem {
    /// Changes, in revision order.
    Changes(Vec<ChangeEvent>),
    /// The revision asked for was compacted: the stream is over.
    Compacted {
        /// The compaction revision.
        compact_revision: u64,
    },
    /// The watch was cancelled ([`WatchStream::cancel`]): nothing more comes.
    Canceled,
    /// The server has sent every change up to `revision` (a progress notification, or the
    /// answer to [`WatchStream::request_progress`]). The stream still resumes from after the
    /// last change it delivered.
    Progress {
        /// The server's revision.
        revision: u64,
    },
}

/// A watch: yields changes in revision order, reconnecting (to any server) after a break and
/// resuming from the revision after the last change it delivered.
pub struct WatchStream {
    pub(super) context: NodeContext,
    pub(super) history: HistoryRecorder,
    pub(super) network: StreamNetwork<ClientFrame>,
    pub(super) servers: Vec<NodeId>,
    pub(super) process: u32,
    pub(super) watch: u64,
    pub(super) key: String,
    /// As asked; the start revision sent on each (re)open is `next_revision`.
    pub(super) options: WatchOptions,
    pub(super) next_revision: u64,
    pub(super) rotation: usize,
    pub(super) connection: Option<Connection<ClientFrame>>,
    pub(super) config: ClientConfig,
    pub(super) cancellation: Cancellation,
    /// The store revision in the first `created` answer (`None` until a server answered).
    pub(super) created_revision: Option<u64>,
}

/// Where a watch stands with its cancellation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cancellation {
    /// Not asked for.
    NotAsked,
    /// Asked for; the server has not answered yet.
    Asked,
    /// Answered ([`WatchItem::Canceled`] was handed out): nothing more comes.
    Done,
}

impl WatchStream {
    pub(super) fn record(&self, step: WatchStep) {
        let record = WatchRecord {
            process: self.process,
            watch: self.watch,
            step,
        };
        self.history
            .record(sim::history::Event::Recipe(record.to_recipe_event()));
    }

    /// The first revision the stream has not delivered yet (0: none delivered and none
    /// asked for).
    pub fn next_revision(&self) -> u64 {
        self.next_revision
    }

    /// The store revision of the server that first answered the create (the header of
    /// etcd's `created` response); `None` while no server has answered.
    pub fn created_revision(&self) -> Option<u64> {
        self.created_revision
    }

    /// The next changes (waits; reconnects as needed).
    pub async fn next(&mut self) -> WatchItem {
        loop {
            if self.cancellation == Cancellation::Done {
                return std::future::pending().await;
            }
            let connection = match &self.connection {
                Some(connection) if !connection.is_broken() => connection.clone(),
                // Cancelled with no connection: the server's watch went with the last one.
                _ if self.cancellation == Cancellation::Asked => return self.canceled(),
                _ => match self.open().await {
                    Some(connection) => connection,
                    None => {
                        self.context.clock().sleep(self.config.retry_backoff).await;
                        continue;
                    }
                },
            };
            match connection.recv().await {
                Ok(ClientFrame::WatchEvents { watch_id, events }) if watch_id == self.watch => {
                    if let Some(last) = events.last() {
                        self.next_revision = last.revision() + 1;
                    }
                    self.record(WatchStep::Delivered {
                        server: connection.peer(),
                        changes: events.iter().map(watched_change).collect(),
                    });
                    return WatchItem::Changes(events);
                }
                Ok(ClientFrame::WatchProgress { watch_id, revision }) if watch_id == self.watch => {
                    self.record(WatchStep::Progress {
                        server: connection.peer(),
                        revision,
                    });
                    return WatchItem::Progress { revision };
                }
                Ok(ClientFrame::WatchCanceled { watch_id }) if watch_id == self.watch => {
                    return self.canceled();
                }
                Ok(ClientFrame::WatchCompacted {
                    watch_id,
                    compact_revision,
                }) if watch_id == self.watch => {
                    self.record(WatchStep::Compacted { compact_revision });
                    self.connection = None;
                    return WatchItem::Compacted { compact_revision };
                }
                Ok(_) => {}
                Err(_) => {
                    self.connection = None;
                    self.rotation += 1;
                }
            }
        }
    }

    /// Asks the server how far the watch is: it answers with [`WatchItem::Progress`] at its
    /// revision (etcd-client's `WatchStream::request_progress`). Lost when the stream is
    /// between connections, as a request on a broken stream is.
    pub fn request_progress(&self) {
        if let Some(connection) = &self.connection {
            let _ = connection.send(ClientFrame::WatchProgressRequest {
                watch_id: self.watch,
            });
        }
    }

    /// Asks the server to stop the watch (etcd-client's `WatchStream::cancel`): events it sent
    /// before still come, then [`WatchItem::Canceled`], then nothing.
    pub fn cancel(&mut self) {
        if self.cancellation != Cancellation::NotAsked {
            return;
        }
        self.cancellation = Cancellation::Asked;
        if let Some(connection) = &self.connection {
            let _ = connection.send(ClientFrame::WatchCancel {
                watch_id: self.watch,
            });
        }
    }

    fn canceled(&mut self) -> WatchItem {
        self.cancellation = Cancellation::Done;
        if let Some(connection) = self.connection.take() {
            connection.close();
        }
        self.record(WatchStep::Canceled);
        WatchItem::Canceled
    }

    /// Stops watching.
    pub fn close(mut self) {
        if let Some(connection) = self.connection.take() {
            connection.close();
        }
        self.record(WatchStep::Closed);
    }

    /// Connects, asks for the watch from `next_revision` and waits for the server's
    /// `created` answer (which comes before any event of the watch).
    pub(super) async fn open(&mut self) -> Option<Connection<ClientFrame>> {
        let server = self.servers[self.rotation % self.servers.len()];
        let connection = match self
            .network
            .connect(self.context.id(), server, self.config.connect_timeout)
            .await
        {
            Ok(connection) => connection,
            Err(_) => {
                self.rotation += 1;
                return None;
            }
        };
        let created = connection.send(ClientFrame::WatchCreate {
            watch_id: self.watch,
            key: self.key.clone(),
            options: self.options.clone().with_start_revision(self.next_revision),
        });
        if created.is_err() {
            self.rotation += 1;
            return None;
        }
        self.record(WatchStep::Opened {
            server,
            from_revision: self.next_revision,
        });
        let answer = self
            .context
            .clock()
            .timeout(
                self.config.request_timeout,
                created_answer(&connection, self.watch),
            )
            .await;
        let Ok(Ok(revision)) = answer else {
            connection.close();
            self.rotation += 1;
            return None;
        };
        self.created_revision.get_or_insert(revision);
        if self.next_revision == 0 {
            // "From now" is fixed by the server's answer, so that a reconnect resumes there.
            self.next_revision = revision + 1;
        }
        self.connection = Some(connection.clone());
        Some(connection)
    }
}

/// The revision in the server's `created` answer to `watch_id` on `connection`.
async fn created_answer(
    connection: &Connection<ClientFrame>,
    watch_id: u64,
) -> Result<u64, ConnectionBroken> {
    loop {
        if let ClientFrame::WatchCreated {
            watch_id: created,
            revision,
        } = connection.recv().await?
            && created == watch_id
        {
            return Ok(revision);
        }
    }
}

fn watched_change(event: &ChangeEvent) -> WatchedChange {
    WatchedChange {
        kind: match event.kind {
            ChangeKind::Put => WatchedChangeKind::Put,
            ChangeKind::Delete => WatchedChangeKind::Delete,
        },
        key: event.kv.key.clone(),
        value: event.kv.value.clone(),
        mod_revision: event.kv.mod_revision,
        create_revision: event.kv.create_revision,
        version: event.kv.version,
        prev_kv: event.prev_kv.clone(),
    }
}

/// The recipe events of a history that are watch records (for tests and tools).
pub fn watch_records<'a>(events: impl IntoIterator<Item = &'a RecipeEvent>) -> Vec<WatchRecord> {
    events
        .into_iter()
        .filter_map(WatchRecord::from_recipe_event)
        .collect()
}
