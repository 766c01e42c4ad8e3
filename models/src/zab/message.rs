//! Messages between ZAB servers: election notifications (datagrams) and the peer protocol
//! (FIFO connections between a follower or observer and its leader).

use super::{StateMachine, Zxid};
use sim::NodeId;
use std::sync::Arc;

/// A vote for a leader. Votes are ordered by the candidate's current epoch, then its last
/// logged zxid, then its server id — ZooKeeper's `totalOrderPredicate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Vote {
    /// The candidate's current epoch.
    pub epoch: u32,
    /// The candidate's last logged zxid.
    pub zxid: Zxid,
    /// The candidate.
    pub leader: NodeId,
}

/// What a server is doing, as told to others during elections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PeerState {
    /// Electing a leader.
    Looking,
    /// Following the leader of its vote.
    Following,
    /// Leading.
    Leading,
}

/// An election notification (fast leader election), sent as a datagram: loss and
/// duplication are harmless because notifications are re-sent and idempotent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notification {
    /// The sender's election round (ZooKeeper's logical clock).
    pub round: u64,
    /// The sender's state.
    pub state: PeerState,
    /// The sender's vote (for a follower or leader: the vote that elected its leader).
    pub vote: Vote,
}

/// One logged transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct LogEntry<T> {
    /// Its zxid.
    pub zxid: Zxid,
    /// The transaction, shared between the log, the disk and every follower's message.
    pub txn: Arc<T>,
}

/// How a leader brings a follower's history in line with its own.
#[derive(Clone, Debug, PartialEq)]
pub enum SyncMode<Snapshot> {
    /// The follower's history is a prefix of the leader's: append the entries.
    Diff,
    /// The follower has entries the leader lacks: drop everything after `to`, then append.
    Trunc {
        /// The last zxid both histories share.
        to: Zxid,
    },
    /// The follower is too far behind (or cannot be matched): replace its state with the
    /// leader's committed state at `zxid`, then append.
    Snap {
        /// The last zxid the snapshot covers.
        zxid: Zxid,
        /// The leader's state at `zxid`.
        snapshot: Snapshot,
    },
}

/// What an ACK acknowledges. ACKs are cumulative: every proposal up to the zxid is durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckKind {
    /// NEWLEADER: the synced history and the new current epoch are durable.
    NewLeader,
    /// Proposals of the broadcast phase.
    Proposals,
}

/// A message on the FIFO connection between a follower and its leader.
#[derive(Clone, Debug, PartialEq)]
pub enum PeerMessage<S: StateMachine, A> {
    /// Follower → leader, first message (discovery): the follower's accepted epoch.
    FollowerInfo {
        /// The follower's accepted epoch.
        accepted_epoch: u32,
    },
    /// Leader → follower (discovery, ZooKeeper's LEADERINFO): the proposed new epoch.
    NewEpoch {
        /// The new epoch.
        epoch: u32,
    },
    /// Follower → leader (discovery): the new epoch is durably accepted; here is my history.
    AckEpoch {
        /// The follower's current epoch.
        current_epoch: u32,
        /// The follower's last logged zxid.
        last_zxid: Zxid,
        /// The last zxid of every epoch in the follower's history, ascending (the last one
        /// is `last_zxid`), so the leader can find where the histories diverge.
        epoch_ends: Vec<Zxid>,
    },
    /// Leader → follower (synchronization): DIFF, TRUNC or SNAP, with the entries to append.
    Sync {
        /// How to reconcile.
        mode: SyncMode<S::Snapshot>,
        /// Entries to append after reconciling, ascending.
        entries: Vec<LogEntry<S::Txn>>,
    },
    /// Leader → follower: the synced history ends at `last_zxid`; adopt `epoch` as current.
    NewLeader {
        /// The new epoch.
        epoch: u32,
        /// The last zxid of the synced history.
        last_zxid: Zxid,
    },
    /// Follower → leader: everything up to `zxid` is durable.
    Ack {
        /// What is acknowledged.
        kind: AckKind,
        /// Cumulative: every entry up to here.
        zxid: Zxid,
    },
    /// Leader → follower: the leader is established; everything up to `committed` is
    /// committed; start serving.
    UpToDate {
        /// The commit point.
        committed: Zxid,
    },
    /// Leader → follower (broadcast): log this transaction.
    Proposal(LogEntry<S::Txn>),
    /// Leader → follower (broadcast): everything up to `zxid` is committed.
    Commit {
        /// Cumulative commit point.
        zxid: Zxid,
    },
    /// Leader → observer (broadcast, ZooKeeper's INFORM): this transaction is committed;
    /// log and apply it. An observer is sent no PROPOSAL and acknowledges nothing.
    Inform(LogEntry<S::Txn>),
    /// Heartbeat, both ways.
    Ping,
    /// A message of the server layer above ZAB (forwarded requests, session touches...),
    /// carried in order with the protocol's own messages.
    App(A),
}
