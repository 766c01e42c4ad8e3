//! How a ZooKeeper recipe learns that it lost what its node stood for (a lock, a
//! leadership): the node was deleted, the session ended, or the connection to the ensemble
//! was interrupted. While disconnected the client cannot know whether its session still
//! lives, so it must stop trusting its node then (Curator's SUSPENDED state), not only when
//! it hears of the expiry on reconnecting (CURATOR-460).

use crate::zk::{ZkClient, ZkClientError};
use futures_util::future::{Either, select};
use sim::history::recipe::LossReason;
use std::pin::pin;

/// Completes when `node` stops being this session's for all the client can tell; why.
/// Keeps an `exists` watch on the node, re-armed after each data change.
pub(crate) async fn until_node_lost(zk: &ZkClient, node: &str) -> LossReason {
    loop {
        let watched = match zk.exists_watch(node).await {
            Ok((Some(stat), watch)) if Some(stat.ephemeral_owner) == zk.session_id() => watch,
            Ok(_) => return LossReason::NodeDeleted,
            Err(ZkClientError::ConnectionLoss) => return LossReason::ConnectionLost,
            Err(_) => return LossReason::SessionExpired,
        };
        let interrupted = pin!(zk.connection_interrupted());
        let fired = pin!(watched.fired());
        match select(fired, interrupted).await {
            Either::Left((Ok(_), _)) => continue,
            Either::Left((Err(_), _)) => return LossReason::SessionExpired,
            Either::Right(((), _)) if zk.is_expired() => return LossReason::SessionExpired,
            Either::Right(((), _)) => return LossReason::ConnectionLost,
        }
    }
}
