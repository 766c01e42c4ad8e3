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
//! The model keeps the durable copy in a [`SyncedCell`] and brings it up to date at each
//! commit by applying to it the entries applied since the last one. The commit is made at
//! the first event of the server once the interval has passed (a Raft heartbeat at least
//! comes every heartbeat interval), rather than on a timer of its own.

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

/// What the backend holds durably.
pub(super) struct DurableBackend {
    machine: StoreStateMachine,
    /// The index of the last entry `machine` applied (etcd's consistent index).
    consistent_index: u64,
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
            let durable = durable.get_or_insert(DurableBackend {
                machine: empty,
                consistent_index: 0,
            });
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
    pub(super) fn applied(&mut self, entry: &Entry<LogCommand>) {
        self.uncommitted.push(entry.clone());
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
        let batch = std::mem::take(&mut self.uncommitted);
        self.file.update(|durable| {
            let durable = durable.as_mut().expect("opened with a value");
            for entry in &batch {
                if let EntryPayload::Command(command) = &entry.payload {
                    durable.machine.apply(entry.index, command);
                }
                durable.consistent_index = entry.index;
            }
        });
        // Keep the vector's room for the next batch.
        self.uncommitted = batch;
        self.uncommitted.clear();
    }

    /// The state was replaced by a snapshot: the backend is too, at once (etcd replaces
    /// its backend file with the received one).
    pub(super) fn restored(&mut self, snapshot_index: u64, data: &StoreSnapshot) {
        self.uncommitted.clear();
        self.file.update(|durable| {
            *durable = Some(DurableBackend {
                machine: StoreStateMachine::clone(data),
                consistent_index: snapshot_index,
            });
        });
    }
}
