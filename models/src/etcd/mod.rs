//! An etcd-like key-value store on the Raft core: MVCC with revisions, transactions,
//! leases, watches and compaction, a server per node and an async client.

mod client;
mod command;
mod config;
mod get_options;
mod lease;
mod mvcc;
mod protocol;
mod range;
mod server;
mod state_machine;
mod watch;
mod watchers;

pub use client::{
    COMPACT_OPERATION, ClientConfig, EtcdClient, KeepAliveEnd, kv_response, lease_gone,
};
pub use command::{StoreCommand, is_read_only, validate};
pub use config::{CampaignCheck, EtcdBug, EtcdConfig, KnownBug, UnknownBug};
pub use get_options::GetOptions;
pub use lease::{LeaseRecord, LeaseTable, Lessor, PromotionTtl, Renewal};
pub use mvcc::{ChangeEvent, ChangeKind, KeyRange, MvccStore, prefix_range_end};
pub use protocol::{ClientFrame, ClientRequest, ClientResponse, Compacted};
pub use server::{EtcdCluster, LogCommand, StoreMessage};
pub use state_machine::{
    ApplyOutcome, ApplyResult, CompactionTombstones, LeaseChange, StoreStateMachine,
};
pub use watch::{WatchFilterType, WatchItem, WatchOptions, WatchStream, watch_records};
