//! A watch delivers every change in its range from its start revision, in revision order,
//! exactly once — across reconnects, which resume from the revision after the last change
//! delivered.
//!
//! etcd's watch guarantees (etcd API guarantees, "Watch"): *ordered* (events by revision),
//! *unique* (an event is never delivered twice), *reliable* (no subsequence of events is
//! dropped: no gap), *resumable* from a revision. A compaction must not drop an event a
//! watcher from an older revision still needs (etcd-io/etcd#18089, #19179,
//! `etcd.compact_drops_tombstone`). Watches are read from `kv_watch` records
//! (`sim::history::kv::WatchRecord`); completeness is checked against acknowledged writes,
//! and so is each previous value (`prev_kv`) a change carries ([`prev_kv`]). A watch with
//! filters (etcd's `NOPUT`, `NODELETE`) must deliver none of the kinds it leaves out, and
//! every change of the other kinds. A progress response at revision R (a progress
//! notification, or the answer to a progress request) promises that every change up to R
//! was delivered: a later change at or below R, or an acknowledged write up to R never
//! delivered, breaks it. Nothing may come after the server answered a cancel.
//!
//! **Reads:** the `kv_watch` records the client library writes when a watch is created,
//! resumed, or delivers events to the client ([`sim::history::kv::WatchRecord`]), and the
//! acknowledged writes (`Invoke`/`Complete`) they must match. What the client received is the
//! fact judged; no server event is trusted.

use crate::Checked;
use crate::{
    Violation,
    history::{
        kv::{KeySpan, Write, WriteEffect},
        views::HistoryViews,
    },
};
use sim::{
    NodeId,
    history::{
        Event, History, OpId,
        kv::{KeyValue, WatchRecord, WatchStep, WatchedChangeKind},
    },
    time::SimTime,
};
use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

/// Which watch: the client node, its process and the watch id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WatchKey {
    /// Client node.
    pub client: NodeId,
    /// Process on it.
    pub process: u32,
    /// Watch id.
    pub watch: u64,
}

/// What went wrong with a watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchFault {
    /// A change came after one with a higher revision.
    OutOfOrder {
        /// The previous change (revision, key).
        previous: (u64, String),
        /// The offending change.
        next: (u64, String),
    },
    /// The same change was delivered twice.
    Duplicate {
        /// Revision.
        revision: u64,
        /// Key.
        key: String,
    },
    /// A change before the revision the watch started from.
    BeforeStart {
        /// Revision.
        revision: u64,
        /// The start revision.
        start_revision: u64,
    },
    /// A change for a key outside the watched range.
    OutsideRange {
        /// Key.
        key: String,
    },
    /// The stream reopened from a revision other than the one after the last delivered.
    ResumedAt {
        /// Last revision delivered before the reconnect.
        last_delivered: u64,
        /// Revision asked for on reopening.
        resumed_from: u64,
    },
    /// An acknowledged write in range, between the start and the last revision delivered,
    /// was never delivered.
    Missed {
        /// The write.
        write: OpId,
        /// Its revision.
        revision: u64,
        /// Its key.
        key: String,
    },
    /// A delivered change disagrees with the acknowledged write at its revision.
    WrongContent {
        /// Revision.
        revision: u64,
        /// Key.
        key: String,
        /// What the watch delivered.
        delivered: String,
        /// What the write did.
        written: String,
    },
    /// A change of a kind the watch's filters leave out (`NOPUT`, `NODELETE`) was delivered.
    LeftOut {
        /// Revision.
        revision: u64,
        /// Key.
        key: String,
        /// Its kind.
        kind: WatchedChangeKind,
    },
    /// A change came after a progress response said every change up to `progress` was
    /// delivered, and is not newer than it.
    AfterProgress {
        /// Revision.
        revision: u64,
        /// Key.
        key: String,
        /// The revision of the progress response.
        progress: u64,
    },
    /// A change was delivered after the server answered the watch's cancel.
    AfterCancel {
        /// Revision.
        revision: u64,
        /// Key.
        key: String,
    },
    /// A change's previous value (`prev_kv`) is not the key as it was just before the change.
    WrongPrev {
        /// Revision of the change.
        revision: u64,
        /// Key of the change.
        key: String,
        /// The previous value delivered (`key=value mod=R`).
        delivered: String,
        /// What the history says instead.
        why: String,
    },
}

/// A broken watch guarantee.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchViolation {
    /// The watch.
    pub watch: WatchKey,
    /// When the evidence was recorded.
    pub at: SimTime,
    /// What went wrong.
    pub fault: WatchFault,
}

impl fmt::Display for WatchViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "watch {:x} of {} (process {}) at {}: {:?}",
            self.watch.watch, self.watch.client, self.watch.process, self.at, self.fault
        )
    }
}

impl Violation for WatchViolation {
    fn property(&self) -> &'static str {
        "watch delivery"
    }

    fn reference(&self) -> &'static str {
        "etcd API guarantees (watch: ordered, unique, reliable, resumable); etcd-io/etcd#18089"
    }

    fn at(&self) -> Option<SimTime> {
        // When the evidence was recorded.
        Some(self.at)
    }
}

#[derive(Default)]
struct WatchState {
    /// The watched key and range end.
    span: Option<(String, Option<String>)>,
    start_revision: u64,
    first_delivered: Option<u64>,
    last: Option<(u64, String)>,
    delivered: BTreeMap<(u64, String), (WatchedChangeKind, String)>,
    /// The kinds of change its filters leave out: never delivered, never missed.
    left_out: Vec<WatchedChangeKind>,
    /// The previous values delivered, by change (revision, key).
    prevs: Vec<((u64, String), KeyValue)>,
    /// Stopped because the start revision was compacted.
    compacted: bool,
    /// The server answered a cancel: nothing more may come.
    canceled: bool,
    /// The highest revision a progress response said every change was delivered up to.
    progress_at: Option<u64>,
}

/// Every broken watch guarantee.
pub fn check(history: &History) -> Checked<WatchViolation> {
    check_views(&HistoryViews::new(history))
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> Checked<WatchViolation> {
    let mut watches: BTreeMap<WatchKey, WatchState> = BTreeMap::new();
    let mut violations = Vec::new();
    let mut judged = 0;
    for record in history.records() {
        let (Some(client), Event::Recipe(event)) = (record.node, &record.event) else {
            continue;
        };
        let Some(WatchRecord {
            process,
            watch,
            step,
        }) = WatchRecord::from_recipe_event(event)
        else {
            continue;
        };
        let key = WatchKey {
            client,
            process,
            watch,
        };
        let state = watches.entry(key).or_default();
        let mut fault = |fault| {
            violations.push(WatchViolation {
                watch: key,
                at: record.at,
                fault,
            })
        };
        match step {
            WatchStep::Created {
                key,
                range_end,
                start_revision,
                left_out,
            } => {
                state.span = Some((key, range_end));
                state.start_revision = start_revision;
                state.left_out = left_out;
            }
            WatchStep::Opened { from_revision, .. } => {
                if let Some((last, _)) = &state.last
                    && from_revision != last + 1
                {
                    fault(WatchFault::ResumedAt {
                        last_delivered: *last,
                        resumed_from: from_revision,
                    });
                }
            }
            WatchStep::Delivered { changes, .. } => {
                for change in changes {
                    judged += 1;
                    let id = (change.mod_revision, change.key.clone());
                    if let Some((start, range_end)) = &state.span
                        && !KeySpan::new(start, range_end.as_deref()).contains(&change.key)
                    {
                        fault(WatchFault::OutsideRange {
                            key: change.key.clone(),
                        });
                    }
                    if state.canceled {
                        fault(WatchFault::AfterCancel {
                            revision: change.mod_revision,
                            key: change.key.clone(),
                        });
                    }
                    if state.left_out.contains(&change.kind) {
                        fault(WatchFault::LeftOut {
                            revision: change.mod_revision,
                            key: change.key.clone(),
                            kind: change.kind,
                        });
                    }
                    if let Some(progress) = state.progress_at
                        && change.mod_revision <= progress
                    {
                        fault(WatchFault::AfterProgress {
                            revision: change.mod_revision,
                            key: change.key.clone(),
                            progress,
                        });
                    }
                    if state.start_revision > 0 && change.mod_revision < state.start_revision {
                        fault(WatchFault::BeforeStart {
                            revision: change.mod_revision,
                            start_revision: state.start_revision,
                        });
                    }
                    if state.delivered.contains_key(&id) {
                        fault(WatchFault::Duplicate {
                            revision: id.0,
                            key: id.1.clone(),
                        });
                    } else if let Some(previous) = &state.last
                        && change.mod_revision < previous.0
                    {
                        fault(WatchFault::OutOfOrder {
                            previous: previous.clone(),
                            next: id.clone(),
                        });
                    }
                    if let Some(prev) = change.prev_kv {
                        state.prevs.push((id.clone(), prev));
                    }
                    state.first_delivered.get_or_insert(change.mod_revision);
                    state.last = Some(id.clone());
                    state
                        .delivered
                        .insert(id, (change.kind, change.value.clone()));
                }
            }
            WatchStep::Compacted { .. } => state.compacted = true,
            WatchStep::Closed => {}
            WatchStep::Progress { revision, .. } => {
                state.progress_at = state.progress_at.max(Some(revision));
            }
            WatchStep::Canceled => state.canceled = true,
        }
    }
    violations.extend(check_completeness(history, &watches));
    violations.extend(prev_kv::check(history, &watches));
    Checked::new(violations, judged)
}

/// No gap: every acknowledged write in range between the start and the last delivered
/// revision was delivered, with the written content.
fn check_completeness(
    history: &HistoryViews<'_>,
    watches: &BTreeMap<WatchKey, WatchState>,
) -> Vec<WatchViolation> {
    let kv = history.kv();
    let end = history.records().last().map_or(SimTime::ZERO, |r| r.at);
    // The acknowledged writes by revision (then by their order in the history), so that
    // each watch looks only at the revisions between its start and its last delivery.
    let mut acknowledged: Vec<(u64, &Write)> = kv
        .acknowledged()
        .map(|(write, revision)| (revision, write))
        .collect();
    acknowledged.sort_by_key(|&(revision, _)| revision);
    let mut violations = Vec::new();
    for (key, state) in watches {
        // Up to the last change delivered, or further if a progress response promised it.
        let last = state.last.as_ref().map(|(revision, _)| *revision);
        let (Some((start, range_end)), Some(last)) = (&state.span, last.max(state.progress_at))
        else {
            continue;
        };
        let span = KeySpan::new(start, range_end.as_deref());
        let lower = if state.start_revision > 0 {
            state.start_revision
        } else {
            state.first_delivered.unwrap_or(u64::MAX)
        };
        let from = acknowledged.partition_point(|&(revision, _)| revision < lower);
        let to = acknowledged.partition_point(|&(revision, _)| revision <= last);
        let mut reported: BTreeSet<(u64, &str)> = BTreeSet::new();
        for &(revision, write) in acknowledged.get(from..to).unwrap_or_default() {
            let (written_key, kind, value) = match write.effect {
                WriteEffect::Put { key, value, .. } => (key, WatchedChangeKind::Put, value),
                // A single-key delete that deleted something, outside a transaction (whose
                // deletes may have deleted nothing).
                WriteEffect::Delete { span } if span.end.is_none() && !write.in_transaction => {
                    (span.start, WatchedChangeKind::Delete, "")
                }
                WriteEffect::Delete { .. } => continue,
            };
            if !span.contains(written_key)
                || state.left_out.contains(&kind)
                || !reported.insert((revision, written_key))
            {
                continue;
            }
            // `String::new()` does not allocate: the lookup borrows the written key.
            let delivered = state
                .delivered
                .range((revision, String::new())..)
                .take_while(|((delivered_revision, _), _)| *delivered_revision == revision)
                .find(|((_, delivered_key), _)| delivered_key == written_key)
                .map(|(_, delivered)| delivered);
            match delivered {
                None => violations.push(WatchViolation {
                    watch: *key,
                    at: end,
                    fault: WatchFault::Missed {
                        write: write.op_id,
                        revision,
                        key: written_key.to_string(),
                    },
                }),
                Some((delivered_kind, delivered_value))
                    if *delivered_kind != kind || *delivered_value != value =>
                {
                    violations.push(WatchViolation {
                        watch: *key,
                        at: end,
                        fault: WatchFault::WrongContent {
                            revision,
                            key: written_key.to_string(),
                            delivered: format!("{delivered_kind:?} {delivered_value:?}"),
                            written: format!("{kind:?} {value:?}"),
                        },
                    })
                }
                Some(_) => {}
            }
        }
    }
    violations
}

mod prev_kv;
#[cfg(test)]
mod tests;
