//! Reading a history's ZooKeeper operations: who asked what, in which session, with which
//! outcome; when sessions ended; which syncs precede a read.

use sim::{
    NodeId,
    history::{
        Event, History, OpId, OpPositions, OpResult, Operation, ProtocolEvent, Response,
        zk::{ZkEvent, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::collections::BTreeMap;

/// One ZooKeeper operation.
#[derive(Clone, Debug, PartialEq)]
pub struct ZkOp<'a> {
    /// Its id.
    pub op_id: OpId,
    /// The client node.
    pub client: NodeId,
    /// The logical process.
    pub process: u32,
    /// The process's session when it invoked the operation, if it had one.
    pub session: Option<u64>,
    /// What was asked.
    pub operation: &'a ZkOperation,
    /// When it was invoked.
    pub invoked_at: SimTime,
    /// When and how it completed.
    pub completion: Option<(SimTime, &'a OpResult)>,
}

impl<'a> ZkOp<'a> {
    /// The response, if it succeeded.
    pub fn ok(&self) -> Option<&'a ZkResponse> {
        match self.completion {
            Some((
                _,
                OpResult::Ok {
                    response: Response::Zk(response),
                },
            )) => Some(response),
            _ => None,
        }
    }

    /// When it completed successfully.
    pub fn ok_at(&self) -> Option<SimTime> {
        self.ok().and(self.completion.map(|(at, _)| at))
    }

    /// Whether it definitely did not take effect.
    pub fn definitely_failed(&self) -> bool {
        matches!(self.completion, Some((_, OpResult::Fail { .. })))
    }

    /// When it completed (any outcome), or the end of time if it never did.
    pub fn ended_at(&self) -> SimTime {
        self.completion
            .map_or(SimTime::from_nanos(u64::MAX), |(at, _)| at)
    }

    /// The (client, process) that issued it.
    pub fn process_key(&self) -> (NodeId, u32) {
        (self.client, self.process)
    }
}

/// Every ZooKeeper operation, in invocation order, with the session it ran in.
pub fn zk_operations(history: &History) -> Vec<ZkOp<'_>> {
    let mut sessions: BTreeMap<(NodeId, u32), u64> = BTreeMap::new();
    let mut ops: Vec<ZkOp<'_>> = Vec::new();
    let mut positions = OpPositions::default();
    for record in history.records() {
        match &record.event {
            Event::Zk(ZkEvent::SessionEstablished {
                process, session, ..
            }) => {
                if let Some(node) = record.node {
                    sessions.insert((node, *process), *session);
                }
            }
            Event::Invoke {
                client,
                process,
                op_id,
                operation: Operation::Zk(operation),
            } => {
                positions.insert(*op_id, ops.len());
                ops.push(ZkOp {
                    op_id: *op_id,
                    client: *client,
                    process: *process,
                    session: sessions.get(&(*client, *process)).copied(),
                    operation,
                    invoked_at: record.at,
                    completion: None,
                });
            }
            Event::Complete { op_id, result } => {
                if let Some(index) = positions.get(*op_id) {
                    ops[index].completion = Some((record.at, result));
                }
            }
            _ => {}
        }
    }
    ops
}

/// When each session ended: the earliest of its expiry (committed, recorded by the leader),
/// the client learning it expired, or the client's close being committed.
pub fn session_ends(history: &History) -> BTreeMap<u64, SimTime> {
    let mut ends: BTreeMap<u64, SimTime> = BTreeMap::new();
    for record in history.records() {
        let session = match &record.event {
            Event::Protocol(ProtocolEvent::SessionExpired { session })
            | Event::Zk(ZkEvent::SessionExpired { session, .. })
            | Event::Zk(ZkEvent::SessionClosed { session, .. }) => *session,
            _ => continue,
        };
        ends.entry(session).or_insert(record.at);
    }
    ends
}

/// For each operation (by position in `ops`): the invocation time of the latest successful
/// `sync` by the same process that completed before the operation was invoked.
pub fn preceding_syncs(ops: &[ZkOp<'_>]) -> Vec<Option<SimTime>> {
    let mut by_process: BTreeMap<(NodeId, u32), Vec<(SimTime, SimTime)>> = BTreeMap::new();
    for op in ops {
        if let (ZkOperation::Sync { .. }, Some(done)) = (op.operation, op.ok_at()) {
            by_process
                .entry(op.process_key())
                .or_default()
                .push((done, op.invoked_at));
        }
    }
    ops.iter()
        .map(|op| {
            by_process
                .get(&op.process_key())?
                .iter()
                .filter(|(done, _)| *done < op.invoked_at)
                .map(|(_, invoked)| *invoked)
                .max()
        })
        .collect()
}

/// The parent of a znode path (`/a/b` → `/a`, `/a` → `/`).
pub fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(index) => &path[..index],
    }
}

/// `candidate`'s name as a child of `parent` (`/a/b` under `/a` → `b`), or `None` when it
/// is not one: exactly when [`parent_of`]`(candidate) == parent`, but reading only the part
/// after `parent` rather than searching the whole path for its last `/` (a listing's
/// children are matched this way against everything a session knew, on every read).
pub fn child_name<'c>(candidate: &'c str, parent: &str) -> Option<&'c str> {
    if parent.is_empty() {
        return None;
    }
    if let Some(name) = candidate
        .strip_prefix(parent)
        .and_then(|rest| rest.strip_prefix('/'))
        && !name.contains('/')
    {
        return Some(name);
    }
    // `parent_of` also calls a path without a `/`, or with one only in front, the root's.
    let name = candidate.strip_prefix('/').unwrap_or(candidate);
    (parent == "/" && !name.contains('/')).then_some(name)
}

/// The sequence a create of `requested` (the path it asked for: the prefix) appended to get
/// `created`: the rest of the name, read as the signed counter ZooKeeper formats `%010d`
/// (`0000000012`, `-000000005`, `-2147483648`).
pub fn sequence_appended(requested: &str, created: &str) -> Option<i32> {
    let suffix = created.strip_prefix(requested)?;
    let digits = suffix.strip_prefix('-').unwrap_or(suffix);
    let formatted = suffix.len() == 10 || (suffix.len() == 11 && digits.len() == 10);
    if !formatted || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    suffix.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{child_name, parent_of};

    #[test]
    fn child_name_agrees_with_parent_of_and_names_the_last_segment() {
        let paths = [
            "/", "", "x", "/x", "//x", "///x", "/a", "/a/", "/a/x", "/a//x", "/a/x/y", "/ab",
            "/ab/x", "a/x",
        ];
        for parent in paths {
            for candidate in paths {
                let last_segment = &candidate[candidate.rfind('/').map_or(0, |i| i + 1)..];
                let expected = (parent_of(candidate) == parent).then_some(last_segment);
                assert_eq!(
                    child_name(candidate, parent),
                    expected,
                    "{candidate:?} under {parent:?}"
                );
            }
        }
    }
}
