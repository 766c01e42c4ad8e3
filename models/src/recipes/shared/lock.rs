//! What every lock recipe shares: its errors and how it records what its client believes.

use crate::recipes::shared::held::Role;
use sim::{
    NodeContext,
    history::{
        Event, RecipeEvent,
        recipe::{LockStep, LossReason},
    },
};
use std::fmt;

/// Why a lock was not acquired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockError {
    /// The try-acquire's patience ran out.
    TimedOut,
    /// The session (ZooKeeper) or lease (etcd) ended while acquiring: a new one is needed.
    SessionEnded,
    /// The store refused in a way the recipe does not retry.
    Store(String),
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::TimedOut => f.write_str("timed out waiting for the lock"),
            LockError::SessionEnded => f.write_str("the session or lease ended"),
            LockError::Store(message) => write!(f, "the store refused: {message}"),
        }
    }
}

impl std::error::Error for LockError {}

/// Records one client process's steps on one lock, at its node.
#[derive(Clone)]
pub struct LockRecorder {
    context: NodeContext,
    process: u32,
    lock: String,
}

impl LockRecorder {
    pub(crate) fn new(context: &NodeContext, process: u32, lock: &str) -> Self {
        Self {
            context: context.clone(),
            process,
            lock: lock.to_string(),
        }
    }

    pub(crate) fn record(&self, step: LockStep) {
        self.context
            .history()
            .record(Event::Recipe(RecipeEvent::Lock {
                process: self.process,
                lock: self.lock.clone(),
                step,
            }));
    }

    pub(crate) fn woken(&self, watched: &str) {
        self.record(LockStep::Woken {
            watched: watched.to_string(),
        });
    }

    pub(crate) fn gave_up(&self, error: &LockError) {
        self.record(LockStep::GaveUp {
            why: error.to_string(),
        });
    }
}

impl Role for LockRecorder {
    fn let_go(&self, token: u64) {
        self.record(LockStep::Released { token });
    }

    fn lost(&self, token: u64, why: LossReason) {
        self.record(LockStep::Lost { token, why });
    }
}
