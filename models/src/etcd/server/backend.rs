//! The server's backend: its applied state, kept on disk with its consistent index, as
//! etcd keeps its MVCC store and lease table in bbolt.
//!
//! etcd applies entries to the backend's batch transaction in memory and commits it (with an
//! fsync) every `--backend-batch-interval`, 100 ms by default, storing the index of the last
//! entry applied (the *consistent index*) in the same transaction. After a crash it opens
//! the backend, at its last commit, and applies only the entries after that index again
//! (3.4 `etcdserver/server.go` `applyEntryNormal`: `shouldApplyV3` when `e.Index >
//! consistIndex`). A restarted server re-applies at most an interval's entries, not its
//! whole log.
//!
//! The model keeps the durable copy in a [`SyncedCell`]: a state machine and the entries
//! committed after it. A commit only moves the batch's entries into the cell; they are
//! applied to its state machine when the backend is opened again (a restart) or when more
//! than [`FOLD_AFTER_ENTRIES`] wait. What a restart finds is the same as if every commit
//! had applied its batch, but a server that never restarts does not apply each entry a
//! second time. The commit is made at the first event of the server once the interval has
//! passed (a Raft heartbeat at least comes every heartbeat interval), rather than on a
//! timer of its own.

use super::LogCommand;
use super::StoreSnapshot;
use crate::{
    etcd::state_machine::StoreStateMachine,
    raft::{Entry, EntryPayload},
};
use sim::{NodeContext, clock::LocalTime, disk::SyncedCell};
use std::time::Duration;

/// etcd's default `--backend-batch-interval`.
const BATCH_INTERVAL: Duration = Duration::from_millis(100);

/// The backend's file on the node's disk.
const BACKEND_FILE: &str = "etcd-backend";

/// How many committed entries the durable copy holds unapplied before it applies them: a
/// bound on its memory. An entry is a few words and shares its command with the Raft log,
/// but keeps the command alive once a snapshot has compacted the log. High enough that a
/// lock scenario's servers never reach it (`lock_seed raft 1` applies 7,626 commands in all).
const FOLD_AFTER_ENTRIES: usize = 1 << 16;

/// What the backend holds durably: the state after `machine` applied `committed`.
struct DurableBackend {
    machine: StoreStateMachine,
    /// Entries committed after those `machine` applied, in index order, not applied to it
    /// yet.
    committed: Vec<Entry<LogCommand>>,
    /// The index of the last entry committed (etcd's consistent index).
    consistent_index: u64,
}

impl DurableBackend {
    fn new(machine: StoreStateMachine, consistent_index: u64) -> Self {
        Self {
            machine,
            committed: Vec::new(),
            consistent_index,
        }
    }

    /// Commits `batch` (applied entries, in index order), emptying it.
    fn commit(&mut self, batch: &mut Vec<Entry<LogCommand>>) {
        let Some(last) = batch.last() else {
            return;
        };
        self.consistent_index = last.index;
        self.committed.append(batch);
        if self.committed.len() > FOLD_AFTER_ENTRIES {
            self.fold();
        }
    }

    /// Applies the committed entries to the state machine.
    fn fold(&mut self) {
        for entry in self.committed.drain(..) {
            if let EntryPayload::Command(command) = &entry.payload {
                self.machine.apply(entry.index, command);
            }
        }
    }
}

/// The backend: the durable copy and the entries applied since its last commit.
pub(super) struct Backend {
    file: SyncedCell<DurableBackend>,
    uncommitted: Vec<Entry<LogCommand>>,
    next_commit: LocalTime,
}

impl Backend {
    /// Opens the node's backend; with the state and consistent index it holds (a new
    /// backend holds `empty` at index 0).
    pub(super) fn open(
        context: &NodeContext,
        empty: StoreStateMachine,
    ) -> (Self, StoreStateMachine, u64) {
        let file = context
            .disk()
            .open_synced_cell::<DurableBackend>(BACKEND_FILE)
            .expect("the backend file has one type");
        let (machine, consistent_index) = file.update(|durable| {
            let durable = durable.get_or_insert_with(|| DurableBackend::new(empty, 0));
            durable.fold();
            (durable.machine.clone(), durable.consistent_index)
        });
        let backend = Self {
            file,
            uncommitted: Vec::new(),
            next_commit: context.clock().now() + BATCH_INTERVAL,
        };
        (backend, machine, consistent_index)
    }

    /// An entry the server applied, to be committed with the next batch.
    pub(super) fn applied(&mut self, entry: Entry<LogCommand>) {
        self.uncommitted.push(entry);
    }

    /// Commits the batch if the interval has passed since the last commit.
    pub(super) fn commit_if_due(&mut self, now: LocalTime) {
        if now < self.next_commit {
            return;
        }
        self.next_commit = now + BATCH_INTERVAL;
        if self.uncommitted.is_empty() {
            return;
        }
        let batch = &mut self.uncommitted;
        self.file
            .update(|durable| durable.as_mut().expect("opened with a value").commit(batch));
    }

    /// The state was replaced by a snapshot: the backend is too, at once (etcd replaces
    /// its backend file with the received one).
    pub(super) fn restored(&mut self, snapshot_index: u64, data: &StoreSnapshot) {
        self.uncommitted.clear();
        self.file.update(|durable| {
            *durable = Some(DurableBackend::new(
                StoreStateMachine::clone(data),
                snapshot_index,
            ));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::command::StoreCommand;
    use sim::history::kv::KvOperation;

    fn put(index: u64) -> Entry<LogCommand> {
        let operation = KvOperation::Put {
            key: format!("k{}", index % 7),
            value: format!("v{index}"),
            lease: None,
            prev_kv: false,
        };
        Entry {
            index,
            term: 1,
            payload: EntryPayload::Command(LogCommand::new(StoreCommand::Kv { operation })),
        }
    }

    /// The store a backend that applied every entry at once would hold.
    fn applied_at_once(entries: &[Entry<LogCommand>]) -> StoreStateMachine {
        let mut machine = StoreStateMachine::default();
        for entry in entries {
            if let EntryPayload::Command(command) = &entry.payload {
                machine.apply(entry.index, command);
            }
        }
        machine
    }

    fn same_store(left: &StoreStateMachine, right: &StoreStateMachine) -> bool {
        format!("{left:?}") == format!("{right:?}")
    }

    #[test]
    fn a_commit_keeps_its_entries_until_the_backend_is_folded() {
        let mut entries: Vec<_> = (1..=10).map(put).collect();
        entries[4] = Entry {
            index: 5,
            term: 2,
            payload: EntryPayload::Noop,
        };
        let mut durable = DurableBackend::new(StoreStateMachine::default(), 0);
        let mut batch = entries[..5].to_vec();
        durable.commit(&mut batch);
        assert!(batch.is_empty(), "the batch is moved into the backend");
        durable.commit(&mut entries[5..].to_vec());
        assert_eq!(durable.consistent_index, 10);
        assert_eq!(durable.committed.len(), 10, "nothing applied at a commit");
        assert_eq!(
            durable.machine.mvcc().revision(),
            1,
            "still the empty store"
        );
        durable.fold();
        assert!(durable.committed.is_empty());
        assert_eq!(durable.machine.mvcc().revision(), 10, "9 puts and a no-op");
        assert!(same_store(&durable.machine, &applied_at_once(&entries)));
    }

    #[test]
    fn a_commit_past_the_bound_applies_what_waits() {
        let entries: Vec<_> = (1..=FOLD_AFTER_ENTRIES as u64 + 1).map(put).collect();
        let mut durable = DurableBackend::new(StoreStateMachine::default(), 0);
        durable.commit(&mut entries[..FOLD_AFTER_ENTRIES].to_vec());
        assert_eq!(durable.committed.len(), FOLD_AFTER_ENTRIES, "at the bound");
        durable.commit(&mut entries[FOLD_AFTER_ENTRIES..].to_vec());
        assert!(durable.committed.is_empty(), "past it: applied");
        assert!(same_store(&durable.machine, &applied_at_once(&entries)));
    }
}
