//! The server's watches: creating one (answered `created` at once), progress requests and
//! notifications, cancelling, and sending each applied revision's changes to its watchers.

use super::Server;
use crate::etcd::{
    mvcc::KeyRange,
    protocol::ClientFrame,
    watch::WatchOptions,
    watchers::{ProgressClock, Watcher, next_progress_due},
};
use sim::history::kv::KvError;

impl Server {
    pub(super) fn create_watch(
        &mut self,
        connection: u64,
        watch_id: u64,
        key: &str,
        options: &WatchOptions,
    ) {
        let start_revision = options.start_revision;
        let Some(channel) = self.connections.get(&connection) else {
            return;
        };
        let range = KeyRange::new(key, options.range_end.as_deref());
        let current = self.machine.mvcc().revision();
        // etcd answers the create first, with the store's revision, even when the start
        // revision turns out to be compacted (release-3.4 etcdserver/api/v3rpc/watch.go,
        // `recvLoop`: `Created: true` with `sws.watchStream.Rev()`; the compaction is told in
        // a later response by the watchable store).
        let _ = channel.send(ClientFrame::WatchCreated {
            watch_id,
            revision: current,
        });
        let start = if start_revision == 0 {
            current + 1
        } else {
            start_revision
        };
        let events = match self.machine.mvcc().changes_since(start, &range) {
            Err(KvError::Compacted { compact_revision }) => {
                let _ = channel.send(ClientFrame::WatchCompacted {
                    watch_id,
                    compact_revision,
                });
                return;
            }
            Err(_) => return,
            Ok(events) => events,
        };
        let next_revision = start.max(current + 1);
        let progress = options.progress_notify.then(|| ProgressClock {
            due_at: self.context.clock().now() + self.config.watch_progress_notify_interval,
            events_since_tick: false,
        });
        let mut watcher = Watcher {
            connection,
            watch_id,
            range,
            options: options.clone(),
            created_at_revision: next_revision,
            next_revision,
            progress,
        };
        watcher.send_events(self.machine.mvcc(), channel, events);
        self.watchers.push(watcher);
        self.arm_progress_timer();
    }

    /// Answers a progress request with the store's revision: every event up to it was sent
    /// (a watcher here is always synced: its events go out when their entry is applied).
    /// etcd 3.4.23 answers on the stream at once, with watch id -1 (v3rpc/watch.go,
    /// `recvLoop`); here the watch is named, as each watch has its own connection.
    pub(super) fn answer_progress_request(&mut self, connection: u64, watch_id: u64) {
        let known = self
            .watchers
            .iter()
            .any(|w| w.connection == connection && w.watch_id == watch_id);
        if let (true, Some(channel)) = (known, self.connections.get(&connection)) {
            let _ = channel.send(ClientFrame::WatchProgress {
                watch_id,
                revision: self.machine.mvcc().revision(),
            });
        }
    }

    /// Drops the watch and says so; its events sent before stay before the answer on the
    /// connection, and none come after. An unknown watch gets no answer (v3.4.23
    /// v3rpc/watch.go, `recvLoop`: `canceled` only when `watchStream.Cancel` succeeds).
    pub(super) fn cancel_watch(&mut self, connection: u64, watch_id: u64) {
        let before = self.watchers.len();
        self.watchers
            .retain(|w| !(w.connection == connection && w.watch_id == watch_id));
        if self.watchers.len() < before
            && let Some(channel) = self.connections.get(&connection)
        {
            let _ = channel.send(ClientFrame::WatchCanceled { watch_id });
        }
    }

    pub(super) fn progress_tick(&mut self) {
        let now = self.context.clock().now();
        let interval = self.config.watch_progress_notify_interval;
        let revision = self.machine.mvcc().revision();
        for watcher in &mut self.watchers {
            if let Some(channel) = self.connections.get(&watcher.connection) {
                watcher.progress_tick(now, interval, revision, channel);
            }
        }
        self.arm_progress_timer();
    }

    pub(super) fn arm_progress_timer(&mut self) {
        match next_progress_due(&self.watchers) {
            Some(at) if self.progress_timer.deadline() != Some(at) => {
                self.progress_timer
                    .set(self.context.clock().sleep_until(at));
            }
            Some(_) => {}
            None => self.progress_timer.clear(),
        }
    }

    pub(super) fn notify_watchers(&mut self, revision: u64) {
        let changes = self.machine.mvcc().changes_at(revision);
        for watcher in &mut self.watchers {
            if watcher.next_revision > revision {
                continue;
            }
            watcher.next_revision = revision + 1;
            let events: Vec<_> = changes
                .iter()
                .filter(|change| watcher.range.contains(&change.kv.key))
                .cloned()
                .collect();
            if events.is_empty() {
                continue;
            }
            if let Some(connection) = self.connections.get(&watcher.connection) {
                watcher.send_events(self.machine.mvcc(), connection, events);
            }
        }
    }
}
