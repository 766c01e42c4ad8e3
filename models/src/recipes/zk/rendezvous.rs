//! Rendezvous on ZooKeeper (Hunt et al., ZooKeeper, USENIX ATC 2010, section 2.4): a client
//! creates a rendezvous node `zr` and passes its path to a master and to workers; the master,
//! once started, fills `zr` with its address; a worker reads `zr` with a watch and, if it is
//! not filled in yet, waits for the notification. `zr` is ephemeral: it goes when the client
//! that created it ends, and the master and workers watch for its deletion to clean up.
//!
//! Each role records its steps (`RecipeEvent::Rendezvous`): the creator that it created and
//! ended the rendezvous, the master what it is publishing and that the store acknowledged
//! it, a worker that it started waiting, what it learned, and that it noticed the end.

use crate::recipes::shared::error::RecipeError;
use crate::recipes::zk::paths::ensure_parents;
use crate::zk::{Watch, ZkClient, ZkClientError};
use sim::clock::LocalTime;
use sim::{
    NodeContext,
    history::{
        Event, RecipeEvent,
        recipe::RendezvousStep,
        zk::{CreateMode, ZkError},
    },
};
use std::time::Duration;

/// The rendezvous node at `path`, used through one session by one of its three roles.
pub struct ZkRendezvous {
    zk: ZkClient,
    path: String,
    context: NodeContext,
}

impl ZkRendezvous {
    /// The rendezvous at `path`, used through `zk` on `context`'s node.
    pub fn new(zk: &ZkClient, context: &NodeContext, path: &str) -> Self {
        Self {
            zk: zk.clone(),
            path: path.to_string(),
            context: context.clone(),
        }
    }

    fn record(&self, step: RendezvousStep) {
        self.context
            .history()
            .record(Event::Recipe(RecipeEvent::Rendezvous {
                process: self.zk.process(),
                rendezvous: self.path.clone(),
                step,
            }));
    }

    /// The creator: creates the node, ephemeral and empty (and its parents if needed).
    pub async fn create(&self) -> Result<(), RecipeError> {
        loop {
            match self.zk.create(&self.path, "", CreateMode::Ephemeral).await {
                Ok(_) => break,
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    ensure_parents(&self.zk, &self.path)
                        .await
                        .map_err(RecipeError::from)?;
                }
                // Maybe created before the connection broke, or left by an earlier session
                // of ours that has not expired yet: the owner says whether it is this one.
                Err(ZkClientError::ConnectionLoss)
                | Err(ZkClientError::Api(ZkError::NodeExists)) => {
                    match self.zk.exists(&self.path).await {
                        Ok(Some(stat)) if Some(stat.ephemeral_owner) == self.zk.session_id() => {
                            break;
                        }
                        Ok(_) | Err(ZkClientError::ConnectionLoss) => {
                            // Not ours (yet): wait a little for the old node to go.
                            self.context.clock().sleep(Duration::from_millis(50)).await;
                        }
                        Err(error) => return Err(RecipeError::from(error)),
                    }
                }
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
        self.record(RendezvousStep::Created);
        Ok(())
    }

    /// The creator ends the rendezvous: deletes the node (recorded first: from here on the
    /// creator no longer stands behind it).
    pub async fn end(&self) -> Result<(), RecipeError> {
        self.record(RendezvousStep::Ended);
        loop {
            match self.zk.delete(&self.path, None).await {
                Ok(()) | Err(ZkClientError::Api(ZkError::NoNode)) => return Ok(()),
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
    }

    /// The creator learned that its session ended: the ephemeral node went with it, and so
    /// did the rendezvous.
    pub fn ended_with_session(&self) {
        self.record(RendezvousStep::Ended);
    }

    /// The master: fills the node with `info`, waiting, for at most `patience`, for the node
    /// to be created if it is not there yet.
    pub async fn publish(&self, info: &str, patience: Duration) -> Result<(), RecipeError> {
        let deadline = self.context.clock().now() + patience;
        self.record(RendezvousStep::Publishing {
            info: info.to_string(),
        });
        loop {
            match self.zk.set_data(&self.path, info, None).await {
                Ok(_) => break,
                // Writing the same data twice is harmless.
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(ZkClientError::Api(ZkError::NoNode)) => self.until_created(deadline).await?,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
        self.record(RendezvousStep::Published {
            info: info.to_string(),
        });
        Ok(())
    }

    /// A worker: the master's information, read with a data watch; if the node is empty
    /// (or not created yet) waits for the notification, for at most `patience`.
    pub async fn await_info(&self, patience: Duration) -> Result<String, RecipeError> {
        let deadline = self.context.clock().now() + patience;
        self.record(RendezvousStep::Awaiting);
        loop {
            let watch = match self.zk.get_data_watch(&self.path).await {
                Ok((info, _, _)) if !info.is_empty() => {
                    self.record(RendezvousStep::Learned { info: info.clone() });
                    return Ok(info);
                }
                Ok((_, _, watch)) => watch,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    self.until_created(deadline).await?;
                    continue;
                }
                Err(error) => return Err(RecipeError::from(error)),
            };
            self.until_fired(watch, deadline).await?;
        }
    }

    /// The master or a worker: waits, for at most `patience`, until the node is deleted
    /// (the rendezvous ended), and records that it noticed.
    pub async fn await_end(&self, patience: Duration) -> Result<(), RecipeError> {
        let deadline = self.context.clock().now() + patience;
        loop {
            let watch = match self.zk.exists_watch(&self.path).await {
                Ok((None, _)) => {
                    self.record(RendezvousStep::NoticedEnd);
                    return Ok(());
                }
                Ok((Some(_), watch)) => watch,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            };
            // Fires on a change of the data too: look again either way.
            self.until_fired(watch, deadline).await?;
        }
    }

    /// Waits until the node exists.
    async fn until_created(&self, deadline: LocalTime) -> Result<(), RecipeError> {
        loop {
            match self.zk.exists_watch(&self.path).await {
                Ok((Some(_), _)) => return Ok(()),
                Ok((None, watch)) => self.until_fired(watch, deadline).await?,
                Err(ZkClientError::ConnectionLoss) => {}
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
    }

    async fn until_fired(&self, watch: Watch, deadline: LocalTime) -> Result<(), RecipeError> {
        let clock = self.context.clock();
        let left = deadline.saturating_duration_since(clock.now());
        match clock.timeout(left, watch.fired()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err(RecipeError::SessionEnded),
            Err(_) => Err(RecipeError::TimedOut),
        }
    }
}
