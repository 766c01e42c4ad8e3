//! `pubsub` on the Raft store: every client node runs a publisher (process 0) and a
//! subscriber (process 1) of one topic.
//!
//! A publisher publishes a message (`<node>#<n>`) every `publish_every_ms` under its
//! session's lease, so its messages expire with it; when its session ends it starts a new
//! one. A subscriber subscribes from a revision — from the first one on odd-numbered nodes
//! (`c1`, `c3`, …: every message ever), from the present on the others — and every
//! `resubscribe_every_ms` closes its subscription and subscribes again from the revision
//! after the last message it received (`SubscribeFromRev`). Subscribers receive to the end
//! of the run (they are not workers the driver waits for); a subscriber cut off from the
//! servers reconnects by itself.
//!
//! After the heal, every open subscription must catch up with every acknowledged message
//! from its revision within the liveness bound: the finishing step reads the history as
//! `recipe.pubsub_delivery` does and names the subscribers still behind.

use crate::workload::{Pending, Workers};
use checks::recipes::pubsub_delivery::{self, DeliveryProblem, DeliveryViolation};
use models::{
    etcd::{EtcdClient, EtcdCluster},
    recipes::{EtcdPublisher, EtcdSession, EtcdSubscriber, RecipeBugs, RecipeError},
};
use serde::{Deserialize, Serialize};
use sim::{NodeContext, Sim, time::SimTime};
use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The topic's key prefix.
const TOPIC: &str = "/topics/events";

/// The publisher process on each client node.
const PUBLISHER_PROCESS: u32 = 0;

/// The subscriber process on each client node.
pub const SUBSCRIBER_PROCESS: u32 = 1;

/// How often the finishing step looks at the subscriptions.
const POLL: Duration = Duration::from_millis(200);

/// Parameters of `pubsub`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PubSub {
    /// The publishers' lease TTL, milliseconds.
    pub session_ttl_ms: u64,
    /// A publisher publishes a message this often, milliseconds.
    pub publish_every_ms: u64,
    /// A subscriber subscribes again from where it left off this often, milliseconds.
    pub resubscribe_every_ms: u64,
}

impl Default for PubSub {
    fn default() -> Self {
        Self {
            session_ttl_ms: 2_000,
            publish_every_ms: 100,
            resubscribe_every_ms: 2_500,
        }
    }
}

impl PubSub {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.session_ttl_ms < 100 || self.publish_every_ms == 0 || self.resubscribe_every_ms == 0
        {
            return Err(format!(
                "expected a TTL of at least 100 ms and positive intervals, got {} ms, {} ms \
                 and {} ms",
                self.session_ttl_ms, self.publish_every_ms, self.resubscribe_every_ms
            ));
        }
        Ok(())
    }

    pub(crate) fn start(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        bugs: RecipeBugs,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        let mut workers = Vec::new();
        for node in sim.clients() {
            let (parameters, store, stop) = (self.clone(), cluster.clone(), stop.clone());
            let context = sim.node(node);
            workers.push(sim.spawn(node, async move {
                publish(&parameters, &store, &context, &stop).await;
            }));
            let (parameters, store) = (self.clone(), cluster.clone());
            let context = sim.node(node);
            // Not a worker: it receives to the end of the run (its handle detaches).
            drop(sim.spawn(node, async move {
                subscribe(&parameters, &store, &context, bugs).await;
            }));
        }
        workers
    }

    /// After the heal: waits until every open subscription has received every acknowledged
    /// message from its revision.
    pub(crate) async fn finish(&self, sim: &Sim, pending: &Pending) -> Result<(), String> {
        loop {
            let history = sim.history_snapshot();
            let behind: Vec<DeliveryViolation> =
                pubsub_delivery::check_at(&history, sim.now(), Duration::ZERO)
                    .into_iter()
                    .filter(|violation| {
                        matches!(violation.problem, DeliveryProblem::NotDelivered { .. })
                    })
                    .collect();
            if behind.is_empty() {
                return Ok(());
            }
            pending.set(format!(
                "subscribers of {TOPIC} behind: {}",
                describe(&behind)
            ));
            sim.sleep(POLL).await;
        }
    }
}

/// Per subscription: how many messages it lacks and the first of them.
fn describe(behind: &[DeliveryViolation]) -> String {
    let mut by_subscription: BTreeMap<(String, u64, SimTime), (usize, String)> = BTreeMap::new();
    for violation in behind {
        let (node, process) = violation.subscriber;
        let key = (
            format!("{node}/{process}"),
            violation.from_revision,
            violation.subscribed_at,
        );
        let entry = by_subscription.entry(key).or_insert_with(|| {
            let first = match &violation.problem {
                DeliveryProblem::NotDelivered {
                    message, revision, ..
                } => format!("{message} at revision {revision}"),
                other => format!("{other:?}"),
            };
            (0, first)
        });
        entry.0 += 1;
    }
    by_subscription
        .into_iter()
        .map(|((who, from, _), (count, first))| {
            format!("{who} (from revision {from}) lacks {count}, first {first}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A publisher: a message every `publish_every_ms` until the workload stops; a new session
/// when one ends.
async fn publish(
    parameters: &PubSub,
    cluster: &EtcdCluster,
    context: &NodeContext,
    stop: &AtomicBool,
) {
    let clock = context.clock().clone();
    let ttl = Duration::from_millis(parameters.session_ttl_ms);
    let mut client = EtcdClient::new(cluster, context.clone(), PUBLISHER_PROCESS);
    let publisher = EtcdPublisher::new(context, PUBLISHER_PROCESS, TOPIC);
    let mut session: Option<EtcdSession> = None;
    let mut sent = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let current = match session.take() {
            Some(current) if !current.is_done() => current,
            ended => {
                if let Some(ended) = ended {
                    ended.close().await;
                }
                match EtcdSession::start(cluster, context, PUBLISHER_PROCESS, ttl, ttl * 5).await {
                    Ok(started) => started,
                    Err(_) => continue,
                }
            }
        };
        sent += 1;
        let message = format!("{}#{sent}", context.id());
        if let Err(RecipeError::SessionEnded) = publisher
            .publish(&mut client, &current, &message, &format!("payload {sent}"))
            .await
        {
            current.close().await;
            continue;
        }
        session = Some(current);
        clock
            .sleep(Duration::from_millis(parameters.publish_every_ms))
            .await;
    }
    if let Some(current) = session {
        current.close().await;
    }
}

/// A subscriber, to the end of the run: receives, and subscribes again from where it left
/// off every `resubscribe_every_ms`.
async fn subscribe(
    parameters: &PubSub,
    cluster: &EtcdCluster,
    context: &NodeContext,
    bugs: RecipeBugs,
) {
    let clock = context.clock().clone();
    let every = Duration::from_millis(parameters.resubscribe_every_ms);
    let mut client = EtcdClient::new(cluster, context.clone(), SUBSCRIBER_PROCESS);
    let mut subscription = if context.id().ordinal().is_multiple_of(2) {
        // c1, c3, …: every message ever published.
        EtcdSubscriber::subscribe(&mut client, context, TOPIC, 1)
            .await
            .with_bugs(bugs)
    } else {
        EtcdSubscriber::subscribe_from_now(&mut client, context, TOPIC)
            .await
            .with_bugs(bugs)
    };
    let mut resubscribe_at = clock.now() + every;
    loop {
        let left = resubscribe_at.saturating_duration_since(clock.now());
        match clock.timeout(left, subscription.next()).await {
            Ok(Ok(_)) => {}
            // Messages were compacted away: nothing to resume from; start from now.
            Ok(Err(_)) => {
                subscription.close();
                subscription = EtcdSubscriber::subscribe_from_now(&mut client, context, TOPIC)
                    .await
                    .with_bugs(bugs);
            }
            Err(_) => {
                let from = subscription.resume_revision();
                subscription.close();
                subscription = EtcdSubscriber::subscribe(&mut client, context, TOPIC, from)
                    .await
                    .with_bugs(bugs);
                resubscribe_at = clock.now() + every;
            }
        }
    }
}
