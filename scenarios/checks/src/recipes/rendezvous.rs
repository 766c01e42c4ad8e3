//! Rendezvous (Hunt et al., ZooKeeper, section 2.4): every worker learns exactly what the
//! master published, never before the master started publishing it, every worker that
//! waited learns it, and every master or worker watching the node notices its end.
//!
//! - **Wrong information:** a worker handed its caller something other than what the
//!   master was publishing (an empty node, a partial or another value).
//! - **Learned before published:** a worker learned information before the master had begun
//!   to write any (the master records `Publishing` before its write, so a write in flight
//!   whose acknowledgement has not come back yet is not a false alarm).
//! - **Never learned:** a worker started waiting, the master's write was acknowledged, and
//!   the worker learned nothing afterwards, although the run went on for at least the watch
//!   settle time after both.
//! - **Missed end:** the rendezvous ended while a master or worker was watching it (it had
//!   published or learned and not noticed an end since), the run went on for at least the
//!   watch settle time, and it never noticed.
//!
//! **Reads:** the rendezvous recipe's `RecipeEvent::Rendezvous` records, written at the
//! client node by each role as it acts (the creator's `Created` and `Ended`, the master's
//! `Publishing` before and `Published` after its write, a worker's `Awaiting`, `Learned`
//! with what it handed its caller, and `NoticedEnd`): each is the client's own account, on
//! the global clock. No server event is read; the end of the run is the last record's time.

use crate::Checked;
use crate::{Violation, history::locks::Holder};
use sim::{
    history::{Event, History, RecipeEvent, recipe::RendezvousStep},
    time::SimTime,
};
use std::{collections::BTreeMap, fmt, time::Duration};

/// A rendezvous went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RendezvousViolation {
    /// The rendezvous node.
    pub rendezvous: String,
    /// The worker or master concerned.
    pub who: Holder,
    /// When (of the record that shows it).
    pub at: SimTime,
    /// What went wrong.
    pub kind: RendezvousFault,
}

/// What went wrong at a rendezvous.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RendezvousFault {
    /// The worker learned something else than what the master published.
    WrongInformation {
        /// What it learned.
        learned: String,
        /// What the master was publishing then.
        published: String,
    },
    /// The worker learned something before the master began to publish.
    LearnedBeforePublished {
        /// What it learned.
        learned: String,
    },
    /// The worker waited (from `at`) and never learned, though the master's write was
    /// acknowledged and the run went on long enough.
    NeverLearned,
    /// The rendezvous ended (at `at`) while the process watched it, and it never noticed.
    MissedEnd,
}

impl fmt::Display for RendezvousViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (node, process) = self.who;
        let who = format!("{node}/{process}");
        match &self.kind {
            RendezvousFault::WrongInformation { learned, published } => write!(
                f,
                "{who} learned {learned:?} from `{}` at {}, but the master published {published:?}",
                self.rendezvous, self.at
            ),
            RendezvousFault::LearnedBeforePublished { learned } => write!(
                f,
                "{who} learned {learned:?} from `{}` at {}, before the master published anything",
                self.rendezvous, self.at
            ),
            RendezvousFault::NeverLearned => write!(
                f,
                "{who} waited at `{}` from {} and never learned the published information",
                self.rendezvous, self.at
            ),
            RendezvousFault::MissedEnd => write!(
                f,
                "`{}` ended at {} while {who} watched it, and it never noticed",
                self.rendezvous, self.at
            ),
        }
    }
}

impl Violation for RendezvousViolation {
    fn property(&self) -> &'static str {
        "rendezvous"
    }

    fn reference(&self) -> &'static str {
        "Hunt et al., ZooKeeper (USENIX ATC 2010), section 2.4, Rendezvous"
    }

    fn at(&self) -> Option<SimTime> {
        // When the evidence was recorded.
        Some(self.at)
    }
}

/// One rendezvous step, with when and by whom.
struct Step {
    at: SimTime,
    who: Holder,
    step: RendezvousStep,
}

/// Every violation of the rendezvous properties; watches get `settle` to deliver.
pub fn check(history: &History, settle: Duration) -> Checked<RendezvousViolation> {
    let mut by_rendezvous: BTreeMap<String, Vec<Step>> = BTreeMap::new();
    let mut end_of_run = SimTime::ZERO;
    for record in history.records() {
        end_of_run = end_of_run.max(record.at);
        if let (
            Event::Recipe(RecipeEvent::Rendezvous {
                process,
                rendezvous,
                step,
            }),
            Some(node),
        ) = (&record.event, record.node)
        {
            by_rendezvous
                .entry(rendezvous.clone())
                .or_default()
                .push(Step {
                    at: record.at,
                    who: (node, *process),
                    step: step.clone(),
                });
        }
    }
    // Only what happened at least `settle` before the end must have had its effect.
    let settled = |at: SimTime| at + settle <= end_of_run;
    // Every step of every rendezvous: creating, publishing, learning, ending.
    let judged = by_rendezvous.values().map(|steps| steps.len() as u64).sum();
    let mut violations = Vec::new();
    for (rendezvous, steps) in by_rendezvous {
        let violation = |who: Holder, at: SimTime, kind: RendezvousFault| RendezvousViolation {
            rendezvous: rendezvous.clone(),
            who,
            at,
            kind,
        };
        let mut publishing: Option<&str> = None;
        let mut first_acknowledged: Option<SimTime> = None;
        // Per worker, when it started waiting and has not learned since.
        let mut waiting: BTreeMap<Holder, SimTime> = BTreeMap::new();
        // Per master or worker, whether it watches the node for its end.
        let mut watching: BTreeMap<Holder, bool> = BTreeMap::new();
        // Per end: who was watching then, and whether each noticed since.
        let mut ends: Vec<(SimTime, Vec<Holder>)> = Vec::new();
        for step in &steps {
            match &step.step {
                RendezvousStep::Publishing { info } => publishing = Some(info),
                RendezvousStep::Published { .. } => {
                    first_acknowledged.get_or_insert(step.at);
                    watching.insert(step.who, true);
                }
                RendezvousStep::Awaiting => {
                    waiting.insert(step.who, step.at);
                }
                RendezvousStep::Learned { info } => {
                    waiting.remove(&step.who);
                    watching.insert(step.who, true);
                    match publishing {
                        None => violations.push(violation(
                            step.who,
                            step.at,
                            RendezvousFault::LearnedBeforePublished {
                                learned: info.clone(),
                            },
                        )),
                        Some(published) if published != info => violations.push(violation(
                            step.who,
                            step.at,
                            RendezvousFault::WrongInformation {
                                learned: info.clone(),
                                published: published.to_string(),
                            },
                        )),
                        Some(_) => {}
                    }
                }
                RendezvousStep::Ended => {
                    let watchers = watching
                        .iter()
                        .filter(|(_, watches)| **watches)
                        .map(|(who, _)| *who)
                        .collect();
                    ends.push((step.at, watchers));
                }
                RendezvousStep::NoticedEnd => {
                    watching.insert(step.who, false);
                }
                RendezvousStep::Created => {}
            }
        }
        if let Some(acknowledged) = first_acknowledged {
            for (who, since) in waiting {
                if settled(since.max(acknowledged)) {
                    violations.push(violation(who, since, RendezvousFault::NeverLearned));
                }
            }
        }
        for (ended, watchers) in ends {
            if !settled(ended) {
                continue;
            }
            for who in watchers {
                let noticed = steps.iter().any(|step| {
                    step.who == who && step.at >= ended && step.step == RendezvousStep::NoticedEnd
                });
                if !noticed {
                    violations.push(violation(who, ended, RendezvousFault::MissedEnd));
                }
            }
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, record};
    use sim::NodeId;

    const MASTER: NodeId = NodeId::client(2);
    const CREATOR: NodeId = NodeId::client(3);
    const SETTLE: Duration = Duration::from_secs(1);

    fn step(ms: u64, node: NodeId, step: RendezvousStep) -> sim::history::Record {
        record(
            ms,
            node,
            Event::Recipe(RecipeEvent::Rendezvous {
                process: 0,
                rendezvous: "/zr".into(),
                step,
            }),
        )
    }

    fn info(text: &str) -> String {
        text.to_string()
    }

    /// C1 waits before the master publishes (the watch path), C2 after (the data is there);
    /// both learn, and both notice the end.
    fn good() -> Vec<sim::history::Record> {
        vec![
            step(0, CREATOR, RendezvousStep::Created),
            step(100, C1, RendezvousStep::Awaiting),
            step(
                200,
                MASTER,
                RendezvousStep::Publishing { info: info("m:1") },
            ),
            step(210, C1, RendezvousStep::Learned { info: info("m:1") }),
            step(220, MASTER, RendezvousStep::Published { info: info("m:1") }),
            step(300, C2, RendezvousStep::Awaiting),
            step(310, C2, RendezvousStep::Learned { info: info("m:1") }),
            step(1_000, CREATOR, RendezvousStep::Ended),
            step(1_010, C1, RendezvousStep::NoticedEnd),
            step(1_020, C2, RendezvousStep::NoticedEnd),
            step(1_030, MASTER, RendezvousStep::NoticedEnd),
            step(5_000, CREATOR, RendezvousStep::Created),
        ]
    }

    #[test]
    fn workers_learning_the_published_info_and_noticing_the_end_pass() {
        let history = History::from_records(good());
        assert_eq!(check(&history, SETTLE), vec![]);
    }

    #[test]
    fn a_wrong_or_early_value_is_reported() {
        let mut records = good();
        records[3] = step(210, C1, RendezvousStep::Learned { info: info("") });
        records.insert(
            1,
            step(50, C2, RendezvousStep::Learned { info: info("m:0") }),
        );
        let violations = check(&History::from_records(records), SETTLE);
        let kinds: Vec<&RendezvousFault> = violations.iter().map(|v| &v.kind).collect();
        assert_eq!(
            kinds,
            vec![
                &RendezvousFault::LearnedBeforePublished {
                    learned: info("m:0")
                },
                &RendezvousFault::WrongInformation {
                    learned: info(""),
                    published: info("m:1")
                },
            ],
            "{violations:?}"
        );
        assert!(violations[0].to_string().contains("before the master"));
    }

    #[test]
    fn a_worker_that_never_learns_or_misses_the_end_is_reported() {
        let mut records = good();
        // C2 never learns; C1 never notices the end.
        records.retain(|record| {
            !matches!(
                (&record.event, record.node),
                (
                    Event::Recipe(RecipeEvent::Rendezvous {
                        step: RendezvousStep::Learned { .. },
                        ..
                    }),
                    Some(C2)
                ) | (
                    Event::Recipe(RecipeEvent::Rendezvous {
                        step: RendezvousStep::NoticedEnd,
                        ..
                    }),
                    Some(C1)
                )
            )
        });
        let violations = check(&History::from_records(records.clone()), SETTLE);
        let found: Vec<(NodeId, &RendezvousFault)> =
            violations.iter().map(|v| (v.who.0, &v.kind)).collect();
        assert_eq!(
            found,
            vec![
                (C2, &RendezvousFault::NeverLearned),
                (C1, &RendezvousFault::MissedEnd)
            ]
        );
        // Too close to the end of the run to judge: nothing reported.
        records.pop();
        assert_eq!(
            check(&History::from_records(records), Duration::from_secs(10)),
            vec![]
        );
    }
}
