//! What every lock recipe shares: how it records what its client believes.

use crate::recipes::shared::error::RecipeError;
use crate::recipes::shared::held::Role;
use sim::{
    NodeContext,
    history::{
        Event, RecipeEvent,
        recipe::{LockStep, LossReason},
    },
};

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

    /// Records that the client stopped trying, and why ([`gave_up_why`]).
    pub(crate) fn gave_up(&self, error: &RecipeError) {
        self.record(LockStep::GaveUp {
            why: gave_up_why(error),
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

/// What the history says a waiter gave up for: the error's text, but for a timeout the
/// lock's own words. The checkers and the history digests read these texts: keep them.
fn gave_up_why(error: &RecipeError) -> String {
    match error {
        RecipeError::TimedOut => "timed out waiting for the lock".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_words_a_waiter_that_gave_up_as_it_always_has() {
        assert_eq!(
            gave_up_why(&RecipeError::TimedOut),
            "timed out waiting for the lock"
        );
        assert_eq!(
            gave_up_why(&RecipeError::SessionEnded),
            "the session or lease ended"
        );
        assert_eq!(
            gave_up_why(&RecipeError::Store("NoAuth".into())),
            "the store refused: NoAuth"
        );
    }
}
