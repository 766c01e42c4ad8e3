//! No client process acquires a lock, or begins to lead an election, while it still believes
//! it holds that lock or leads that election.
//!
//! The lock and election recipes here are not re-entrant (etcd's `Mutex` and `Election`,
//! ZooKeeper's lock and election recipes: one node or key per holder; Curator's re-entrant
//! `InterProcessMutex` counts re-entries without a second acquisition). A second
//! `Acquired` (or `Gained`) by the same process without a `Released` or `Lost` (or
//! `Resigned` or `Lost`) between them means either that the process took a second place in
//! line while it held the first — two nodes, two tokens, one of them hidden from everyone —
//! or that the recipe failed to record a release or a loss. Either way every other judgement
//! of the process's holds is unsound: the readers would otherwise close the first hold
//! silently at the second acquisition, as if it had been released there, and mutual
//! exclusion would be judged on a release that never happened. So it is reported as a
//! violation, with both tokens; which of the two it was, the recipe's records tell.
//!
//! **Reads:** the lock and election records (`Acquired`, `Released`, `Lost`; `Gained`,
//! `Resigned`, `Lost`) through [`crate::history::locks::holds`] and
//! [`crate::history::elections::leaderships`], whose intervals end in
//! `HoldEnd::BeganAgain` exactly there; client crashes end beliefs (a restarted process
//! believes nothing).

use crate::Checked;
use crate::{
    Violation,
    history::{elections::leaderships, locks::holds},
};
use sim::{NodeId, history::History, time::SimTime};
use std::fmt;

/// What was held twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// A lock.
    Lock,
    /// An election's leadership.
    Leadership,
}

/// A process acquired what it already believed it held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcquiredWhileHeld {
    /// A lock or a leadership.
    pub held: Held,
    /// The lock or election.
    pub name: String,
    /// The process.
    pub holder: (NodeId, u32),
    /// The token it held.
    pub held_token: u64,
    /// Since when.
    pub held_from: SimTime,
    /// The token it acquired again with.
    pub new_token: u64,
    /// When.
    pub at: SimTime,
}

impl fmt::Display for AcquiredWhileHeld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, verb) = match self.held {
            Held::Lock => ("lock", "acquired"),
            Held::Leadership => ("election", "began to lead"),
        };
        write!(
            f,
            "{}/{} {verb} {what} `{}` at {} with token {} while it still believed it held it \
             by token {} (since {}), with no release or loss recorded between",
            self.holder.0,
            self.holder.1,
            self.name,
            self.at,
            self.new_token,
            self.held_token,
            self.held_from
        )
    }
}

impl Violation for AcquiredWhileHeld {
    fn property(&self) -> &'static str {
        "no acquisition while held"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper recipes, Locks and Leader Election (one node per client); etcd \
         concurrency.Mutex and Election (one key per session)"
    }

    fn at(&self) -> Option<SimTime> {
        // The second acquisition.
        Some(self.at)
    }
}

/// Every acquisition (or leadership) begun while the same process believed it still held
/// the same lock (or led the same election).
pub fn check(history: &History) -> Checked<AcquiredWhileHeld> {
    use crate::history::locks::HoldEnd;
    let (holds, leaderships) = (holds(history), leaderships(history));
    let judged = (holds.len() + leaderships.len()) as u64;
    let locks = holds.into_iter().filter_map(|hold| {
        let (HoldEnd::BeganAgain { token }, Some(at)) = (hold.end, hold.until) else {
            return None;
        };
        Some(AcquiredWhileHeld {
            held: Held::Lock,
            name: hold.lock,
            holder: hold.holder,
            held_token: hold.token,
            held_from: hold.from,
            new_token: token,
            at,
        })
    });
    let leaderships = leaderships.into_iter().filter_map(|leadership| {
        let (HoldEnd::BeganAgain { token }, Some(at)) = (leadership.end, leadership.until) else {
            return None;
        };
        Some(AcquiredWhileHeld {
            held: Held::Leadership,
            name: leadership.election,
            holder: leadership.leader,
            held_token: leadership.token,
            held_from: leadership.from,
            new_token: token,
            at,
        })
    });
    Checked::new(locks.chain(leaderships).collect(), judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, election_step, exclusive, lock_step};
    use sim::history::recipe::{ElectionStep, LockStep};

    #[test]
    fn a_second_acquisition_without_a_release_is_reported() {
        let twice = History::from_records(vec![
            lock_step(100, C1, exclusive(1)),
            lock_step(200, C1, exclusive(3)),
            lock_step(300, C1, LockStep::Released { token: 3 }),
        ]);
        let violations = check(&twice);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!((violations[0].held_token, violations[0].new_token), (1, 3));
        assert!(violations[0].to_string().contains("still believed"));
        // And mutual exclusion is not judged on a release that never happened: the first
        // hold ends in `BeganAgain`, not `Released`.
        assert!(matches!(
            holds(&twice)[0].end,
            crate::history::locks::HoldEnd::BeganAgain { token: 3 }
        ));
    }

    #[test]
    fn acquisitions_with_releases_between_and_other_processes_pass() {
        let fine = History::from_records(vec![
            lock_step(100, C1, exclusive(1)),
            lock_step(150, C1, LockStep::Released { token: 1 }),
            lock_step(160, C2, exclusive(2)),
            lock_step(170, C2, LockStep::Released { token: 2 }),
            lock_step(200, C1, exclusive(3)),
            election_step(300, C1, ElectionStep::Gained { token: 4 }),
            election_step(400, C1, ElectionStep::Resigned { token: 4 }),
            election_step(500, C1, ElectionStep::Gained { token: 5 }),
        ]);
        assert_eq!(check(&fine), vec![]);
    }

    #[test]
    fn leading_again_without_resigning_is_reported() {
        let twice = History::from_records(vec![
            election_step(300, C1, ElectionStep::Gained { token: 4 }),
            election_step(500, C1, ElectionStep::Gained { token: 5 }),
        ]);
        let violations = check(&twice);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].held, Held::Leadership);
    }
}
