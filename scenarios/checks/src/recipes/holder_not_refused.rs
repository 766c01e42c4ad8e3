//! A fenced resource refuses only stale writers: a write is rejected only if the resource
//! had accepted a write with a *higher* token before it.
//!
//! Fencing (Kleppmann, "How to do distributed locking", 2016) asks the resource to reject a
//! token lower than one it has accepted, nothing more. A write whose token is at least
//! every token accepted before it comes, as far as the resource can know, from the current
//! holder (or leader): its own earlier writes carry the same token, and no newer holder has
//! written. Refusing it locks the holder out of the very resource its lock protects — an
//! off-by-one in the comparison (`token <= highest` for `token < highest`) refuses a
//! holder's second write, or a write retried after a lost reply. Rejections are "safe"
//! (`recipe.fenced_writes` never fires on them), so no other check sees this.
//!
//! The violation says whether the writer believed, when its write arrived, that it held
//! the lock or led with that token (a holder refused), or not (a writer the resource should
//! still have accepted, by its own rule).
//!
//! **Reads:** the fenced resource's `ResourceWrite` records (every write it received, with
//! the writer, token and verdict, recorded at the resource node as it decides, in the order
//! it decides), and, for the message, the writers' own lock and election records
//! ([`crate::history::beliefs`]). The highest token a write was judged against is the
//! highest among the writes recorded as accepted before it: the resource raises its highest
//! token only when it accepts, and records each verdict as it gives it.

use crate::Checked;
use crate::{
    Violation,
    history::{
        beliefs::tokens_believed,
        locks::{Holder, resource_writes},
    },
};
use sim::{
    history::{History, ResourceVerdict},
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// A write refused although no newer token had been accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderRefused {
    /// The resource.
    pub resource: String,
    /// The writer.
    pub writer: Holder,
    /// Its token.
    pub token: u64,
    /// The highest token the resource had accepted before (`None`: none).
    pub highest_accepted: Option<u64>,
    /// Whether the writer believed it held the lock (or led) by `token` when the write
    /// arrived.
    pub writer_held: bool,
    /// When the write arrived.
    pub at: SimTime,
}

impl fmt::Display for HolderRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (node, process) = self.writer;
        let highest = match self.highest_accepted {
            Some(highest) => format!("the highest it had accepted was {highest}"),
            None => "it had accepted no token".to_string(),
        };
        let held = if self.writer_held {
            "which it believed it held"
        } else {
            "which it did not believe it held then"
        };
        write!(
            f,
            "`{}` refused the write of {node}/{process} at {} with token {} ({held}), but \
             {highest}: only a token lower than an accepted one is stale",
            self.resource, self.at, self.token
        )
    }
}

impl Violation for HolderRefused {
    fn property(&self) -> &'static str {
        "the resource refuses only stale writers"
    }

    fn reference(&self) -> &'static str {
        "Kleppmann, How to do distributed locking (2016): reject a token lower than one \
         already processed"
    }

    fn at(&self) -> Option<SimTime> {
        // When the refused write arrived.
        Some(self.at)
    }
}

/// Every refused write whose token was not lower than every token accepted before it.
pub fn check(history: &History) -> Checked<HolderRefused> {
    let beliefs = tokens_believed(history);
    let mut highest: BTreeMap<String, u64> = BTreeMap::new();
    let mut refused = Vec::new();
    let mut judged = 0;
    for write in resource_writes(history) {
        let Some(token) = write.token else {
            continue;
        };
        judged += 1;
        let highest_accepted = highest.get(&write.resource).copied();
        match write.verdict {
            ResourceVerdict::Accepted => {
                let entry = highest.entry(write.resource.clone()).or_insert(token);
                *entry = (*entry).max(token);
            }
            ResourceVerdict::RejectedStaleToken => {
                if highest_accepted.is_some_and(|highest| highest > token) {
                    continue;
                }
                let writer_held = beliefs.iter().any(|belief| {
                    belief.holder == write.writer
                        && belief.token == token
                        && belief.from <= write.at
                        && belief.until.is_none_or(|until| until >= write.at)
                });
                refused.push(HolderRefused {
                    resource: write.resource,
                    writer: write.writer,
                    token,
                    highest_accepted,
                    writer_held,
                    at: write.at,
                });
            }
        }
    }
    Checked::new(refused, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, exclusive, lock_step, resource_write};
    use sim::history::recipe::LockStep;

    #[test]
    fn refusing_the_holder_whose_token_is_the_highest_is_reported() {
        // C1 holds by token 5 and writes twice; the resource refuses the second (an
        // off-by-one: `token <= highest`).
        let off_by_one = History::from_records(vec![
            lock_step(100, C1, exclusive(5)),
            resource_write(110, C1, Some(5), ResourceVerdict::Accepted),
            resource_write(120, C1, Some(5), ResourceVerdict::RejectedStaleToken),
            lock_step(130, C1, LockStep::Released { token: 5 }),
        ]);
        let violations = check(&off_by_one);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].highest_accepted, Some(5));
        assert!(violations[0].writer_held);
        assert!(
            violations[0]
                .to_string()
                .contains("which it believed it held")
        );
    }

    #[test]
    fn refusing_a_stale_holder_after_a_newer_token_passes() {
        // C1 was paused past its session; C2 holds by 7 and wrote; C1's write of 5 is stale.
        let stale = History::from_records(vec![
            lock_step(100, C1, exclusive(5)),
            lock_step(200, C2, exclusive(7)),
            resource_write(210, C2, Some(7), ResourceVerdict::Accepted),
            resource_write(300, C1, Some(5), ResourceVerdict::RejectedStaleToken),
        ]);
        assert_eq!(check(&stale), vec![]);
        // The same refusal with nothing newer accepted first is wrong, holder or not.
        let early = History::from_records(vec![
            resource_write(300, C1, Some(5), ResourceVerdict::RejectedStaleToken),
            resource_write(310, C2, Some(7), ResourceVerdict::Accepted),
        ]);
        let violations = check(&early);
        assert_eq!(violations.len(), 1);
        assert!(!violations[0].writer_held);
    }
}
