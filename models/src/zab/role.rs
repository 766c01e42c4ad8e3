//! The ZAB roles' state, beside the core that holds it (as `raft/core.rs` keeps Raft's
//! `LeaderState`): plain data, read and changed by the role handlers in `election.rs`,
//! `follower.rs` and `leader.rs`, which are `impl` blocks of [`ZabCore`](super::ZabCore).

use super::{
    Zxid,
    effect::Link,
    message::{PeerState, Vote},
    state_machine::StateMachine,
};
use sim::{NodeId, clock::LocalTime};
use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

/// What the server is doing.
#[derive(Debug)]
pub(super) enum Role<S: StateMachine> {
    Looking(Election),
    Following(FollowerState),
    Leading(Box<LeaderState<S>>),
}

// Looking.

/// A looking server's election state.
#[derive(Debug)]
pub(super) struct Election {
    /// Latest vote of each server in the current round (this server included).
    pub(super) received: BTreeMap<NodeId, Vote>,
    /// Votes of servers that already follow or lead, with their rounds.
    pub(super) out_of_election: BTreeMap<NodeId, (Vote, u64, PeerState)>,
    /// When to decide, once a quorum agrees.
    pub(super) decide_at: Option<LocalTime>,
    pub(super) resend_at: LocalTime,
    pub(super) resend_interval: Duration,
}

impl Election {
    pub(super) fn idle() -> Self {
        Self {
            received: BTreeMap::new(),
            out_of_election: BTreeMap::new(),
            decide_at: None,
            resend_at: LocalTime::from_nanos(u64::MAX),
            resend_interval: Duration::ZERO,
        }
    }

    pub(super) fn next_deadline(&self) -> LocalTime {
        match self.decide_at {
            Some(decide_at) => decide_at.min(self.resend_at),
            None => self.resend_at,
        }
    }
}

// Following.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FollowerPhase {
    Connecting,
    AwaitingNewEpoch,
    AwaitingSync,
    AwaitingNewLeader,
    AwaitingUpToDate,
    Broadcast,
}

/// A following server's state.
#[derive(Debug)]
pub(super) struct FollowerState {
    pub(super) leader: NodeId,
    pub(super) link: Option<Link>,
    pub(super) phase: FollowerPhase,
    /// Back to election if nothing is heard from the leader by then (and, before
    /// broadcast, if synchronization has not finished).
    pub(super) deadline: LocalTime,
    pub(super) connect_at: Option<LocalTime>,
    pub(super) new_epoch: u32,
    pub(super) newleader_acked: bool,
    pub(super) acked: Zxid,
}

impl FollowerState {
    pub(super) fn next_deadline(&self) -> LocalTime {
        match self.connect_at {
            Some(at) => at.min(self.deadline),
            None => self.deadline,
        }
    }
}

// Leading.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LeaderPhase {
    /// Collecting FOLLOWERINFO from a quorum.
    Discovery,
    /// NEWEPOCH sent; collecting ACKEPOCH from a quorum.
    AwaitingEpochAcks,
    /// Followers synced; collecting NEWLEADER ACKs from a quorum.
    AwaitingNewLeaderAcks,
    /// Broadcasting.
    Established,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum LearnerStage {
    /// Connected; FOLLOWERINFO not yet received.
    Connected,
    /// FOLLOWERINFO received.
    InfoReceived,
    /// NEWEPOCH sent.
    EpochSent,
    /// ACKEPOCH received, with the follower's history summary.
    EpochAcked {
        last_zxid: Zxid,
        epoch_ends: Vec<Zxid>,
    },
    /// Sync and NEWLEADER sent.
    Syncing,
    /// NEWLEADER acknowledged.
    Synced,
    /// UPTODATE sent: a follower in broadcast.
    UpToDate,
}

/// What a connected learner is, by the ensemble's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LearnerKind {
    /// A voter: its ACKs count, it gets PROPOSALs and COMMITs.
    Follower,
    /// An observer: counted in nothing, it gets INFORMs of committed transactions.
    Observer,
}

#[derive(Debug)]
pub(super) struct Learner {
    pub(super) kind: LearnerKind,
    pub(super) link: Link,
    pub(super) stage: LearnerStage,
    /// Cumulative ACK: every entry up to here is durable on the follower.
    pub(super) acked: Zxid,
    pub(super) last_heard: LocalTime,
    /// The rounds of the pings sent on this link and not answered yet, oldest first: the
    /// learner echoes every ping, in order, and sends no other, so an echo answers the
    /// oldest.
    pub(super) pings_awaiting: std::collections::VecDeque<u64>,
    /// The round of the last ping the learner answered (0: none).
    pub(super) echoed_round: u64,
}

impl Learner {
    /// Receives proposals and commits (sync sent).
    pub(super) fn forwarding(&self) -> bool {
        matches!(
            self.stage,
            LearnerStage::Syncing | LearnerStage::Synced | LearnerStage::UpToDate
        )
    }

    /// ACKed NEWLEADER.
    pub(super) fn synced(&self) -> bool {
        matches!(self.stage, LearnerStage::Synced | LearnerStage::UpToDate)
    }

    /// A synced voter: its ACKs count towards commits and it keeps the quorum.
    pub(super) fn counts(&self) -> bool {
        self.kind == LearnerKind::Follower && self.synced()
    }
}

/// A leading server's state.
#[derive(Debug)]
pub(super) struct LeaderState<S: StateMachine> {
    pub(super) phase: LeaderPhase,
    /// Discovery and synchronization must finish by then.
    pub(super) init_deadline: LocalTime,
    /// Accepted epochs reported in FOLLOWERINFO by voters (the leader's own included).
    pub(super) proposers: BTreeMap<NodeId, u32>,
    /// The largest accepted epoch an observer reported during discovery: it raises the new
    /// epoch but counts towards no quorum.
    pub(super) observers_epoch: u32,
    pub(super) new_epoch: u32,
    /// The new accepted epoch is durable: NEWEPOCH may go out.
    pub(super) epoch_announced: bool,
    pub(super) epoch_ackers: BTreeSet<NodeId>,
    /// The new current epoch is durable: the leader counts towards NEWLEADER.
    pub(super) current_epoch_durable: bool,
    pub(super) newleader_ackers: BTreeSet<NodeId>,
    pub(super) learners: BTreeMap<NodeId, Learner>,
    pub(super) links: BTreeMap<Link, NodeId>,
    /// Synced learners whose connection dropped, with when they were last heard. Like
    /// ZooKeeper's LearnerHandler on a half-open TCP connection, the leader keeps counting
    /// them until `sync_limit` passes without hearing from them.
    pub(super) departed: BTreeMap<NodeId, LocalTime>,
    pub(super) last_proposed: Zxid,
    pub(super) self_durable: Zxid,
    pub(super) next_ping_at: LocalTime,
    /// The round of the last ping sent (pings are numbered in the order they are sent).
    pub(super) ping_round: u64,
    pub(super) next_quorum_check_at: LocalTime,
    pub(super) _machine: std::marker::PhantomData<S>,
}

impl<S: StateMachine> LeaderState<S> {
    pub(super) fn is_established(&self) -> bool {
        self.phase == LeaderPhase::Established
    }

    pub(super) fn links(&self) -> Vec<Link> {
        self.links.keys().copied().collect()
    }

    pub(super) fn next_deadline(&self) -> LocalTime {
        if self.is_established() {
            self.next_ping_at.min(self.next_quorum_check_at)
        } else {
            self.init_deadline
        }
    }
}
