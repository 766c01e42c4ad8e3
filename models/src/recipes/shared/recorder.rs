//! How a lock's or an election's client records what it believes: it asked (requested,
//! campaigned), was woken in line, won (acquired, gained: with its fencing token), let go
//! (released, resigned), learned it had lost, or gave up. An election's client also records
//! whom it observed leading (`OnStartedLeading`, `OnStoppedLeading`, `OnNewLeader` in the
//! seeds' gocorex election, as `ElectionStep`s).
//!
//! One recorder, [`TokenRecorder`], over the two kinds of step; what differs between a
//! lock's and an election's history is said once, by [`TokenSteps`].

use crate::recipes::shared::error::RecipeError;
use sim::{
    NodeContext,
    history::{
        Event, RecipeEvent,
        recipe::{ElectionStep, LockStep, LossReason},
    },
};
use std::marker::PhantomData;

/// The steps of a recipe whose clients wait in line for a token and then hold it: a lock's
/// ([`LockStep`]) or an election's ([`ElectionStep`]).
pub trait TokenSteps: Sized {
    /// What the history says a client that timed out gave up for. The checkers and the
    /// history digests read it: keep it.
    const TIMED_OUT: &'static str;
    /// The event of `process`'s `step` in the lock or election `name`.
    fn event(process: u32, name: String, step: Self) -> RecipeEvent;
    /// A watch on `watched` woke the client in line.
    fn woken(watched: String) -> Self;
    /// The client stopped trying, for `why`.
    fn gave_up(why: String) -> Self;
    /// The holder let go of its own will (a lock's `Released`, a leadership's `Resigned`).
    fn let_go(token: u64) -> Self;
    /// The holder learned that it lost the token, and why.
    fn lost(token: u64, why: LossReason) -> Self;
}

impl TokenSteps for LockStep {
    const TIMED_OUT: &'static str = "timed out waiting for the lock";

    fn event(process: u32, lock: String, step: Self) -> RecipeEvent {
        RecipeEvent::Lock {
            process,
            lock,
            step,
        }
    }

    fn woken(watched: String) -> Self {
        LockStep::Woken { watched }
    }

    fn gave_up(why: String) -> Self {
        LockStep::GaveUp { why }
    }

    fn let_go(token: u64) -> Self {
        LockStep::Released { token }
    }

    fn lost(token: u64, why: LossReason) -> Self {
        LockStep::Lost { token, why }
    }
}

impl TokenSteps for ElectionStep {
    const TIMED_OUT: &'static str = "timed out campaigning";

    fn event(process: u32, election: String, step: Self) -> RecipeEvent {
        RecipeEvent::Election {
            process,
            election,
            step,
        }
    }

    fn woken(watched: String) -> Self {
        ElectionStep::Woken { watched }
    }

    fn gave_up(why: String) -> Self {
        ElectionStep::GaveUp { why }
    }

    fn let_go(token: u64) -> Self {
        ElectionStep::Resigned { token }
    }

    fn lost(token: u64, why: LossReason) -> Self {
        ElectionStep::Lost { token, why }
    }
}

/// Records one client process's steps (`S`) on one lock or in one election, at its node.
pub(crate) struct TokenRecorder<S> {
    context: NodeContext,
    process: u32,
    name: String,
    steps: PhantomData<fn(S)>,
}

/// Records an election's steps.
pub(crate) type ElectionRecorder = TokenRecorder<ElectionStep>;

// By hand: a derive would ask for `S: Clone`, and the steps are only named, not held.
impl<S> Clone for TokenRecorder<S> {
    fn clone(&self) -> Self {
        Self {
            context: self.context.clone(),
            process: self.process,
            name: self.name.clone(),
            steps: PhantomData,
        }
    }
}

impl<S: TokenSteps> TokenRecorder<S> {
    /// The recorder of `process` on the lock or election `name`, at `context`'s node.
    pub(crate) fn new(context: &NodeContext, process: u32, name: &str) -> Self {
        Self {
            context: context.clone(),
            process,
            name: name.to_string(),
            steps: PhantomData,
        }
    }

    pub(crate) fn record(&self, step: S) {
        self.context.history().record(Event::Recipe(S::event(
            self.process,
            self.name.clone(),
            step,
        )));
    }

    pub(crate) fn woken(&self, watched: &str) {
        self.record(S::woken(watched.to_string()));
    }

    /// Records that the client stopped trying, and why ([`gave_up_why`]).
    pub(crate) fn gave_up(&self, error: &RecipeError) {
        self.record(S::gave_up(gave_up_why::<S>(error)));
    }

    pub(crate) fn let_go(&self, token: u64) {
        self.record(S::let_go(token));
    }

    pub(crate) fn lost(&self, token: u64, why: LossReason) {
        self.record(S::lost(token, why));
    }
}

impl ElectionRecorder {
    pub(crate) fn observed(&self, leader: Option<String>) {
        self.record(ElectionStep::Observed { leader });
    }
}

/// What the history says a client gave up for: the error's text, but for a timeout the
/// recipe's own words ([`TokenSteps::TIMED_OUT`]).
fn gave_up_why<S: TokenSteps>(error: &RecipeError) -> String {
    match error {
        RecipeError::TimedOut => S::TIMED_OUT.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_words_a_client_that_gave_up_as_it_always_has() {
        assert_eq!(
            gave_up_why::<LockStep>(&RecipeError::TimedOut),
            "timed out waiting for the lock"
        );
        assert_eq!(
            gave_up_why::<ElectionStep>(&RecipeError::TimedOut),
            "timed out campaigning"
        );
        for why in [gave_up_why::<LockStep>, gave_up_why::<ElectionStep>] {
            assert_eq!(
                why(&RecipeError::SessionEnded),
                "the session or lease ended"
            );
            assert_eq!(
                why(&RecipeError::Store("NoAuth".into())),
                "the store refused: NoAuth"
            );
        }
        assert_eq!(
            gave_up_why::<ElectionStep>(&RecipeError::NotLeader),
            "not the leader"
        );
    }
}
