//! An observer process: it follows who leads (`OnNewLeader`) through the recipe's observer.

use super::{ELECTION_NAME, Elections, OBSERVE_SLICE};
use crate::workload::shared::recipe_session::RecipeStore;
use models::{
    etcd::EtcdClient,
    recipes::{EtcdLeaderObserver, RecipeError, ZkLeaderObserver},
    zk::ZkClient,
};
use sim::NodeContext;
use std::time::Duration;

/// One observer process: on ZooKeeper its own session, on etcd its own client (observing
/// needs no lease).
pub(super) struct Observer {
    store: RecipeStore,
    context: NodeContext,
    process: u32,
    session_timeout: Duration,
    patience: Duration,
    zk: Option<(ZkClient, ZkLeaderObserver)>,
    etcd: Option<(EtcdClient, EtcdLeaderObserver)>,
}

impl Observer {
    pub(super) fn new(
        elections: &Elections,
        store: &RecipeStore,
        context: &NodeContext,
        process: u32,
    ) -> Self {
        Self {
            store: store.clone(),
            context: context.clone(),
            process,
            session_timeout: Duration::from_millis(elections.session_timeout_ms),
            patience: Duration::from_millis(elections.patience_ms),
            zk: None,
            etcd: None,
        }
    }

    /// The next change of leader within [`OBSERVE_SLICE`] (recorded by the recipe's
    /// observer): the leader's identity, `None` for no leader (ZooKeeper only).
    pub(super) async fn next(&mut self) -> Result<Option<String>, RecipeError> {
        match &self.store {
            RecipeStore::Zab(ensemble) => {
                if self.zk.is_none() {
                    let mut config = ensemble.client_config(self.process);
                    config.session_timeout = self.session_timeout;
                    config.connect_patience = self.patience;
                    let zk = ensemble
                        .connect(&self.context, config)
                        .await
                        .map_err(|error| RecipeError::Store(error.to_string()))?;
                    let observer = ZkLeaderObserver::new(&zk, &self.context, ELECTION_NAME);
                    self.zk = Some((zk, observer));
                }
                let (zk, observer) = self.zk.as_mut().expect("just connected");
                let observed = observer.next(OBSERVE_SLICE).await;
                if zk.is_expired() || zk.is_closed() {
                    self.close().await;
                }
                observed
            }
            RecipeStore::Raft(cluster) => {
                let (client, observer) = self.etcd.get_or_insert_with(|| {
                    (
                        EtcdClient::new(cluster, self.context.clone(), self.process),
                        EtcdLeaderObserver::new(&self.context, self.process, ELECTION_NAME),
                    )
                });
                observer.next(client, OBSERVE_SLICE).await.map(Some)
            }
        }
    }

    /// Ends the ZooKeeper session, or the etcd watch, if any.
    pub(super) async fn close(&mut self) {
        if let Some((zk, _)) = self.zk.take() {
            let _ = zk.close().await;
        }
        if let Some((_, observer)) = self.etcd.take() {
            observer.close();
        }
    }
}
