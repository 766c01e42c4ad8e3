//! A delivered change's previous value (`prev_kv`) is its key as it was just before the
//! change: etcd reads it at the change's revision − 1 (v3.4.23 etcdserver/api/v3rpc/watch.go,
//! `sendLoop`).
//!
//! Judged against the acknowledged puts of the key only, so that writes the history cannot
//! place (an unknown outcome, a delete that deleted nothing, a lease's expiry) never make a
//! right answer look wrong. A previous value is wrong when it is
//! - for another key, or not older than the change;
//! - older than an acknowledged put of the key that came before the change (it skipped it: a
//!   delete in between would have left no previous value at all);
//! - at the revision of an acknowledged put of the key, with another value.
//!
//! A missing previous value is not judged: a create has none, and etcd gives none when the
//! revision before the change was compacted.

use super::{WatchFault, WatchKey, WatchState, WatchViolation};
use crate::history::{kv::WriteEffect, views::HistoryViews};
use sim::time::SimTime;
use std::collections::BTreeMap;

/// Every delivered previous value that the history shows is wrong.
pub(super) fn check(
    history: &HistoryViews<'_>,
    watches: &BTreeMap<WatchKey, WatchState>,
) -> Vec<WatchViolation> {
    if watches.values().all(|state| state.prevs.is_empty()) {
        return Vec::new();
    }
    let kv = history.kv();
    let end = history.records().last().map_or(SimTime::ZERO, |r| r.at);
    // The acknowledged puts of each key: revision → value.
    let mut puts: BTreeMap<&str, BTreeMap<u64, &str>> = BTreeMap::new();
    for (write, revision) in kv.acknowledged() {
        if let WriteEffect::Put { key, value, .. } = write.effect {
            puts.entry(key).or_default().insert(revision, value);
        }
    }
    let mut violations = Vec::new();
    for (watch, state) in watches {
        for ((revision, key), prev) in &state.prevs {
            let of_key = puts.get(key.as_str());
            let wrong = |why: String| WatchViolation {
                watch: *watch,
                at: end,
                fault: WatchFault::WrongPrev {
                    revision: *revision,
                    key: key.clone(),
                    delivered: format!("{}={} mod={}", prev.key, prev.value, prev.mod_revision),
                    why,
                },
            };
            if prev.key != *key || prev.mod_revision >= *revision {
                violations.push(wrong(format!(
                    "a previous value must be of key {key} and older than revision {revision}"
                )));
                continue;
            }
            let skipped = of_key.and_then(|puts| {
                puts.range(prev.mod_revision + 1..*revision)
                    .next_back()
                    .map(|(at, _)| *at)
            });
            if let Some(at) = skipped {
                violations.push(wrong(format!(
                    "an acknowledged put of {key} at revision {at} came between"
                )));
                continue;
            }
            match of_key.and_then(|puts| puts.get(&prev.mod_revision)) {
                Some(written) if *written != prev.value => violations.push(wrong(format!(
                    "the acknowledged put at revision {} wrote {written:?}",
                    prev.mod_revision
                ))),
                _ => {}
            }
        }
    }
    violations
}
