//! Shorthand for the client steps of scripted scenarios (`zk_script`), so that a trace reads
//! as the list of what happens.

use crate::workload::{Wait, ZkStep, ZkStepOp};
use sim::{NodeId, history::zk::CreateMode};

/// `client` opens a session through `servers` (all if empty) at `at_ms`.
pub(in crate::catalogue) fn connect(
    at_ms: u64,
    client: NodeId,
    servers: &[NodeId],
    session_timeout_ms: u64,
) -> ZkStep {
    let op = ZkStepOp::Connect {
        servers: servers.to_vec(),
        session_timeout_ms,
    };
    ZkStep::at(at_ms, client, op)
}

/// `client` creates `path` with `data` at `at_ms`, retried until answered.
pub(in crate::catalogue) fn create(
    at_ms: u64,
    client: NodeId,
    path: &str,
    data: &str,
    mode: CreateMode,
) -> ZkStep {
    let op = ZkStepOp::Create {
        path: path.into(),
        data: data.into(),
        mode,
    };
    ZkStep::at(at_ms, client, op).waiting(Wait::Answer)
}

/// `client` sets `path` to `data` at `at_ms` (the caller says how it waits).
pub(in crate::catalogue) fn set(at_ms: u64, client: NodeId, path: &str, data: &str) -> ZkStep {
    let op = ZkStepOp::SetData {
        path: path.into(),
        data: data.into(),
    };
    ZkStep::at(at_ms, client, op)
}

/// `client` syncs at `at_ms`.
pub(in crate::catalogue) fn sync(at_ms: u64, client: NodeId) -> ZkStep {
    ZkStep::at(at_ms, client, ZkStepOp::Sync { path: "/".into() })
}

/// `client` reads `path` at `at_ms`.
pub(in crate::catalogue) fn get(at_ms: u64, client: NodeId, path: &str) -> ZkStep {
    ZkStep::at(at_ms, client, ZkStepOp::GetData { path: path.into() })
}
