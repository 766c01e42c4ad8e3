//! The in-memory copy of a server's log (the driver keeps the disk copy in step).

use super::types::Entry;

/// A Raft log: entries with indexes `first_index()..=last_index()`, no gaps. Entries up to
/// `snapshot_index()` were compacted into a snapshot: only the last one's term is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaftLog<C> {
    /// The last index a snapshot covers (0: none); `entries[0]` has index `snapshot_index + 1`.
    snapshot_index: u64,
    /// The term of the entry at `snapshot_index` (0 with no snapshot).
    snapshot_term: u64,
    entries: Vec<Entry<C>>,
}

impl<C> Default for RaftLog<C> {
    fn default() -> Self {
        Self {
            snapshot_index: 0,
            snapshot_term: 0,
            entries: Vec::new(),
        }
    }
}

impl<C: Clone> RaftLog<C> {
    /// A log holding `entries`, which must be numbered `1..=n`.
    pub fn from_entries(entries: Vec<Entry<C>>) -> Self {
        debug_assert!(
            entries
                .iter()
                .enumerate()
                .all(|(position, entry)| entry.index == position as u64 + 1),
            "log entries must be numbered from 1 without gaps"
        );
        Self {
            entries,
            ..Self::default()
        }
    }

    /// A log compacted through (`snapshot_index`, `snapshot_term`) holding `entries` after
    /// it, which must be numbered from `snapshot_index + 1`.
    pub fn after_snapshot(snapshot_index: u64, snapshot_term: u64, entries: Vec<Entry<C>>) -> Self {
        debug_assert!(
            entries
                .iter()
                .enumerate()
                .all(|(position, entry)| entry.index == snapshot_index + position as u64 + 1),
            "log entries must follow the snapshot without gaps"
        );
        Self {
            snapshot_index,
            snapshot_term,
            entries,
        }
    }

    /// The last index compacted into a snapshot (0: none).
    pub fn snapshot_index(&self) -> u64 {
        self.snapshot_index
    }

    /// The index of the first entry still held (`snapshot_index() + 1`).
    pub fn first_index(&self) -> u64 {
        self.snapshot_index + 1
    }

    /// Index of the last entry (the snapshot's index when no entry follows it; 0 when empty).
    pub fn last_index(&self) -> u64 {
        self.snapshot_index + self.entries.len() as u64
    }

    /// Term of the last entry (the snapshot's term when no entry follows it; 0 when empty).
    pub fn last_term(&self) -> u64 {
        self.entries
            .last()
            .map_or(self.snapshot_term, |entry| entry.term)
    }

    /// Term of the entry at `index`: the snapshot's term at its index (`Some(0)` for index 0
    /// without one), `None` before it (compacted) and beyond the end.
    pub fn term_at(&self, index: u64) -> Option<u64> {
        if index == self.snapshot_index {
            return Some(self.snapshot_term);
        }
        self.get(index).map(|entry| entry.term)
    }

    /// The entry at `index`, if held (not compacted, not beyond the end).
    pub fn get(&self, index: u64) -> Option<&Entry<C>> {
        let position = usize::try_from(index.checked_sub(self.first_index())?).ok()?;
        self.entries.get(position)
    }

    /// Up to `max` entries starting at `from`, which must be after the snapshot.
    pub fn slice(&self, from: u64, max: usize) -> Vec<Entry<C>> {
        debug_assert!(from > self.snapshot_index, "entry {from} was compacted");
        let start = usize::try_from(from.saturating_sub(self.first_index())).unwrap_or(usize::MAX);
        if start >= self.entries.len() {
            return Vec::new();
        }
        let end = self.entries.len().min(start.saturating_add(max));
        self.entries[start..end].to_vec()
    }

    /// Keeps entries with index ≤ `index` (never the snapshot's: `index` ≥ its index).
    pub fn truncate_after(&mut self, index: u64) {
        debug_assert!(
            index >= self.snapshot_index,
            "cannot truncate into the snapshot"
        );
        let keep = usize::try_from(index.saturating_sub(self.snapshot_index)).unwrap_or(usize::MAX);
        self.entries.truncate(keep);
    }

    /// Compacts the log through a snapshot at (`index`, `term`): if the log holds that entry
    /// the entries after it stay (Raft Fig. 13, rule 6), else the whole log is discarded
    /// (rule 7). Returns whether entries after the snapshot stayed.
    pub fn compact_through(&mut self, index: u64, term: u64) -> bool {
        let keeps_suffix = index >= self.snapshot_index && self.term_at(index) == Some(term);
        if keeps_suffix {
            let drop = usize::try_from(index - self.snapshot_index).unwrap_or(usize::MAX);
            self.entries.drain(..drop.min(self.entries.len()));
        } else {
            self.entries.clear();
        }
        self.snapshot_index = index;
        self.snapshot_term = term;
        keeps_suffix
    }

    /// Appends `entry`, which must be numbered `last_index() + 1`.
    pub fn push(&mut self, entry: Entry<C>) {
        debug_assert_eq!(entry.index, self.last_index() + 1);
        self.entries.push(entry);
    }

    /// The index of the first entry of the run of entries with the same term as the entry at
    /// `index` (used as a retry hint after a conflict, Raft §5.3 optimization).
    pub fn first_index_of_term_run(&self, index: u64) -> u64 {
        let Some(term) = self.term_at(index) else {
            return index;
        };
        let mut first = index;
        while first > self.first_index() && self.term_at(first - 1) == Some(term) {
            first -= 1;
        }
        first
    }

    /// Whether a candidate whose log ends at (`last_log_term`, `last_log_index`) is at least
    /// as up to date as this log (Raft §5.4.1).
    pub fn candidate_is_up_to_date(&self, last_log_term: u64, last_log_index: u64) -> bool {
        (last_log_term, last_log_index) >= (self.last_term(), self.last_index())
    }
}
