//! A recipe client process's session on its store, opened on demand and replaced when the
//! store says it ended: a ZooKeeper session, or an etcd session (a lease kept alive) beside
//! the process's one etcd client. The lock and election workloads share it.

use models::{
    etcd::{EtcdClient, EtcdCluster},
    recipes::EtcdSession,
    zk::{NodeAcl, SessionExpiry, ZkClient, ZkEnsemble, wire::AuthInfo},
};
use serde::{Deserialize, Serialize};
use sim::NodeContext;
use std::time::Duration;

/// Who may touch a ZooKeeper lock's nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockNodeAcl {
    /// `world:anyone` may do everything (ZooKeeper's `OPEN_ACL_UNSAFE`).
    #[default]
    Open,
    /// The lock's clients `addAuth digest` as one user, [`LOCK_USER`], and create the lock's
    /// nodes (parents and waiters) with `CREATOR_ALL_ACL`: a client without those
    /// credentials cannot read or delete them (`NoAuth`).
    CreatorAll,
}

/// The digest credentials (`user:password`) of the lock's clients under
/// [`LockNodeAcl::CreatorAll`].
pub const LOCK_USER: &str = "locks:lock-secret";

/// The store a recipe runs on.
#[derive(Clone)]
pub(crate) enum RecipeStore {
    Zab(ZkEnsemble),
    Raft(EtcdCluster),
}

/// A live session.
pub(crate) enum Session {
    Zk(ZkClient),
    Etcd(Box<EtcdSession>),
}

/// One client process's sessions, one at a time.
pub(crate) struct RecipeSession {
    store: RecipeStore,
    context: NodeContext,
    process: u32,
    timeout: Duration,
    patience: Duration,
    /// Who ends a ZooKeeper session as the client sees it.
    expiry: SessionExpiry,
    /// The ACL of the ZooKeeper nodes the recipe makes.
    node_acl: LockNodeAcl,
    session: Option<Session>,
    /// The process's one etcd client, for all its sessions (it numbers the watches).
    etcd: Option<EtcdClient>,
}

impl RecipeSession {
    /// No session yet, for client process `process` on `context`'s node: sessions of
    /// `timeout` (ZooKeeper session timeout or etcd lease TTL), each tried for `patience`.
    pub(crate) fn new(
        store: &RecipeStore,
        context: &NodeContext,
        process: u32,
        timeout: Duration,
        patience: Duration,
    ) -> Self {
        Self {
            store: store.clone(),
            context: context.clone(),
            process,
            timeout,
            patience,
            expiry: SessionExpiry::ToldByServer,
            node_acl: LockNodeAcl::Open,
            session: None,
            etcd: match store {
                RecipeStore::Raft(cluster) => {
                    Some(EtcdClient::new(cluster, context.clone(), process))
                }
                RecipeStore::Zab(_) => None,
            },
        }
    }

    /// ZooKeeper sessions that the client also gives up by itself, as `expiry` says.
    pub(crate) fn with_expiry(mut self, expiry: SessionExpiry) -> Self {
        self.expiry = expiry;
        self
    }

    /// ZooKeeper sessions that authenticate and make their nodes as `node_acl` says.
    pub(crate) fn with_node_acl(mut self, node_acl: LockNodeAcl) -> Self {
        self.node_acl = node_acl;
        self
    }

    /// Opens a session if there is none; `false` if the store could not be reached.
    pub(crate) async fn ensure(&mut self) -> bool {
        if self.session.is_some() {
            return true;
        }
        self.session = match &self.store {
            RecipeStore::Zab(ensemble) => {
                let mut config = ensemble.client_config(self.process);
                config.session_timeout = self.timeout;
                config.connect_patience = self.patience;
                config.expiry = self.expiry;
                if self.node_acl == LockNodeAcl::CreatorAll {
                    config.auth = vec![AuthInfo {
                        scheme: "digest".into(),
                        auth: LOCK_USER.into(),
                    }];
                    config.create_acl = NodeAcl::creator_all();
                }
                ensemble
                    .connect(&self.context, config)
                    .await
                    .ok()
                    .map(Session::Zk)
            }
            RecipeStore::Raft(cluster) => EtcdSession::start(
                cluster,
                &self.context,
                self.process,
                self.timeout,
                self.patience,
            )
            .await
            .ok()
            .map(|session| Session::Etcd(Box::new(session))),
        };
        self.session.is_some()
    }

    /// The session and, on etcd, the process's client (`None` before [`Self::ensure`]).
    pub(crate) fn parts(&mut self) -> Option<(&Session, Option<&mut EtcdClient>)> {
        Some((self.session.as_ref()?, self.etcd.as_mut()))
    }

    /// Whether the store ended the session (or there is none).
    pub(crate) fn is_over(&self) -> bool {
        match &self.session {
            Some(Session::Zk(zk)) => zk.is_expired() || zk.is_closed(),
            Some(Session::Etcd(session)) => session.is_done(),
            None => true,
        }
    }

    /// Closes the session if the store ended it, so the next turn opens a new one.
    pub(crate) async fn close_if_over(&mut self) {
        if self.is_over() {
            self.close().await;
        }
    }

    /// Ends the session (deleting its ephemeral nodes or revoking its lease).
    pub(crate) async fn close(&mut self) {
        match self.session.take() {
            Some(Session::Zk(zk)) => {
                let _ = zk.close().await;
            }
            Some(Session::Etcd(session)) => (*session).close().await,
            None => {}
        }
    }
}
