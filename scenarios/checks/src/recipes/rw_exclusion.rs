//! Read/write exclusion as the clients believed it: while a client holds a read/write lock
//! for writing, no other client holds it at all; readers may hold it together.
//!
//! This is what the ZooKeeper recipes' "Shared Locks" and Curator's
//! `InterProcessReadWriteLock` promise. Like `recipe.mutual_exclusion` it is judged on the
//! simulator's global clock, and like it a session-based lock cannot keep it by itself when a
//! holder is paused past its session timeout: scenarios that do that expect this check to
//! fire and judge safety at the fenced resource (`recipe.fenced_writes`).
//!
//! Overlapping readers are allowed here, so this check replaces `recipe.mutual_exclusion`
//! (which ignores shared holds) in the read/write lock scenarios.
//!
//! **Reads:** the lock recipes' `RecipeEvent::Lock` records (acquired with its mode,
//! released, lost), written at the client node by the recipe, which is the client's belief
//! itself, and client crashes from the fault records ([`crate::history::locks`]). No server
//! event is read.

use crate::Checked;
use crate::{
    Violation,
    history::{
        beliefs::first_overlaps,
        locks::{Hold, holds},
    },
};
use sim::{
    history::{History, recipe::LockMode},
    time::SimTime,
};
use std::fmt;

/// A writer held a lock while another client held it too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriterNotAlone {
    /// The earlier hold.
    pub first: Hold,
    /// The hold that began while the first lasted (at least one of the two is a writer's).
    pub second: Hold,
}

fn describe(hold: &Hold) -> String {
    let (node, process) = hold.holder;
    let role = match hold.mode {
        LockMode::Exclusive => "writer",
        LockMode::Shared => "reader",
    };
    let until = match hold.until {
        Some(until) => format!("until {until} ({:?})", hold.end),
        None => "still held at the end".to_string(),
    };
    format!(
        "{role} {node}/{process} (token {}) from {}, {until}",
        hold.token, hold.from
    )
}

impl fmt::Display for WriterNotAlone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a writer did not hold `{}` alone: {}; and {}",
            self.first.lock,
            describe(&self.first),
            describe(&self.second)
        )
    }
}

impl Violation for WriterNotAlone {
    fn property(&self) -> &'static str {
        "read/write exclusion (as believed)"
    }

    fn reference(&self) -> &'static str {
        "a read/write lock's promise: a writer holds alone, readers only with readers (ZooKeeper recipes, Shared Locks; Curator InterProcessReadWriteLock)"
    }

    fn at(&self) -> Option<SimTime> {
        // When the second hold began.
        Some(self.second.from)
    }
}

/// Every pair of overlapping holds of one lock by different clients of which at least one
/// is a writer's (each later hold reported once, against the earliest hold it overlaps).
pub fn check(history: &History) -> Checked<WriterNotAlone> {
    let holds = holds(history);
    let judged = holds.len() as u64;
    let violations = first_overlaps(
        holds,
        |hold| &hold.lock,
        |hold| hold.holder,
        |earlier, later| {
            let a_writer = earlier.mode == LockMode::Exclusive || later.mode == LockMode::Exclusive;
            a_writer && earlier.overlaps(later)
        },
    )
    .into_iter()
    .map(|(first, second)| WriterNotAlone { first, second })
    .collect();
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, crash, exclusive, lock_step, shared};
    use sim::{
        NodeId,
        history::{History, recipe::LockStep},
    };

    const C3: NodeId = NodeId::client(2);

    #[test]
    fn overlapping_readers_then_a_writer_alone_pass() {
        let history = History::from_records(vec![
            lock_step(100, C1, shared(5)),
            lock_step(150, C2, shared(6)),
            lock_step(200, C1, LockStep::Released { token: 5 }),
            lock_step(300, C2, LockStep::Released { token: 6 }),
            lock_step(300, C3, exclusive(7)),
            lock_step(400, C3, LockStep::Released { token: 7 }),
            lock_step(450, C1, shared(8)),
        ]);
        assert_eq!(check(&history), vec![]);
    }

    #[test]
    fn a_reader_inside_a_writers_hold_is_reported() {
        let history = History::from_records(vec![
            lock_step(100, C1, shared(5)),
            lock_step(150, C2, shared(6)),
            lock_step(200, C3, exclusive(7)),
            lock_step(250, C2, LockStep::Released { token: 6 }),
            lock_step(300, C1, LockStep::Released { token: 5 }),
        ]);
        let violations = check(&history);
        // The writer is reported once, against the earliest reader it overlapped.
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(
            (violations[0].first.token, violations[0].second.token),
            (5, 7)
        );
        assert!(violations[0].to_string().contains("writer"));
    }

    #[test]
    fn two_writers_overlapping_are_reported_and_a_crash_ends_a_hold() {
        let history = History::from_records(vec![
            lock_step(100, C1, exclusive(5)),
            lock_step(200, C2, exclusive(9)),
        ]);
        assert_eq!(check(&history).len(), 1);
        let history = History::from_records(vec![
            lock_step(100, C1, exclusive(5)),
            crash(150, C1),
            lock_step(200, C2, shared(9)),
        ]);
        assert_eq!(check(&history), vec![]);
    }
}
