//! A queue's promise: every item put is taken at most once, and, once the queue has been
//! drained after the heal, every acknowledged item exactly once; a consumer takes one
//! producer's items in the order they were put.
//!
//! An item whose put was never acknowledged (the session ended with the reply lost) may have
//! been put or not: it may be taken once, or never. An item nobody asked to put may never be
//! taken. The order is judged per consumer: a consumer that took a producer's later item and
//! afterwards its earlier one broke FIFO (the earlier item was in the queue, below the later
//! one, whenever the later one was). Across consumers the records cannot judge order: two
//! consumers' takes race, and either may record first.
//!
//! **Reads:** the queue recipe's `RecipeEvent::Queue` records, written at the client node:
//! `Producing` before a put is sent, `Produced` when the store acknowledged it, `Consumed`
//! when the consumer's take won (the recipe takes by an atomic delete-and-claim, so a
//! consumer records only what it owns). And the workload's [`DRAINED`] marker
//! (`RecipeEvent::Other`), written once the queue was found empty after the heal with every
//! producer stopped: without it, an item not taken is not judged lost. No server event is
//! read. A client crash between its take and its record would lose an item here; the queue
//! scenarios do not crash clients.

use crate::Checked;
use crate::{Violation, history::locks::Holder};
use sim::{
    history::{Event, History, RecipeEvent, recipe::QueueStep},
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// The name of the `RecipeEvent::Other` marker a queue workload records when it found the
/// queue empty after the heal; its detail is `{"queue": <path>}`.
pub const DRAINED: &str = "queue.drained";

/// A broken queue promise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueViolation {
    /// An item was taken more than once.
    TakenTwice {
        /// The queue.
        queue: String,
        /// The item.
        item: String,
        /// Who took it, and when, each time.
        takers: Vec<(Holder, SimTime)>,
    },
    /// An item nobody asked to put was taken.
    NeverPut {
        /// The queue.
        queue: String,
        /// The item.
        item: String,
        /// Who took it.
        taker: Holder,
    },
    /// An acknowledged item was still not taken when the queue was drained.
    Lost {
        /// The queue.
        queue: String,
        /// The item.
        item: String,
        /// When its put was acknowledged.
        produced: SimTime,
    },
    /// A consumer took a producer's later item before its earlier one.
    OutOfOrder {
        /// The queue.
        queue: String,
        /// The consumer.
        consumer: Holder,
        /// The item put first, taken second.
        earlier: String,
        /// The item put second, taken first.
        later: String,
    },
}

impl fmt::Display for QueueViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueViolation::TakenTwice {
                queue,
                item,
                takers,
            } => {
                let takers: Vec<String> = takers
                    .iter()
                    .map(|((node, process), at)| format!("{node}/{process} at {at}"))
                    .collect();
                write!(
                    f,
                    "`{item}` was taken off `{queue}` {} times: {}",
                    takers.len(),
                    takers.join(", ")
                )
            }
            QueueViolation::NeverPut { queue, item, taker } => write!(
                f,
                "{}/{} took `{item}` off `{queue}`, which nobody put",
                taker.0, taker.1
            ),
            QueueViolation::Lost {
                queue,
                item,
                produced,
            } => write!(
                f,
                "`{item}`, put on `{queue}` (acknowledged at {produced}), was never taken though \
                 the queue was drained"
            ),
            QueueViolation::OutOfOrder {
                queue,
                consumer,
                earlier,
                later,
            } => write!(
                f,
                "{}/{} took `{later}` off `{queue}` before `{earlier}`, which its producer put \
                 first",
                consumer.0, consumer.1
            ),
        }
    }
}

impl Violation for QueueViolation {
    fn property(&self) -> &'static str {
        "queue semantics"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper recipes, Queues; Hunt et al., ZooKeeper (USENIX ATC 2010), section 2.4"
    }

    fn at(&self) -> Option<SimTime> {
        // The second take of an item; unknown for the other problems.
        match self {
            QueueViolation::TakenTwice { takers, .. } => takers.get(1).map(|(_, at)| *at),
            _ => None,
        }
    }
}

/// What the records say about one item.
#[derive(Default)]
struct Item {
    producer: Option<Holder>,
    /// The producer's put number, in the order it asked.
    put: Option<usize>,
    produced: Option<SimTime>,
    taken: Vec<(Holder, SimTime)>,
}

/// Every broken promise of every queue in `history`.
pub fn check(history: &History) -> Checked<QueueViolation> {
    let mut items: BTreeMap<(String, String), Item> = BTreeMap::new();
    let mut puts: BTreeMap<Holder, usize> = BTreeMap::new();
    // Per queue and consumer, the items it took, in order.
    let mut taken_by: BTreeMap<(String, Holder), Vec<String>> = BTreeMap::new();
    let mut drained: Vec<String> = Vec::new();
    for record in history.records() {
        match (&record.event, record.node) {
            (
                Event::Recipe(RecipeEvent::Queue {
                    process,
                    queue,
                    step,
                }),
                Some(node),
            ) => {
                let who = (node, *process);
                match step {
                    QueueStep::Producing { item } => {
                        let count = puts.entry(who).or_default();
                        *count += 1;
                        let entry = items.entry((queue.clone(), item.clone())).or_default();
                        entry.producer = Some(who);
                        entry.put = Some(*count);
                    }
                    QueueStep::Produced { item } => {
                        items
                            .entry((queue.clone(), item.clone()))
                            .or_default()
                            .produced = Some(record.at);
                    }
                    QueueStep::Consumed { item } => {
                        items
                            .entry((queue.clone(), item.clone()))
                            .or_default()
                            .taken
                            .push((who, record.at));
                        taken_by
                            .entry((queue.clone(), who))
                            .or_default()
                            .push(item.clone());
                    }
                }
            }
            (Event::Recipe(RecipeEvent::Other { name, detail }), _) if name == DRAINED => {
                if let Some(queue) = detail.get("queue").and_then(|queue| queue.as_str()) {
                    drained.push(queue.to_string());
                }
            }
            _ => {}
        }
    }
    let mut violations = Vec::new();
    for ((queue, item), facts) in &items {
        if facts.taken.len() > 1 {
            violations.push(QueueViolation::TakenTwice {
                queue: queue.clone(),
                item: item.clone(),
                takers: facts.taken.clone(),
            });
        }
        if let (None, Some((taker, _))) = (facts.put, facts.taken.first()) {
            violations.push(QueueViolation::NeverPut {
                queue: queue.clone(),
                item: item.clone(),
                taker: *taker,
            });
        }
        if let (Some(produced), true) = (facts.produced, facts.taken.is_empty())
            && drained.contains(queue)
        {
            violations.push(QueueViolation::Lost {
                queue: queue.clone(),
                item: item.clone(),
                produced,
            });
        }
    }
    for ((queue, consumer), taken) in &taken_by {
        for (index, later) in taken.iter().enumerate() {
            let Some(later_facts) = items.get(&(queue.clone(), later.clone())) else {
                continue;
            };
            // An earlier item of the same producer, taken after `later` by this consumer,
            // whose put was acknowledged before `later`'s was asked for (the put numbers
            // are in asking order, and a producer asks one at a time).
            for earlier in &taken[index + 1..] {
                let Some(earlier_facts) = items.get(&(queue.clone(), earlier.clone())) else {
                    continue;
                };
                let same_producer = earlier_facts.producer.is_some()
                    && earlier_facts.producer == later_facts.producer;
                if same_producer
                    && earlier_facts.produced.is_some()
                    && earlier_facts.put < later_facts.put
                {
                    violations.push(QueueViolation::OutOfOrder {
                        queue: queue.clone(),
                        consumer: *consumer,
                        earlier: earlier.clone(),
                        later: later.clone(),
                    });
                }
            }
        }
    }
    // Every item any producer offered or any consumer took.
    let judged = items.len() as u64;
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, record};
    use sim::{NodeId, history::Record};

    const C3: NodeId = NodeId::client(2);

    fn step(ms: u64, node: NodeId, step: QueueStep) -> Record {
        record(
            ms,
            node,
            Event::Recipe(RecipeEvent::Queue {
                process: 0,
                queue: "/q".into(),
                step,
            }),
        )
    }

    fn producing(ms: u64, node: NodeId, item: &str) -> Record {
        step(ms, node, QueueStep::Producing { item: item.into() })
    }

    fn produced(ms: u64, node: NodeId, item: &str) -> Record {
        step(ms, node, QueueStep::Produced { item: item.into() })
    }

    fn consumed(ms: u64, node: NodeId, item: &str) -> Record {
        step(ms, node, QueueStep::Consumed { item: item.into() })
    }

    fn drained(ms: u64) -> Record {
        record(
            ms,
            C3,
            Event::Recipe(RecipeEvent::Other {
                name: DRAINED.into(),
                detail: serde_json::json!({"queue": "/q"}),
            }),
        )
    }

    #[test]
    fn each_item_taken_once_in_order_passes_and_an_unacknowledged_one_may_vanish() {
        let history = History::from_records(vec![
            producing(10, C1, "a"),
            produced(20, C1, "a"),
            producing(30, C1, "b"),
            produced(40, C1, "b"),
            // The reply was lost and the session ended: `c` may or may not be on the queue.
            producing(50, C1, "c"),
            consumed(60, C2, "a"),
            consumed(70, C2, "b"),
            drained(100),
        ]);
        assert_eq!(check(&history), vec![]);
    }

    #[test]
    fn an_item_taken_twice_or_never_put_is_reported() {
        let history = History::from_records(vec![
            producing(10, C1, "a"),
            produced(20, C1, "a"),
            consumed(30, C2, "a"),
            consumed(35, C3, "a"),
            consumed(40, C2, "z"),
        ]);
        let violations = check(&history);
        assert_eq!(violations.len(), 2, "{violations:?}");
        assert!(
            matches!(&violations[0], QueueViolation::TakenTwice { takers, .. } if takers.len() == 2)
        );
        assert!(matches!(&violations[1], QueueViolation::NeverPut { item, .. } if item == "z"));
        assert!(violations[0].to_string().contains("2 times"));
    }

    #[test]
    fn an_acknowledged_item_missing_after_the_drain_is_lost_but_not_before() {
        let undrained = vec![producing(10, C1, "a"), produced(20, C1, "a")];
        assert_eq!(check(&History::from_records(undrained.clone())), vec![]);
        let mut records = undrained;
        records.push(drained(100));
        let violations = check(&History::from_records(records));
        assert!(
            matches!(&violations[..], [QueueViolation::Lost { item, .. }] if item == "a"),
            "{violations:?}"
        );
    }

    #[test]
    fn a_consumer_taking_a_later_item_first_breaks_fifo() {
        let history = History::from_records(vec![
            producing(10, C1, "a"),
            produced(20, C1, "a"),
            producing(30, C1, "b"),
            produced(40, C1, "b"),
            consumed(50, C2, "b"),
            consumed(60, C2, "a"),
        ]);
        let violations = check(&history);
        assert!(
            matches!(&violations[..], [QueueViolation::OutOfOrder { earlier, later, .. }]
                if earlier == "a" && later == "b"),
            "{violations:?}"
        );
        // Two consumers racing may record in either order: not judged.
        let history = History::from_records(vec![
            producing(10, C1, "a"),
            produced(20, C1, "a"),
            producing(30, C1, "b"),
            produced(40, C1, "b"),
            consumed(50, C2, "b"),
            consumed(60, C3, "a"),
        ]);
        assert_eq!(check(&history), vec![]);
    }
}
