//! zookeeper-client's `Connector` (`src/client/mod.rs`): the options that matter to the
//! model; the rest are absent (see the crate doc, "Not mirrored").

use super::Client;
use super::error::{Error, Result, from_client};
use models::zk::{SessionExpiry, ZkClientError, ZkEnsemble, wire::AuthInfo};
use sim::NodeContext;
use std::sync::{
    Arc,
    atomic::{AtomicU32, Ordering},
};
use std::time::Duration;

/// zookeeper-client's default session timeout (its session builder's, when none is set).
const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// A builder for [Client] with more options than [Client::connect] (zookeeper-client's
/// `Connector`).
///
/// Uses [Client::connector] to construct one.
#[derive(Clone, Debug)]
pub struct Connector {
    auth: Vec<(String, Vec<u8>)>,
    session_timeout: Duration,
    connection_timeout: Duration,
}

impl Connector {
    pub(crate) fn new() -> Self {
        Self {
            auth: Vec::new(),
            session_timeout: Duration::ZERO,
            connection_timeout: Duration::ZERO,
        }
    }

    /// Specifies target session timeout to negotiate with ZooKeeper server.
    ///
    /// Defaults to 6s.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// Specifies target session timeout to negotiate with ZooKeeper server.
    ///
    /// Defaults to 6s.
    #[deprecated(since = "0.11.0", note = "use Connector::with_session_timeout instead")]
    pub fn session_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.session_timeout = timeout;
        self
    }

    /// Specifies idle timeout to conclude a connection as loss.
    ///
    /// Defaults to `2/5` of session timeout. The model client concludes a loss after 2/3
    /// of the session timeout, as ZooKeeper's Java client: this is accepted and ignored.
    pub fn with_connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// Specifies idle timeout to conclude a connection as loss (accepted and ignored, as
    /// [Self::with_connection_timeout]).
    #[deprecated(
        since = "0.11.0",
        note = "use Connector::with_connection_timeout instead"
    )]
    pub fn connection_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.connection_timeout = timeout;
        self
    }

    /// Adds auth info for given authentication scheme.
    pub fn with_auth(mut self, scheme: &str, auth: &[u8]) -> Self {
        self.auth.push((scheme.to_string(), auth.to_vec()));
        self
    }

    /// Specifies auth info for given authentication scheme.
    #[deprecated(since = "0.11.0", note = "use Connector::with_auth instead")]
    pub fn auth(&mut self, scheme: String, auth: Vec<u8>) -> &mut Self {
        self.auth.push((scheme, auth));
        self
    }

    /// Connects to ZooKeeper cluster, from the current node to the store the running
    /// scenario provided. The hosts in `cluster` are accepted as given (every server of the
    /// simulated ensemble serves); a chroot suffix is refused (not mirrored).
    ///
    /// # Notable errors
    /// * [Error::SessionExpired] if specified session expired
    /// * [Error::Timeout] if no session established with in approximate session timeout
    pub async fn connect(self, cluster: &str) -> Result<Client> {
        if cluster.trim().is_empty() {
            return Err(Error::BadArguments(&"empty connect string"));
        }
        if has_chroot(cluster) {
            return Err(Error::BadArguments(
                &"a chroot in the connect string is not mirrored by coordsim's drop-in",
            ));
        }
        let (ensemble, context) = running_store()?;
        let mut config = ensemble.client_config(next_process(&context));
        config.session_timeout = if self.session_timeout.is_zero() {
            DEFAULT_SESSION_TIMEOUT
        } else {
            self.session_timeout
        };
        // zookeeper-client gives up with `Timeout` after about a session timeout.
        config.connect_patience = config.session_timeout;
        // zookeeper-client expires a session by itself when it cannot reconnect within
        // 7/5 of the session timeout after it last heard from a server (`Session::start`);
        // the model's nearest is to give the session up a session timeout after the loss.
        config.expiry = SessionExpiry::AfterDisconnectedTimeout;
        for (scheme, auth) in self.auth {
            let auth = String::from_utf8(auth).map_err(|_| {
                Error::BadArguments(
                    &"auth is not UTF-8 (coordsim's model takes `user:password` text)",
                )
            })?;
            config.auth.push(AuthInfo { scheme, auth });
        }
        match ensemble.connect(&context, config).await {
            Ok(session) => Ok(Client::new(session)),
            Err(ZkClientError::ConnectionLoss) => Err(Error::Timeout),
            Err(error) => Err(from_client(error)),
        }
    }
}

/// Whether a connect string ends in a chroot (`host:2181/app`); a `tcp://` or `tcp+tls://`
/// before a host is not one.
fn has_chroot(cluster: &str) -> bool {
    cluster.split(',').any(|host| {
        host.split_once("://")
            .map_or(host, |(_, rest)| rest)
            .contains('/')
    })
}

/// The scenario's ZAB store and the node the calling task runs on.
fn running_store() -> Result<(Arc<ZkEnsemble>, NodeContext)> {
    let ensemble = ::sim::Sim::current()
        .and_then(|sim| sim.service::<ZkEnsemble>())
        .ok_or_else(|| {
            Error::UnexpectedError(
                "no coordsim run with a ZAB store (Store::Zab) is running on this thread".into(),
            )
        })?;
    let context = ::sim::Sim::current_node().ok_or_else(|| {
        Error::UnexpectedError("connect from a task on a client node of the world".into())
    })?;
    Ok((ensemble, context))
}

/// The history's process numbers for drop-in sessions, from 1000 (above the workloads'
/// own numbers): one per session, shared by its clones (the crate doc says why).
struct ProcessNumbers(AtomicU32);

fn next_process(context: &NodeContext) -> u32 {
    let sim = context.sim();
    let numbers = match sim.service::<ProcessNumbers>() {
        Some(numbers) => numbers,
        None => {
            sim.provide(ProcessNumbers(AtomicU32::new(1000)));
            sim.service::<ProcessNumbers>().expect("just provided")
        }
    };
    numbers.0.fetch_add(1, Ordering::Relaxed)
}
