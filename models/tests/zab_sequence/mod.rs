//! The state machine the ZAB core tests replicate: the committed transactions (numbers), in
//! the order they were applied. Shared by `zab_core.rs` and the scripted harness.

use models::zab::{StateMachine, Zxid};

/// Every transaction applied, in order; a snapshot is that list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sequence {
    /// The transactions applied, oldest first.
    pub applied: Vec<u64>,
}

impl StateMachine for Sequence {
    type Txn = u64;
    type Snapshot = Vec<u64>;
    type Output = usize;

    fn apply(&mut self, _zxid: Zxid, txn: &u64) -> usize {
        self.applied.push(*txn);
        self.applied.len()
    }

    fn snapshot(&self) -> Vec<u64> {
        self.applied.clone()
    }

    fn restore(snapshot: &Vec<u64>) -> Self {
        Self {
            applied: snapshot.clone(),
        }
    }

    fn digest(txn: &u64) -> u64 {
        *txn
    }
}
