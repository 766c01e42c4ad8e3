//! What a server keeps per watch, and what it sends it: events (filtered, with their previous
//! values if asked) and progress notifications (an empty response at the server's revision).

use super::{
    mvcc::{ChangeEvent, KeyRange, MvccStore},
    protocol::ClientFrame,
    watch::WatchOptions,
};
use sim::{clock::LocalTime, net::Connection};
use std::time::Duration;

pub(super) struct Watcher {
    pub(super) connection: u64,
    pub(super) watch_id: u64,
    pub(super) range: KeyRange,
    /// The revision it was created to start from (after clamping to the store's next).
    pub(super) created_at_revision: u64,
    /// The first revision it has not sent yet (etcd's `minRev`).
    pub(super) next_revision: u64,
    /// What its events carry and which it leaves out (its range and start are above).
    pub(super) options: WatchOptions,
    /// When it gets its next progress notification, if it asked for them.
    pub(super) progress: Option<ProgressClock>,
}

/// The progress notifications of a watch that asked for them (`progress_notify`), as etcd
/// 3.4.23 sends them (etcdserver/api/v3rpc/watch.go, `sendLoop`): a tick every interval; at a
/// tick, a watch that was sent no events since the previous tick gets an empty response at
/// the server's revision. etcd's ticker runs per stream and adds up to a tenth of jitter;
/// here it runs per watch from its creation, without jitter.
pub(super) struct ProgressClock {
    /// The next tick.
    pub(super) due_at: LocalTime,
    /// Whether events were sent since the last tick (the next notification is skipped).
    pub(super) events_since_tick: bool,
}

impl Watcher {
    /// Sends `events` on `channel` as the watch gets them ([`events_to_send`]); nothing when
    /// nothing is left.
    pub(super) fn send_events(
        &mut self,
        mvcc: &MvccStore,
        channel: &Connection<ClientFrame>,
        events: Vec<ChangeEvent>,
    ) {
        let events = events_to_send(mvcc, &self.options, events);
        if events.is_empty() {
            return;
        }
        if let Some(progress) = &mut self.progress {
            progress.events_since_tick = true;
        }
        let _ = channel.send(ClientFrame::WatchEvents {
            watch_id: self.watch_id,
            events,
        });
    }

    /// At `now`, a progress notification at `revision` if one is due; the next tick is
    /// `interval` later.
    pub(super) fn progress_tick(
        &mut self,
        now: LocalTime,
        interval: Duration,
        revision: u64,
        channel: &Connection<ClientFrame>,
    ) {
        let Some(progress) = &mut self.progress else {
            return;
        };
        if progress.due_at > now {
            return;
        }
        if !progress.events_since_tick {
            let _ = channel.send(ClientFrame::WatchProgress {
                watch_id: self.watch_id,
                revision,
            });
        }
        progress.events_since_tick = false;
        progress.due_at = now + interval;
    }
}

/// The earliest progress tick among `watchers`.
pub(super) fn next_progress_due(watchers: &[Watcher]) -> Option<LocalTime> {
    watchers
        .iter()
        .filter_map(|watcher| watcher.progress.as_ref().map(|p| p.due_at))
        .min()
}

/// `events` as a watcher with `options` gets them: without those its filters leave out
/// (v3.4.23 mvcc/watchable_store.go, `watcher.send`: nothing is sent when nothing is left),
/// and with their keys' previous values if it asked for them, read from `mvcc` as it is
/// when they are sent (as etcd does: a compaction in between leaves them without).
fn events_to_send(
    mvcc: &MvccStore,
    options: &WatchOptions,
    mut events: Vec<ChangeEvent>,
) -> Vec<ChangeEvent> {
    events.retain(|event| !options.filters.iter().any(|f| f.leaves_out(event)));
    if options.prev_kv {
        for event in &mut events {
            event.prev_kv = mvcc.prev_kv_of(event);
        }
    }
    events
}
