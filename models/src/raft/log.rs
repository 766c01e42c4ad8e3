//! The in-memory copy of a server's log (the driver keeps the disk copy in step).

use super::types::Entry;

/// A Raft log: entries with indexes `1..=last_index()`, no gaps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaftLog<C> {
    entries: Vec<Entry<C>>,
}

impl<C> Default for RaftLog<C> {
    fn default() -> Self {
        Self {
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
        Self { entries }
    }

    /// Index of the last entry (0 when empty).
    pub fn last_index(&self) -> u64 {
        self.entries.len() as u64
    }

    /// Term of the last entry (0 when empty).
    pub fn last_term(&self) -> u64 {
        self.entries.last().map_or(0, |entry| entry.term)
    }

    /// Term of the entry at `index`: `Some(0)` for index 0, `None` beyond the end.
    pub fn term_at(&self, index: u64) -> Option<u64> {
        if index == 0 {
            return Some(0);
        }
        self.get(index).map(|entry| entry.term)
    }

    /// The entry at `index`.
    pub fn get(&self, index: u64) -> Option<&Entry<C>> {
        let position = usize::try_from(index.checked_sub(1)?).ok()?;
        self.entries.get(position)
    }

    /// Up to `max` entries starting at `from`.
    pub fn slice(&self, from: u64, max: usize) -> Vec<Entry<C>> {
        let start = usize::try_from(from.saturating_sub(1)).unwrap_or(usize::MAX);
        if start >= self.entries.len() {
            return Vec::new();
        }
        let end = self.entries.len().min(start.saturating_add(max));
        self.entries[start..end].to_vec()
    }

    /// Keeps entries with index ≤ `index`.
    pub fn truncate_after(&mut self, index: u64) {
        let keep = usize::try_from(index).unwrap_or(usize::MAX);
        self.entries.truncate(keep);
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
        while first > 1 && self.term_at(first - 1) == Some(term) {
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
