//! A double barrier's promise: nobody is through the entry before every participant has
//! begun to enter, nobody is through the exit before every participant has begun to
//! leave, and, once the run is over, nobody who began to enter is left behind.
//!
//! The participants of a barrier are every client process that began to enter it (the
//! workloads use one barrier node per round, each with all the clients as participants).
//!
//! **Reads:** the barrier recipe's `RecipeEvent::Barrier` records, written at the client
//! node: `Entering` and `Leaving` before the recipe does anything, `Entered` and `Left` once
//! it believes it is through. The ordering is judged on the global clock, which a real test
//! lacks. No server event is read.

use crate::{Violation, history::locks::Holder};
use sim::{
    history::{Event, History, RecipeEvent, recipe::BarrierStep},
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// Which gate of the double barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// The entry: through it is `Entered`, begun is `Entering`.
    Entry,
    /// The exit: through it is `Left`, begun is `Leaving`.
    Exit,
}

/// A broken barrier promise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BarrierViolation {
    /// Someone was through a gate before a participant had begun to pass it.
    ThroughTooEarly {
        /// The barrier.
        barrier: String,
        /// The gate.
        gate: Gate,
        /// Who was through.
        through: Holder,
        /// When.
        at: SimTime,
        /// The participant who had not begun, and when it did (`None`: never).
        late: (Holder, Option<SimTime>),
    },
    /// A participant began to enter and never left.
    LeftBehind {
        /// The barrier.
        barrier: String,
        /// Who.
        participant: Holder,
        /// Its last step.
        last: BarrierStep,
    },
}

impl fmt::Display for BarrierViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BarrierViolation::ThroughTooEarly {
                barrier,
                gate,
                through,
                at,
                late: (late, began),
            } => {
                let began = began.map_or("never".to_string(), |at| format!("at {at}"));
                write!(
                    f,
                    "{}/{} was through the {} of `{barrier}` at {at}, but {}/{} began to pass \
                     it only {began}",
                    through.0,
                    through.1,
                    match gate {
                        Gate::Entry => "entry",
                        Gate::Exit => "exit",
                    },
                    late.0,
                    late.1
                )
            }
            BarrierViolation::LeftBehind {
                barrier,
                participant,
                last,
            } => write!(
                f,
                "{}/{} never got out of `{barrier}`: its last step was {last:?}",
                participant.0, participant.1
            ),
        }
    }
}

impl Violation for BarrierViolation {
    fn property(&self) -> &'static str {
        "double barrier"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper recipes, Double Barriers; Hunt et al., ZooKeeper (USENIX ATC 2010), section 2.4"
    }

    fn at(&self) -> Option<SimTime> {
        // When the participant went through too early; unknown for one left behind.
        match self {
            BarrierViolation::ThroughTooEarly { at, .. } => Some(*at),
            BarrierViolation::LeftBehind { .. } => None,
        }
    }
}

/// Every broken promise of every barrier in `history`.
pub fn check(history: &History) -> Vec<BarrierViolation> {
    // Per barrier and participant, each step's first time.
    type Steps = BTreeMap<Holder, Vec<(BarrierStep, SimTime)>>;
    let mut barriers: BTreeMap<String, Steps> = BTreeMap::new();
    for record in history.records() {
        if let (
            Event::Recipe(RecipeEvent::Barrier {
                process,
                barrier,
                step,
            }),
            Some(node),
        ) = (&record.event, record.node)
        {
            barriers
                .entry(barrier.clone())
                .or_default()
                .entry((node, *process))
                .or_default()
                .push((*step, record.at));
        }
    }
    let mut violations = Vec::new();
    for (barrier, participants) in barriers {
        let first = |steps: &[(BarrierStep, SimTime)], wanted: BarrierStep| {
            steps
                .iter()
                .find(|(step, _)| *step == wanted)
                .map(|(_, at)| *at)
        };
        for (gate, begun, through) in [
            (Gate::Entry, BarrierStep::Entering, BarrierStep::Entered),
            (Gate::Exit, BarrierStep::Leaving, BarrierStep::Left),
        ] {
            // The earliest through the gate, against the latest to begin passing it.
            let earliest = participants
                .iter()
                .filter_map(|(who, steps)| Some((first(steps, through)?, *who)))
                .min();
            let Some((at, who)) = earliest else { continue };
            let latest = participants
                .iter()
                .map(|(late, steps)| (first(steps, begun), *late))
                .filter(|(began, _)| began.is_none_or(|began| began > at))
                .max_by_key(|(began, _)| began.map_or(u64::MAX, |began| began.as_nanos()));
            if let Some((began, late)) = latest {
                violations.push(BarrierViolation::ThroughTooEarly {
                    barrier: barrier.clone(),
                    gate,
                    through: who,
                    at,
                    late: (late, began),
                });
            }
        }
        for (participant, steps) in &participants {
            let last = steps.last().map(|(step, _)| *step);
            if let Some(last) = last.filter(|last| *last != BarrierStep::Left) {
                violations.push(BarrierViolation::LeftBehind {
                    barrier: barrier.clone(),
                    participant: *participant,
                    last,
                });
            }
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, record};
    use sim::{NodeId, history::Record};

    fn step(ms: u64, node: NodeId, step: BarrierStep) -> Record {
        record(
            ms,
            node,
            Event::Recipe(RecipeEvent::Barrier {
                process: 0,
                barrier: "/b".into(),
                step,
            }),
        )
    }

    #[test]
    fn entering_and_leaving_together_passes() {
        let history = History::from_records(vec![
            step(10, C1, BarrierStep::Entering),
            step(20, C2, BarrierStep::Entering),
            step(30, C2, BarrierStep::Entered),
            step(31, C1, BarrierStep::Entered),
            step(40, C1, BarrierStep::Leaving),
            step(50, C2, BarrierStep::Leaving),
            step(60, C1, BarrierStep::Left),
            step(61, C2, BarrierStep::Left),
        ]);
        assert_eq!(check(&history), vec![]);
    }

    #[test]
    fn through_the_entry_before_the_last_arrived_is_reported() {
        let history = History::from_records(vec![
            step(10, C1, BarrierStep::Entering),
            step(15, C1, BarrierStep::Entered),
            step(20, C2, BarrierStep::Entering),
            step(30, C2, BarrierStep::Entered),
            step(40, C1, BarrierStep::Leaving),
            step(50, C2, BarrierStep::Leaving),
            step(60, C1, BarrierStep::Left),
            step(61, C2, BarrierStep::Left),
        ]);
        let violations = check(&history);
        assert!(
            matches!(&violations[..], [BarrierViolation::ThroughTooEarly { gate: Gate::Entry, late, .. }]
                if late.0 == (C2, 0)),
            "{violations:?}"
        );
    }

    #[test]
    fn out_before_the_last_began_to_leave_and_left_behind_are_reported() {
        let history = History::from_records(vec![
            step(10, C1, BarrierStep::Entering),
            step(20, C2, BarrierStep::Entering),
            step(30, C2, BarrierStep::Entered),
            step(31, C1, BarrierStep::Entered),
            step(40, C1, BarrierStep::Leaving),
            step(45, C1, BarrierStep::Left),
        ]);
        let violations = check(&history);
        assert!(
            matches!(
                &violations[..],
                [
                    BarrierViolation::ThroughTooEarly {
                        gate: Gate::Exit,
                        late: (_, None),
                        ..
                    },
                    BarrierViolation::LeftBehind {
                        last: BarrierStep::Entered,
                        ..
                    },
                ]
            ),
            "{violations:?}"
        );
    }
}
