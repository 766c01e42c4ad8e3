//! The one error every recipe returns, and how each store's client errors become it.
//!
//! Its texts are for people. What a lock or an election records when it gives up is worded
//! by its recorder (`shared/lock.rs`, `shared/election.rs`), which the checkers and the
//! history digests read: changing a text here changes no history.

use crate::zk::ZkClientError;
use sim::history::{OpError, OpResult, kv::KvError};
use std::fmt;

/// Why a recipe's step did not complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecipeError {
    /// The step's patience ran out (a lock's try-acquire, a campaign, a barrier, a
    /// rendezvous, an observer's wait, starting an etcd session).
    TimedOut,
    /// The session (ZooKeeper) or lease (etcd) ended: what was made through it is gone, or
    /// goes with it. A new one is needed.
    SessionEnded,
    /// The client does not lead (any more): its key was deleted or replaced (etcd's
    /// `ErrElectionNotLeader`).
    NotLeader,
    /// A write's reply was lost: it may or may not have happened (the counter's increment,
    /// which the recipe does not retry: a retry of a write that did happen would count
    /// twice).
    Unknown,
    /// No complete configuration is published yet, or a part held something else than a
    /// version.
    NotReady,
    /// The session ended after a queue take's claim was sent, before the consumer learned
    /// whether it won: the item may be this consumer's (the claim committed, its reply
    /// lost). Only the claim can say, and it outlives the session: settle it with
    /// [`ZkQueue::settle`](crate::recipes::ZkQueue::settle) in a new session before taking
    /// anything else, or the item is lost to everyone.
    TakeUnsettled(UnsettledTake),
    /// The revision a subscription needed next was compacted away: messages were lost to
    /// it, and it is over.
    Compacted {
        /// The compaction revision.
        compact_revision: u64,
    },
    /// The store refused in a way the recipe does not retry, or held something the recipe
    /// cannot read.
    Store(String),
}

/// A queue take whose claim a session that ended may have made: what
/// [`ZkQueue::settle`](crate::recipes::ZkQueue::settle) needs to find out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsettledTake {
    /// The claim node (named after the item node).
    pub(crate) claim: String,
    /// What the consumer wrote in the claim: its node, process and old session.
    pub(crate) claimant: String,
    /// The item the claim would own.
    pub(crate) item: String,
}

impl fmt::Display for RecipeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecipeError::TimedOut => f.write_str("timed out"),
            RecipeError::SessionEnded => f.write_str("the session or lease ended"),
            RecipeError::NotLeader => f.write_str("not the leader"),
            RecipeError::Unknown => f.write_str("the write's outcome is unknown"),
            RecipeError::NotReady => f.write_str("no complete configuration to read"),
            RecipeError::TakeUnsettled(take) => write!(
                f,
                "the session ended before the claim `{}` was known to have won",
                take.claim
            ),
            RecipeError::Compacted { compact_revision } => write!(
                f,
                "the subscription's next revision was compacted (at {compact_revision})"
            ),
            RecipeError::Store(message) => write!(f, "the store refused: {message}"),
        }
    }
}

impl std::error::Error for RecipeError {}

/// A ZooKeeper client error the recipe does not handle itself (it retries a connection
/// loss where a retry is safe): a session expired or closed ends the step; anything else
/// is the store refusing.
impl From<ZkClientError> for RecipeError {
    fn from(error: ZkClientError) -> Self {
        match error {
            ZkClientError::SessionExpired | ZkClientError::Closed => RecipeError::SessionEnded,
            other => RecipeError::Store(other.to_string()),
        }
    }
}

impl RecipeError {
    /// An etcd request's result that the recipe does not handle itself: a lease the server
    /// no longer knows ends the step; anything else is the store refusing.
    pub(crate) fn from_etcd(result: OpResult) -> Self {
        match result {
            OpResult::Fail {
                error: OpError::Kv(KvError::LeaseNotFound { .. }),
            } => RecipeError::SessionEnded,
            other => RecipeError::Store(format!("{other:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::history::zk::ZkError;

    #[test]
    fn a_zookeeper_session_that_ended_ends_the_step_and_anything_else_is_the_store_refusing() {
        for ended in [ZkClientError::SessionExpired, ZkClientError::Closed] {
            assert_eq!(RecipeError::from(ended), RecipeError::SessionEnded);
        }
        assert_eq!(
            RecipeError::from(ZkClientError::Api(ZkError::NoAuth)),
            RecipeError::Store("NoAuth".into())
        );
        assert_eq!(
            RecipeError::from(ZkClientError::ConnectionLoss).to_string(),
            "the store refused: connection loss (outcome unknown)"
        );
    }

    #[test]
    fn an_etcd_lease_the_server_forgot_ends_the_step_and_anything_else_is_the_store_refusing() {
        let lease_gone = OpResult::Fail {
            error: OpError::Kv(KvError::LeaseNotFound { lease: 7 }),
        };
        assert_eq!(
            RecipeError::from_etcd(lease_gone),
            RecipeError::SessionEnded
        );
        let unknown = OpResult::Unknown {
            reason: "timed out".into(),
        };
        assert_eq!(
            RecipeError::from_etcd(unknown.clone()),
            RecipeError::Store(format!("{unknown:?}"))
        );
    }
}
