//! What one recipe record says about its process's belief that it holds a lock or leads an
//! election: the one reading of lock and election records into waits, holds and their ends.
//! The nemesis uses it to find a lock's holder and waiters (the `holder` and `waiter` fault
//! targets); the checkers use it for the intervals of belief they judge.
//!
//! A leader holds its election as a holder holds its lock: both believe they alone may act,
//! until they let go or learn of a loss; an election's candidates wait as a lock's waiters do.

use super::recipe::{ElectionStep, LockMode, LockStep, LossReason, RecipeEvent};

/// What a belief is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// A lock (its holder).
    Lock,
    /// An election's leadership (its leader).
    Leadership,
}

/// What a recipe record changes in its process's belief.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BeliefChange {
    /// Asked for the lock, or entered the election.
    StartedWaiting,
    /// Gave up waiting or campaigning.
    StoppedWaiting,
    /// Acquired the lock, or gained the leadership: it now believes it holds, by this token.
    Began {
        /// The fencing token.
        token: u64,
        /// Whether others may hold it too (a read lock's readers) or not (a leader leads
        /// alone).
        mode: LockMode,
    },
    /// Let go (released the lock, resigned the leadership), and knows it.
    LetGo,
    /// Learned it lost it.
    Lost(LossReason),
}

/// One recipe record's change of its process's belief.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecipeBelief<'a> {
    /// A lock or a leadership.
    pub held: Held,
    /// The logical process on the recording client node.
    pub process: u32,
    /// The lock or election.
    pub name: &'a str,
    /// What changed.
    pub change: BeliefChange,
}

/// The change of belief a recipe record makes, if any (a wake-up or an observed leader
/// changes none).
pub fn belief_change(recipe: &RecipeEvent) -> Option<RecipeBelief<'_>> {
    match recipe {
        RecipeEvent::Lock {
            process,
            lock,
            step,
        } => {
            let change = match step {
                LockStep::Requested { .. } => BeliefChange::StartedWaiting,
                LockStep::GaveUp { .. } => BeliefChange::StoppedWaiting,
                LockStep::Acquired { token, mode } => BeliefChange::Began {
                    token: *token,
                    mode: *mode,
                },
                LockStep::Released { .. } => BeliefChange::LetGo,
                LockStep::Lost { why, .. } => BeliefChange::Lost(*why),
                LockStep::Woken { .. } => return None,
            };
            Some(RecipeBelief {
                held: Held::Lock,
                process: *process,
                name: lock,
                change,
            })
        }
        RecipeEvent::Election {
            process,
            election,
            step,
        } => {
            let change = match step {
                ElectionStep::Campaigned => BeliefChange::StartedWaiting,
                ElectionStep::GaveUp { .. } => BeliefChange::StoppedWaiting,
                ElectionStep::Gained { token } => BeliefChange::Began {
                    token: *token,
                    // A leader leads alone.
                    mode: LockMode::Exclusive,
                },
                ElectionStep::Resigned { .. } => BeliefChange::LetGo,
                ElectionStep::Lost { why, .. } => BeliefChange::Lost(*why),
                ElectionStep::Observed { .. } | ElectionStep::Woken { .. } => return None,
            };
            Some(RecipeBelief {
                held: Held::Leadership,
                process: *process,
                name: election,
                change,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn election(step: ElectionStep) -> RecipeEvent {
        RecipeEvent::Election {
            process: 3,
            election: "/e".into(),
            step,
        }
    }

    fn change(event: &RecipeEvent) -> Option<(Held, u32, String, BeliefChange)> {
        belief_change(event).map(|belief| {
            (
                belief.held,
                belief.process,
                belief.name.to_string(),
                belief.change,
            )
        })
    }

    /// An election's candidates wait and its leader holds, as a lock's waiters and holder
    /// do, so the nemesis's `waiter` and `holder` find them.
    #[test]
    fn candidates_wait_and_leaders_hold_like_lock_waiters_and_holders() {
        let expect = |change| Some((Held::Leadership, 3, "/e".to_string(), change));
        assert_eq!(
            change(&election(ElectionStep::Campaigned)),
            expect(BeliefChange::StartedWaiting)
        );
        assert_eq!(
            change(&election(ElectionStep::Gained { token: 1 })),
            expect(BeliefChange::Began {
                token: 1,
                mode: LockMode::Exclusive
            })
        );
        assert_eq!(
            change(&election(ElectionStep::Resigned { token: 1 })),
            expect(BeliefChange::LetGo)
        );
        assert_eq!(
            change(&election(ElectionStep::Lost {
                token: 1,
                why: LossReason::LeaseExpired,
            })),
            expect(BeliefChange::Lost(LossReason::LeaseExpired))
        );
        assert_eq!(
            change(&election(ElectionStep::GaveUp { why: "x".into() })),
            expect(BeliefChange::StoppedWaiting)
        );
        assert_eq!(
            change(&election(ElectionStep::Observed { leader: None })),
            None
        );
        let lock = RecipeEvent::Lock {
            process: 3,
            lock: "/e".into(),
            step: LockStep::Acquired {
                token: 2,
                mode: LockMode::Shared,
            },
        };
        assert_eq!(
            change(&lock),
            Some((
                Held::Lock,
                3,
                "/e".to_string(),
                BeliefChange::Began {
                    token: 2,
                    mode: LockMode::Shared
                }
            ))
        );
    }
}
