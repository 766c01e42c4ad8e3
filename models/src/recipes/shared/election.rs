//! What both election recipes share: how they record what their client believes
//! (`OnStartedLeading`, `OnStoppedLeading`, `OnNewLeader` in the seeds' gocorex election,
//! as `ElectionStep`s).

use crate::recipes::shared::error::RecipeError;
use crate::recipes::shared::held::Role;
use sim::{
    NodeContext,
    history::{
        Event, RecipeEvent,
        recipe::{ElectionStep, LossReason},
    },
};

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

    /// Records that the client stopped trying, and why ([`gave_up_why`]).
    pub(crate) fn gave_up(&self, error: &RecipeError) {
        self.record(ElectionStep::GaveUp {
            why: gave_up_why(error),
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

/// What the history says a candidate gave up for: the error's text, but for a timeout the
/// election's own words. The checkers and the history digests read these texts: keep them.
fn gave_up_why(error: &RecipeError) -> String {
    match error {
        RecipeError::TimedOut => "timed out campaigning".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_words_a_candidate_that_gave_up_as_it_always_has() {
        assert_eq!(gave_up_why(&RecipeError::TimedOut), "timed out campaigning");
        assert_eq!(
            gave_up_why(&RecipeError::SessionEnded),
            "the session or lease ended"
        );
        assert_eq!(
            gave_up_why(&RecipeError::Store("NoAuth".into())),
            "the store refused: NoAuth"
        );
        assert_eq!(gave_up_why(&RecipeError::NotLeader), "not the leader");
    }
}
