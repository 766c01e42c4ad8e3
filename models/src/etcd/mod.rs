//! An etcd-like key-value store on the Raft core: MVCC with revisions, transactions,
//! leases, watches and compaction, a server per node and an async client.

mod command;
mod lease;
mod mvcc;
mod state_machine;

pub use command::{StoreCommand, is_read_only, validate};
pub use lease::{LeaseRecord, LeaseTable, Lessor, PromotionTtl};
pub use mvcc::{ChangeEvent, ChangeKind, KeyRange, MvccStore, prefix_range_end};
pub use state_machine::{
    ApplyOutcome, ApplyResult, CompactionTombstones, LeaseChange, StoreStateMachine,
};
