//! Mutual exclusion as the clients believed it: no two clients hold the same lock at the
//! same simulated instant.
//!
//! "At any time, at most one client holds the lock" is what a lock promises its users. A
//! real test cannot judge it (no two machines share a clock); the simulator can, on its
//! global clock. A lease- or session-based lock cannot promise it by itself: a holder paused
//! past its session timeout or lease TTL still believes it holds the lock when the store has
//! given it to someone else (Kleppmann, "How to do distributed locking", 2016; Jepsen,
//! etcd 3.4.3, 2020). Scenarios that pause holders past their timeout expect this check to
//! fire, and judge safety at the fenced resource instead (`recipe.fenced_writes`).
//!
//! Only exclusive holds are judged here. A read/write lock's readers hold it shared and may
//! overlap one another; whether a reader overlapped a writer is `recipe.rw_exclusion`'s
//! question ([`super::rw_exclusion`]), which the read/write lock scenarios run instead of
//! this check. Writers overlapping writers would be reported by both.
//!
//! **Reads:** the lock recipes' `RecipeEvent::Lock` records (acquired, released, lost),
//! written at the client node by the recipe, which is the client's belief itself, and client
//! crashes from the fault records ([`crate::history::locks`]). No server event is read.

use crate::Checked;
use crate::{
    Violation,
    history::{
        beliefs::first_overlaps,
        locks::{Hold, HoldEnd, holds},
    },
};
use sim::{
    history::{History, recipe::LockMode},
    time::SimTime,
};
use std::fmt;

/// Two clients believed they held one lock at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverlappingHolds {
    /// The earlier hold.
    pub first: Hold,
    /// The hold that began while the first lasted.
    pub second: Hold,
}

fn describe(hold: &Hold) -> String {
    let (node, process) = hold.holder;
    let until = match (hold.until, hold.end) {
        (Some(until), HoldEnd::Released) => format!("released at {until}"),
        (Some(until), HoldEnd::Lost(why)) => format!("lost ({why:?}) at {until}"),
        (Some(until), HoldEnd::Crashed) => format!("crashed at {until}"),
        _ => "still held at the end".to_string(),
    };
    format!(
        "{node}/{process} (token {}) from {}, {until}",
        hold.token, hold.from
    )
}

impl fmt::Display for OverlappingHolds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "two clients held `{}` at once: {}; and {}",
            self.first.lock,
            describe(&self.first),
            describe(&self.second)
        )
    }
}

impl Violation for OverlappingHolds {
    fn property(&self) -> &'static str {
        "mutual exclusion (as believed)"
    }

    fn reference(&self) -> &'static str {
        "a lock's promise: at most one holder at a time (ZooKeeper recipes, Locks; etcd concurrency.Mutex)"
    }

    fn at(&self) -> Option<SimTime> {
        // When the second hold began.
        Some(self.second.from)
    }
}

/// Every pair of overlapping exclusive holds of one lock by different clients (each later
/// hold reported once, against the earliest hold it overlaps).
pub fn check(history: &History) -> Checked<OverlappingHolds> {
    let exclusive: Vec<Hold> = holds(history)
        .into_iter()
        .filter(|hold| hold.mode == LockMode::Exclusive)
        .collect();
    let judged = exclusive.len() as u64;
    let violations = first_overlaps(
        exclusive,
        |hold| &hold.lock,
        |hold| hold.holder,
        Hold::overlaps,
    )
    .into_iter()
    .map(|(first, second)| OverlappingHolds { first, second })
    .collect();
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, crash, exclusive, lock_step};
    use sim::history::{
        History,
        recipe::{LockStep, LossReason},
    };

    #[test]
    fn holds_one_after_another_pass() {
        let history = History::from_records(vec![
            lock_step(100, C1, exclusive(5)),
            lock_step(200, C1, LockStep::Released { token: 5 }),
            lock_step(250, C2, exclusive(9)),
            lock_step(
                300,
                C2,
                LockStep::Lost {
                    token: 9,
                    why: LossReason::SessionExpired,
                },
            ),
            lock_step(400, C1, exclusive(12)),
        ]);
        assert_eq!(check(&history), vec![]);
    }

    #[test]
    fn a_paused_holder_still_believing_overlaps_the_next() {
        let history = History::from_records(vec![
            lock_step(100, C1, exclusive(5)),
            lock_step(900, C2, exclusive(9)),
            lock_step(
                1_500,
                C1,
                LockStep::Lost {
                    token: 5,
                    why: LossReason::SessionExpired,
                },
            ),
        ]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(
            (violations[0].first.token, violations[0].second.token),
            (5, 9)
        );
        // Exclusion broke when the second hold began.
        assert_eq!(violations[0].at(), Some(SimTime::from_millis(900)));
        assert!(
            violations[0]
                .to_string()
                .contains("lost (SessionExpired) at 1.500000s")
        );
    }

    #[test]
    fn a_crashed_holder_holds_nothing_and_an_open_hold_lasts_to_the_end() {
        let history = History::from_records(vec![
            lock_step(100, C1, exclusive(5)),
            crash(500, C1),
            lock_step(900, C2, exclusive(9)),
        ]);
        assert_eq!(check(&history), vec![]);
        let history = History::from_records(vec![
            lock_step(100, C1, exclusive(5)),
            lock_step(900, C2, exclusive(9)),
        ]);
        assert_eq!(check(&history).len(), 1);
    }

    #[test]
    fn overlapping_readers_are_left_to_the_read_write_check() {
        let history = History::from_records(vec![
            lock_step(100, C1, crate::test_history::shared(5)),
            lock_step(200, C2, crate::test_history::shared(9)),
        ]);
        assert_eq!(check(&history), vec![]);
    }
}
