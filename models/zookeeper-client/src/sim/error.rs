//! zookeeper-client's `Error` (`src/error.rs`), and how the model client's errors map to it.

use models::zk::ZkClientError;
use sim::history::zk::ZkError;
use std::fmt;

/// Errors for ZooKeeper operations (zookeeper-client's `Error`, its variants and messages).
///
/// `UnmarshalError` and `Custom` are not mirrored (no bytes are unmarshalled here, and the
/// real crate builds `Custom` only internally).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// "no available hosts".
    NoHosts,
    /// "timeout".
    Timeout,
    /// "unexpected error: {0}".
    UnexpectedError(String),
    /// "bad arguments: {0}".
    BadArguments(&'static &'static str),
    /// "node not exists".
    NoNode,
    /// "not authorized".
    NoAuth,
    /// "mismatch version".
    BadVersion,
    /// "ephemeral node can not have children".
    NoChildrenForEphemerals,
    /// "node already exists".
    NodeExists,
    /// "node has not empty children".
    NotEmpty,
    /// "session expired".
    SessionExpired,
    /// "invalid acls".
    InvalidAcl,
    /// "authentication failed".
    AuthFailed,
    /// "session moved".
    SessionMoved,
    /// "write request is sent to read only server".
    NotReadOnly,
    /// "no watcher".
    NoWatcher,
    /// "exceed path quota".
    QuotaExceeded,
    /// "request was throttled due to server heavy loading".
    Throttled,
    /// "server fail to marshal client request".
    MarshallingError,
    /// "unimplemented operation".
    Unimplemented,
    /// "connection to server has lost".
    ConnectionLoss,
    /// "ZooKeeper reconfiguration disabled".
    ReconfigDisabled,
    /// "unexpected error code: {0}".
    UnexpectedErrorCode(i32),
    /// "client has been closed".
    ClientClosed,
    /// "runtime condition mismatch".
    RuntimeInconsistent,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = match self {
            Error::UnexpectedError(reason) => return write!(f, "unexpected error: {reason}"),
            Error::BadArguments(reason) => return write!(f, "bad arguments: {reason}"),
            Error::UnexpectedErrorCode(code) => return write!(f, "unexpected error code: {code}"),
            Error::NoHosts => "no available hosts",
            Error::Timeout => "timeout",
            Error::NoNode => "node not exists",
            Error::NoAuth => "not authorized",
            Error::BadVersion => "mismatch version",
            Error::NoChildrenForEphemerals => "ephemeral node can not have children",
            Error::NodeExists => "node already exists",
            Error::NotEmpty => "node has not empty children",
            Error::SessionExpired => "session expired",
            Error::InvalidAcl => "invalid acls",
            Error::AuthFailed => "authentication failed",
            Error::SessionMoved => "session moved",
            Error::NotReadOnly => "write request is sent to read only server",
            Error::NoWatcher => "no watcher",
            Error::QuotaExceeded => "exceed path quota",
            Error::Throttled => "request was throttled due to server heavy loading",
            Error::MarshallingError => "server fail to marshal client request",
            Error::Unimplemented => "unimplemented operation",
            Error::ConnectionLoss => "connection to server has lost",
            Error::ReconfigDisabled => "ZooKeeper reconfiguration disabled",
            Error::ClientClosed => "client has been closed",
            Error::RuntimeInconsistent => "runtime condition mismatch",
        };
        f.write_str(message)
    }
}

impl std::error::Error for Error {}

impl From<std::convert::Infallible> for Error {
    fn from(never: std::convert::Infallible) -> Error {
        match never {}
    }
}

pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

/// The model's `BadArguments` carries no reason; the real client says which rule a path
/// broke. One message for all of them, naming where to look.
const BAD_PATH: &str = "invalid path (ZooKeeper's path rules: absolute, no empty, `.` or `..` segment, no trailing slash)";

/// The model server's answer as the real client reports it.
pub(crate) fn from_api(error: &ZkError) -> Error {
    match error {
        ZkError::NoNode => Error::NoNode,
        ZkError::NodeExists => Error::NodeExists,
        ZkError::BadVersion => Error::BadVersion,
        ZkError::NotEmpty => Error::NotEmpty,
        ZkError::NoChildrenForEphemerals => Error::NoChildrenForEphemerals,
        ZkError::BadArguments => Error::BadArguments(&BAD_PATH),
        ZkError::SessionExpired => Error::SessionExpired,
        ZkError::MultiFailed { error, .. } => from_api(error),
        ZkError::NoAuth => Error::NoAuth,
        ZkError::InvalidAcl => Error::InvalidAcl,
        ZkError::AuthFailed => Error::AuthFailed,
        ZkError::NoWatcher => Error::NoWatcher,
    }
}

/// The model client's error as the real client reports it: a closed client is
/// `ClientClosed`, a configuration naming no usable server `NoHosts`.
pub(crate) fn from_client(error: ZkClientError) -> Error {
    match error {
        ZkClientError::Api(error) => from_api(&error),
        ZkClientError::ConnectionLoss => Error::ConnectionLoss,
        ZkClientError::SessionExpired => Error::SessionExpired,
        ZkClientError::AuthFailed => Error::AuthFailed,
        ZkClientError::Closed => Error::ClientClosed,
        ZkClientError::NoServers | ZkClientError::UnknownServer(_) => Error::NoHosts,
    }
}

/// Data must be text: the model's znodes hold UTF-8 strings.
pub(crate) fn text(data: &[u8]) -> Result<String> {
    String::from_utf8(data.to_vec()).map_err(|_| {
        Error::BadArguments(&"data is not UTF-8 (coordsim's model keeps znode data as text)")
    })
}
