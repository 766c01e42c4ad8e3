//! Messages between Raft servers. Typed values on the wire: never serialized.

use super::types::{Entry, Snapshot};

/// A message from one server to another. Every message carries the sender's term. `S` is
/// the state machine's snapshot, carried by [`Message::InstallSnapshot`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message<C, S = ()> {
    /// "Would you vote for me in `term`?" — sent without raising the sender's own term, so a
    /// partitioned node cannot disrupt the cluster when it returns (Raft thesis §9.6).
    PreVote {
        /// The term the sender would campaign in (its own term + 1).
        term: u64,
        /// Index of the sender's last log entry.
        last_log_index: u64,
        /// Term of the sender's last log entry.
        last_log_term: u64,
    },
    /// Answer to [`Message::PreVote`].
    PreVoteResponse {
        /// The proposed term if granted, else the responder's term.
        term: u64,
        /// Whether the responder would vote.
        granted: bool,
    },
    /// RequestVote RPC (Raft §5.2).
    RequestVote {
        /// The candidate's term.
        term: u64,
        /// Index of the candidate's last log entry.
        last_log_index: u64,
        /// Term of the candidate's last log entry.
        last_log_term: u64,
    },
    /// Answer to [`Message::RequestVote`].
    RequestVoteResponse {
        /// The responder's term.
        term: u64,
        /// Whether the vote was granted.
        granted: bool,
    },
    /// AppendEntries RPC (Raft §5.3).
    AppendEntries {
        /// The leader's term.
        term: u64,
        /// Index of the entry just before `entries`.
        prev_log_index: u64,
        /// Term of that entry.
        prev_log_term: u64,
        /// Entries to store (empty to probe).
        entries: Vec<Entry<C>>,
        /// The leader's commit index.
        leader_commit: u64,
    },
    /// Answer to [`Message::AppendEntries`].
    AppendEntriesResponse {
        /// The responder's term.
        term: u64,
        /// Whether the entries were stored.
        outcome: AppendOutcome,
    },
    /// InstallSnapshot RPC (Raft §7): the leader no longer holds the entries the follower
    /// needs, so it sends its latest snapshot whole (no chunks: typed values on the wire).
    /// The follower answers with an [`Message::AppendEntriesResponse`] that accepts up to the
    /// snapshot's index once the snapshot is durable, as etcd answers a MsgSnap with a
    /// MsgAppResp.
    InstallSnapshot {
        /// The leader's term.
        term: u64,
        /// The leader's latest snapshot.
        snapshot: Snapshot<S>,
    },
    /// Leader heartbeat: keeps followers from campaigning, carries the commit index, and
    /// confirms leadership for ReadIndex rounds (etcd's MsgHeartbeat).
    Heartbeat {
        /// The leader's term.
        term: u64,
        /// `min(commit index, the follower's match index)`: safe for the follower to commit.
        commit: u64,
        /// The leader's ReadIndex round this heartbeat belongs to.
        read_round: u64,
    },
    /// Answer to [`Message::Heartbeat`].
    HeartbeatResponse {
        /// The responder's term.
        term: u64,
        /// The round echoed back.
        read_round: u64,
    },
}

/// How a follower handled an AppendEntries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendOutcome {
    /// The entries are stored: the follower's log matches the leader's up to `match_index`
    /// (`prev_log_index + entries.len()` of the request that is acknowledged).
    Accepted {
        /// Highest index known to match.
        match_index: u64,
    },
    /// The follower has no entry at `rejected_prev_index` with the leader's term.
    Rejected {
        /// The request's `prev_log_index`.
        rejected_prev_index: u64,
        /// A lower index from which the leader may retry: the follower's last index, or the
        /// entry before the first one of the conflicting term.
        retry_hint: u64,
    },
}

impl<C, S> Message<C, S> {
    /// The sender's term.
    pub fn term(&self) -> u64 {
        match self {
            Message::PreVote { term, .. }
            | Message::PreVoteResponse { term, .. }
            | Message::RequestVote { term, .. }
            | Message::RequestVoteResponse { term, .. }
            | Message::AppendEntries { term, .. }
            | Message::AppendEntriesResponse { term, .. }
            | Message::InstallSnapshot { term, .. }
            | Message::Heartbeat { term, .. }
            | Message::HeartbeatResponse { term, .. } => *term,
        }
    }
}
