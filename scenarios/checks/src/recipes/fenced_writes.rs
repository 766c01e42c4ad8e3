//! Mutual exclusion at the resource: no write is accepted from a holder older than one whose
//! write was accepted before it.
//!
//! A lock that can be lost without its holder knowing (a pause past the session timeout)
//! is only safe if the resource it protects refuses the stale holder: each write carries the
//! lock's fencing token, and the resource rejects a token lower than one it has accepted
//! (Kleppmann, "How to do distributed locking", 2016; Jepsen, etcd 3.4.3: "locks are not
//! safe without fencing"). So: once a write of token *t* was accepted, no write of a lower
//! token may be accepted — that would overwrite what the newer holder wrote.
//!
//! Leaders write to the resource the same way, with their leadership's token, and a later
//! leader's token is higher than an earlier one's (`recipe.leader_uniqueness` says why), so
//! this is also the check that no write of a deposed leader is accepted after its
//! successor's.
//!
//! A write that carried no token (a recipe that does not fence, `recipe.no_fencing`) is
//! judged by the token of the lock or leadership its writer believed it held when the write
//! arrived.
//!
//! **Reads:** the fenced resource's `ResourceWrite` records (every write it received, with
//! the writer, token and verdict, recorded at the resource node as it decides) and, for
//! writes without a token, the writers' own lock and election records
//! ([`crate::history::locks`], [`crate::history::elections`]).

use crate::Checked;
use crate::{
    Violation,
    history::{
        beliefs::{Belief, tokens_believed},
        locks::{ResourceWrite, resource_writes},
    },
};
use sim::{
    history::{History, ResourceVerdict},
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// A stale holder's write that a resource accepted after a newer holder's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleWriteAccepted {
    /// The stale write.
    pub write: ResourceWrite,
    /// Its token (sent, or the writer's lock token when it arrived).
    pub token: u64,
    /// The newer write accepted before it.
    pub newer: ResourceWrite,
    /// The newer write's token.
    pub newer_token: u64,
}

impl fmt::Display for StaleWriteAccepted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ((writer, process), (newer, newer_process)) = (self.write.writer, self.newer.writer);
        write!(
            f,
            "`{}` accepted {writer}/{process}'s write {:?} with token {}{} at {}, after \
             accepting {newer}/{newer_process}'s write {:?} with token {} at {}",
            self.write.resource,
            self.write.value,
            self.token,
            if self.write.token.is_none() {
                " (not sent: the lock's or leadership's)"
            } else {
                ""
            },
            self.write.at,
            self.newer.value,
            self.newer_token,
            self.newer.at
        )
    }
}

impl Violation for StaleWriteAccepted {
    fn property(&self) -> &'static str {
        "mutual exclusion at the resource"
    }

    fn reference(&self) -> &'static str {
        "fencing tokens (Kleppmann 2016, How to do distributed locking; Jepsen etcd 3.4.3)"
    }

    fn at(&self) -> Option<SimTime> {
        // When the stale write was accepted.
        Some(self.write.at)
    }
}

/// The token a write is judged by: its own, or its writer's latest lock or leadership
/// token.
fn token_of(write: &ResourceWrite, believed: &[Belief]) -> Option<u64> {
    write.token.or_else(|| {
        believed
            .iter()
            .filter(|belief| belief.holder == write.writer && belief.from <= write.at)
            .max_by_key(|belief| belief.from)
            .map(|belief| belief.token)
    })
}

/// Every accepted write whose token is lower than that of a write accepted before it.
pub fn check(history: &History) -> Checked<StaleWriteAccepted> {
    let believed = tokens_believed(history);
    let mut newest: BTreeMap<String, (u64, ResourceWrite)> = BTreeMap::new();
    let mut violations = Vec::new();
    let mut judged = 0;
    for write in resource_writes(history) {
        if write.verdict != ResourceVerdict::Accepted {
            continue;
        }
        let Some(token) = token_of(&write, &believed) else {
            continue;
        };
        judged += 1;
        match newest.get(&write.resource) {
            Some((newer_token, newer)) if token < *newer_token => {
                violations.push(StaleWriteAccepted {
                    write: write.clone(),
                    token,
                    newer: newer.clone(),
                    newer_token: *newer_token,
                });
            }
            _ => {
                newest.insert(write.resource.clone(), (token, write));
            }
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, election_step, exclusive, lock_step, resource_write};
    use sim::history::{
        History,
        ResourceVerdict::{Accepted, RejectedStaleToken},
        recipe::ElectionStep,
    };

    #[test]
    fn a_rejected_stale_write_is_safe_and_an_accepted_one_is_not() {
        let safe = History::from_records(vec![
            resource_write(100, C1, Some(5), Accepted),
            resource_write(200, C2, Some(9), Accepted),
            resource_write(300, C1, Some(5), RejectedStaleToken),
            resource_write(400, C2, Some(9), Accepted),
        ]);
        assert_eq!(check(&safe), vec![]);
        let unsafe_history = History::from_records(vec![
            resource_write(200, C2, Some(9), Accepted),
            resource_write(300, C1, Some(5), Accepted),
        ]);
        let violations = check(&unsafe_history);
        assert_eq!(violations.len(), 1);
        assert_eq!((violations[0].token, violations[0].newer_token), (5, 9));
    }

    #[test]
    fn writes_without_tokens_are_judged_by_their_writers_locks() {
        let history = History::from_records(vec![
            lock_step(100, C1, exclusive(5)),
            lock_step(150, C2, exclusive(9)),
            resource_write(200, C2, None, Accepted),
            resource_write(300, C1, None, Accepted),
        ]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1);
        assert!(
            violations[0]
                .to_string()
                .contains("(not sent: the lock's or leadership's)")
        );
    }

    /// A deposed leader's write after its successor's: refused with fencing; without
    /// tokens, caught by the writers' leadership tokens.
    #[test]
    fn a_deposed_leaders_write_after_its_successors_is_stale() {
        let fenced = History::from_records(vec![
            election_step(100, C1, ElectionStep::Gained { token: 5 }),
            resource_write(150, C1, Some(5), Accepted),
            election_step(200, C2, ElectionStep::Gained { token: 9 }),
            resource_write(250, C2, Some(9), Accepted),
            resource_write(300, C1, Some(5), RejectedStaleToken),
        ]);
        assert_eq!(check(&fenced), vec![]);
        let unfenced = History::from_records(vec![
            election_step(100, C1, ElectionStep::Gained { token: 5 }),
            resource_write(150, C1, None, Accepted),
            election_step(200, C2, ElectionStep::Gained { token: 9 }),
            resource_write(250, C2, None, Accepted),
            resource_write(300, C1, None, Accepted),
        ]);
        let violations = check(&unfenced);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!((violations[0].token, violations[0].newer_token), (5, 9));
    }
}
