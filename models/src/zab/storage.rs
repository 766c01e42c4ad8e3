//! The ZAB server's files on a simulated disk: accepted epoch, current epoch, snapshot, log.

use super::{LogEntry, PersistentState, StateMachine, Write, Zxid};
use sim::disk::{CellFile, Disk, DiskError, LogFile};

/// Typed handles on one server's ZAB files.
pub struct ZabFiles<S: StateMachine> {
    accepted_epoch: CellFile<u32>,
    current_epoch: CellFile<u32>,
    snapshot: CellFile<(Zxid, S::Snapshot)>,
    log: LogFile<LogEntry<S::Txn>>,
}

impl<S: StateMachine> ZabFiles<S> {
    /// Opens (creating if absent) the files on `disk`.
    pub fn open(disk: &Disk) -> Result<Self, DiskError> {
        Ok(Self {
            accepted_epoch: disk.open_cell("zab/acceptedEpoch")?,
            current_epoch: disk.open_cell("zab/currentEpoch")?,
            snapshot: disk.open_cell("zab/snapshot")?,
            log: disk.open_log("zab/log")?,
        })
    }

    /// What the files hold now (after a restart: what was synced).
    pub fn load(&self) -> PersistentState<S> {
        PersistentState {
            accepted_epoch: self.accepted_epoch.get(),
            current_epoch: self.current_epoch.get(),
            snapshot: self.snapshot.get(),
            log: self.log.read_all(),
        }
    }

    /// Performs a write (volatile until the disk syncs).
    pub fn write(&self, write: Write<S>) {
        match write {
            Write::AcceptedEpoch(epoch) => self.accepted_epoch.set(epoch),
            Write::CurrentEpoch(epoch) => self.current_epoch.set(epoch),
            Write::Append(entry) => self.log.push(entry),
            Write::TruncateLog { keep } => self.log.truncate(keep),
            Write::ReplaceSnapshot { zxid, snapshot } => self.snapshot.set((zxid, snapshot)),
            Write::InstallSnapshot { zxid, snapshot } => {
                self.snapshot.set((zxid, snapshot));
                self.log.truncate(0);
            }
        }
    }
}
