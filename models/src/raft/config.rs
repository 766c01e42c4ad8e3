//! Core configuration and the known-bug switches.

use sim::NodeId;
use std::{collections::BTreeSet, fmt, str::FromStr, time::Duration};

/// How one Raft server behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaftConfig {
    /// This server.
    pub id: NodeId,
    /// Every voter, this server included (fixed for the run).
    pub voters: Vec<NodeId>,
    /// Shortest election timeout; also the leader-lease and CheckQuorum window.
    pub election_timeout_min: Duration,
    /// Longest election timeout (the driver draws each timeout in between).
    pub election_timeout_max: Duration,
    /// How often a leader sends heartbeats.
    pub heartbeat_interval: Duration,
    /// At most this many entries per AppendEntries.
    pub max_entries_per_append: usize,
    /// Take a snapshot of the state machine and compact the log once this many entries were
    /// applied since the last snapshot (etcd's `--snapshot-count`); `None`: never.
    pub snapshot_threshold: Option<u64>,
    /// Known bugs switched on (none by default).
    pub bugs: BTreeSet<RaftBug>,
}

impl RaftConfig {
    /// A configuration with etcd-like timing scaled for simulation: heartbeats every 50 ms,
    /// elections after 300–600 ms of silence.
    pub fn new(id: NodeId, voters: Vec<NodeId>) -> Self {
        Self {
            id,
            voters,
            election_timeout_min: Duration::from_millis(300),
            election_timeout_max: Duration::from_millis(600),
            heartbeat_interval: Duration::from_millis(50),
            max_entries_per_append: 64,
            snapshot_threshold: None,
            bugs: BTreeSet::new(),
        }
    }

    /// With these known bugs switched on.
    pub fn with_bugs(mut self, bugs: impl IntoIterator<Item = RaftBug>) -> Self {
        self.bugs.extend(bugs);
        self
    }

    /// Whether `bug` is switched on.
    pub fn has(&self, bug: RaftBug) -> bool {
        self.bugs.contains(&bug)
    }

    /// Votes needed for a majority.
    pub fn quorum(&self) -> usize {
        self.voters.len() / 2 + 1
    }
}

/// Known-bug variants of the Raft core (scenarios/known-bugs.md), each the real wrong behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RaftBug {
    /// `raft.commit_prev_term_by_count`: the leader commits an entry once a majority stores
    /// it, whatever its term (Raft §5.4.2, Figure 8).
    CommitPrevTermByCount,
    /// `raft.volatile_vote`: `votedFor` is never made durable and votes are answered at once,
    /// so a restarted voter can vote twice in one term (camunda#5356, hazelcast#16643).
    VolatileVote,
    /// `raft.truncate_on_stale_append`: a follower truncates its log after `prev_log_index`
    /// on every accepted AppendEntries, even one whose entries it already has (Students'
    /// Guide to Raft).
    TruncateOnStaleAppend,
    /// `raft.read_without_readindex`: the leader answers linearizable reads from local state
    /// without confirming it still leads (etcd#741).
    ReadWithoutReadIndex,
    /// `raft.readindex_before_term_commit`: ReadIndex is served before the leader committed
    /// an entry of its own term (etcd-io/raft 758ff0163, etcd#12680).
    ReadIndexBeforeTermCommit,
    /// `raft.no_prevote_no_checkquorum`: no PreVote, no CheckQuorum, no leader lease: a
    /// returning partitioned node deposes a healthy leader (etcd#8499, #9333).
    NoPreVoteNoCheckQuorum,
    /// `raft.ack_before_fsync`: the leader counts its own log as stored before the fsync, so
    /// a single-voter cluster acknowledges writes that a crash then loses (etcd#14370).
    AckBeforeFsync,
}

impl RaftBug {
    /// Every Raft bug variant.
    pub const ALL: [RaftBug; 7] = [
        RaftBug::CommitPrevTermByCount,
        RaftBug::VolatileVote,
        RaftBug::TruncateOnStaleAppend,
        RaftBug::ReadWithoutReadIndex,
        RaftBug::ReadIndexBeforeTermCommit,
        RaftBug::NoPreVoteNoCheckQuorum,
        RaftBug::AckBeforeFsync,
    ];

    /// The stable name, e.g. `raft.volatile_vote`.
    pub fn name(self) -> &'static str {
        match self {
            RaftBug::CommitPrevTermByCount => "raft.commit_prev_term_by_count",
            RaftBug::VolatileVote => "raft.volatile_vote",
            RaftBug::TruncateOnStaleAppend => "raft.truncate_on_stale_append",
            RaftBug::ReadWithoutReadIndex => "raft.read_without_readindex",
            RaftBug::ReadIndexBeforeTermCommit => "raft.readindex_before_term_commit",
            RaftBug::NoPreVoteNoCheckQuorum => "raft.no_prevote_no_checkquorum",
            RaftBug::AckBeforeFsync => "raft.ack_before_fsync",
        }
    }
}

impl fmt::Display for RaftBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a Raft known-bug variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownRaftBug {
    /// The name given.
    pub name: String,
}

impl fmt::Display for UnknownRaftBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = RaftBug::ALL.iter().map(|bug| bug.name()).collect();
        write!(
            f,
            "unknown Raft bug variant `{}` (expected one of: {})",
            self.name,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownRaftBug {}

impl FromStr for RaftBug {
    type Err = UnknownRaftBug;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        RaftBug::ALL
            .into_iter()
            .find(|bug| bug.name() == name)
            .ok_or_else(|| UnknownRaftBug { name: name.into() })
    }
}
