//! `multiRead` (ZooKeeper 3.6+): several reads in one request, each answered on its own.

use super::{CallOutcome, ZkClient, ZkClientError};
use crate::zk::wire::{ClientRequest, MultiReadOp};
use sim::history::{
    Operation,
    zk::{ZkError, ZkOperation, ZkResponse},
};

impl ZkClient {
    /// Reads several nodes in one request, all at one point of the attached server's tree
    /// (ZooKeeper's `multiRead`; `zookeeper-client`'s `MultiReader`). One result per read,
    /// in order: [`ZkResponse::Data`] for a [`MultiReadOp::GetData`],
    /// [`ZkResponse::ChildNames`] (no stat) for a [`MultiReadOp::GetChildren`], or the
    /// error that read alone met (`NoNode`, `NoAuth`) while the others still answer. Like a
    /// plain read it may be stale: `sync` first to catch up with the leader. No read sets a
    /// watch. A bad path fails the whole request before it is sent, as
    /// `Api(MultiFailed { index, error })`.
    pub async fn multi_read(
        &self,
        ops: Vec<MultiReadOp>,
    ) -> Result<Vec<Result<ZkResponse, ZkError>>, ZkClientError> {
        let recorded = ops
            .iter()
            .map(|op| match op {
                MultiReadOp::GetData { path } => ZkOperation::GetData { path: path.clone() },
                MultiReadOp::GetChildren { path } => {
                    ZkOperation::GetChildren { path: path.clone() }
                }
            })
            .collect();
        let outcome: CallOutcome = self
            .call(
                Some(Operation::Zk(ZkOperation::MultiRead { ops: recorded })),
                ClientRequest::MultiRead(ops),
                None,
            )
            .await;
        match outcome?.0 {
            ZkResponse::MultiRead { results } => Ok(results),
            _ => Err(ZkClientError::ConnectionLoss),
        }
    }
}
