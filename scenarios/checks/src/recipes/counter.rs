//! A counter's promise: no increment lost, none counted twice. Two acknowledged increments
//! never report the same value (two read-modify-writes from one value would be a lost
//! update); and a read after every increment ended sees the acknowledged increments plus some
//! of those whose outcome is unknown: between the two. No read ever sees more than every
//! increment attempted.
//!
//! **Reads:** the counter recipe's `RecipeEvent::Counter` records, written at the client
//! node: `Incremented` when the conditional write was acknowledged (with the value it
//! wrote), `Unknown` when its reply was lost, `Read` after a synced read. A read is judged
//! final when no increment step is recorded after it (the workloads read only once every
//! incrementer stopped). No server event is read.

use crate::{Violation, history::locks::Holder};
use sim::{
    history::{Event, History, RecipeEvent, recipe::CounterStep},
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// A broken counter promise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CounterViolation {
    /// Two acknowledged increments wrote the same value.
    LostUpdate {
        /// The counter.
        counter: String,
        /// The value both wrote.
        value: i64,
        /// Who wrote it.
        writers: Vec<Holder>,
    },
    /// A read saw a value outside what the increments allow.
    OutOfBounds {
        /// The counter.
        counter: String,
        /// Who read.
        reader: Holder,
        /// When.
        at: SimTime,
        /// What it read.
        value: i64,
        /// The least it may read (acknowledged increments; 0 for a read before the end).
        least: i64,
        /// The most it may read (every increment attempted).
        most: i64,
    },
}

impl fmt::Display for CounterViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CounterViolation::LostUpdate {
                counter,
                value,
                writers,
            } => {
                let writers: Vec<String> = writers
                    .iter()
                    .map(|(node, process)| format!("{node}/{process}"))
                    .collect();
                write!(
                    f,
                    "{} acknowledged increments of `{counter}` all wrote {value} ({}): an \
                     update was lost",
                    writers.len(),
                    writers.join(", ")
                )
            }
            CounterViolation::OutOfBounds {
                counter,
                reader,
                at,
                value,
                least,
                most,
            } => write!(
                f,
                "{}/{} read {value} from `{counter}` at {at}; the increments allow {least} to \
                 {most}",
                reader.0, reader.1
            ),
        }
    }
}

impl Violation for CounterViolation {
    fn property(&self) -> &'static str {
        "counter"
    }

    fn reference(&self) -> &'static str {
        "Curator DistributedAtomicLong; ZooKeeper Programmer's Guide, conditional updates"
    }

    fn at(&self) -> Option<SimTime> {
        // The out-of-bounds read; unknown for a lost update.
        match self {
            CounterViolation::OutOfBounds { at, .. } => Some(*at),
            CounterViolation::LostUpdate { .. } => None,
        }
    }
}

#[derive(Default)]
struct Tally {
    acknowledged: i64,
    unknown: i64,
    written: BTreeMap<i64, Vec<Holder>>,
    /// Reads with the number of increment steps recorded before each.
    reads: Vec<(Holder, SimTime, i64, usize)>,
    steps: usize,
}

/// Every broken promise of every counter in `history`.
pub fn check(history: &History) -> Vec<CounterViolation> {
    let mut counters: BTreeMap<String, Tally> = BTreeMap::new();
    for record in history.records() {
        let (
            Event::Recipe(RecipeEvent::Counter {
                process,
                counter,
                step,
            }),
            Some(node),
        ) = (&record.event, record.node)
        else {
            continue;
        };
        let tally = counters.entry(counter.clone()).or_default();
        let who = (node, *process);
        match step {
            CounterStep::Incremented { value } => {
                tally.acknowledged += 1;
                tally.steps += 1;
                tally.written.entry(*value).or_default().push(who);
            }
            CounterStep::Unknown => {
                tally.unknown += 1;
                tally.steps += 1;
            }
            CounterStep::Read { value } => {
                tally.reads.push((who, record.at, *value, tally.steps));
            }
        }
    }
    let mut violations = Vec::new();
    for (counter, tally) in counters {
        for (value, writers) in &tally.written {
            if writers.len() > 1 {
                violations.push(CounterViolation::LostUpdate {
                    counter: counter.clone(),
                    value: *value,
                    writers: writers.clone(),
                });
            }
        }
        let most = tally.acknowledged + tally.unknown;
        for &(reader, at, value, steps_before) in &tally.reads {
            let last = steps_before == tally.steps;
            let least = if last { tally.acknowledged } else { 0 };
            if value < least || value > most {
                violations.push(CounterViolation::OutOfBounds {
                    counter: counter.clone(),
                    reader,
                    at,
                    value,
                    least,
                    most,
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

    fn step(ms: u64, node: NodeId, step: CounterStep) -> Record {
        record(
            ms,
            node,
            Event::Recipe(RecipeEvent::Counter {
                process: 0,
                counter: "/n".into(),
                step,
            }),
        )
    }

    #[test]
    fn a_final_read_between_the_acknowledged_and_the_attempted_passes() {
        let increments = [
            step(10, C1, CounterStep::Incremented { value: 1 }),
            step(20, C2, CounterStep::Unknown),
            step(30, C2, CounterStep::Incremented { value: 3 }),
        ];
        for value in [2, 3] {
            let mut records = increments.to_vec();
            records.push(step(40, C1, CounterStep::Read { value }));
            assert_eq!(check(&History::from_records(records)), vec![]);
        }
    }

    #[test]
    fn a_final_read_below_the_acknowledged_or_above_the_attempted_is_reported() {
        for (value, least, most) in [(1, 2, 3), (4, 2, 3)] {
            let history = History::from_records(vec![
                step(10, C1, CounterStep::Incremented { value: 1 }),
                step(20, C2, CounterStep::Unknown),
                step(30, C2, CounterStep::Incremented { value: 2 }),
                step(40, C1, CounterStep::Read { value }),
            ]);
            let violations = check(&history);
            assert!(
                matches!(&violations[..], [CounterViolation::OutOfBounds { least: l, most: m, .. }]
                    if (*l, *m) == (least, most)),
                "{violations:?}"
            );
        }
    }

    #[test]
    fn two_increments_writing_one_value_lost_an_update() {
        let history = History::from_records(vec![
            step(10, C1, CounterStep::Incremented { value: 1 }),
            step(20, C2, CounterStep::Incremented { value: 1 }),
        ]);
        let violations = check(&history);
        assert!(
            matches!(&violations[..], [CounterViolation::LostUpdate { value: 1, writers, .. }]
                if writers.len() == 2),
            "{violations:?}"
        );
        assert!(violations[0].to_string().contains("an update was lost"));
    }
}
