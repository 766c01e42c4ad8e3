//! What a ZAB core asks its driver to do, in order.

use super::{
    Zxid,
    message::{LogEntry, Notification, PeerMessage},
    state_machine::StateMachine,
};
use sim::{NodeId, coverage::Mark, history::ProtocolEvent};
use std::sync::Arc;

/// A FIFO connection between two servers, as the driver numbers them (sim's connection id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Link(pub u64);

/// Names one durability barrier: [`Effect::Sync`] asks for it, `on_persisted` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PersistToken(pub u64);

/// A write to the server's disk (volatile until the next [`Effect::Sync`] completes).
#[derive(Clone, Debug, PartialEq)]
pub enum Write<S: StateMachine> {
    /// Replace the accepted epoch.
    AcceptedEpoch(u32),
    /// Replace the current epoch.
    CurrentEpoch(u32),
    /// Append to the transaction log.
    Append(LogEntry<S::Txn>),
    /// Keep only the first `keep` log records.
    TruncateLog {
        /// Records to keep.
        keep: usize,
    },
    /// Replace the snapshot, leaving the log as it is: on loading, the log is read on from
    /// the snapshot's zxid. ZooKeeper's `takeSnapshot` (a new snapshot file, the txn log
    /// untouched): a leader's once established, a follower's after a TRUNC sync, and the
    /// SNAP's under `zab.snap_zxid_below_log_tail`.
    ReplaceSnapshot {
        /// The snapshot's last zxid.
        zxid: Zxid,
        /// The state.
        snapshot: S::Snapshot,
    },
    /// Replace the snapshot and empty the log (the log continues after the snapshot).
    InstallSnapshot {
        /// The snapshot's last zxid.
        zxid: Zxid,
        /// The state.
        snapshot: S::Snapshot,
    },
}

/// How the server layer above ZAB should serve clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Serving {
    /// Established leader of `epoch`.
    AsLeader {
        /// The epoch.
        epoch: u32,
    },
    /// Synchronized follower of `leader` in `epoch`.
    AsFollower {
        /// The leader.
        leader: NodeId,
        /// The epoch.
        epoch: u32,
    },
    /// Synchronized observer of `leader` in `epoch`: serves clients as a follower does
    /// (reads here, writes forwarded) but votes in nothing.
    AsObserver {
        /// The leader.
        leader: NodeId,
        /// The epoch.
        epoch: u32,
    },
    /// Not serving (electing, discovering or synchronizing).
    Stopped,
}

/// One output of the core. The driver executes effects in order.
#[derive(Debug, PartialEq)]
pub enum Effect<S: StateMachine, A> {
    /// Send an election notification (datagram).
    Notify {
        /// The recipient.
        to: NodeId,
        /// The notification.
        notification: Notification,
    },
    /// Open a FIFO connection to the elected leader; report it with `on_link_up` (or
    /// `on_connect_failed`).
    Connect {
        /// The leader.
        leader: NodeId,
    },
    /// Send on a connection.
    Send {
        /// The connection.
        link: Link,
        /// The message.
        message: PeerMessage<S, A>,
    },
    /// Close a connection.
    Disconnect {
        /// The connection.
        link: Link,
    },
    /// Write to disk (volatile).
    Persist(Write<S>),
    /// Make every earlier write durable, then call `on_persisted(token)`.
    Sync {
        /// The barrier.
        token: PersistToken,
    },
    /// Record a protocol event in the run's history.
    Record(ProtocolEvent),
    /// Count a coverage mark (outside the history: see `sim::coverage`).
    Reach(Mark),
    /// The server starts or stops serving clients.
    Serve(Serving),
    /// A committed transaction was applied to the state machine.
    Applied {
        /// Its zxid.
        zxid: Zxid,
        /// The transaction.
        txn: Arc<S::Txn>,
        /// What applying it produced.
        output: S::Output,
    },
    /// A message of the layer above arrived from `from`.
    App {
        /// The sender.
        from: NodeId,
        /// The message.
        message: A,
    },
}
