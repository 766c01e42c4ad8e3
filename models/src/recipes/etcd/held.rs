//! What an etcd lock or leadership rests on: the holder's key, under its session's lease.
//! The holder must stop trusting it when the session is over, and lets go by deleting the
//! key (retried until the store answers, or the session is over).

use crate::etcd::EtcdClient;
use crate::recipes::etcd::keys::backoff;
use crate::recipes::etcd::session::EtcdSession;
use crate::recipes::shared::held::Held;
use crate::recipes::shared::recorder::TokenSteps;
use sim::{
    NodeContext,
    history::{
        OpResult,
        kv::KvOperation,
        recipe::{ElectionStep, LockStep, LossReason},
    },
};

/// A held etcd mutex: its key and fencing token (the key's create revision).
pub type EtcdMutexGuard = Held<LockStep, EtcdKey>;

/// An etcd leadership: the leader's key and fencing token (the key's create revision).
pub type EtcdLeadership = Held<ElectionStep, EtcdKey>;

/// The key an etcd holder holds by (`prefix/<lease id>`).
pub struct EtcdKey {
    pub(crate) key: String,
}

impl<S: TokenSteps> Held<S, EtcdKey> {
    /// Completes when the holder must stop trusting that it holds (for a leader,
    /// `OnStoppedLeading`): its session is over. Records the loss.
    pub async fn lost(&self, session: &EtcdSession) -> LossReason {
        self.until(session.done()).await
    }

    /// Lets go: the holder stops believing it holds (recorded first), then runs `delete` —
    /// the request that deletes its key — until the store answers, or the session is over.
    pub(crate) async fn let_go(
        self,
        client: &mut EtcdClient,
        context: &NodeContext,
        session: &EtcdSession,
        delete: KvOperation,
    ) {
        self.record_let_go();
        while !session.is_done() {
            if let OpResult::Ok { .. } = client.execute(delete.clone()).await {
                return;
            }
            backoff(context).await;
        }
    }
}
