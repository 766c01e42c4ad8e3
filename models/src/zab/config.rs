//! Ensemble configuration, protocol timing, and the known-bug switches.

use sim::NodeId;
use std::{collections::BTreeSet, fmt, str::FromStr, time::Duration};

/// A documented ZooKeeper/ZAB bug, or one of ZooKeeper's safety checks switched off, that the
/// model can reproduce (off by default).
///
/// Each switch makes the model do the real wrong thing, not set a flag for a checker; see
/// `scenarios/known-bugs.md` and the test that shows each one caught.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ZabBug {
    /// `zab.epoch_not_persisted` (ZOOKEEPER-335): the accepted and current epochs are kept
    /// in memory only and re-derived from the last logged zxid after a restart, so a quorum
    /// restart can hand the same epoch to two leaders.
    EpochNotPersisted,
    /// `zab.diff_without_trunc` (ZOOKEEPER-1154): a follower whose last zxid falls inside the
    /// leader's history gets a DIFF from that zxid even if the leader never had it, so the
    /// follower keeps an uncommitted proposal of an old epoch.
    DiffWithoutTrunc,
    /// `zab.last_processed_zxid_on_diff` (ZOOKEEPER-2355): on a DIFF the follower records the
    /// leader's last zxid as processed before applying the diff, so the diff's transactions
    /// (e.g. a session close) are never applied to its data tree.
    LastProcessedZxidOnDiff,
    /// `zab.ack_newleader_before_persist` (ZOOKEEPER-3911): a follower acknowledges NEWLEADER
    /// before the synced history is durable.
    AckNewLeaderBeforePersist,
    /// `zab.sync_not_quorum` (ZOOKEEPER-1675): the leader answers `sync` once its outstanding
    /// proposals commit, without confirming that a quorum still follows it (as ZooKeeper
    /// 3.8 does; the correct model also waits for a quorum to answer a ping sent after the
    /// sync arrived; neither proposes anything for a sync).
    SyncNotQuorum,
    /// `zab.reconnect_ignores_last_zxid`: a ZooKeeper server accepts a client's (re)connect
    /// even when the client has seen a later zxid than the server has applied, so a session
    /// that fails over to a server behind it (e.g. a deposed leader still serving) reads an
    /// older state than it already saw. The ablation of the check in ZooKeeper's
    /// `ZooKeeperServer.processConnectRequest` ("Refusing session request for client … as it
    /// has seen zxid … our last zxid is …"), which the correct model makes.
    ReconnectIgnoresLastZxid,
    /// `zab.setcurrentepoch_on_uptodate` (ZOOKEEPER-1282, 1291): a follower makes the new
    /// epoch its current epoch (in memory and on disk) only on UPTODATE, not before it
    /// acknowledges NEWLEADER. A follower that crashes in between restarts with its old
    /// current epoch and a history of the new one, so its election vote is lower than a
    /// server with the new epoch and less history, which can win and truncate it.
    SetCurrentEpochOnUpToDate,
    /// `zab.fle_nontransitive_order` (ZOOKEEPER-1419): fast leader election's vote
    /// comparison (`totalOrderPredicate`) lets the server-id tie-break win on equal zxids
    /// without asking for equal epochs, so a vote of an older epoch from a higher server
    /// beats a newer epoch's vote and is beaten by it: the order is not total, and servers
    /// with mixed epochs and equal zxids keep switching votes instead of agreeing.
    FleNontransitiveOrder,
    /// `zab.snap_zxid_below_log_tail` (ZOOKEEPER-2832): a follower synced by SNAP replaces
    /// its snapshot but leaves its transaction log on disk as it was, so an uncommitted
    /// entry it logged past the snapshot's zxid is still there; after a restart it reads the
    /// log on from the snapshot's zxid, and the never-committed entry is back in its history.
    SnapZxidBelowLogTail,
}

impl ZabBug {
    /// Every known bug.
    pub const ALL: [ZabBug; 9] = [
        ZabBug::EpochNotPersisted,
        ZabBug::DiffWithoutTrunc,
        ZabBug::LastProcessedZxidOnDiff,
        ZabBug::AckNewLeaderBeforePersist,
        ZabBug::SyncNotQuorum,
        ZabBug::ReconnectIgnoresLastZxid,
        ZabBug::SetCurrentEpochOnUpToDate,
        ZabBug::FleNontransitiveOrder,
        ZabBug::SnapZxidBelowLogTail,
    ];

    /// The stable name, e.g. `zab.epoch_not_persisted`.
    pub const fn name(self) -> &'static str {
        match self {
            ZabBug::EpochNotPersisted => "zab.epoch_not_persisted",
            ZabBug::DiffWithoutTrunc => "zab.diff_without_trunc",
            ZabBug::LastProcessedZxidOnDiff => "zab.last_processed_zxid_on_diff",
            ZabBug::AckNewLeaderBeforePersist => "zab.ack_newleader_before_persist",
            ZabBug::SyncNotQuorum => "zab.sync_not_quorum",
            ZabBug::ReconnectIgnoresLastZxid => "zab.reconnect_ignores_last_zxid",
            ZabBug::SetCurrentEpochOnUpToDate => "zab.setcurrentepoch_on_uptodate",
            ZabBug::FleNontransitiveOrder => "zab.fle_nontransitive_order",
            ZabBug::SnapZxidBelowLogTail => "zab.snap_zxid_below_log_tail",
        }
    }

    /// The public bug report it reproduces.
    pub const fn source(self) -> &'static str {
        match self {
            ZabBug::EpochNotPersisted => "ZOOKEEPER-335 (fixed by ZOOKEEPER-1081/1082)",
            ZabBug::DiffWithoutTrunc => "ZOOKEEPER-1154 (and 1156)",
            ZabBug::LastProcessedZxidOnDiff => "ZOOKEEPER-2355",
            ZabBug::AckNewLeaderBeforePersist => "ZOOKEEPER-3911 (and 3023, 4646)",
            ZabBug::SyncNotQuorum => "ZOOKEEPER-1675; Jepsen's 2019 note on ZooKeeper",
            ZabBug::ReconnectIgnoresLastZxid => {
                "ablation of ZooKeeperServer.processConnectRequest's last-zxid check"
            }
            ZabBug::SetCurrentEpochOnUpToDate => "ZOOKEEPER-1282, ZOOKEEPER-1291",
            ZabBug::FleNontransitiveOrder => "ZOOKEEPER-1419",
            ZabBug::SnapZxidBelowLogTail => "ZOOKEEPER-2832",
        }
    }
}

impl fmt::Display for ZabBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a known ZAB bug.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownBug {
    /// The name given.
    pub name: String,
}

impl fmt::Display for UnknownBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = ZabBug::ALL.iter().map(|bug| bug.name()).collect();
        write!(
            f,
            "unknown ZAB bug `{}` (expected one of: {})",
            self.name,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownBug {}

impl FromStr for ZabBug {
    type Err = UnknownBug;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        ZabBug::ALL
            .into_iter()
            .find(|bug| bug.name() == name)
            .ok_or_else(|| UnknownBug { name: name.into() })
    }
}

/// The set of known bugs switched on (empty: the correct model).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnownBugs(BTreeSet<ZabBug>);

impl KnownBugs {
    /// No bugs: the correct model.
    pub fn none() -> Self {
        Self::default()
    }

    /// Exactly this bug.
    pub fn only(bug: ZabBug) -> Self {
        Self(BTreeSet::from([bug]))
    }

    /// Whether `bug` is switched on.
    pub fn has(&self, bug: ZabBug) -> bool {
        self.0.contains(&bug)
    }

    /// The bugs switched on.
    pub fn iter(&self) -> impl Iterator<Item = ZabBug> + '_ {
        self.0.iter().copied()
    }
}

impl FromIterator<ZabBug> for KnownBugs {
    fn from_iter<I: IntoIterator<Item = ZabBug>>(bugs: I) -> Self {
        Self(bugs.into_iter().collect())
    }
}

/// Ensemble membership and protocol timing for one server.
///
/// Timing follows ZooKeeper's `tickTime`/`initLimit`/`syncLimit`, scaled down for
/// simulation: the leader pings every `tick`; a follower that hears nothing from its leader
/// for `sync_limit_ticks` ticks, or a leader that hears from less than a quorum for as long,
/// goes back to leader election; discovery and synchronization must finish within
/// `init_limit_ticks` ticks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZabConfig {
    /// This server.
    pub me: NodeId,
    /// Every voting server (this one included, unless it observes). Elections, the new
    /// epoch, NEWLEADER and commits need a strict majority of these ([`Self::quorum`]).
    pub ensemble: Vec<NodeId>,
    /// Every observer (ZooKeeper's `LearnerType.OBSERVER`; this one included if it
    /// observes): a server that learns committed transactions from the leader (INFORM),
    /// syncs like a follower and serves clients, but votes in no election, counts in no
    /// quorum and never leads. Empty by default.
    pub observers: Vec<NodeId>,
    /// The heartbeat period.
    pub tick: Duration,
    /// Liveness bound while broadcasting, in ticks.
    pub sync_limit_ticks: u32,
    /// Bound on discovery plus synchronization, in ticks.
    pub init_limit_ticks: u32,
    /// How long an election waits for a better vote once a quorum agrees (ZooKeeper's
    /// `finalizeWait`).
    pub finalize_wait: Duration,
    /// First interval between re-sent election notifications; it doubles up to
    /// `notification_resend_max`.
    pub notification_resend_min: Duration,
    /// Largest interval between re-sent election notifications.
    pub notification_resend_max: Duration,
    /// Pause between attempts to connect to the elected leader.
    pub connect_retry: Duration,
    /// How many recent transactions a leader sends as a DIFF; a follower further behind gets
    /// a SNAP (ZooKeeper's `commitLogCount`).
    pub diff_window: usize,
    /// Known bugs switched on.
    pub bugs: KnownBugs,
}

/// An ensemble that cannot be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// No servers.
    EmptyEnsemble,
    /// Observers but no voting server: nobody could lead.
    NoVoters,
    /// `me` is not in the ensemble.
    NotAMember {
        /// The server.
        me: NodeId,
    },
    /// A server is listed twice.
    Duplicate {
        /// The server.
        server: NodeId,
    },
    /// A client node was listed as a server.
    NotAServer {
        /// The node.
        node: NodeId,
    },
    /// A server that is not in the simulated world.
    NotInWorld {
        /// The node.
        node: NodeId,
    },
    /// A zero duration or count where a positive one is needed.
    ZeroTiming {
        /// Which field.
        field: &'static str,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::EmptyEnsemble => write!(f, "the ensemble has no servers"),
            ConfigError::NoVoters => write!(
                f,
                "the ensemble has only observers (expected at least one voting server)"
            ),
            ConfigError::NotAMember { me } => write!(f, "{me} is not in the ensemble"),
            ConfigError::Duplicate { server } => write!(f, "{server} is listed twice"),
            ConfigError::NotAServer { node } => write!(f, "{node} is not a server node"),
            ConfigError::NotInWorld { node } => write!(f, "{node} is not in the world"),
            ConfigError::ZeroTiming { field } => write!(f, "{field} must be positive"),
        }
    }
}

impl std::error::Error for ConfigError {}

impl ZabConfig {
    /// Default timing for server `me` of `ensemble`.
    pub fn new(me: NodeId, ensemble: Vec<NodeId>) -> Self {
        Self {
            me,
            ensemble,
            observers: Vec::new(),
            tick: Duration::from_millis(100),
            sync_limit_ticks: 5,
            init_limit_ticks: 10,
            finalize_wait: Duration::from_millis(40),
            notification_resend_min: Duration::from_millis(50),
            notification_resend_max: Duration::from_millis(800),
            connect_retry: Duration::from_millis(50),
            diff_window: 500,
            bugs: KnownBugs::none(),
        }
    }

    /// Checks membership and timing.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.ensemble.is_empty() {
            return Err(if self.observers.is_empty() {
                ConfigError::EmptyEnsemble
            } else {
                ConfigError::NoVoters
            });
        }
        let mut seen = BTreeSet::new();
        for &server in self.ensemble.iter().chain(&self.observers) {
            if !server.is_server() {
                return Err(ConfigError::NotAServer { node: server });
            }
            if !seen.insert(server) {
                return Err(ConfigError::Duplicate { server });
            }
        }
        if !seen.contains(&self.me) {
            return Err(ConfigError::NotAMember { me: self.me });
        }
        for (field, zero) in [
            ("tick", self.tick.is_zero()),
            ("sync_limit_ticks", self.sync_limit_ticks == 0),
            ("init_limit_ticks", self.init_limit_ticks == 0),
            (
                "notification_resend_min",
                self.notification_resend_min.is_zero(),
            ),
            ("connect_retry", self.connect_retry.is_zero()),
        ] {
            if zero {
                return Err(ConfigError::ZeroTiming { field });
            }
        }
        Ok(())
    }

    /// Voting servers needed for a quorum: a strict majority of the voters (observers do
    /// not count, as ZooKeeper's `QuorumMaj` counts only the voting members). With an even
    /// number of voters a strict majority is half plus one: 6 voters need 4 and tolerate 2
    /// failures, no more than 5 voters do.
    pub fn quorum(&self) -> usize {
        self.ensemble.len() / 2 + 1
    }

    /// Whether `server` votes (is in [`Self::ensemble`]).
    pub fn is_voter(&self, server: NodeId) -> bool {
        self.ensemble.contains(&server)
    }

    /// Whether `server` observes (is in [`Self::observers`]).
    pub fn is_observer(&self, server: NodeId) -> bool {
        self.observers.contains(&server)
    }

    /// Whether this server observes.
    pub fn observing(&self) -> bool {
        self.is_observer(self.me)
    }

    /// `sync_limit_ticks` ticks.
    pub fn sync_limit(&self) -> Duration {
        self.tick * self.sync_limit_ticks
    }

    /// `init_limit_ticks` ticks.
    pub fn init_limit(&self) -> Duration {
        self.tick * self.init_limit_ticks
    }
}
