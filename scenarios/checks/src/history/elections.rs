//! Leaderships as clients believed them: from `OnStartedLeading` to `OnStoppedLeading`.
//!
//! Reads the `RecipeEvent::Election` records the election recipes write at the client node
//! (what the client believed: gained with a token, resigned, lost) and the crashes of client
//! nodes (a crashed process believes nothing any more: its leadership ends at the crash;
//! the `beliefs` reader the lock reader shares). Observations (`OnNewLeader`) are read
//! separately: they say whom a client thinks leads, not that it leads.

use super::beliefs::{HoldEnd, Holder, beliefs, intervals_overlap};
use sim::{
    history::{Event, History, RecipeEvent, beliefs::Held, recipe::ElectionStep},
    time::SimTime,
};

/// One interval during which a client believed it led an election.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leadership {
    /// The election.
    pub election: String,
    /// Who led.
    pub leader: Holder,
    /// Its fencing token.
    pub token: u64,
    /// When the client recorded that it began to lead.
    pub from: SimTime,
    /// When the belief ended (`None`: still leading at the end of the run).
    pub until: Option<SimTime>,
    /// How it ended (`Released`: the leader resigned).
    pub end: HoldEnd,
}

impl Leadership {
    /// Whether the two leaderships overlap in time (one still open at the end of the run
    /// overlaps everything after its start).
    pub fn overlaps(&self, other: &Leadership) -> bool {
        intervals_overlap((self.from, self.until), (other.from, other.until))
    }
}

/// Every leadership of every election, in the order they began.
pub fn leaderships(history: &History) -> Vec<Leadership> {
    beliefs(history, |held| held == Held::Leadership)
        .into_iter()
        .map(|belief| Leadership {
            election: belief.name,
            leader: belief.holder,
            token: belief.token,
            from: belief.from,
            until: belief.until,
            end: belief.end,
        })
        .collect()
}

/// A client's report of who leads an election (`OnNewLeader`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    /// The election.
    pub election: String,
    /// Who observed.
    pub observer: Holder,
    /// When.
    pub at: SimTime,
    /// The leader's announced identity (`None`: no one leads).
    pub leader: Option<String>,
}

/// Every observation of every election, in the order they were made.
pub fn observations(history: &History) -> Vec<Observation> {
    history
        .records()
        .iter()
        .filter_map(|record| match (&record.event, record.node) {
            (
                Event::Recipe(RecipeEvent::Election {
                    process,
                    election,
                    step: ElectionStep::Observed { leader },
                }),
                Some(node),
            ) => Some(Observation {
                election: election.clone(),
                observer: (node, *process),
                at: record.at,
                leader: leader.clone(),
            }),
            _ => None,
        })
        .collect()
}
