//! Log entries, durable state and the identifiers that tie effects to inputs.

use std::fmt;

/// One entry of the replicated log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<C> {
    /// Position in the log, from 1.
    pub index: u64,
    /// Term of the leader that created it.
    pub term: u64,
    /// What it carries.
    pub payload: EntryPayload<C>,
}

/// What an entry carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryPayload<C> {
    /// The empty entry a new leader appends at the start of its term (Raft §8): committing
    /// it commits everything before it and lets ReadIndex serve reads.
    Noop,
    /// A client command for the state machine.
    Command(C),
}

/// The vote-related state that must be durable before a node acts on it (Raft Fig. 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HardState {
    /// The latest term the node has seen.
    pub term: u64,
    /// The candidate it voted for in `term`, if any.
    pub voted_for: Option<sim::NodeId>,
}

/// Identifies one durable write requested by a [`super::Effect::Persist`]. Ids grow; once
/// the write with id `n` is durable, so is every write with a smaller id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PersistId(pub u64);

impl fmt::Display for PersistId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}", self.0)
    }
}

/// Identifies one read request handed to [`super::RaftCore::read_index`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReadRequestId(pub u64);

impl fmt::Display for ReadRequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

/// The state machine as of log entry `index`, standing in for every entry up to it: a
/// server that holds it keeps only the entries after `index` (log compaction, Raft §7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot<S> {
    /// The last entry the snapshot covers.
    pub index: u64,
    /// That entry's term (AppendEntries after the snapshot check `prev_log_term` against it).
    pub term: u64,
    /// The state machine's state after applying entries `1..=index` (opaque to Raft).
    pub data: S,
}
