//! What a core asks its driver to do, in order.

use super::{
    message::Message,
    types::{Entry, HardState, PersistId, ReadRequestId, Snapshot},
};
use sim::{NodeId, clock::LocalTime};

/// One output of a [`super::RaftCore`]. The driver carries effects out in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect<C, S = ()> {
    /// Send `message` to `to` now.
    Send {
        /// Receiver.
        to: NodeId,
        /// The message.
        message: Message<C, S>,
    },
    /// Write to the disk (volatile at first) and make it durable; report durability with
    /// [`super::RaftCore::on_persisted`].
    Persist {
        /// Identifies the write.
        id: PersistId,
        /// What to write.
        write: DurableWrite<C, S>,
    },
    /// Send `message` to `to` only once the write `after` (and every earlier one) is durable:
    /// a vote or an acknowledgement must never outrun the fsync that backs it.
    SendAfterPersist {
        /// The write that must be durable first.
        after: PersistId,
        /// Receiver.
        to: NodeId,
        /// The message.
        message: Message<C, S>,
    },
    /// Apply this committed entry to the state machine. Entries come in index order.
    Apply {
        /// The entry.
        entry: Entry<C>,
    },
    /// The state machine has applied every entry up to `index`, and
    /// `RaftConfig::snapshot_threshold` entries were applied since the last snapshot: take a
    /// snapshot of it now (before applying anything later) and hand it to
    /// [`super::RaftCore::compact`].
    SnapshotDue {
        /// The applied index the state machine is at.
        index: u64,
    },
    /// Replace the state machine with this snapshot (a leader's InstallSnapshot): entries up
    /// to its index are not applied one by one; the next [`Effect::Apply`] follows it.
    RestoreSnapshot {
        /// The snapshot.
        snapshot: Snapshot<S>,
    },
    /// The read `request` may be served from the state machine now: every entry up to
    /// `read_index` has been handed out with [`Effect::Apply`].
    ReadReady {
        /// The read.
        request: ReadRequestId,
        /// The commit index the read is linearized at.
        read_index: u64,
    },
    /// The read `request` cannot be served here: this server is not (or no longer) leader.
    ReadRejected {
        /// The read.
        request: ReadRequestId,
        /// The leader, if known.
        leader_hint: Option<NodeId>,
    },
    /// Call [`super::RaftCore::tick`] when the local clock reaches `at` (replaces any
    /// earlier timer).
    SetTimer {
        /// The deadline, local time.
        at: LocalTime,
    },
    /// Something a history should record.
    Observe(Observation),
}

/// A durable write. Applied in field order: hard state, snapshot, truncation, append.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurableWrite<C, S = ()> {
    /// New term and vote, if they changed.
    pub hard_state: Option<HardState>,
    /// A new snapshot, replacing the stored one; the stored log is compacted through it as
    /// [`super::RaftLog::compact_through`] does (entries after it stay only if the log holds
    /// the snapshot's own entry). In the same write as the rest: a crash keeps all or none.
    pub snapshot: Option<Snapshot<S>>,
    /// Keep only entries with index ≤ this (a conflict was found after it).
    pub truncate_after: Option<u64>,
    /// Entries to append after the (possibly truncated) log.
    pub append: Vec<Entry<C>>,
}

impl<C, S> Default for DurableWrite<C, S> {
    fn default() -> Self {
        Self {
            hard_state: None,
            snapshot: None,
            truncate_after: None,
            append: Vec::new(),
        }
    }
}

impl<C, S> DurableWrite<C, S> {
    /// Whether the write changes nothing.
    pub fn is_empty(&self) -> bool {
        self.hard_state.is_none()
            && self.snapshot.is_none()
            && self.truncate_after.is_none()
            && self.append.is_empty()
    }
}

/// Protocol steps a history records (`sim::history::ProtocolEvent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observation {
    /// This server won the election for `term`.
    BecameLeader {
        /// The term.
        term: u64,
    },
    /// This server stopped leading `term`.
    SteppedDown {
        /// The term.
        term: u64,
    },
    /// This server took a snapshot of its state machine at `index` and compacted its log
    /// through it.
    SnapshotTaken {
        /// The last index the snapshot covers.
        index: u64,
        /// That entry's term.
        term: u64,
    },
    /// `term` is now durable on this server.
    TermPersisted {
        /// The term.
        term: u64,
    },
}
