//! Publish/subscribe as clients observed it: the messages publishers were told were
//! published, and what each subscription received.
//!
//! Reads the pub/sub recipe's `RecipeEvent::PubSub` records, written at the client node: a
//! publisher's `Published` once the store acknowledged the message (with its revision), a
//! subscriber's `Subscribed` when it subscribed from a revision and `Received` for each
//! message it handed its caller. A `Subscribed` by a process that already had a
//! subscription to the topic replaces it (a resubscription from a later revision). Reads
//! client crashes from the fault records: a crashed subscriber receives nothing more. Reads
//! the subscriber's watch records (`kv_watch`, recorded by the etcd client for its process):
//! a watch the server cancelled because the revision it needed was compacted ends the
//! subscription, which cannot go on from where it was.

use super::membership::Process;
use sim::{
    history::{
        Event, History, RecipeEvent,
        kv::{WatchRecord, WatchStep},
        recipe::PubSubStep,
    },
    time::SimTime,
};
use std::collections::BTreeMap;

/// A message a publisher was told was published.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Publication {
    /// The topic.
    pub topic: String,
    /// The message's name.
    pub message: String,
    /// The revision it was published at.
    pub revision: u64,
    /// Who published it.
    pub publisher: Process,
    /// When the publisher recorded the acknowledgement.
    pub acknowledged_at: SimTime,
}

/// A message a subscription handed its caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// The message's name.
    pub message: String,
    /// The revision the subscriber received it at.
    pub revision: u64,
    /// When.
    pub at: SimTime,
}

/// How a subscription ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubscriptionEnd {
    /// It was still open when the run ended.
    Open,
    /// Its process subscribed to the topic again, at this time.
    Replaced(SimTime),
    /// Its node crashed, at this time.
    Crashed(SimTime),
    /// Its watch was cancelled at this time: the revision it needed next was compacted.
    Compacted(SimTime),
}

/// One subscription of a process to a topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscription {
    /// The topic.
    pub topic: String,
    /// Who subscribed.
    pub subscriber: Process,
    /// The first revision it asked for.
    pub from_revision: u64,
    /// When it subscribed.
    pub subscribed_at: SimTime,
    /// What it received, in order.
    pub received: Vec<Receipt>,
    /// How it ended.
    pub end: SubscriptionEnd,
}

/// Every acknowledged publication, in the order they were recorded.
pub fn publications(history: &History) -> Vec<Publication> {
    history
        .records()
        .iter()
        .filter_map(|record| match (&record.event, record.node) {
            (
                Event::Recipe(RecipeEvent::PubSub {
                    process,
                    topic,
                    step: PubSubStep::Published { message, revision },
                }),
                Some(node),
            ) => Some(Publication {
                topic: topic.clone(),
                message: message.clone(),
                revision: *revision,
                publisher: (node, *process),
                acknowledged_at: record.at,
            }),
            _ => None,
        })
        .collect()
}

/// Every subscription, in the order they began.
pub fn subscriptions(history: &History) -> Vec<Subscription> {
    let mut open: BTreeMap<(Process, String), usize> = BTreeMap::new();
    let mut subscriptions: Vec<Subscription> = Vec::new();
    for record in history.records() {
        match (&record.event, record.node) {
            (
                Event::Recipe(RecipeEvent::PubSub {
                    process,
                    topic,
                    step,
                }),
                Some(node),
            ) => {
                let key = ((node, *process), topic.clone());
                match step {
                    PubSubStep::Subscribed { revision } => {
                        if let Some(index) = open.remove(&key) {
                            subscriptions[index].end = SubscriptionEnd::Replaced(record.at);
                        }
                        open.insert(key, subscriptions.len());
                        subscriptions.push(Subscription {
                            topic: topic.clone(),
                            subscriber: (node, *process),
                            from_revision: *revision,
                            subscribed_at: record.at,
                            received: Vec::new(),
                            end: SubscriptionEnd::Open,
                        });
                    }
                    PubSubStep::Received { message, revision } => {
                        if let Some(&index) = open.get(&key) {
                            subscriptions[index].received.push(Receipt {
                                message: message.clone(),
                                revision: *revision,
                                at: record.at,
                            });
                        }
                    }
                    PubSubStep::Published { .. } => {}
                }
            }
            (Event::Recipe(event), Some(node)) => {
                if let Some(WatchRecord {
                    process,
                    step: WatchStep::Compacted { .. },
                    ..
                }) = WatchRecord::from_recipe_event(event)
                {
                    open.retain(|(subscriber, _), index| {
                        let compacted = *subscriber == (node, process);
                        if compacted {
                            subscriptions[*index].end = SubscriptionEnd::Compacted(record.at);
                        }
                        !compacted
                    });
                }
            }
            (Event::Fault(fault), _) => {
                if let Some(crashed) = fault.crashed() {
                    open.retain(|((node, _), _), index| {
                        if *node == crashed {
                            subscriptions[*index].end = SubscriptionEnd::Crashed(record.at);
                        }
                        *node != crashed
                    });
                }
            }
            _ => {}
        }
    }
    subscriptions
}
