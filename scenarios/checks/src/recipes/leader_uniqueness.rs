//! Leader uniqueness at the recipe level, as the clients believed it: at most one client
//! believes it leads an election at any simulated instant.
//!
//! An election promises its users one leader at a time: the candidate that won acts
//! (`OnStartedLeading`) until it resigns or learns it lost (`OnStoppedLeading`). A real test
//! cannot judge this (no two machines share a clock); the simulator can, on its global clock.
//! A session- or lease-based election cannot promise it by itself: a leader paused past its
//! session timeout or lease TTL still believes it leads when the store has elected another
//! (the same limit as a lock's: Kleppmann, "How to do distributed locking", 2016). Scenarios
//! that pause leaders expect this check to fire, and judge safety at the fenced resource
//! instead.
//!
//! Writes from deposed leaders need no check of their own: a later leader's token (the
//! ZooKeeper node's czxid, the etcd key's create revision) is higher than every earlier
//! leader's. A leader is the oldest candidate in line when it wins, and a candidate's node or
//! key lives from its creation until it leads; a candidate older than a leader would have
//! been in line, ahead of it, when that leader won. So "no write accepted from a deposed
//! leader after its successor's first accepted write" is "no accepted write with a token
//! lower than an accepted one", which `recipe.fenced_writes` judges; a write sent without a
//! token is judged there by its writer's leadership.
//!
//! **Reads:** the election recipes' `RecipeEvent::Election` records (gained, resigned, lost),
//! written at the client node by the recipe, which is the client's belief itself, and client
//! crashes from the fault records ([`crate::history::elections`]). No server event is read:
//! what the store thinks of the candidates' keys or nodes is not what the clients act on.

use crate::Checked;
use crate::{
    Violation,
    history::{
        beliefs::first_overlaps,
        elections::{Leadership, leaderships},
        locks::HoldEnd,
    },
};
use sim::{history::History, time::SimTime};
use std::fmt;

/// Two clients believed they led one election at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwoLeaders {
    /// The earlier leadership.
    pub first: Leadership,
    /// The leadership that began while the first lasted.
    pub second: Leadership,
}

fn describe(leadership: &Leadership) -> String {
    let (node, process) = leadership.leader;
    let until = match (leadership.until, leadership.end) {
        (Some(until), HoldEnd::Released) => format!("resigned at {until}"),
        (Some(until), HoldEnd::Lost(why)) => format!("lost ({why:?}) at {until}"),
        (Some(until), HoldEnd::Crashed) => format!("crashed at {until}"),
        _ => "still leading at the end".to_string(),
    };
    format!(
        "{node}/{process} (token {}) from {}, {until}",
        leadership.token, leadership.from
    )
}

impl fmt::Display for TwoLeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "two clients led `{}` at once: {}; and {}",
            self.first.election,
            describe(&self.first),
            describe(&self.second)
        )
    }
}

impl Violation for TwoLeaders {
    fn property(&self) -> &'static str {
        "leader uniqueness (as believed)"
    }

    fn reference(&self) -> &'static str {
        "an election's promise: one leader at a time (ZooKeeper recipes, Leader Election; etcd concurrency.Election)"
    }

    fn at(&self) -> Option<SimTime> {
        // When the second leadership began.
        Some(self.second.from)
    }
}

/// Every pair of overlapping leaderships of one election by different clients (each later
/// leadership reported once, against the earliest one it overlaps).
pub fn check(history: &History) -> Checked<TwoLeaders> {
    let leaderships = leaderships(history);
    let judged = leaderships.len() as u64;
    let violations = first_overlaps(
        leaderships,
        |leadership| &leadership.election,
        |leadership| leadership.leader,
        Leadership::overlaps,
    )
    .into_iter()
    .map(|(first, second)| TwoLeaders { first, second })
    .collect();
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, crash, election_step};
    use sim::history::{
        History,
        recipe::{ElectionStep, LossReason},
    };

    #[test]
    fn leaders_one_after_another_pass() {
        let history = History::from_records(vec![
            election_step(50, C1, ElectionStep::Campaigned),
            election_step(60, C2, ElectionStep::Campaigned),
            election_step(100, C1, ElectionStep::Gained { token: 5 }),
            election_step(
                150,
                C2,
                ElectionStep::Observed {
                    leader: Some("c1".into()),
                },
            ),
            election_step(200, C1, ElectionStep::Resigned { token: 5 }),
            election_step(250, C2, ElectionStep::Gained { token: 9 }),
            election_step(
                300,
                C2,
                ElectionStep::Lost {
                    token: 9,
                    why: LossReason::LeaseExpired,
                },
            ),
            election_step(400, C1, ElectionStep::Gained { token: 12 }),
            crash(500, C1),
            election_step(900, C2, ElectionStep::Gained { token: 14 }),
        ]);
        assert_eq!(check(&history), vec![]);
    }

    #[test]
    fn a_candidate_that_wins_while_the_leader_still_believes_is_a_second_leader() {
        // The candidate's lease expired while it waited; it did not look again and took the
        // lead from the leader that came after it.
        let history = History::from_records(vec![
            election_step(100, C1, ElectionStep::Gained { token: 7 }),
            election_step(900, C2, ElectionStep::Gained { token: 5 }),
            election_step(1_500, C1, ElectionStep::Resigned { token: 7 }),
        ]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(
            (violations[0].first.token, violations[0].second.token),
            (7, 5)
        );
        // Uniqueness broke when the second leadership began.
        assert_eq!(violations[0].at(), Some(SimTime::from_millis(900)));
        assert!(
            violations[0]
                .to_string()
                .contains("c1/0 (token 7) from 0.100000s, resigned at 1.500000s"),
            "{}",
            violations[0]
        );
    }

    #[test]
    fn lock_records_are_not_leaderships() {
        let history = History::from_records(vec![
            crate::test_history::lock_step(100, C1, crate::test_history::exclusive(1)),
            election_step(200, C2, ElectionStep::Gained { token: 2 }),
        ]);
        assert_eq!(check(&history), vec![]);
    }
}
