//! A held token — a lock or a leadership, on either store — as one type: the fencing token,
//! how the end of the hold is recorded, and when the holder must stop trusting it.
//!
//! `Held<Steps, Hold>` is behind the four names users see: [`ZkLockGuard`] and
//! [`ZkLeadership`] (Curator's lock and `LeaderLatch`), [`EtcdMutexGuard`] and
//! [`EtcdLeadership`] (etcd's `concurrency.Mutex` and `Election`).
//!
//! - The *steps* are those of the recipe that handed it out, which its recorder writes: a
//!   lock's `Released`, an election's `Resigned`, `Lost` for both.
//! - The *hold* is what the token rests on in its store: a ZooKeeper node (`zk/held.rs`),
//!   or an etcd key under a session's lease (`etcd/held.rs`). It says how a loss is
//!   noticed and how the holder lets go.
//!
//! [`ZkLockGuard`]: crate::recipes::ZkLockGuard
//! [`ZkLeadership`]: crate::recipes::ZkLeadership
//! [`EtcdMutexGuard`]: crate::recipes::EtcdMutexGuard
//! [`EtcdLeadership`]: crate::recipes::EtcdLeadership

use crate::recipes::shared::bugs::{RecipeBug, RecipeBugs};
use crate::recipes::shared::recorder::{TokenRecorder, TokenSteps};
use sim::{
    history::recipe::{LockStep, LossReason},
    time::SimTime,
};
use std::future::Future;

/// A held lock or leadership: its fencing token, the recorder of the recipe it came from
/// (writing its steps `S`: [`LockStep`] or [`ElectionStep`]) and what it rests on in its
/// store (`H`).
///
/// [`ElectionStep`]: sim::history::recipe::ElectionStep
pub struct Held<S, H> {
    token: u64,
    recorder: TokenRecorder<S>,
    acquired_at: SimTime,
    bugs: RecipeBugs,
    pub(crate) hold: H,
}

impl<S: TokenSteps, H> Held<S, H> {
    /// The token `token`, won at `acquired_at` (the winning step is recorded by the caller),
    /// recorded through `recorder`, resting on `hold`.
    pub(crate) fn new(
        token: u64,
        recorder: &TokenRecorder<S>,
        acquired_at: SimTime,
        bugs: RecipeBugs,
        hold: H,
    ) -> Self {
        Self {
            token,
            recorder: recorder.clone(),
            acquired_at,
            bugs,
            hold,
        }
    }

    /// The fencing token: the creation zxid (ZooKeeper) or create revision (etcd) of the
    /// holder's node or key.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// Records that the holder let go (before it deletes anything: from here on it does
    /// not believe it holds).
    pub(crate) fn record_let_go(&self) {
        self.recorder.let_go(self.token);
    }

    /// Records that the holder learned it lost the token, and why.
    pub(crate) fn record_lost(&self, why: LossReason) {
        self.recorder.lost(self.token, why);
    }

    /// Completes when `loss` does — the store's word that the hold ended — and records the
    /// loss. With [`RecipeBug::TrustLocalStateAfterExpiry`] it never completes: the holder
    /// never looks, and its belief lasts until it lets go (`loss` is never polled).
    pub(crate) async fn until(&self, loss: impl Future<Output = LossReason>) -> LossReason {
        if self.bugs.has(RecipeBug::TrustLocalStateAfterExpiry) {
            return std::future::pending().await;
        }
        let why = loss.await;
        self.record_lost(why);
        why
    }
}

impl<H> Held<LockStep, H> {
    /// When the client acquired the lock (global simulated time, for latency figures).
    pub fn acquired_at(&self) -> SimTime {
        self.acquired_at
    }
}
