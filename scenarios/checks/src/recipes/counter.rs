//! A counter's promise: no increment lost, none counted twice. Two acknowledged increments
//! never report the same value (two read-modify-writes from one value would be a lost
//! update); one increment never moves the counter twice (a conditional write retried after
//! its reply was lost, when the lost one had taken effect); and a read after every
//! increment ended sees the acknowledged increments plus some of those whose outcome is
//! unknown: between the two. No read ever sees more than every increment attempted.
//!
//! Counted twice is judged on the version sequence of the counter's node, whatever the final
//! read: the write that moved the node from each version is the acknowledged one that
//! expected it, or the only one that may have taken effect; an increment that made two such
//! moves counted twice. A write whose reply was lost must be resolved (it may have happened:
//! ZooKeeper Programmer's Guide, ConnectionLoss), not sent again as a new read-modify-write.
//!
//! **Reads:** the counter recipe's `RecipeEvent::Counter` records, written at the client
//! node: `Incremented` when the conditional write was acknowledged (with the value it
//! wrote), `Unknown` when its reply was lost, `Read` after a synced read. A read is judged
//! final when no increment step is recorded after it (the workloads read only once every
//! incrementer stopped). And ([`crate::history::counter`]) the clients' own conditional
//! writes of the counter's node and the versions the store reported for it, recorded by the
//! client library. No server event is read.

use crate::Checked;
use crate::{
    Violation,
    history::{
        counter::{self, Mover},
        locks::Holder,
    },
};
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
    /// One increment moved the counter twice: it wrote again after a write of its that
    /// took effect. When several increments' writes may have made the move from
    /// `from_version` and each of them made another move too, one of them counted twice.
    CountedTwice {
        /// The counter.
        counter: String,
        /// The increment (or those among which the history cannot tell) that moved the
        /// counter from `from_version` and from another version too, with when each ended.
        incrementers: Vec<(Holder, Option<SimTime>)>,
        /// The version of the move too many.
        from_version: i32,
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
            CounterViolation::CountedTwice {
                counter,
                incrementers,
                from_version,
            } => {
                let who: Vec<String> = incrementers
                    .iter()
                    .map(|((node, process), ended)| {
                        let ended =
                            ended.map_or("never ended".to_string(), |at| format!("ended at {at}"));
                        format!("{node}/{process} ({ended})")
                    })
                    .collect();
                let whom = if who.len() == 1 {
                    format!("the increment by {}", who[0])
                } else {
                    format!("one of the increments by {}", who.join(", "))
                };
                write!(
                    f,
                    "{whom} moved `{counter}` from version {from_version} and from another \
                     version too: counted more than once"
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
        // The out-of-bounds read, or the end of the increment counted twice; unknown for a lost
        // update.
        match self {
            CounterViolation::OutOfBounds { at, .. } => Some(*at),
            CounterViolation::CountedTwice { incrementers, .. } => {
                incrementers.iter().filter_map(|(_, ended)| *ended).min()
            }
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
pub fn check(history: &History) -> Checked<CounterViolation> {
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
    // Every increment (acknowledged or not) and every read of every counter.
    let judged = counters
        .values()
        .map(|tally| tally.steps as u64 + tally.reads.len() as u64)
        .sum();
    let mut violations = counted_twice(history);
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
    Checked::new(violations, judged)
}

/// Every move of a counter's node made by an increment that made another move too.
fn counted_twice(history: &History) -> Vec<CounterViolation> {
    let records = counter::read(history);
    let movers = records.movers();
    let mut known: BTreeMap<usize, Vec<i32>> = BTreeMap::new();
    for ((_, version), mover) in &movers {
        if let Mover::Known(index) = mover {
            known.entry(*index).or_default().push(*version);
        }
    }
    let who = |index: usize| {
        let increment = &records.increments[index];
        (increment.incrementer, increment.ended.map(|(at, _)| at))
    };
    let mut violations = Vec::new();
    for (index, versions) in &known {
        // Every move after its first is one too many.
        for from_version in versions.iter().skip(1) {
            violations.push(CounterViolation::CountedTwice {
                counter: records.increments[*index].counter.clone(),
                incrementers: vec![who(*index)],
                from_version: *from_version,
            });
        }
    }
    for ((counter, version), mover) in &movers {
        let Mover::OneOf(indices) = mover else {
            continue;
        };
        let each_moved_elsewhere = indices.iter().all(|index| {
            known
                .get(index)
                .is_some_and(|versions| versions.iter().any(|other| other != version))
        });
        if each_moved_elsewhere {
            violations.push(CounterViolation::CountedTwice {
                counter: counter.clone(),
                incrementers: indices.iter().map(|index| who(*index)).collect(),
                from_version: *version,
            });
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, invoke, ok, record, stat};
    use sim::{
        NodeId,
        history::{
            OpId, OpResult, Record,
            zk::{ZkOperation, ZkResponse},
        },
    };

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

    /// `node`'s read of `/n` (op `op`): `value` at `version`.
    fn read_at(ms: u64, node: NodeId, op: u64, version: i32) -> [Record; 2] {
        [
            invoke(ms, node, op, ZkOperation::GetData { path: "/n".into() }),
            ok(
                ms + 1,
                node,
                op,
                ZkResponse::Data {
                    data: version.to_string(),
                    stat: stat(0, version, 0),
                },
            ),
        ]
    }

    /// `node`'s write of `/n` expecting `version` (op `op`), invoked at `ms`.
    fn write(ms: u64, node: NodeId, op: u64, version: i32) -> Record {
        invoke(
            ms,
            node,
            op,
            ZkOperation::SetData {
                path: "/n".into(),
                data: (version + 1).to_string(),
                version: Some(version),
            },
        )
    }

    fn acknowledged(ms: u64, node: NodeId, op: u64, version: i32) -> Record {
        ok(
            ms,
            node,
            op,
            ZkResponse::Stat {
                stat: stat(0, version + 1, 0),
            },
        )
    }

    fn lost(ms: u64, node: NodeId, op: u64) -> Record {
        record(
            ms,
            node,
            Event::Complete {
                op_id: OpId(op),
                result: OpResult::Unknown {
                    reason: "connection loss".into(),
                },
            },
        )
    }

    /// c1's write from version 0 loses its reply; c1 reads version 1 (its own write) and
    /// writes again from it: one increment, two moves.
    fn retried_after_a_lost_reply(resolved: bool) -> Vec<Record> {
        let mut records = vec![];
        records.extend(read_at(10, C1, 1, 0));
        records.push(write(12, C1, 2, 0));
        records.push(lost(14, C1, 2));
        if resolved {
            records.push(step(15, C1, CounterStep::Unknown));
        }
        records.extend(read_at(16, C1, 3, 1));
        records.push(write(18, C1, 4, 1));
        records.push(acknowledged(20, C1, 4, 1));
        records.push(step(21, C1, CounterStep::Incremented { value: 2 }));
        records
    }

    #[test]
    fn an_increment_that_moves_the_counter_twice_is_reported_without_a_final_read() {
        let violations = check(&History::from_records(retried_after_a_lost_reply(false)));
        assert_eq!(
            violations,
            vec![CounterViolation::CountedTwice {
                counter: "/n".into(),
                incrementers: vec![((C1, 0), Some(SimTime::from_millis(21)))],
                from_version: 1,
            }]
        );
        assert!(violations[0].to_string().contains("counted more than once"));
    }

    #[test]
    fn a_lost_reply_settled_as_unknown_then_a_new_increment_passes() {
        assert_eq!(
            check(&History::from_records(retried_after_a_lost_reply(true))),
            vec![]
        );
    }

    /// The lost write may have been beaten by another's write from the same version: then
    /// the history cannot tell that it took effect, and judges nothing.
    #[test]
    fn a_lost_write_beside_another_acknowledged_from_its_version_is_not_counted() {
        let mut records = retried_after_a_lost_reply(false);
        records.splice(3..3, [write(13, C2, 9, 0), acknowledged(13, C2, 9, 0)]);
        records.push(step(22, C2, CounterStep::Incremented { value: 1 }));
        let violations = check(&History::from_records(records));
        assert!(
            !violations
                .iter()
                .any(|violation| matches!(violation, CounterViolation::CountedTwice { .. })),
            "{violations:?}"
        );
    }

    /// Two increments' writes from version 0 both lose their replies, and each writes
    /// again, acknowledged, from a later version: whichever made the move from 0 counted
    /// twice.
    #[test]
    fn a_move_one_of_two_retried_increments_made_is_reported() {
        let records = vec![
            write(12, C1, 1, 0),
            write(12, C2, 2, 0),
            lost(14, C1, 1),
            lost(14, C2, 2),
            write(16, C1, 3, 1),
            acknowledged(17, C1, 3, 1),
            step(18, C1, CounterStep::Incremented { value: 2 }),
            write(19, C2, 4, 2),
            acknowledged(20, C2, 4, 2),
            step(21, C2, CounterStep::Incremented { value: 3 }),
        ];
        let violations = check(&History::from_records(records));
        assert!(
            matches!(&violations[..], [CounterViolation::CountedTwice { from_version: 0, incrementers, .. }]
                if incrementers.len() == 2),
            "{violations:?}"
        );
        assert!(
            violations[0]
                .to_string()
                .contains("one of the increments by c1/0")
        );
    }
}
