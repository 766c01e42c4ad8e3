//! What ZAB replicates into: a deterministic state machine fed committed transactions.

use super::Zxid;
use sim::history::RequestRef;
use std::fmt;

/// A deterministic state machine that committed transactions are applied to, in zxid order.
///
/// ZAB ships the machine's snapshot to followers too far behind for a DIFF (SNAP sync).
pub trait StateMachine: Default + Clone + fmt::Debug + PartialEq {
    /// A transaction, as proposed by the leader (already validated: applying it is total).
    type Txn: Clone + fmt::Debug + PartialEq + Send + Sync + 'static;
    /// A copy of the whole state, as shipped in a SNAP.
    type Snapshot: Clone + fmt::Debug + PartialEq + Send + Sync + 'static;
    /// What applying a transaction produced (for the server layer above).
    type Output: fmt::Debug + PartialEq;

    /// Applies a committed transaction.
    fn apply(&mut self, zxid: Zxid, txn: &Self::Txn) -> Self::Output;

    /// The current state, for a SNAP.
    fn snapshot(&self) -> Self::Snapshot;

    /// The state a snapshot holds.
    fn restore(snapshot: &Self::Snapshot) -> Self;

    /// A stable digest of a transaction's content, to compare replicas in histories.
    fn digest(txn: &Self::Txn) -> u64;

    /// The client request whose change `txn` carries, recorded with each replica's
    /// `Applied` event (the linearizability checker reads whether an operation whose reply
    /// was lost took effect from it); `None` for a transaction that changes nothing a client
    /// asked for. Derived from the transaction, so replicas that agree on its digest agree
    /// on it. The default names none.
    fn request(txn: &Self::Txn) -> Option<RequestRef> {
        let _ = txn;
        None
    }
}
