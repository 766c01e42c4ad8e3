//! The FIFO queue on ZooKeeper (the ZooKeeper recipe "Queues"; Curator's
//! `DistributedQueue`): producers create persistent-sequential children of the queue node,
//! consumers take the oldest child (the lowest sequence number, in the order of the parent's
//! counter across its wrap).
//!
//! - The put is *protected* (a GUID in the name, as [`ZkClient::create_protected`] does):
//!   after a lost reply the producer looks for its GUID among the items **and among the
//!   claims** before putting again. Among the items alone is not enough: a consumer may
//!   have taken the item before the producer looks, and the item would be put twice.
//! - The take is one `multi`: delete the item's node and create a claim node
//!   `<queue>-claims/<child>` holding the consumer's name. Whoever's multi succeeds owns the
//!   item. A bare delete could not say, after a lost reply, whether this consumer's delete
//!   took the item or another's did (the item would be lost); the claim says who took it.
//! - A take whose session ends between sending its `multi` and hearing the outcome (a
//!   consumer cut off past its session timeout, the reply lost) is *unsettled*: the claim
//!   may have committed, and then the item is this consumer's and nobody else's. The
//!   consumer settles it in its next session by reading the claim ([`ZkQueue::settle`]);
//!   giving up instead would lose the item.
//! - An empty queue is waited for with a child watch on the queue node, not by polling.

use crate::recipes::shared::bugs::RecipeBugs;
use crate::recipes::shared::error::{RecipeError, UnsettledTake};
use crate::recipes::zk::paths::{ensure_parents, in_sequence_order};
use crate::zk::{WriteOp, ZkClient, ZkClientError};
use sim::{
    NodeContext,
    history::{
        Event, RecipeEvent,
        recipe::QueueStep,
        zk::{CreateMode, ZkError},
    },
};
use std::time::Duration;

/// The name every item node carries (after the protection GUID, before the sequence).
const ITEM_PREFIX: &str = "item-";

/// [`queue_error`] for an error after a take's claim was sent: a session that ended leaves
/// the take unsettled rather than empty-handed.
fn take_error(error: ZkClientError, take: &UnsettledTake) -> RecipeError {
    match RecipeError::from(error) {
        RecipeError::SessionEnded => RecipeError::TakeUnsettled(take.clone()),
        other => other,
    }
}

/// A FIFO queue under the node `path`, used through one session.
pub struct ZkQueue {
    zk: ZkClient,
    path: String,
    claims: String,
    context: NodeContext,
}

impl ZkQueue {
    /// The queue at `path`, used through `zk` by the client on `context`'s node.
    pub fn new(zk: &ZkClient, context: &NodeContext, path: &str) -> Self {
        Self {
            zk: zk.clone(),
            path: path.to_string(),
            claims: format!("{path}-claims"),
            context: context.clone(),
        }
    }

    fn record(&self, step: QueueStep) {
        self.context
            .history()
            .record(Event::Recipe(RecipeEvent::Queue {
                process: self.zk.process(),
                queue: self.path.clone(),
                step,
            }));
    }

    /// Puts `item` at the tail of the queue. `Ok` once the store acknowledged it; on an
    /// error the put may or may not have happened.
    pub async fn produce(&self, item: &str) -> Result<(), RecipeError> {
        self.record(QueueStep::Producing {
            item: item.to_string(),
        });
        // The protection marker, unique in the run: the session, and the simulated instant
        // the put began (one session's puts are one after another). After a lost reply it is
        // looked for among the items or, if a consumer took the item already, among the
        // claims, whose names are the items' names.
        let marker = format!(
            "_c_{:016x}{:016x}-",
            self.zk.session_id().unwrap_or(0),
            self.context.sim().now().as_nanos()
        );
        let child = format!("{}/{marker}{ITEM_PREFIX}", self.path);
        loop {
            match self
                .zk
                .create(&child, item, CreateMode::PersistentSequential)
                .await
            {
                Ok(_) => break,
                // The first producer ever creates the queue node.
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    ensure_parents(&self.zk, &child)
                        .await
                        .map_err(RecipeError::from)?;
                }
                Err(ZkClientError::ConnectionLoss) => {
                    if self.put_happened(&marker).await? {
                        break;
                    }
                }
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
        self.record(QueueStep::Produced {
            item: item.to_string(),
        });
        Ok(())
    }

    /// Whether a put whose reply was lost happened: its marker is among the items, or among
    /// the claims (taken already). After a `sync`, so that the server answering has every
    /// write the leader had committed.
    async fn put_happened(&self, marker: &str) -> Result<bool, RecipeError> {
        for parent in [&self.path, &self.claims] {
            loop {
                if let Err(ZkClientError::ConnectionLoss) = self.zk.sync(parent).await {
                    continue;
                }
                match self.zk.get_children(parent).await {
                    Ok((children, _)) if children.iter().any(|name| name.starts_with(marker)) => {
                        return Ok(true);
                    }
                    Ok(_) | Err(ZkClientError::Api(ZkError::NoNode)) => break,
                    Err(ZkClientError::ConnectionLoss) => continue,
                    Err(error) => return Err(RecipeError::from(error)),
                }
            }
        }
        Ok(false)
    }

    /// Takes the head of the queue, waiting at most `patience` for one to arrive: `None` if
    /// none did.
    pub async fn consume(&self, patience: Duration) -> Result<Option<String>, RecipeError> {
        let clock = self.context.clock().clone();
        let deadline = clock.now() + patience;
        loop {
            let (children, watch) = match self.zk.get_children_watch(&self.path).await {
                Ok((children, _, watch)) => (children, Some(watch)),
                Err(ZkClientError::Api(ZkError::NoNode)) => (Vec::new(), None),
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            };
            let items = in_sequence_order(
                children
                    .into_iter()
                    .filter(|name| name.contains(ITEM_PREFIX))
                    .map(|name| (name, ITEM_PREFIX))
                    .collect(),
                self.zk.sequence_width(),
                // The queue has no known-bug variants: it orders its items correctly.
                RecipeBugs::default(),
            );
            for name in &items {
                if let Some(item) = self.take(name).await? {
                    self.record(QueueStep::Consumed { item: item.clone() });
                    return Ok(Some(item));
                }
            }
            if !items.is_empty() {
                // Others took them all: list again.
                continue;
            }
            let left = deadline.saturating_duration_since(clock.now());
            if left.is_zero() {
                return Ok(None);
            }
            match watch {
                Some(watch) => match clock.timeout(left, watch.fired()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(_)) => {
                        if self.zk.is_expired() || self.zk.is_closed() {
                            return Err(RecipeError::SessionEnded);
                        }
                    }
                    Err(_) => return Ok(None),
                },
                // No queue node yet: nothing to watch, so look again a little later.
                None => clock.sleep(left.min(Duration::from_millis(100))).await,
            }
        }
    }

    /// Tries to take the item node `name`: its item if this consumer's claim won, `None` if
    /// someone else's did.
    async fn take(&self, name: &str) -> Result<Option<String>, RecipeError> {
        let node = format!("{}/{name}", self.path);
        let claim = format!("{}/{name}", self.claims);
        let me = self.claimant();
        let unsettled = |item: &str| UnsettledTake {
            claim: claim.clone(),
            claimant: me.clone(),
            item: item.to_string(),
        };
        loop {
            let item = match self.zk.get_data(&node).await {
                Ok((item, _)) => item,
                Err(ZkClientError::Api(ZkError::NoNode)) => return Ok(None),
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            };
            let taken = self
                .zk
                .multi(vec![
                    WriteOp::Delete {
                        path: node.clone(),
                        version: None,
                    },
                    WriteOp::Create {
                        path: claim.clone(),
                        data: me.clone(),
                        mode: CreateMode::Persistent,
                        acl: self.zk.create_acl(),
                    },
                ])
                .await;
            match taken {
                Ok(_) => return Ok(Some(item)),
                // The delete failed: the item is gone, someone else took it.
                Err(ZkClientError::Api(ZkError::MultiFailed { index: 0, .. })) => {
                    return Ok(None);
                }
                // The claim's create failed: the claims node is missing (first take ever).
                Err(ZkClientError::Api(ZkError::MultiFailed { .. })) => {
                    ensure_parents(&self.zk, &claim)
                        .await
                        .map_err(RecipeError::from)?;
                }
                // Did our multi happen? The claim says, read after a `sync` (a server
                // behind would show no claim, and then the item we took, still there).
                Err(ZkClientError::ConnectionLoss) => loop {
                    match self.zk.sync(&self.claims).await {
                        Err(ZkClientError::ConnectionLoss) => continue,
                        Err(error @ (ZkClientError::SessionExpired | ZkClientError::Closed)) => {
                            return Err(take_error(error, &unsettled(&item)));
                        }
                        _ => {}
                    }
                    match self.zk.get_data(&claim).await {
                        Ok((owner, _)) if owner == me => return Ok(Some(item)),
                        Ok(_) => return Ok(None),
                        // No claim: nobody took it yet; try again.
                        Err(ZkClientError::Api(ZkError::NoNode)) => break,
                        Err(ZkClientError::ConnectionLoss) => continue,
                        Err(error) => return Err(take_error(error, &unsettled(&item))),
                    }
                },
                // The session ended with the multi sent: it may have happened.
                Err(error) => return Err(take_error(error, &unsettled(&item))),
            }
        }
    }

    /// Settles a take that a session that ended left unsettled, through this queue's (new)
    /// session: reads the claim after a `sync` (the old session's expiry, and so any
    /// multi of it, committed before the client was told; the sync brings the server past
    /// it). The item, recorded as consumed, if the old session's claim won; `None` if
    /// nobody's did (the item is still queued) or another consumer's did. If this session
    /// ends too, the take is still unsettled.
    pub async fn settle(&self, take: UnsettledTake) -> Result<Option<String>, RecipeError> {
        loop {
            match self.zk.sync(&self.claims).await {
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error @ (ZkClientError::SessionExpired | ZkClientError::Closed)) => {
                    return Err(take_error(error, &take));
                }
                _ => {}
            }
            match self.zk.get_data(&take.claim).await {
                Ok((owner, _)) if owner == take.claimant => {
                    self.record(QueueStep::Consumed {
                        item: take.item.clone(),
                    });
                    return Ok(Some(take.item));
                }
                Ok(_) | Err(ZkClientError::Api(ZkError::NoNode)) => return Ok(None),
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(take_error(error, &take)),
            }
        }
    }

    /// The name this consumer writes in its claims: its node, process and session, unique
    /// in the run.
    fn claimant(&self) -> String {
        format!(
            "{}/{}/{:x}",
            self.context.id(),
            self.zk.process(),
            self.zk.session_id().unwrap_or(0)
        )
    }
}
