//! Pub/sub delivery: a subscription from revision R hands its caller every acknowledged
//! message published at or after R, exactly once, in revision order, across reconnects.
//!
//! That is what a subscription from a revision on etcd can give (the seeds' gocorex
//! `SubscribeFromRev`): a watch from a revision yields every change after it in revision
//! order, and a watch resumed after a reconnect from the revision after the last one it
//! delivered loses nothing and repeats nothing. A message published after another is at a
//! higher revision, so a subscription that received a later message and not an earlier one
//! skipped it; a subscription still open at the end must have received every message
//! acknowledged at least a settle time before (a later one may still be in flight). A
//! subscription replaced by a new one (a resubscription from a later revision) or ended by
//! its node's crash owes nothing after its last receipt: the new one takes over, and must
//! start exactly after the last revision the old one delivered (from the old one's own
//! start if it delivered nothing) — earlier, and it delivers a message again; later, and
//! the messages between are lost to the subscriber (etcd clientv3 resumes a watch from the
//! last revision + 1). Only a subscription whose watch was cancelled because its next
//! revision was compacted may be followed by one from anywhere: it lost messages, and said
//! so.
//!
//! **Reads:** ([`crate::history::pubsub`]) the pub/sub recipe's records at the client
//! node: `Published` once the store acknowledged a message (with the revision the store
//! gave it), `Subscribed` with the revision asked for, `Received` for each message handed
//! to the subscriber's caller; client crashes from the fault records; and the subscriber's
//! watch cancelled by a compaction (its `kv_watch` record). A message whose
//! publish was never acknowledged is not owed to anyone (its publish may or may not have
//! happened), and may be received.

use crate::Checked;
use crate::{
    Violation,
    history::{
        membership::Process,
        pubsub::{Publication, Subscription, SubscriptionEnd, publications, subscriptions},
    },
};
use sim::{history::History, time::SimTime};
use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    time::Duration,
};

/// What went wrong with one message on one subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeliveryProblem {
    /// Received twice.
    Duplicate {
        /// The message.
        message: String,
        /// Its revision.
        revision: u64,
        /// When it arrived again.
        again_at: SimTime,
    },
    /// Received after a message of a higher or equal revision.
    OutOfOrder {
        /// The message.
        message: String,
        /// Its revision.
        revision: u64,
        /// The revision received before it.
        after_revision: u64,
    },
    /// Received, but published before the revision the subscription started from.
    BeforeStart {
        /// The message.
        message: String,
        /// Its revision.
        revision: u64,
    },
    /// Received at another revision than the one its publisher was given.
    WrongRevision {
        /// The message.
        message: String,
        /// As received.
        received_revision: u64,
        /// As published.
        published_revision: u64,
    },
    /// Not received, though a message of a higher revision was.
    Skipped {
        /// The message.
        message: String,
        /// Its revision.
        revision: u64,
        /// The next revision the subscription did receive.
        next_received: u64,
    },
    /// A resubscription that did not start right after the last revision the subscription
    /// it replaced had delivered.
    Discontinuous {
        /// Where it should have started.
        expected_revision: u64,
        /// Where the subscription it replaced had started.
        replaced_from: u64,
        /// The last revision that subscription delivered, if any.
        last_delivered: Option<u64>,
    },
    /// Not received by an open subscription, though acknowledged well before the end.
    NotDelivered {
        /// The message.
        message: String,
        /// Its revision.
        revision: u64,
        /// When its publisher was told it was published.
        acknowledged_at: SimTime,
    },
}

/// A subscription that did not get its messages exactly once, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryViolation {
    /// The topic.
    pub topic: String,
    /// The subscriber.
    pub subscriber: Process,
    /// The revision it subscribed from.
    pub from_revision: u64,
    /// When it subscribed.
    pub subscribed_at: SimTime,
    /// What went wrong.
    pub problem: DeliveryProblem,
}

impl fmt::Display for DeliveryViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (node, process) = self.subscriber;
        write!(
            f,
            "{node}/{process}'s subscription to `{}` from revision {} (at {}): ",
            self.topic, self.from_revision, self.subscribed_at
        )?;
        match &self.problem {
            DeliveryProblem::Duplicate {
                message,
                revision,
                again_at,
            } => write!(
                f,
                "{message} (revision {revision}) arrived again at {again_at}"
            ),
            DeliveryProblem::OutOfOrder {
                message,
                revision,
                after_revision,
            } => write!(
                f,
                "{message} (revision {revision}) arrived after revision {after_revision}"
            ),
            DeliveryProblem::BeforeStart { message, revision } => {
                write!(
                    f,
                    "{message} arrived, published at revision {revision}, before the start"
                )
            }
            DeliveryProblem::WrongRevision {
                message,
                received_revision,
                published_revision,
            } => write!(
                f,
                "{message} arrived at revision {received_revision}, published at \
                 {published_revision}"
            ),
            DeliveryProblem::Skipped {
                message,
                revision,
                next_received,
            } => write!(
                f,
                "{message} (revision {revision}) was skipped: revision {next_received} arrived \
                 and it never did"
            ),
            DeliveryProblem::Discontinuous {
                expected_revision,
                replaced_from,
                last_delivered,
            } => {
                let delivered = last_delivered.map_or("nothing".to_string(), |last| {
                    format!("up to revision {last}")
                });
                write!(
                    f,
                    "it replaced one from revision {replaced_from} that had delivered \
                     {delivered}: it should have started at {expected_revision}"
                )
            }
            DeliveryProblem::NotDelivered {
                message,
                revision,
                acknowledged_at,
            } => write!(
                f,
                "{message} (revision {revision}, acknowledged at {acknowledged_at}) never arrived"
            ),
        }
    }
}

impl Violation for DeliveryViolation {
    fn property(&self) -> &'static str {
        "pub/sub delivery"
    }

    fn reference(&self) -> &'static str {
        "etcd watch from a revision: every event after it, in order, once (etcd API guarantees, \
         Watch); gocorex EtcdPubSub.SubscribeFromRev"
    }

    fn at(&self) -> Option<SimTime> {
        // When the duplicate arrived; unknown for the other problems.
        match &self.problem {
            DeliveryProblem::Duplicate { again_at, .. } => Some(*again_at),
            _ => None,
        }
    }
}

/// Every delivery problem, judged at `at`: open subscriptions owe every message
/// acknowledged (and subscribed to) at least `settle` before it. The pub/sub workload's
/// finishing step waits on the `NotDelivered` ones with no settle time.
pub fn check_at(history: &History, at: SimTime, settle: Duration) -> Vec<DeliveryViolation> {
    let owed_by = SimTime::from_nanos(
        at.as_nanos()
            .saturating_sub(u64::try_from(settle.as_nanos()).unwrap_or(u64::MAX)),
    );
    let mut by_topic: BTreeMap<&str, Vec<&Publication>> = BTreeMap::new();
    let publications = publications(history);
    for publication in &publications {
        by_topic
            .entry(publication.topic.as_str())
            .or_default()
            .push(publication);
    }
    let mut violations = Vec::new();
    let subscriptions = subscriptions(history);
    for (subscription, problem) in discontinuities(&subscriptions) {
        violations.push(DeliveryViolation {
            topic: subscription.topic.clone(),
            subscriber: subscription.subscriber,
            from_revision: subscription.from_revision,
            subscribed_at: subscription.subscribed_at,
            problem,
        });
    }
    for subscription in subscriptions {
        let published = by_topic
            .get(subscription.topic.as_str())
            .map(Vec::as_slice)
            .unwrap_or_default();
        for problem in problems(&subscription, published, owed_by) {
            violations.push(DeliveryViolation {
                topic: subscription.topic.clone(),
                subscriber: subscription.subscriber,
                from_revision: subscription.from_revision,
                subscribed_at: subscription.subscribed_at,
                problem,
            });
        }
    }
    violations
}

/// Every delivery problem at the end of the run, allowing `settle` for messages in flight.
pub fn check(history: &History, settle: Duration) -> Checked<DeliveryViolation> {
    // Every subscription: what it owed, and where it resumed its predecessor.
    let judged = subscriptions(history).len() as u64;
    let violations = match history.records().last() {
        Some(last) => check_at(history, last.at, settle),
        None => Vec::new(),
    };
    Checked::new(violations, judged)
}

/// Each resubscription that did not start right after its predecessor's last delivery.
fn discontinuities(subscriptions: &[Subscription]) -> Vec<(&Subscription, DeliveryProblem)> {
    let mut previous: BTreeMap<(Process, &str), &Subscription> = BTreeMap::new();
    let mut found = Vec::new();
    for subscription in subscriptions {
        let key = (subscription.subscriber, subscription.topic.as_str());
        if let Some(replaced) = previous.insert(key, subscription)
            && matches!(replaced.end, SubscriptionEnd::Replaced(_))
        {
            let last_delivered = replaced
                .received
                .iter()
                .map(|receipt| receipt.revision)
                .max();
            let expected_revision = last_delivered.map_or(replaced.from_revision, |last| last + 1);
            if subscription.from_revision != expected_revision {
                found.push((
                    subscription,
                    DeliveryProblem::Discontinuous {
                        expected_revision,
                        replaced_from: replaced.from_revision,
                        last_delivered,
                    },
                ));
            }
        }
    }
    found
}

fn problems(
    subscription: &Subscription,
    published: &[&Publication],
    owed_by: SimTime,
) -> Vec<DeliveryProblem> {
    let revision_of: BTreeMap<&str, u64> = published
        .iter()
        .map(|publication| (publication.message.as_str(), publication.revision))
        .collect();
    let mut problems = Vec::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut previous: Option<u64> = None;
    for receipt in &subscription.received {
        let (message, revision) = (receipt.message.clone(), receipt.revision);
        if !seen.insert(receipt.message.as_str()) {
            problems.push(DeliveryProblem::Duplicate {
                message,
                revision,
                again_at: receipt.at,
            });
            continue;
        }
        if let Some(after_revision) = previous.filter(|previous| *previous >= revision) {
            problems.push(DeliveryProblem::OutOfOrder {
                message: message.clone(),
                revision,
                after_revision,
            });
        }
        if revision < subscription.from_revision {
            problems.push(DeliveryProblem::BeforeStart {
                message: message.clone(),
                revision,
            });
        }
        if let Some(&published_revision) = revision_of.get(receipt.message.as_str())
            && published_revision != revision
        {
            problems.push(DeliveryProblem::WrongRevision {
                message,
                received_revision: revision,
                published_revision,
            });
        }
        previous = Some(previous.map_or(revision, |previous| previous.max(revision)));
    }
    let received: BTreeSet<u64> = subscription
        .received
        .iter()
        .map(|receipt| receipt.revision)
        .collect();
    for publication in published {
        if publication.revision < subscription.from_revision
            || seen.contains(publication.message.as_str())
        {
            continue;
        }
        if let Some(&next_received) = received.range(publication.revision..).next() {
            problems.push(DeliveryProblem::Skipped {
                message: publication.message.clone(),
                revision: publication.revision,
                next_received,
            });
        } else if subscription.end == SubscriptionEnd::Open
            && publication.acknowledged_at.max(subscription.subscribed_at) <= owed_by
        {
            problems.push(DeliveryProblem::NotDelivered {
                message: publication.message.clone(),
                revision: publication.revision,
                acknowledged_at: publication.acknowledged_at,
            });
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, crash, pubsub_step};
    use sim::history::{History, recipe::PubSubStep};

    const SETTLE: Duration = Duration::from_secs(1);
    const SUBSCRIBER: u32 = 1;

    fn published(ms: u64, message: &str, revision: u64) -> sim::history::Record {
        pubsub_step(
            ms,
            C1,
            0,
            PubSubStep::Published {
                message: message.into(),
                revision,
            },
        )
    }

    fn subscribed(ms: u64, revision: u64) -> sim::history::Record {
        pubsub_step(ms, C2, SUBSCRIBER, PubSubStep::Subscribed { revision })
    }

    fn received(ms: u64, message: &str, revision: u64) -> sim::history::Record {
        pubsub_step(
            ms,
            C2,
            SUBSCRIBER,
            PubSubStep::Received {
                message: message.into(),
                revision,
            },
        )
    }

    fn problems_of(records: Vec<sim::history::Record>) -> Vec<DeliveryProblem> {
        check(&History::from_records(records), SETTLE)
            .into_iter()
            .map(|violation| violation.problem)
            .collect()
    }

    #[test]
    fn every_message_once_in_order_across_a_resubscription_passes() {
        let records = vec![
            subscribed(0, 3),
            published(100, "a", 5),
            received(110, "a", 5),
            published(200, "b", 6),
            // Resubscribed from after the last one received; b arrives on the new one.
            subscribed(250, 6),
            received(260, "b", 6),
            // The first subscription was replaced: it owes nothing more.
            published(300, "c", 7),
            received(310, "c", 7),
            // In flight at the end.
            published(4_500, "d", 8),
            pubsub_step(5_000, C1, 0, PubSubStep::Subscribed { revision: 1 }),
        ];
        assert_eq!(problems_of(records), vec![]);
    }

    #[test]
    fn a_duplicate_a_reordering_and_a_skip_are_each_caught() {
        let problems = problems_of(vec![
            subscribed(0, 1),
            published(100, "a", 5),
            published(101, "b", 6),
            published(102, "c", 7),
            received(110, "a", 5),
            received(120, "c", 7),
            received(130, "a", 5),
        ]);
        assert_eq!(
            problems,
            vec![
                DeliveryProblem::Duplicate {
                    message: "a".into(),
                    revision: 5,
                    again_at: SimTime::from_millis(130),
                },
                DeliveryProblem::Skipped {
                    message: "b".into(),
                    revision: 6,
                    next_received: 7,
                },
            ]
        );
        let problems = problems_of(vec![
            subscribed(0, 1),
            published(100, "a", 5),
            published(101, "b", 6),
            received(110, "b", 6),
            received(120, "a", 5),
        ]);
        assert_eq!(
            problems,
            vec![DeliveryProblem::OutOfOrder {
                message: "a".into(),
                revision: 5,
                after_revision: 6,
            }]
        );
    }

    #[test]
    fn an_open_subscription_owes_what_was_acknowledged_before_the_settle_time() {
        let problems = problems_of(vec![
            subscribed(0, 1),
            published(100, "a", 5),
            published(4_800, "b", 6),
            pubsub_step(5_000, C1, 0, PubSubStep::Subscribed { revision: 1 }),
        ]);
        assert_eq!(
            problems,
            vec![DeliveryProblem::NotDelivered {
                message: "a".into(),
                revision: 5,
                acknowledged_at: SimTime::from_millis(100),
            }]
        );
        // A crashed subscriber owes nothing more.
        let problems = problems_of(vec![
            subscribed(0, 1),
            published(100, "a", 5),
            crash(200, C2),
            pubsub_step(5_000, C1, 0, PubSubStep::Subscribed { revision: 1 }),
        ]);
        assert_eq!(problems, vec![]);
    }

    #[test]
    fn a_message_before_the_start_or_at_the_wrong_revision_is_caught() {
        let problems = problems_of(vec![
            subscribed(0, 6),
            published(100, "a", 5),
            published(101, "b", 6),
            received(110, "a", 5),
            received(120, "b", 9),
        ]);
        assert_eq!(
            problems,
            vec![
                DeliveryProblem::BeforeStart {
                    message: "a".into(),
                    revision: 5,
                },
                DeliveryProblem::WrongRevision {
                    message: "b".into(),
                    received_revision: 9,
                    published_revision: 6,
                },
            ]
        );
    }

    #[test]
    fn a_resubscription_from_the_last_delivered_revision_or_past_the_next_is_caught() {
        for (resumed_from, expected) in [(5, 6), (7, 6)] {
            let mut problems = problems_of(vec![
                subscribed(0, 3),
                published(100, "a", 5),
                received(110, "a", 5),
                subscribed(250, resumed_from),
                pubsub_step(5_000, C1, 0, PubSubStep::Subscribed { revision: 1 }),
            ]);
            // From 5, `a` is owed again (and not delivered): judged on its own.
            problems.retain(|problem| matches!(problem, DeliveryProblem::Discontinuous { .. }));
            assert_eq!(
                problems,
                vec![DeliveryProblem::Discontinuous {
                    expected_revision: expected,
                    replaced_from: 3,
                    last_delivered: Some(5),
                }],
                "resumed from {resumed_from}"
            );
        }
        // Nothing delivered: it goes on from where the replaced one started.
        let problems = problems_of(vec![subscribed(0, 3), subscribed(250, 4)]);
        assert_eq!(
            problems,
            vec![DeliveryProblem::Discontinuous {
                expected_revision: 3,
                replaced_from: 3,
                last_delivered: None,
            }]
        );
        assert!(
            check(
                &History::from_records(vec![subscribed(0, 3), subscribed(250, 4)]),
                SETTLE
            )[0]
            .to_string()
            .contains("had delivered nothing: it should have started at 3")
        );
    }

    #[test]
    fn a_resubscription_after_a_compaction_may_start_anywhere() {
        use sim::history::kv::{WatchRecord, WatchStep};
        let compacted = WatchRecord {
            process: SUBSCRIBER,
            watch: 1,
            step: WatchStep::Compacted {
                compact_revision: 9,
            },
        };
        let problems = problems_of(vec![
            subscribed(0, 3),
            published(100, "a", 5),
            received(110, "a", 5),
            crate::test_history::record(
                200,
                C2,
                sim::history::Event::Recipe(compacted.to_recipe_event()),
            ),
            subscribed(250, 12),
        ]);
        assert_eq!(problems, vec![]);
    }
}
