//! Configuration behind a `ready` znode (Hunt et al., ZooKeeper, section 2.3): the writer
//! deletes `ready`, writes every part with the new version, and creates `ready` again; a
//! reader that sees `ready` (after a `sync`) reads every part, and starts again if `ready`
//! changed meanwhile (a new `ready` has a new czxid; the `exists` watch on it says so too).
//! ZooKeeper's ordering makes the reader's check sound: on one server, a part written after
//! the writer deleted `ready` is seen only after the delete is. The `sync` first makes the
//! read fresh: the reader's server has then applied every write completed before the read
//! began, so a follower that lags the leader cannot hand it an old version (without it,
//! `recipe.read_without_sync`).

use crate::recipes::shared::error::RecipeError;
use crate::recipes::{RecipeBug, RecipeBugs, zk::paths::ensure_parents};
use crate::zk::{ZkClient, ZkClientError};
use sim::{
    NodeContext,
    history::{
        Event, RecipeEvent,
        recipe::ConfigStep,
        zk::{CreateMode, ZkError},
    },
};

/// The marker node.
const READY: &str = "ready";

/// A configuration of `parts` nodes under `path`, used through one session.
pub struct ZkConfig {
    zk: ZkClient,
    path: String,
    parts: usize,
    context: NodeContext,
    bugs: RecipeBugs,
}

impl ZkConfig {
    /// The configuration at `path` with `parts` parts, used through `zk` on `context`'s node.
    pub fn new(zk: &ZkClient, context: &NodeContext, path: &str, parts: usize) -> Self {
        Self {
            zk: zk.clone(),
            path: path.to_string(),
            parts,
            context: context.clone(),
            bugs: RecipeBugs::default(),
        }
    }

    /// The same configuration with the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.bugs = bugs;
        self
    }

    fn record(&self, step: ConfigStep) {
        self.context
            .history()
            .record(Event::Recipe(RecipeEvent::Config {
                process: self.zk.process(),
                config: self.path.clone(),
                step,
            }));
    }

    fn part(&self, index: usize) -> String {
        format!("{}/part-{index}", self.path)
    }

    /// Publishes every part at `version` (one writer at a time).
    pub async fn publish(&self, version: u64) -> Result<(), RecipeError> {
        let ready = format!("{}/{READY}", self.path);
        loop {
            match self.zk.delete(&ready, None).await {
                Ok(()) | Err(ZkClientError::Api(ZkError::NoNode)) => break,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
        for index in 0..self.parts {
            let part = self.part(index);
            loop {
                match self.zk.set_data(&part, &version.to_string(), None).await {
                    Ok(_) => break,
                    Err(ZkClientError::Api(ZkError::NoNode)) => {
                        ensure_parents(&self.zk, &part)
                            .await
                            .map_err(RecipeError::from)?;
                        match self
                            .zk
                            .create(&part, &version.to_string(), CreateMode::Persistent)
                            .await
                        {
                            Ok(_) => break,
                            Err(ZkClientError::Api(ZkError::NodeExists))
                            | Err(ZkClientError::ConnectionLoss) => {}
                            Err(error) => return Err(RecipeError::from(error)),
                        }
                    }
                    // Setting the same data twice is harmless.
                    Err(ZkClientError::ConnectionLoss) => {}
                    Err(error) => return Err(RecipeError::from(error)),
                }
            }
        }
        loop {
            match self
                .zk
                .create(&ready, &version.to_string(), CreateMode::Persistent)
                .await
            {
                Ok(_) | Err(ZkClientError::Api(ZkError::NodeExists)) => break,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
        self.record(ConfigStep::Published { version });
        Ok(())
    }

    /// Reads a complete configuration: every part's version.
    pub async fn read(&self) -> Result<Vec<u64>, RecipeError> {
        let ready = format!("{}/{READY}", self.path);
        self.record(ConfigStep::Reading);
        let sync = !self.bugs.has(RecipeBug::ReadWithoutSync);
        'attempt: loop {
            if sync && let Err(error) = self.zk.sync(&self.path).await {
                match error {
                    ZkClientError::ConnectionLoss => continue,
                    other => return Err(RecipeError::from(other)),
                }
            }
            let (seen, _watch) = match self.zk.exists_watch(&ready).await {
                Ok((Some(stat), watch)) => (stat.czxid, watch),
                Ok((None, _)) => return Err(RecipeError::NotReady),
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            };
            let mut versions = Vec::with_capacity(self.parts);
            for index in 0..self.parts {
                match self.zk.get_data(&self.part(index)).await {
                    Ok((data, _)) => {
                        versions.push(data.parse().map_err(|_| RecipeError::NotReady)?)
                    }
                    Err(ZkClientError::ConnectionLoss) => continue 'attempt,
                    Err(error) => return Err(RecipeError::from(error)),
                }
            }
            // `ready` changed while we read (deleted, or made anew): start again.
            match self.zk.exists(&ready).await {
                Ok(Some(stat)) if stat.czxid == seen => {
                    self.record(ConfigStep::Read {
                        parts: versions.clone(),
                    });
                    return Ok(versions);
                }
                Ok(_) | Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
    }
}
