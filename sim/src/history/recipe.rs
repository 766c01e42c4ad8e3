//! What coordination recipes record: the vocabulary the recipe checkers read.
//!
//! A recipe records what its *client* believes and does, at the client node, tagged with the
//! logical process on that node (a node may run several clients): "I hold the lock with
//! token 7", "I lost it: my session expired", "a watch woke me". The checkers in
//! `checks::recipes` compare these beliefs across clients on the global simulated clock, the
//! ground truth a simulator has and a real test lacks. A fenced resource records every write
//! it receives, with the writer and its token, at the resource node.

use crate::node::NodeId;
use serde::{Deserialize, Serialize};

/// Why a client stopped believing it holds a lock or leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossReason {
    /// ZooKeeper told the client its session expired.
    SessionExpired,
    /// etcd said the lease is gone (a keep-alive found it expired or revoked).
    LeaseExpired,
    /// The client's lock node or key was deleted by someone else.
    NodeDeleted,
    /// The client could not reach the store for longer than it may keep believing.
    ConnectionLost,
}

/// Which hold a client asks for or believes it has. Plain locks are exclusive; a
/// read/write lock's readers hold it shared with one another (ZooKeeper recipes, "Shared
/// Locks"). Records without a mode (every lock but the read/write lock's readers) are
/// exclusive, so the JSON of existing locks is unchanged.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum LockMode {
    /// No one else may hold the lock at the same time (a plain lock, or a write lock).
    #[default]
    Exclusive,
    /// Other shared holders may hold it at the same time, but no exclusive one (a read
    /// lock).
    Shared,
}

impl LockMode {
    /// Whether this is the default mode, left out of the JSON.
    pub fn is_exclusive(&self) -> bool {
        *self == LockMode::Exclusive
    }
}

/// A step of acquiring and holding a lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum LockStep {
    /// The client asked for the lock (acquisition latency runs from here).
    Requested {
        /// The hold it asked for.
        #[serde(default, skip_serializing_if = "LockMode::is_exclusive")]
        mode: LockMode,
    },
    /// A watch notification reached the waiting client (the herd-effect checker counts
    /// these per release).
    Woken {
        /// The path or key whose watch fired.
        watched: String,
    },
    /// The client believes it holds the lock, with this fencing token (ZooKeeper: the lock
    /// node's czxid; etcd: the key's create revision).
    Acquired {
        /// The fencing token.
        token: u64,
        /// The hold it believes it has.
        #[serde(default, skip_serializing_if = "LockMode::is_exclusive")]
        mode: LockMode,
    },
    /// The client let go of the lock, and knows it.
    Released {
        /// The token it held.
        token: u64,
    },
    /// The client learned it no longer holds the lock (it did not let go).
    Lost {
        /// The token it held.
        token: u64,
        /// How it learned.
        why: LossReason,
    },
    /// The client stopped trying (a try-acquire timed out, or the session ended while
    /// waiting).
    GaveUp {
        /// Why, for the reader.
        why: String,
    },
}

/// A step of an election.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum ElectionStep {
    /// The client entered the election.
    Campaigned,
    /// A watch notification reached the waiting candidate (the herd-effect checker counts
    /// these per departure, as it does a lock's `Woken`).
    Woken {
        /// The path or key whose watch fired.
        watched: String,
    },
    /// The client believes it leads (`OnStartedLeading`), with this fencing token.
    Gained {
        /// The fencing token.
        token: u64,
    },
    /// The client resigned, and knows it no longer leads.
    Resigned {
        /// The token it held.
        token: u64,
    },
    /// The client learned it no longer leads (`OnStoppedLeading`).
    Lost {
        /// The token it held.
        token: u64,
        /// How it learned.
        why: LossReason,
    },
    /// The client stopped campaigning without leading (its patience ran out, or its session
    /// ended while it waited): it is no longer a candidate.
    GaveUp {
        /// Why, for the reader.
        why: String,
    },
    /// The client observed who leads now (`OnNewLeader`): the leader's announced value, or
    /// none if nobody leads.
    Observed {
        /// The leader's value.
        leader: Option<String>,
    },
}

/// A step of a barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum BarrierStep {
    /// The client started to enter.
    Entering,
    /// The client is through the entry (every participant had arrived).
    Entered,
    /// The client started to leave.
    Leaving,
    /// The client is through the exit (every participant had left the entry).
    Left,
}

/// A step of a queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum QueueStep {
    /// The client asked the store to put `item` (until `Produced` follows, the put may or
    /// may not have happened).
    Producing {
        /// The item.
        item: String,
    },
    /// The store acknowledged the client's put of `item`.
    Produced {
        /// The item.
        item: String,
    },
    /// The client took `item` off the queue (it alone owns it now).
    Consumed {
        /// The item.
        item: String,
    },
}

/// A step of a shared counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum CounterStep {
    /// The client's increment took effect, and the counter then read `value`.
    Incremented {
        /// The value after the increment.
        value: i64,
    },
    /// The client's increment may or may not have taken effect (the reply was lost).
    Unknown,
    /// The client read the counter at the end.
    Read {
        /// The value.
        value: i64,
    },
}

/// A step of configuration kept behind a `ready` marker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum ConfigStep {
    /// The client began a read of the configuration (before its `sync`, if it syncs): a
    /// read that began after a publish completed is expected to see that version or a
    /// newer one.
    Reading,
    /// The client published a complete configuration of `version`.
    Published {
        /// The version.
        version: u64,
    },
    /// The client read a configuration after seeing `ready`: the version each part
    /// carried (a complete read has one version throughout).
    Read {
        /// The version of each part, in part order.
        parts: Vec<u64>,
    },
}

/// A step of a rendezvous (Hunt et al., ZooKeeper, section 2.4): a client creates the
/// rendezvous node, a master fills it with its address, workers read it (with a watch) and
/// watch for its deletion.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum RendezvousStep {
    /// The client created the rendezvous node, empty.
    Created,
    /// The master asked the store to fill the node with `info` (until `Published` follows,
    /// the write may or may not have happened).
    Publishing {
        /// What it wrote: its address.
        info: String,
    },
    /// The store acknowledged the master's write of `info`.
    Published {
        /// What it wrote.
        info: String,
    },
    /// A worker started waiting for the master's information.
    Awaiting,
    /// A worker read `info` from the node and handed it to its caller.
    Learned {
        /// What it read.
        info: String,
    },
    /// The client that created the node ended the rendezvous (deleted the node, or learned
    /// that it went with its session).
    Ended,
    /// A master or worker noticed that the node was deleted (time to clean up).
    NoticedEnd,
}

/// A step of group membership / service discovery.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum MembershipStep {
    /// The client registered itself as `member`.
    Registered {
        /// Its member name.
        member: String,
    },
    /// The client unregistered `member`.
    Unregistered {
        /// Its member name.
        member: String,
    },
    /// The client's view of the group changed to `members` (sorted).
    ViewChanged {
        /// The members it now sees.
        members: Vec<String>,
    },
}

/// A step of publish/subscribe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum PubSubStep {
    /// The store acknowledged `message`, at `revision`.
    Published {
        /// The message.
        message: String,
        /// Its store revision.
        revision: u64,
    },
    /// The client subscribed, from `revision` on.
    Subscribed {
        /// The first revision it wants.
        revision: u64,
    },
    /// `message` reached the subscriber.
    Received {
        /// The message.
        message: String,
        /// Its store revision.
        revision: u64,
    },
}

/// Whether a fenced resource accepted a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceVerdict {
    /// Accepted.
    Accepted,
    /// Rejected: its token was older than one the resource had accepted.
    RejectedStaleToken,
}

/// Observable steps of a coordination recipe, each by one client process (`process`, on
/// the node that recorded it), or by a fenced resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "recipe_event", rename_all = "snake_case")]
pub enum RecipeEvent {
    /// A lock.
    Lock {
        /// The client process.
        process: u32,
        /// Lock name.
        lock: String,
        /// What happened.
        #[serde(flatten)]
        step: LockStep,
    },
    /// An election.
    Election {
        /// The client process.
        process: u32,
        /// Election name.
        election: String,
        /// What happened.
        #[serde(flatten)]
        step: ElectionStep,
    },
    /// A barrier.
    Barrier {
        /// The client process.
        process: u32,
        /// Barrier name.
        barrier: String,
        /// What happened.
        #[serde(flatten)]
        step: BarrierStep,
    },
    /// A queue.
    Queue {
        /// The client process.
        process: u32,
        /// Queue name.
        queue: String,
        /// What happened.
        #[serde(flatten)]
        step: QueueStep,
    },
    /// A counter.
    Counter {
        /// The client process.
        process: u32,
        /// Counter name.
        counter: String,
        /// What happened.
        #[serde(flatten)]
        step: CounterStep,
    },
    /// A configuration.
    Config {
        /// The client process.
        process: u32,
        /// Configuration name.
        config: String,
        /// What happened.
        #[serde(flatten)]
        step: ConfigStep,
    },
    /// A rendezvous.
    Rendezvous {
        /// The client process.
        process: u32,
        /// The rendezvous node's path.
        rendezvous: String,
        /// What happened.
        #[serde(flatten)]
        step: RendezvousStep,
    },
    /// A group.
    Membership {
        /// The client process.
        process: u32,
        /// Group name.
        group: String,
        /// What happened.
        #[serde(flatten)]
        step: MembershipStep,
    },
    /// A topic.
    PubSub {
        /// The client process.
        process: u32,
        /// Topic name.
        topic: String,
        /// What happened.
        #[serde(flatten)]
        step: PubSubStep,
    },
    /// A fenced resource received a write (recorded at the resource node).
    ResourceWrite {
        /// Resource name.
        resource: String,
        /// The client node that sent it.
        writer: NodeId,
        /// The client process that sent it.
        process: u32,
        /// The writer's fencing token, if it sent one.
        token: Option<u64>,
        /// What the writer wrote (unique per write, so overwrites can be traced).
        value: String,
        /// What the resource did.
        verdict: ResourceVerdict,
    },
    /// Anything else.
    Other {
        /// Event name.
        name: String,
        /// Details.
        #[serde(default)]
        detail: serde_json::Value,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipe_events_round_trip_through_json_with_their_step_inline() {
        let events = [
            RecipeEvent::Lock {
                process: 1,
                lock: "/lock".into(),
                step: LockStep::Lost {
                    token: 7,
                    why: LossReason::SessionExpired,
                },
            },
            RecipeEvent::Election {
                process: 0,
                election: "e".into(),
                step: ElectionStep::Observed { leader: None },
            },
            RecipeEvent::Counter {
                process: 2,
                counter: "n".into(),
                step: CounterStep::Unknown,
            },
            RecipeEvent::Rendezvous {
                process: 3,
                rendezvous: "/zr".into(),
                step: RendezvousStep::Learned {
                    info: "m:2181".into(),
                },
            },
            RecipeEvent::ResourceWrite {
                resource: "r".into(),
                writer: NodeId::client(2),
                process: 0,
                token: Some(3),
                value: "c3/0#1".into(),
                verdict: ResourceVerdict::RejectedStaleToken,
            },
        ];
        for event in events {
            let json = serde_json::to_string(&event).unwrap();
            assert_eq!(
                serde_json::from_str::<RecipeEvent>(&json).unwrap(),
                event,
                "{json}"
            );
        }
        let lost = serde_json::to_value(RecipeEvent::Lock {
            process: 1,
            lock: "/lock".into(),
            step: LockStep::Acquired {
                token: 9,
                mode: LockMode::Exclusive,
            },
        })
        .unwrap();
        assert_eq!(
            lost,
            serde_json::json!({"recipe_event": "lock", "process": 1, "lock": "/lock", "step": "acquired", "token": 9})
        );
        // The mode is written only when it is not the default, and records written before
        // there were modes read as exclusive.
        let shared = RecipeEvent::Lock {
            process: 1,
            lock: "/rw".into(),
            step: LockStep::Acquired {
                token: 4,
                mode: LockMode::Shared,
            },
        };
        let json = serde_json::to_value(&shared).unwrap();
        assert_eq!(json["mode"], "shared");
        assert_eq!(serde_json::from_value::<RecipeEvent>(json).unwrap(), shared);
        assert_eq!(
            serde_json::from_value::<RecipeEvent>(serde_json::json!(
                {"recipe_event": "lock", "process": 1, "lock": "/lock", "step": "requested"}
            ))
            .unwrap(),
            RecipeEvent::Lock {
                process: 1,
                lock: "/lock".into(),
                step: LockStep::Requested {
                    mode: LockMode::Exclusive
                },
            }
        );
    }
}
