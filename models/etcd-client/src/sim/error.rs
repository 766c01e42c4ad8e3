//! etcd-client's `Error`, with the variants user code matches on.

use sim::history::{OpError, OpResult, kv::KvError};
use std::fmt;

/// etcd-client's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// A gRPC status as etcd answers it (TODO: `tonic::Status` itself, so `match` arms on
/// `tonic::Code` compile).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The gRPC code's name, e.g. `OutOfRange`, `NotFound`, `Unavailable`.
    pub code: &'static str,
    /// etcd's message, e.g. `etcdserver: mvcc: required revision has been compacted`.
    pub message: String,
}

/// etcd-client's `Error` (the variants that can arise without a network of real sockets).
#[derive(Debug)]
pub enum Error {
    /// Invalid arguments.
    InvalidArgs(String),
    /// The server answered with a gRPC error.
    GRpcStatus(Status),
    /// A watch failed.
    WatchError(String),
    /// A lease keep-alive failed.
    LeaseKeepAliveError(String),
    /// An election call failed.
    ElectError(String),
    /// The endpoints cannot be used.
    EndpointError(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArgs(e) => write!(f, "invalid arguments: {e}"),
            Error::GRpcStatus(e) => write!(
                f,
                "grpc request error: status: {}, message: {:?}",
                e.code, e.message
            ),
            Error::WatchError(e) => write!(f, "watch error: {e}"),
            Error::LeaseKeepAliveError(e) => write!(f, "lease keep alive error: {e}"),
            Error::ElectError(e) => write!(f, "election error: {e}"),
            Error::EndpointError(e) => write!(f, "endpoint error: {e}"),
        }
    }
}

impl std::error::Error for Error {}

/// The error an answer that did not succeed is, as etcd and its gRPC layer report it.
pub(crate) fn from_result(result: &OpResult) -> Error {
    let status = |code, message: &str| {
        Error::GRpcStatus(Status {
            code,
            message: message.into(),
        })
    };
    match result {
        OpResult::Ok { .. } => Error::InvalidArgs("an answer of the wrong kind".into()),
        // The client's deadline passed or the connection broke: the call may have taken effect.
        OpResult::Unknown { .. } => status("Unavailable", "the request's outcome is unknown"),
        OpResult::Fail { error } => match error {
            OpError::Kv(KvError::EmptyKey) => {
                status("InvalidArgument", "etcdserver: key is not provided")
            }
            OpError::Kv(KvError::LeaseNotFound { .. }) => {
                status("NotFound", "etcdserver: requested lease not found")
            }
            OpError::Kv(KvError::Compacted { .. }) => status(
                "OutOfRange",
                "etcdserver: mvcc: required revision has been compacted",
            ),
            OpError::Kv(KvError::FutureRevision { .. }) => status(
                "OutOfRange",
                "etcdserver: mvcc: required revision is a future revision",
            ),
            OpError::Kv(KvError::DuplicateKey) => status(
                "InvalidArgument",
                "etcdserver: duplicate key given in txn request",
            ),
            other => status("Unknown", &format!("{other:?}")),
        },
    }
}

/// An error of etcd's concurrency recipes run by its v3lock and v3election services (e.g.
/// `election: not leader`, `mutex: session is expired`): a plain Go error, which gRPC
/// sends with code Unknown and the error's text as the message.
pub(crate) fn concurrency_error(message: &str) -> Error {
    Error::GRpcStatus(Status {
        code: "Unknown",
        message: message.into(),
    })
}
