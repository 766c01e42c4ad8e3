//! One client process's ZooKeeper sessions for the recipe workloads, one at a time: a
//! recipe's session may end under faults, and the process goes on with a new one.

use models::zk::{ZkClient, ZkEnsemble};
use sim::NodeContext;
use std::time::Duration;

/// One client process's ZooKeeper sessions, one at a time: a new one when the last ended.
pub(crate) struct Sessions {
    ensemble: ZkEnsemble,
    context: NodeContext,
    process: u32,
    timeout: Duration,
    session: Option<ZkClient>,
}

impl Sessions {
    /// Sessions of `process` on `context`'s node, each asking for `timeout`.
    pub(crate) fn with_timeout(
        ensemble: &ZkEnsemble,
        context: &NodeContext,
        process: u32,
        timeout: Duration,
    ) -> Self {
        Self {
            ensemble: ensemble.clone(),
            context: context.clone(),
            process,
            timeout,
            session: None,
        }
    }

    /// The live session, opened if there is none; `None` if the store could not be reached
    /// (after a short pause, so that a caller looping on it does not spin).
    pub(crate) async fn current(&mut self) -> Option<ZkClient> {
        if let Some(zk) = &self.session
            && (zk.is_expired() || zk.is_closed())
        {
            self.session = None;
        }
        if self.session.is_none() {
            let mut config = self.ensemble.client_config(self.process);
            config.session_timeout = self.timeout;
            self.session = self.ensemble.connect(&self.context, config).await.ok();
            if self.session.is_none() {
                self.context.clock().sleep(Duration::from_millis(100)).await;
            }
        }
        self.session.clone()
    }

    /// The live session, waiting (in [`Self::current`]'s pauses) until the store can be
    /// reached: for a step the client cannot skip, such as getting through a barrier.
    pub(crate) async fn live(&mut self) -> ZkClient {
        loop {
            if let Some(zk) = self.current().await {
                return zk;
            }
        }
    }

    /// Whether the store ended the current session (or there is none).
    pub(crate) fn current_is_over(&self) -> bool {
        self.session
            .as_ref()
            .is_none_or(|zk| zk.is_expired() || zk.is_closed())
    }

    /// Closes the live session, if any (its ephemeral nodes go with it).
    pub(crate) async fn close(&mut self) {
        if let Some(zk) = self.session.take() {
            let _ = zk.close().await;
        }
    }
}
