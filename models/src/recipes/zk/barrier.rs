//! The double barrier on ZooKeeper (the ZooKeeper recipe "Double Barriers"): `size`
//! participants enter together and leave together.
//!
//! - Enter: create an ephemeral child named after the participant under the barrier node;
//!   if there are `size` children, create `ready`; otherwise wait (an `exists` watch) for
//!   `ready`. `ready` is what every participant waits on, so one notification round frees
//!   them all, and a late reader of the children cannot miss the moment they were all there.
//! - Leave: if only the own child is left, delete it and go; if the own child is the
//!   lowest, wait for the highest to go; otherwise delete the own child and wait for the
//!   lowest to go. The lowest leaves last, when everyone else has.
//!
//! With [`RecipeBug::BarrierEnterOnWakeup`] a participant that counts too few waits for a
//! change of the children instead of `ready`, and goes through on the first one without
//! counting again (apache/curator GH-1290).

use crate::recipes::shared::error::RecipeError;
use crate::recipes::{RecipeBug, RecipeBugs, zk::paths::ensure_parents};
use crate::zk::{ZkClient, ZkClientError};
use sim::{
    NodeContext,
    history::{
        Event, RecipeEvent,
        recipe::BarrierStep,
        zk::{CreateMode, ZkError},
    },
};
use std::time::Duration;

/// The node whose creation frees the entry.
const READY: &str = "ready";

/// One participant of the double barrier at `path` for `size` participants.
pub struct ZkDoubleBarrier {
    zk: ZkClient,
    path: String,
    size: usize,
    me: String,
    context: NodeContext,
    bugs: RecipeBugs,
}

impl ZkDoubleBarrier {
    /// The participant `name` (unique among the participants) of the barrier at `path`.
    pub fn new(zk: &ZkClient, context: &NodeContext, path: &str, size: usize, name: &str) -> Self {
        Self {
            zk: zk.clone(),
            path: path.to_string(),
            size,
            me: name.to_string(),
            context: context.clone(),
            bugs: RecipeBugs::default(),
        }
    }

    /// The same participant with the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.bugs = bugs;
        self
    }

    fn record(&self, step: BarrierStep) {
        self.context
            .history()
            .record(Event::Recipe(RecipeEvent::Barrier {
                process: self.zk.process(),
                barrier: self.path.clone(),
                step,
            }));
    }

    fn node(&self, name: &str) -> String {
        format!("{}/{name}", self.path)
    }

    /// Enters, and waits at most `patience` for the others.
    pub async fn enter(&self, patience: Duration) -> Result<(), RecipeError> {
        self.record(BarrierStep::Entering);
        let clock = self.context.clock().clone();
        let deadline = clock.now() + patience;
        let mine = self.node(&self.me);
        loop {
            match self.zk.create(&mine, "", CreateMode::Ephemeral).await {
                Ok(_) => break,
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    ensure_parents(&self.zk, &mine)
                        .await
                        .map_err(RecipeError::from)?;
                }
                // Ours from the lost reply, or a dead session's: whose says the owner.
                Err(ZkClientError::Api(ZkError::NodeExists))
                | Err(ZkClientError::ConnectionLoss) => match self.zk.exists(&mine).await {
                    Ok(Some(stat)) if Some(stat.ephemeral_owner) == self.zk.session_id() => {
                        break;
                    }
                    Ok(_) | Err(ZkClientError::ConnectionLoss) => {
                        clock.sleep(Duration::from_millis(50)).await;
                    }
                    Err(error) => return Err(RecipeError::from(error)),
                },
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
        let ready = self.node(READY);
        loop {
            let (ready_stat, watch) = match self.zk.exists_watch(&ready).await {
                Ok(found) => found,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            };
            if ready_stat.is_some() {
                break;
            }
            if self.participants().await?.len() >= self.size {
                match self.zk.create(&ready, "", CreateMode::Persistent).await {
                    Ok(_) | Err(ZkClientError::Api(ZkError::NodeExists)) => break,
                    Err(ZkClientError::ConnectionLoss) => continue,
                    Err(error) => return Err(RecipeError::from(error)),
                }
            }
            if self.bugs.has(RecipeBug::BarrierEnterOnWakeup) {
                // Woken by any change under the barrier, and through without counting again.
                match self.zk.get_children_watch(&self.path).await {
                    Ok((_, _, children_changed)) => {
                        self.wait(children_changed, deadline).await?;
                        break;
                    }
                    Err(ZkClientError::ConnectionLoss) => continue,
                    Err(error) => return Err(RecipeError::from(error)),
                }
            }
            self.wait(watch, deadline).await?;
        }
        self.record(BarrierStep::Entered);
        Ok(())
    }

    /// Leaves, and waits at most `patience` for the others to leave.
    pub async fn leave(&self, patience: Duration) -> Result<(), RecipeError> {
        self.record(BarrierStep::Leaving);
        let deadline = self.context.clock().now() + patience;
        loop {
            let mut left = self.participants().await?;
            left.sort();
            let (Some(lowest), Some(highest)) = (left.first(), left.last()) else {
                break;
            };
            let mine_present = left.contains(&self.me);
            if left.len() == 1 && mine_present {
                self.delete_mine().await?;
                break;
            }
            let awaited = if *lowest == self.me {
                highest.clone()
            } else {
                if mine_present {
                    self.delete_mine().await?;
                }
                lowest.clone()
            };
            let watch = match self.zk.exists_watch(&self.node(&awaited)).await {
                Ok((Some(_), watch)) => watch,
                Ok((None, _)) | Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            };
            self.wait(watch, deadline).await?;
        }
        self.record(BarrierStep::Left);
        Ok(())
    }

    /// The participants' names: the children but `ready`.
    async fn participants(&self) -> Result<Vec<String>, RecipeError> {
        loop {
            match self.zk.get_children(&self.path).await {
                Ok((children, _)) => {
                    return Ok(children.into_iter().filter(|name| name != READY).collect());
                }
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
    }

    async fn delete_mine(&self) -> Result<(), RecipeError> {
        loop {
            match self.zk.delete(&self.node(&self.me), None).await {
                Ok(()) | Err(ZkClientError::Api(ZkError::NoNode)) => return Ok(()),
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
    }

    /// Waits for `watch` until `deadline`. A watch lost with the connection is fine: the
    /// caller looks again.
    async fn wait(
        &self,
        watch: crate::zk::Watch,
        deadline: sim::clock::LocalTime,
    ) -> Result<(), RecipeError> {
        let clock = self.context.clock();
        let left = deadline.saturating_duration_since(clock.now());
        match clock.timeout(left, watch.fired()).await {
            Ok(_) if self.zk.is_expired() || self.zk.is_closed() => Err(RecipeError::SessionEnded),
            Ok(_) => Ok(()),
            Err(_) => Err(RecipeError::TimedOut),
        }
    }
}
