//! What both election recipes share: their errors and how they record what their client
//! believes (`OnStartedLeading`, `OnStoppedLeading`, `OnNewLeader` in the seeds' gocorex
//! election, as `ElectionStep`s).

use crate::recipes::shared::held::Role;
use crate::recipes::shared::lock::LockError;
use sim::{
    NodeContext,
    history::{
        Event, RecipeEvent,
        recipe::{ElectionStep, LossReason},
    },
};
use std::fmt;

/// Why a campaign or a proclamation did not succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElectionError {
    /// The campaign's patience ran out.
    TimedOut,
    /// The session (ZooKeeper) or lease (etcd) ended: a new one is needed.
    SessionEnded,
    /// The client does not lead (any more): its key was deleted or replaced (etcd's
    /// `ErrElectionNotLeader`).
    NotLeader,
    /// The store refused in a way the recipe does not retry.
    Store(String),
}

impl fmt::Display for ElectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElectionError::TimedOut => f.write_str("timed out campaigning"),
            ElectionError::SessionEnded => f.write_str("the session or lease ended"),
            ElectionError::NotLeader => f.write_str("not the leader"),
            ElectionError::Store(message) => write!(f, "the store refused: {message}"),
        }
    }
}

impl std::error::Error for ElectionError {}

/// A campaign waits in line as a lock's waiter does, and fails the same ways.
impl From<LockError> for ElectionError {
    fn from(error: LockError) -> Self {
        match error {
            LockError::TimedOut => ElectionError::TimedOut,
            LockError::SessionEnded => ElectionError::SessionEnded,
            LockError::Store(message) => ElectionError::Store(message),
        }
    }
}

/// Records one client process's steps in one election, at its node.
#[derive(Clone)]
pub struct ElectionRecorder {
    context: NodeContext,
    process: u32,
    election: String,
}

impl ElectionRecorder {
    pub(crate) fn new(context: &NodeContext, process: u32, election: &str) -> Self {
        Self {
            context: context.clone(),
            process,
            election: election.to_string(),
        }
    }

    pub(crate) fn record(&self, step: ElectionStep) {
        self.context
            .history()
            .record(Event::Recipe(RecipeEvent::Election {
                process: self.process,
                election: self.election.clone(),
                step,
            }));
    }

    pub(crate) fn woken(&self, watched: &str) {
        self.record(ElectionStep::Woken {
            watched: watched.to_string(),
        });
    }

    pub(crate) fn gave_up(&self, error: &ElectionError) {
        self.record(ElectionStep::GaveUp {
            why: error.to_string(),
        });
    }

    pub(crate) fn observed(&self, leader: Option<String>) {
        self.record(ElectionStep::Observed { leader });
    }
}

impl Role for ElectionRecorder {
    fn let_go(&self, token: u64) {
        self.record(ElectionStep::Resigned { token });
    }

    fn lost(&self, token: u64, why: LossReason) {
        self.record(ElectionStep::Lost { token, why });
    }
}
