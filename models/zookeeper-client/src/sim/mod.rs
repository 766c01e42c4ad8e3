//! The simulated side: [`Client`] opens a session on the ZAB store the running scenario
//! provided; every call is the model client's call ([`models::zk::ZkClient`]), recorded in
//! the run's history.

mod acl;
mod acl_calls;
mod connector;
pub mod coordsim;
mod error;
mod lock;
mod more_calls;
mod multi;
mod multi_read;
mod session;
mod types;
mod watch;

pub use acl::{Acl, Acls, AuthId, AuthUser, Permission};
pub use connector::Connector;
pub use error::Error;
pub use lock::{LockClient, LockOptions, LockPrefix, OwnedLockClient};
pub use multi::{CheckWriteError, CheckWriter, MultiWriteError, MultiWriteResult, MultiWriter};
pub use multi_read::{MultiReadResult, MultiReader};
pub use session::{SessionId, SessionInfo, SessionState, StateWatcher};
pub use types::{CreateMode, CreateOptions, CreateSequence, Stat};
pub use watch::{AddWatchMode, EventType, OneshotWatcher, PersistentWatcher, WatchedEvent};

use error::{Result, from_client, text};
use models::zk::ZkClient;
use session::StateCell;
use std::future::Future;
use std::time::Duration;

/// Client encapsulates ZooKeeper session to interact with ZooKeeper cluster
/// (zookeeper-client's `Client`).
///
/// Clones share one session, as the real client's do: one model client, one process in
/// the history (see the crate doc, "Sessions").
#[derive(Clone, Debug)]
pub struct Client {
    session: ZkClient,
    session_timeout: Duration,
    info: SessionInfo,
    /// The session's state, shared by every clone and watcher.
    state: StateCell,
}

impl Client {
    /// Connects to ZooKeeper cluster.
    pub async fn connect(cluster: &str) -> Result<Self> {
        Self::connector().connect(cluster).await
    }

    /// Creates a builder with configurable options in connecting to ZooKeeper cluster.
    pub fn connector() -> Connector {
        Connector::new()
    }

    pub(crate) fn new(session: ZkClient) -> Client {
        let session_timeout = session.session_timeout();
        let id = session.session_id().unwrap_or_default();
        Client {
            info: SessionInfo::new(SessionId(id as i64)),
            state: StateCell::follow(session.clone()),
            session,
            session_timeout,
        }
    }

    /// Path of chroot: always `/` (chroot is not mirrored).
    pub fn path(&self) -> &str {
        "/"
    }

    /// ZooKeeper session info.
    pub fn session(&self) -> &SessionInfo {
        &self.info
    }

    /// ZooKeeper session id.
    pub fn session_id(&self) -> SessionId {
        self.info.id()
    }

    /// Consumes this instance into session info.
    pub fn into_session(self) -> SessionInfo {
        self.info
    }

    /// Negotiated session timeout.
    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// Latest session state.
    pub fn state(&self) -> SessionState {
        self.state.current()
    }

    /// Creates a [StateWatcher] to track future session state updates.
    pub fn state_watcher(&self) -> StateWatcher {
        StateWatcher::new(self.state.clone())
    }

    /// Creates node with given path and data.
    ///
    /// # Notable errors
    /// * [Error::NodeExists] if a node with same path already exists.
    /// * [Error::NoNode] if parent node does not exist.
    /// * [Error::NoChildrenForEphemerals] if parent node is ephemeral.
    /// * [Error::InvalidAcl] if acl is invalid or empty.
    pub fn create<'a: 'f, 'b: 'f, 'f>(
        &'a self,
        path: &'b str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> impl Future<Output = Result<(Stat, CreateSequence)>> + Send + 'f + use<'f> {
        let session = self.session.clone();
        let path = path.to_string();
        let data = text(data);
        let mode = options.mode;
        let acl = options.acls.to_model();
        async move {
            let (created, stat) = session
                .create2_with_acl(&path, &data?, mode.to_model(), acl)
                .await
                .map_err(from_client)?;
            let sequence = if mode.is_sequential() {
                parse_sequence(&created, &path)?
            } else {
                CreateSequence(-1)
            };
            Ok((Stat::from_model(&stat), sequence))
        }
    }

    /// Deletes node with specified path.
    ///
    /// # Notable errors
    /// * [Error::NoNode] if such node does not exist.
    /// * [Error::BadVersion] if such node exists but has different version.
    /// * [Error::NotEmpty] if such node exists but has children.
    pub fn delete(
        &self,
        path: &str,
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + use<> {
        let session = self.session.clone();
        let path = path.to_string();
        async move {
            session
                .delete(&path, expected_version)
                .await
                .map_err(from_client)
        }
    }

    /// Gets stat and data for node with given path.
    ///
    /// # Notable errors
    /// * [Error::NoNode] if such node does not exist.
    pub fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send + use<> {
        let session = self.session.clone();
        let path = path.to_string();
        async move {
            let (data, stat) = session.get_data(&path).await.map_err(from_client)?;
            Ok((data.into_bytes(), Stat::from_model(&stat)))
        }
    }

    /// Checks stat for node with given path.
    pub fn check_stat(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Option<Stat>>> + Send + use<> {
        let session = self.session.clone();
        let path = path.to_string();
        async move {
            let stat = session.exists(&path).await.map_err(from_client)?;
            Ok(stat.as_ref().map(Stat::from_model))
        }
    }

    /// Sets data for node with given path and returns updated stat.
    ///
    /// # Notable errors
    /// * [Error::NoNode] if such node does not exist.
    /// * [Error::BadVersion] if such node exists but has different version.
    /// * [Error::NoAuth] if the client has insufficient authorization to such node.
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + use<> {
        let session = self.session.clone();
        let path = path.to_string();
        let data = text(data);
        async move {
            let stat = session
                .set_data(&path, &data?, expected_version)
                .await
                .map_err(from_client)?;
            Ok(Stat::from_model(&stat))
        }
    }

    /// Lists children for node with given path.
    ///
    /// # Notable errors
    /// * [Error::NoNode] if such node does not exist.
    pub fn list_children<'s>(
        &'s self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + 's + use<'s> {
        let children = self.get_children(path);
        async move { children.await.map(|(children, _)| children) }
    }

    /// Gets stat and children for node with given path.
    ///
    /// # Notable errors
    /// * [Error::NoNode] if such node does not exist.
    pub fn get_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat)>> + Send + use<> {
        let session = self.session.clone();
        let path = path.to_string();
        async move {
            let (children, stat) = session.get_children(&path).await.map_err(from_client)?;
            Ok((children, Stat::from_model(&stat)))
        }
    }
}

/// The sequence number the server appended to `prefix` (zookeeper-client's
/// `parse_sequence`, with its messages).
fn parse_sequence(created: &str, prefix: &str) -> Result<CreateSequence> {
    match created.strip_prefix(prefix) {
        Some(sequence) => sequence.parse::<i64>().map(CreateSequence).map_err(|_| {
            Error::UnexpectedError(format!("sequential node get no i32 path {created}"))
        }),
        None => Err(Error::UnexpectedError(format!(
            "sequential path {created} does not contain prefix path {prefix}"
        ))),
    }
}
