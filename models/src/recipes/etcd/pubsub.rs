//! Publish/subscribe on etcd (the seeds' gocorex `EtcdPubSub`):
//!
//! - a publisher puts each message at `<topic>/<message name>`, attached to its session's
//!   lease, so its messages expire with it. The put is a transaction that writes only if
//!   the key was never created, so a publish retried after an unknown outcome cannot
//!   publish the message twice; the message's revision is the put's;
//! - a subscriber watches the topic prefix from a revision (`SubscribeFromRev`) and delivers
//!   each put once, in revision order, ignoring deletes (a message's expiry is not a
//!   message). The watch stream resumes after a reconnect from the revision after the last
//!   one it received, and the subscriber also drops anything at or below the last revision
//!   it delivered, so a replay after a reconnect delivers nothing twice. To go on after
//!   closing, subscribe again from [`EtcdSubscriber::resume_revision`] — the revision after
//!   the last one delivered, as etcd's clientv3 resumes a watch (`lastRev + 1`). With
//!   [`RecipeBug::PubsubResumeFromLastReceived`] it is the last one delivered itself, and
//!   the new subscription delivers that message again.

use crate::etcd::{ChangeKind, EtcdClient, WatchItem, WatchStream, kv_response, prefix_range_end};
use crate::recipes::shared::error::RecipeError;
use crate::recipes::{RecipeBug, RecipeBugs, etcd::session::EtcdSession};
use sim::{
    NodeContext,
    history::{
        Event, OpError, OpResult, RecipeEvent, Response,
        kv::{
            Compare, CompareOperator, CompareTarget, KvError, KvOperation, KvResponse,
            ReadConsistency,
        },
        recipe::PubSubStep,
    },
};
use std::{collections::VecDeque, time::Duration};

/// Pause before retrying a request the store did not answer.
const RETRY: Duration = Duration::from_millis(50);

/// Records one client process's steps on one topic, at its node.
#[derive(Clone)]
struct PubSubRecorder {
    context: NodeContext,
    process: u32,
    topic: String,
}

impl PubSubRecorder {
    fn record(&self, step: PubSubStep) {
        self.context
            .history()
            .record(Event::Recipe(RecipeEvent::PubSub {
                process: self.process,
                topic: self.topic.clone(),
                step,
            }));
    }
}

/// The key prefix of a topic's messages.
fn topic_prefix(topic: &str) -> String {
    format!("{}/", topic.trim_end_matches('/'))
}

/// A publisher on one topic.
pub struct EtcdPublisher {
    prefix: String,
    recorder: PubSubRecorder,
}

impl EtcdPublisher {
    /// A publisher on `topic` for client process `process` on `context`'s node.
    pub fn new(context: &NodeContext, process: u32, topic: &str) -> Self {
        Self {
            prefix: topic_prefix(topic),
            recorder: PubSubRecorder {
                context: context.clone(),
                process,
                topic: topic.trim_end_matches('/').to_string(),
            },
        }
    }

    /// Publishes `message` (its name, unique on the topic) with `value` under `session`'s
    /// lease, through the caller's `client`; retries until the store acknowledges it or the
    /// session is over. Returns the message's revision and records it as published.
    pub async fn publish(
        &self,
        client: &mut EtcdClient,
        session: &EtcdSession,
        message: &str,
        value: &str,
    ) -> Result<u64, RecipeError> {
        let key = format!("{}{message}", self.prefix);
        let revision = loop {
            if session.is_done() {
                return Err(RecipeError::SessionEnded);
            }
            let result = client
                .txn(
                    vec![Compare {
                        key: key.clone(),
                        target: CompareTarget::CreateRevision(0),
                        operator: CompareOperator::Equal,
                        range_end: None,
                    }],
                    vec![KvOperation::Put {
                        prev_kv: false,
                        key: key.clone(),
                        value: value.to_string(),
                        lease: Some(session.lease()),
                    }],
                    vec![KvOperation::Get {
                        key: key.clone(),
                        range_end: None,
                        revision: None,
                        consistency: ReadConsistency::Linearizable,
                    }],
                )
                .await;
            match &result {
                OpResult::Ok {
                    response:
                        Response::Kv(KvResponse::Txn {
                            revision,
                            succeeded: true,
                            ..
                        }),
                } => break *revision,
                // Already there: an earlier attempt whose answer was lost published it.
                OpResult::Ok {
                    response:
                        Response::Kv(KvResponse::Txn {
                            succeeded: false,
                            responses,
                            ..
                        }),
                } => {
                    if let Some(KvResponse::Get { kvs, .. }) = responses.first()
                        && let Some(kv) = kvs.first()
                    {
                        break kv.mod_revision;
                    }
                }
                OpResult::Fail {
                    error: OpError::Kv(KvError::LeaseNotFound { .. }),
                } => return Err(RecipeError::SessionEnded),
                _ => {}
            }
            self.recorder.context.clock().sleep(RETRY).await;
        };
        self.recorder.record(PubSubStep::Published {
            message: message.to_string(),
            revision,
        });
        Ok(revision)
    }
}

/// A message as a subscriber receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Its name on the topic.
    pub name: String,
    /// What it says.
    pub value: String,
    /// The revision it was published at.
    pub revision: u64,
}

/// A subscription to one topic from a revision.
pub struct EtcdSubscriber {
    prefix: String,
    recorder: PubSubRecorder,
    watch: WatchStream,
    from_revision: u64,
    /// The revision of the last message handed to the caller (0: none yet).
    delivered_up_to: u64,
    ready: VecDeque<Message>,
    bugs: RecipeBugs,
}

impl EtcdSubscriber {
    /// Subscribes to `topic` from `from_revision` (at least 1: every message published at
    /// or after it) through the caller's `client`, as client process `client.process()` on
    /// `context`'s node. Records the subscription.
    pub async fn subscribe(
        client: &mut EtcdClient,
        context: &NodeContext,
        topic: &str,
        from_revision: u64,
    ) -> Self {
        let from_revision = from_revision.max(1);
        let prefix = topic_prefix(topic);
        let recorder = PubSubRecorder {
            context: context.clone(),
            process: client.process(),
            topic: topic.trim_end_matches('/').to_string(),
        };
        recorder.record(PubSubStep::Subscribed {
            revision: from_revision,
        });
        let watch = client
            .watch(&prefix, Some(prefix_range_end(&prefix)), from_revision)
            .await;
        Self {
            prefix,
            recorder,
            watch,
            from_revision,
            delivered_up_to: 0,
            ready: VecDeque::new(),
            bugs: RecipeBugs::default(),
        }
    }

    /// The same subscription with the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.bugs = bugs;
        self
    }

    /// Subscribes to `topic` from now: reads the topic (linearizable, retried until
    /// answered) and subscribes from the revision after the read.
    pub async fn subscribe_from_now(
        client: &mut EtcdClient,
        context: &NodeContext,
        topic: &str,
    ) -> Self {
        let prefix = topic_prefix(topic);
        let revision = loop {
            if let Some(KvResponse::Get { revision, .. }) =
                kv_response(&client.get_prefix(&prefix).await)
            {
                break *revision;
            }
            context.clock().sleep(RETRY).await;
        };
        Self::subscribe(client, context, topic, revision + 1).await
    }

    /// The revision a new subscription should start from to continue this one: the one
    /// after the last message delivered.
    pub fn resume_revision(&self) -> u64 {
        if self.bugs.has(RecipeBug::PubsubResumeFromLastReceived) {
            return self.from_revision.max(self.delivered_up_to);
        }
        self.from_revision.max(self.delivered_up_to + 1)
    }

    /// The next message, in revision order (waits; the watch reconnects as needed).
    /// Records it as received.
    pub async fn next(&mut self) -> Result<Message, RecipeError> {
        loop {
            if let Some(message) = self.ready.pop_front() {
                self.delivered_up_to = message.revision;
                self.recorder.record(PubSubStep::Received {
                    message: message.name.clone(),
                    revision: message.revision,
                });
                return Ok(message);
            }
            match self.watch.next().await {
                WatchItem::Changes(changes) => {
                    let newest_queued = self
                        .ready
                        .back()
                        .map_or(self.delivered_up_to, |message| message.revision);
                    let mut newest = newest_queued;
                    for change in changes {
                        // Deletes are expiries, not messages; a revision already handed out
                        // (a replay after a reconnect) is not handed out again.
                        if change.kind != ChangeKind::Put || change.revision() <= newest {
                            continue;
                        }
                        let Some(name) = change.kv.key.strip_prefix(&self.prefix) else {
                            continue;
                        };
                        newest = change.revision();
                        self.ready.push_back(Message {
                            name: name.to_string(),
                            value: change.kv.value.clone(),
                            revision: change.revision(),
                        });
                    }
                }
                WatchItem::Compacted { compact_revision } => {
                    return Err(RecipeError::Compacted { compact_revision });
                }
                // Not asked for: the subscription never requests progress or cancels.
                WatchItem::Progress { .. } | WatchItem::Canceled => {}
            }
        }
    }

    /// Stops the subscription.
    pub fn close(self) {
        self.watch.close();
    }
}
