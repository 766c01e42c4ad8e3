//! A multi-version key-value store with etcd's revision semantics.
//!
//! - The store has one global revision, 1 when empty; every write transaction (a put, a
//!   delete that deletes something, a transaction with writes, a lease revocation that
//!   deletes keys) raises it by one, and all its changes carry that revision.
//! - Each key has `create_revision` (when its current generation was created),
//!   `mod_revision` (last change) and `version` (changes since creation, 1 after creation).
//!   A delete ends the generation; a later put starts a new one at version 1.
//! - Reads may ask for a past revision, unless compaction removed it.
//! - Every change is kept as a [`ChangeEvent`] so that watches can replay from a revision.

use sim::history::kv::{KeyValue, KvError};
use std::{collections::BTreeMap, ops::Bound};

/// What a change did to a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// Created or updated.
    Put,
    /// Deleted.
    Delete,
}

/// One change to one key, as watches report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeEvent {
    /// Put or delete.
    pub kind: ChangeKind,
    /// The key after the change (for a delete: the key, empty value, mod_revision of the
    /// delete, version 0).
    pub kv: KeyValue,
    /// The key before the change, for a watch that asked for it
    /// ([`MvccStore::prev_kv_of`]); `None` in the store's own change log.
    pub prev_kv: Option<KeyValue>,
}

impl ChangeEvent {
    /// The revision of the change.
    pub fn revision(&self) -> u64 {
        self.kv.mod_revision
    }
}

/// One version of a key: a value, or a tombstone.
#[derive(Clone, Debug, PartialEq, Eq)]
struct KeyVersion {
    revision: u64,
    /// `None` is a tombstone.
    value: Option<KeyValue>,
}

/// A range of keys: one key, `[start, end)`, or everything from `start` on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    start: String,
    end: RangeEnd,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum RangeEnd {
    SingleKey,
    Before(String),
    Unbounded,
}

impl KeyRange {
    /// etcd's encoding: no `range_end` is one key; `"\0"` is every key ≥ `key`; otherwise
    /// `[key, range_end)`.
    pub fn new(key: &str, range_end: Option<&str>) -> Self {
        let end = match range_end {
            None => RangeEnd::SingleKey,
            Some("\0") => RangeEnd::Unbounded,
            Some(end) => RangeEnd::Before(end.to_string()),
        };
        Self {
            start: key.to_string(),
            end,
        }
    }

    /// Whether `key` is in the range.
    pub fn contains(&self, key: &str) -> bool {
        match &self.end {
            RangeEnd::SingleKey => key == self.start,
            RangeEnd::Before(end) => key >= self.start.as_str() && key < end.as_str(),
            RangeEnd::Unbounded => key >= self.start.as_str(),
        }
    }

    fn bounds(&self) -> (Bound<&str>, Bound<&str>) {
        match &self.end {
            RangeEnd::SingleKey => (Bound::Included(&self.start), Bound::Included(&self.start)),
            RangeEnd::Before(end) if end.as_str() <= self.start.as_str() => {
                (Bound::Included(&self.start), Bound::Excluded(&self.start))
            }
            RangeEnd::Before(end) => (Bound::Included(&self.start), Bound::Excluded(end)),
            RangeEnd::Unbounded => (Bound::Included(&self.start), Bound::Unbounded),
        }
    }
}

/// Appends a key's version written at `revision` (`None`: a tombstone). Two writes to one
/// key in one transaction share its revision: the later one replaces the earlier.
fn record_version(versions: &mut Vec<KeyVersion>, revision: u64, value: Option<KeyValue>) {
    if versions
        .last()
        .is_some_and(|version| version.revision == revision)
    {
        versions.pop();
    }
    versions.push(KeyVersion { revision, value });
}

/// Ends the live value of `key` (whose versions are `versions`) with a tombstone at the
/// open write transaction's revision (opened at `revision + 1` if it wrote nothing yet),
/// and records the delete in `changes`; returns the value it ended, or `None` (and changes
/// nothing) if `key` is not live. The fields of [`MvccStore`] it needs, passed apart so that
/// a delete over a range tombstones each key where its scan finds it.
fn tombstone(
    key: &str,
    versions: &mut Vec<KeyVersion>,
    open_write: &mut Option<u64>,
    revision: u64,
    changes: &mut Vec<ChangeEvent>,
) -> Option<KeyValue> {
    let live = versions.last()?.value.clone()?;
    let revision = *open_write.get_or_insert(revision + 1);
    record_version(versions, revision, None);
    changes.push(ChangeEvent {
        kind: ChangeKind::Delete,
        kv: KeyValue {
            key: key.to_string(),
            value: String::new(),
            create_revision: 0,
            mod_revision: revision,
            version: 0,
            lease: None,
        },
        prev_kv: None,
    });
    Some(live)
}

/// The end of the range of keys starting with `prefix` (etcd's `GetPrefixRangeEnd`).
pub fn prefix_range_end(prefix: &str) -> String {
    let mut bytes = prefix.as_bytes().to_vec();
    while let Some(last) = bytes.pop() {
        if last < 0x7f {
            bytes.push(last + 1);
            return String::from_utf8(bytes).expect("ASCII stays UTF-8");
        }
    }
    "\0".to_string()
}

/// The store.
#[derive(Clone, Debug)]
pub struct MvccStore {
    revision: u64,
    compact_revision: u64,
    keys: BTreeMap<String, Vec<KeyVersion>>,
    /// Every change not compacted away, in the order they happened (so by revision): one
    /// vector, not a map of vectors, as almost every revision holds one change.
    changes: Vec<ChangeEvent>,
    /// The revision the open write transaction writes at, if it wrote anything yet.
    open_write: Option<u64>,
}

impl Default for MvccStore {
    fn default() -> Self {
        Self {
            revision: 1,
            compact_revision: 0,
            keys: BTreeMap::new(),
            changes: Vec::new(),
            open_write: None,
        }
    }
}

impl MvccStore {
    /// An empty store at revision 1.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current revision.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The last compaction's revision (0 if never compacted).
    pub fn compact_revision(&self) -> u64 {
        self.compact_revision
    }

    /// The live value of `key` (including writes of the open transaction).
    pub fn get(&self, key: &str) -> Option<&KeyValue> {
        self.keys
            .get(key)
            .and_then(|versions| versions.last())
            .and_then(|version| version.value.as_ref())
    }

    /// The keys in `range` as of `revision` (latest if `None`), in key order, with the store
    /// revision. Errors: a compacted or future revision.
    pub fn range(&self, range: &KeyRange, revision: Option<u64>) -> Result<Vec<KeyValue>, KvError> {
        let current = self.open_write.unwrap_or(self.revision);
        let at = match revision {
            None | Some(0) => current,
            Some(at) if at > current => {
                return Err(KvError::FutureRevision {
                    current_revision: current,
                });
            }
            Some(at) if at < self.compact_revision => {
                return Err(KvError::Compacted {
                    compact_revision: self.compact_revision,
                });
            }
            Some(at) => at,
        };
        let mut found = Vec::new();
        for (_, versions) in self.keys.range::<str, _>(range.bounds()) {
            let visible = versions.iter().rev().find(|version| version.revision <= at);
            if let Some(KeyVersion {
                value: Some(kv), ..
            }) = visible
            {
                found.push(kv.clone());
            }
        }
        Ok(found)
    }

    /// The value `event`'s key had just before it, as etcd fills a watch event's `prev_kv`
    /// when it sends it (v3.4.23 etcdserver/api/v3rpc/watch.go, `sendLoop`): none for a
    /// create (a put whose create and mod revisions agree), else the key read at the event's
    /// revision − 1, none when that revision is compacted or the key did not exist.
    pub fn prev_kv_of(&self, event: &ChangeEvent) -> Option<KeyValue> {
        let created =
            event.kind == ChangeKind::Put && event.kv.create_revision == event.kv.mod_revision;
        let before = event.kv.mod_revision.checked_sub(1).filter(|&r| r > 0)?;
        if created {
            return None;
        }
        let range = KeyRange::new(&event.kv.key, None);
        self.range(&range, Some(before)).ok()?.into_iter().next()
    }

    /// The revision the next write of the open transaction uses.
    fn write_revision(&mut self) -> u64 {
        *self.open_write.get_or_insert(self.revision + 1)
    }

    /// Starts a write transaction: its writes share one revision.
    pub fn begin(&mut self) {
        debug_assert!(self.open_write.is_none(), "write transactions do not nest");
        self.open_write = None;
    }

    /// Ends the write transaction; returns the store revision after it.
    pub fn commit(&mut self) -> u64 {
        if let Some(revision) = self.open_write.take() {
            self.revision = revision;
        }
        self.revision
    }

    /// Writes `value` at `key` (attached to `lease`) in the open transaction; returns the
    /// lease the previous live value was attached to (`None` if there was no live value or
    /// it had no lease).
    pub fn put(&mut self, key: &str, value: &str, lease: Option<u64>) -> Option<u64> {
        let revision = self.write_revision();
        // One search for an existing key (the common case), which allocates no key.
        let versions = match self.keys.get_mut(key) {
            Some(versions) => versions,
            None => self.keys.entry(key.to_string()).or_default(),
        };
        let previous = versions.last().and_then(|version| version.value.as_ref());
        let previous_lease = previous.and_then(|previous| previous.lease);
        let (create_revision, version) = match previous {
            Some(previous) => (previous.create_revision, previous.version + 1),
            None => (revision, 1),
        };
        let kv = KeyValue {
            key: key.to_string(),
            value: value.to_string(),
            create_revision,
            mod_revision: revision,
            version,
            lease,
        };
        record_version(versions, revision, Some(kv.clone()));
        self.changes.push(ChangeEvent {
            kind: ChangeKind::Put,
            kv,
            prev_kv: None,
        });
        previous_lease
    }

    /// Deletes every live key in `range` in the open transaction; returns what was deleted,
    /// in key order.
    pub fn delete_range(&mut self, range: &KeyRange) -> Vec<KeyValue> {
        let mut deleted = Vec::new();
        // One pass over the range, each live key tombstoned where it is found (no lookups).
        for (key, versions) in self.keys.range_mut::<str, _>(range.bounds()) {
            if let Some(live) = tombstone(
                key,
                versions,
                &mut self.open_write,
                self.revision,
                &mut self.changes,
            ) {
                deleted.push(live);
            }
        }
        deleted
    }

    /// Deletes `key` if it is live; returns its last value.
    pub fn delete(&mut self, key: &str) -> Option<KeyValue> {
        let versions = self.keys.get_mut(key)?;
        tombstone(
            key,
            versions,
            &mut self.open_write,
            self.revision,
            &mut self.changes,
        )
    }

    /// Changes with revision ≥ `from` for keys in `range`, in revision order. Errors if
    /// `from` is below the compaction revision.
    pub fn changes_since(&self, from: u64, range: &KeyRange) -> Result<Vec<ChangeEvent>, KvError> {
        if from < self.compact_revision {
            return Err(KvError::Compacted {
                compact_revision: self.compact_revision,
            });
        }
        Ok(self.changes[self.first_change_at_or_after(from)..]
            .iter()
            .filter(|event| range.contains(&event.kv.key))
            .cloned()
            .collect())
    }

    /// The changes made at `revision`.
    pub fn changes_at(&self, revision: u64) -> &[ChangeEvent] {
        let start = self.first_change_at_or_after(revision);
        let end = self.first_change_at_or_after(revision.saturating_add(1));
        &self.changes[start..end]
    }

    /// The position of the first change with revision ≥ `revision`.
    fn first_change_at_or_after(&self, revision: u64) -> usize {
        self.changes
            .partition_point(|event| event.revision() < revision)
    }

    /// Forgets history before `revision`: reads at a revision below it and watches from
    /// below it fail afterwards. A tombstone that is a key's last change at or before
    /// `revision` goes too (etcd keeps no deleted keys below the compaction point).
    /// `drop_tombstone_events` implements `etcd.compact_drops_tombstone`: the delete events
    /// at exactly `revision` are dropped from the watch history although watches from
    /// `revision` are still allowed.
    pub fn compact(&mut self, revision: u64, drop_tombstone_events: bool) -> Result<(), KvError> {
        if revision <= self.compact_revision {
            return Err(KvError::Compacted {
                compact_revision: self.compact_revision,
            });
        }
        if revision > self.revision {
            return Err(KvError::FutureRevision {
                current_revision: self.revision,
            });
        }
        self.compact_revision = revision;
        self.keys.retain(|_, versions| {
            // Keep the last version at or before `revision` (readable at `revision`) unless
            // it is a tombstone, and everything after.
            let keep_from = versions
                .iter()
                .rposition(|version| version.revision <= revision);
            if let Some(position) = keep_from {
                let drop_to = if versions[position].value.is_none() {
                    position + 1
                } else {
                    position
                };
                versions.drain(..drop_to);
            }
            !versions.is_empty()
        });
        let compacted = self.first_change_at_or_after(revision);
        self.changes.drain(..compacted);
        if drop_tombstone_events {
            self.changes
                .retain(|event| event.revision() != revision || event.kind != ChangeKind::Delete);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(store: &mut MvccStore, key: &str, value: &str) -> u64 {
        store.begin();
        store.put(key, value, None);
        store.commit()
    }

    #[test]
    fn revisions_versions_and_generations() {
        let mut store = MvccStore::new();
        assert_eq!(store.revision(), 1);
        assert_eq!(put(&mut store, "a", "1"), 2);
        assert_eq!(put(&mut store, "a", "2"), 3);
        let a = store.get("a").unwrap().clone();
        assert_eq!((a.create_revision, a.mod_revision, a.version), (2, 3, 2));
        store.begin();
        assert!(store.delete("a").is_some());
        assert_eq!(store.commit(), 4);
        // A delete of nothing does not raise the revision.
        store.begin();
        assert!(store.delete("a").is_none());
        assert_eq!(store.commit(), 4);
        assert_eq!(put(&mut store, "a", "3"), 5);
        let a = store.get("a").unwrap();
        assert_eq!((a.create_revision, a.version), (5, 1), "a new generation");
    }

    #[test]
    fn reads_at_past_revisions_and_ranges() {
        let mut store = MvccStore::new();
        put(&mut store, "k/1", "a"); // 2
        put(&mut store, "k/2", "b"); // 3
        put(&mut store, "k/1", "c"); // 4
        put(&mut store, "l", "d"); // 5
        let prefix = KeyRange::new("k/", Some(&prefix_range_end("k/")));
        let values = |kvs: Vec<KeyValue>| kvs.into_iter().map(|kv| kv.value).collect::<Vec<_>>();
        assert_eq!(values(store.range(&prefix, None).unwrap()), ["c", "b"]);
        assert_eq!(values(store.range(&prefix, Some(3)).unwrap()), ["a", "b"]);
        assert_eq!(values(store.range(&prefix, Some(2)).unwrap()), ["a"]);
        let everything = KeyRange::new("", Some("\0"));
        assert_eq!(store.range(&everything, None).unwrap().len(), 3);
        assert_eq!(
            store.range(&prefix, Some(9)),
            Err(KvError::FutureRevision {
                current_revision: 5
            })
        );
    }

    #[test]
    fn compaction_forgets_history_but_keeps_the_compacted_revision_readable() {
        let mut store = MvccStore::new();
        put(&mut store, "a", "1"); // 2
        put(&mut store, "a", "2"); // 3
        store.begin();
        store.delete("a"); // 4
        store.commit();
        put(&mut store, "b", "x"); // 5
        store.compact(4, false).unwrap();
        let all = KeyRange::new("", Some("\0"));
        assert_eq!(
            store.range(&all, Some(3)),
            Err(KvError::Compacted {
                compact_revision: 4
            })
        );
        assert!(store.range(&all, Some(4)).unwrap().is_empty());
        assert_eq!(store.range(&all, Some(5)).unwrap().len(), 1);
        assert!(store.changes_since(3, &all).is_err());
        let since = store.changes_since(4, &all).unwrap();
        assert_eq!(
            since.len(),
            2,
            "the delete at 4 and the put at 5: {since:?}"
        );
        assert_eq!(
            store.compact(4, false),
            Err(KvError::Compacted {
                compact_revision: 4
            })
        );
        assert_eq!(
            store.compact(9, false),
            Err(KvError::FutureRevision {
                current_revision: 5
            })
        );
    }

    #[test]
    fn the_tombstone_bug_drops_the_delete_event_at_the_compaction_revision() {
        let mut store = MvccStore::new();
        put(&mut store, "a", "1"); // 2
        store.begin();
        store.delete("a"); // 3
        store.commit();
        store.compact(3, true).unwrap();
        let all = KeyRange::new("", Some("\0"));
        assert!(store.changes_since(3, &all).unwrap().is_empty());
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_range_end("a/"), "a0");
        assert_eq!(prefix_range_end("ab"), "ac");
        assert_eq!(prefix_range_end(""), "\0");
    }
}
