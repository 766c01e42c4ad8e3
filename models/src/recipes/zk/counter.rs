//! A shared counter on ZooKeeper (Curator's `DistributedAtomicLong`, optimistic mode): read
//! the node's value and version, write value + 1 conditioned on that version, and start
//! again if someone else wrote first (`BadVersion`).
//!
//! A lost reply to the conditional write leaves the increment's outcome unknown: the recipe
//! says so ([`CounterStep::Unknown`]) instead of retrying, since a retry of a write that
//! did happen would count twice. [`RecipeBug::CounterRetryAfterConnectionLoss`] retries it
//! all the same, reading the value again and writing value + 1 (kazoo's `Counter`).

use crate::recipes::shared::error::RecipeError;
use crate::recipes::{RecipeBug, RecipeBugs, zk::paths::ensure_parents};
use crate::zk::{ZkClient, ZkClientError};
use sim::{
    NodeContext,
    history::{
        Event, RecipeEvent,
        recipe::CounterStep,
        zk::{CreateMode, ZkError},
    },
};

/// A counter kept in the data of the node `path`, used through one session.
pub struct ZkCounter {
    zk: ZkClient,
    path: String,
    context: NodeContext,
    bugs: RecipeBugs,
}

impl ZkCounter {
    /// The counter at `path`, used through `zk` by the client on `context`'s node.
    pub fn new(zk: &ZkClient, context: &NodeContext, path: &str) -> Self {
        Self {
            zk: zk.clone(),
            path: path.to_string(),
            context: context.clone(),
            bugs: RecipeBugs::default(),
        }
    }

    /// The same counter with the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.bugs = bugs;
        self
    }

    fn record(&self, step: CounterStep) {
        self.context
            .history()
            .record(Event::Recipe(RecipeEvent::Counter {
                process: self.zk.process(),
                counter: self.path.clone(),
                step,
            }));
    }

    /// Adds one; the value after the increment.
    pub async fn increment(&self) -> Result<i64, RecipeError> {
        loop {
            let (value, version) = self.current().await?;
            let next = value + 1;
            match self
                .zk
                .set_data(&self.path, &next.to_string(), Some(version))
                .await
            {
                Ok(_) => {
                    self.record(CounterStep::Incremented { value: next });
                    return Ok(next);
                }
                Err(ZkClientError::Api(ZkError::BadVersion)) => continue,
                // The whole read-modify-write again, as if the lost write had not happened.
                Err(ZkClientError::ConnectionLoss)
                    if self.bugs.has(RecipeBug::CounterRetryAfterConnectionLoss) =>
                {
                    continue;
                }
                // Sent, and no answer: it may have been applied.
                Err(ZkClientError::ConnectionLoss | ZkClientError::SessionExpired) => {
                    self.record(CounterStep::Unknown);
                    return Err(RecipeError::Unknown);
                }
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
    }

    /// Reads the value after a `sync`, so that it counts every increment acknowledged
    /// before the read began.
    pub async fn read(&self) -> Result<i64, RecipeError> {
        loop {
            match self.zk.sync(&self.path).await {
                Ok(()) => break,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
        let (value, _) = self.current().await?;
        self.record(CounterStep::Read { value });
        Ok(value)
    }

    /// The value and its version, creating the node at 0 if it does not exist yet.
    async fn current(&self) -> Result<(i64, i32), RecipeError> {
        loop {
            match self.zk.get_data(&self.path).await {
                Ok((data, stat)) => {
                    let value = data.parse().map_err(|_| {
                        RecipeError::Store(format!("`{}` holds `{data}`", self.path))
                    })?;
                    return Ok((value, stat.version));
                }
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    ensure_parents(&self.zk, &self.path)
                        .await
                        .map_err(RecipeError::from)?;
                    // Creating it at 0 twice is harmless: the second finds it there.
                    match self
                        .zk
                        .create(&self.path, "0", CreateMode::Persistent)
                        .await
                    {
                        Ok(_)
                        | Err(ZkClientError::Api(ZkError::NodeExists))
                        | Err(ZkClientError::ConnectionLoss) => {}
                        Err(error) => return Err(RecipeError::from(error)),
                    }
                }
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
    }
}
