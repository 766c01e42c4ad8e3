//! etcd-client's `Error`, and the one place where a model answer becomes one
//! ([`from_result`]): every client of the drop-in calls it, so that each failure reads as
//! the gRPC status etcd 3.5 and tonic would give the real client.
//!
//! Messages are etcd's own (`etcdserver/api/v3rpc/rpctypes/error.go`); the conformance
//! probes under `models/conformance/probes/etcd/` hold the real server's answers.

use sim::history::{OpError, OpResult, kv::KvError};
use std::fmt::{Display, Formatter};
use std::str::Utf8Error;
use tonic::{Code, Status};

/// etcd-client's `Result`.
pub type Result<T> = std::result::Result<T, Error>;

/// The error type for `etcd` client (etcd-client 0.21.1's `Error`, without the variants only
/// a real network or TLS can raise: `TransportError`, `OpenSsl`).
#[derive(Debug)]
pub enum Error {
    /// Invalid arguments
    InvalidArgs(String),

    /// Invalid URI
    InvalidUri(http::uri::InvalidUri),

    /// IO error
    IoError(std::io::Error),

    /// gRPC status
    GRpcStatus(Status),

    /// Watch error
    WatchError(String),

    /// Utf8Error
    Utf8Error(Utf8Error),

    /// Lease error
    LeaseKeepAliveError(String),

    /// Election error
    ElectError(String),

    /// Invalid header value
    InvalidMetadataValue(tonic::metadata::errors::InvalidMetadataValue),

    /// Endpoint error
    EndpointError(String),

    /// Endpoint set is not managed by this client
    EndpointsNotManaged,

    /// Internal error
    Internal(String),
}

impl Display for Error {
    #[inline]
    fn fmt(&self, f: &mut Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::InvalidArgs(e) => write!(f, "invalid arguments: {e}"),
            Error::InvalidUri(e) => write!(f, "invalid uri: {e}"),
            Error::IoError(e) => write!(f, "io error: {e}"),
            Error::GRpcStatus(e) => write!(f, "grpc request error: {e}"),
            Error::WatchError(e) => write!(f, "watch error: {e}"),
            Error::Utf8Error(e) => write!(f, "utf8 error: {e}"),
            Error::LeaseKeepAliveError(e) => write!(f, "lease keep alive error: {e}"),
            Error::ElectError(e) => write!(f, "election error: {e}"),
            Error::InvalidMetadataValue(e) => write!(f, "invalid metadata value: {e}"),
            Error::EndpointError(e) => write!(f, "endpoint error: {e}"),
            Error::EndpointsNotManaged => write!(f, "endpoints not managed by this client"),
            Error::Internal(e) => write!(f, "internal error: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<http::uri::InvalidUri> for Error {
    #[inline]
    fn from(e: http::uri::InvalidUri) -> Self {
        Error::InvalidUri(e)
    }
}

impl From<std::io::Error> for Error {
    #[inline]
    fn from(e: std::io::Error) -> Self {
        Error::IoError(e)
    }
}

impl From<Status> for Error {
    #[inline]
    fn from(e: Status) -> Self {
        Error::GRpcStatus(e)
    }
}

impl From<Utf8Error> for Error {
    #[inline]
    fn from(e: Utf8Error) -> Self {
        Error::Utf8Error(e)
    }
}

impl From<tonic::metadata::errors::InvalidMetadataValue> for Error {
    #[inline]
    fn from(e: tonic::metadata::errors::InvalidMetadataValue) -> Self {
        Error::InvalidMetadataValue(e)
    }
}

/// etcd's `ErrGRPCNoLeader`: the model's client found no leader before its deadline, and
/// the request was never applied.
const NO_LEADER: &str = "etcdserver: no leader";
/// etcd's `ErrGRPCTimeout`: a proposal not known to be committed in time.
const REQUEST_TIMED_OUT: &str = "etcdserver: request timed out";

/// The error an answer that did not succeed is, as etcd and its gRPC layer report it.
pub(crate) fn from_result(result: &OpResult) -> Error {
    let (code, message) = match result {
        OpResult::Ok { .. } => {
            return Error::Internal("the store answered with a response of another kind".into());
        }
        // The request went out and no answer came (the model's request timeout, or the
        // connection broke): it may have taken effect. etcd answers a proposal that does not
        // commit in time with `Unavailable` "request timed out", and tonic reports a broken
        // connection as `Unavailable` too (`Status::from_error` on a connect or h2 error):
        // both tell the caller "maybe applied, retry with care", which is what unknown is.
        // A read whose every attempt went unanswered until the model's operation deadline
        // (the model says "deadline") is the caller's deadline passing: `DeadlineExceeded`,
        // as gRPC reports a call deadline.
        OpResult::Unknown { reason } if reason.contains("deadline") => (
            Code::DeadlineExceeded,
            format!("deadline exceeded: {reason}"),
        ),
        OpResult::Unknown { .. } => (Code::Unavailable, REQUEST_TIMED_OUT.to_string()),
        OpResult::Fail { error } => kv_error_status(error),
    };
    Error::GRpcStatus(Status::new(code, message))
}

/// etcd's code and message for a definite failure.
fn kv_error_status(error: &OpError) -> (Code, String) {
    let OpError::Kv(error) = error else {
        return (Code::Unknown, format!("{error:?}"));
    };
    let (code, message) = match error {
        KvError::EmptyKey => (Code::InvalidArgument, "etcdserver: key is not provided"),
        KvError::LeaseNotFound { .. } => (Code::NotFound, "etcdserver: requested lease not found"),
        KvError::Compacted { .. } => (
            Code::OutOfRange,
            "etcdserver: mvcc: required revision has been compacted",
        ),
        KvError::FutureRevision { .. } => (
            Code::OutOfRange,
            "etcdserver: mvcc: required revision is a future revision",
        ),
        KvError::DuplicateKey => (
            Code::InvalidArgument,
            "etcdserver: duplicate key given in txn request",
        ),
        // No longer answered by the model (etcd runs an empty transaction); kept total.
        KvError::EmptyTransaction => (Code::InvalidArgument, "etcdserver: empty transaction"),
        // The model's client words its "no leader before the deadline" so (client.rs `run`).
        KvError::Other { message } if message.starts_with("unavailable") => {
            (Code::Unavailable, NO_LEADER)
        }
        KvError::Other { message } => return (Code::Unknown, message.clone()),
    };
    (code, message.to_string())
}

/// An error of etcd's concurrency recipes run by its v3lock and v3election services (e.g.
/// `election: not leader`, `mutex: session is expired`): a plain Go error, which gRPC
/// sends with code Unknown and the error's text as the message.
pub(crate) fn concurrency_error(message: &str) -> Error {
    Error::GRpcStatus(Status::new(Code::Unknown, message))
}

/// Keys and values are text in the model's history: bytes that are not UTF-8 are refused
/// with [`Error::InvalidArgs`] naming `what` (the one conversion every client of the drop-in
/// uses).
pub(crate) fn text(bytes: Vec<u8>, what: &str) -> Result<String> {
    String::from_utf8(bytes).map_err(|_| {
        Error::InvalidArgs(format!(
            "{what} is not UTF-8: coordsim's store keeps UTF-8 text only"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_and_message(result: OpResult) -> (Code, String) {
        match from_result(&result) {
            Error::GRpcStatus(status) => (status.code(), status.message().to_string()),
            other => panic!("a status: {other}"),
        }
    }

    #[test]
    fn unknown_outcomes_read_as_a_tonic_client_sees_them() {
        let timed_out = OpResult::Unknown {
            reason: "no answer from s2 within 1000 ms".into(),
        };
        assert_eq!(
            code_and_message(timed_out),
            (Code::Unavailable, REQUEST_TIMED_OUT.to_string())
        );
        let deadline = OpResult::Unknown {
            reason: "no server answered before the deadline".into(),
        };
        assert_eq!(code_and_message(deadline).0, Code::DeadlineExceeded);
        let no_leader = OpResult::Fail {
            error: OpError::Kv(KvError::Other {
                message: "unavailable: no leader accepted the request before the deadline".into(),
            }),
        };
        assert_eq!(
            code_and_message(no_leader),
            (Code::Unavailable, NO_LEADER.to_string())
        );
        let display = from_result(&OpResult::Fail {
            error: OpError::Kv(KvError::Compacted {
                compact_revision: 3,
            }),
        })
        .to_string();
        // etcd-client's wording around tonic's.
        assert!(
            display.starts_with("grpc request error: code: ")
                && display.ends_with("\"etcdserver: mvcc: required revision has been compacted\""),
            "{display}"
        );
    }
}
