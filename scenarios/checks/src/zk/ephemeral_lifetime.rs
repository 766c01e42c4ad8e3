//! Ephemeral nodes exist exactly while their session lives.
//!
//! "Ephemeral znodes exist as long as the session that created the znode is active. When
//! the session ends the znode is deleted" (ZooKeeper Programmer's Guide, *Ephemeral
//! Nodes*). Reads may be stale, so only reads preceded by a `sync` are judged:
//! 1. a read after a sync invoked once the owner's session had ended (expiry committed, or
//!    close committed) must not show the node (ZOOKEEPER-2355: a follower that skipped the
//!    session-close transaction keeps the node forever);
//! 2. a read after a sync invoked once the ephemeral create was acknowledged, finishing
//!    while its session is still alive, must show the node with that owner — unless a
//!    delete of the path might have happened.
//!
//! **Reads:** client operations (`Invoke`/`Complete` of `sim::history::zk` operations, recorded
//! by the client library) and session ends ([`crate::history::zk::session_ends`]): the earliest
//! of the client being told its session expired or closed (`ZkEvent`, recorded at the client)
//! and `ProtocolEvent::SessionExpired`, which the ZAB leader records when it *applies* the
//! committed closeSession transaction of an expired session. Taking the earliest end makes rule
//! 1 stricter; the one server claim involved is a committed transaction that
//! `protocol.replica_agreement` holds every replica to.

use crate::history::views::HistoryViews;
use crate::history::zk::{ZkOp, session_ends};
use crate::{Checked, Violation};
use sim::{
    NodeId,
    history::{
        History, OpError, OpId, OpResult,
        zk::{CreateMode, ZkError, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::collections::BTreeMap;
use std::fmt;

/// An ephemeral node seen after its session ended, or missed while it lived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EphemeralViolation {
    /// A synced read showed an ephemeral node whose session had ended.
    OutlivedSession {
        /// The read.
        read: OpId,
        /// Who read.
        client: NodeId,
        /// The node.
        path: String,
        /// Its owner.
        session: u64,
        /// When the session ended.
        session_ended_at: SimTime,
        /// When the sync before the read was invoked.
        sync_invoked_at: SimTime,
    },
    /// A synced read missed an ephemeral node whose session was alive.
    MissingWhileAlive {
        /// The read.
        read: OpId,
        /// Who read.
        client: NodeId,
        /// The node.
        path: String,
        /// Its owner.
        session: u64,
        /// The create.
        create: OpId,
        /// When the create was acknowledged.
        created_at: SimTime,
    },
}

impl fmt::Display for EphemeralViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EphemeralViolation::OutlivedSession {
                read,
                client,
                path,
                session,
                session_ended_at,
                sync_invoked_at,
            } => write!(
                f,
                "{client} read {path} ({read}) after a sync invoked at {sync_invoked_at} and saw it owned by session {session:#x}, which ended at {session_ended_at}"
            ),
            EphemeralViolation::MissingWhileAlive {
                read,
                client,
                path,
                session,
                create,
                created_at,
            } => write!(
                f,
                "{client} read {path} ({read}) after a sync and did not see it, but {create} created it at {created_at} for session {session:#x}, still alive"
            ),
        }
    }
}

impl Violation for EphemeralViolation {
    fn property(&self) -> &'static str {
        "ephemeral exists iff session alive"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Programmer's Guide, Ephemeral Nodes; ZOOKEEPER-2355"
    }

    fn at(&self) -> Option<SimTime> {
        // The synced read's sync; unknown for a node missing while alive.
        match self {
            EphemeralViolation::OutlivedSession {
                sync_invoked_at, ..
            } => Some(*sync_invoked_at),
            EphemeralViolation::MissingWhileAlive { .. } => None,
        }
    }
}

fn deleted_possibly(ops: &[ZkOp<'_>], path: &str, after: SimTime, before: SimTime) -> bool {
    ops.iter().any(|op| {
        let deletes = |operation: &ZkOperation| {
            matches!(operation, ZkOperation::Delete { path: target, .. } if target == path)
        };
        let touches = match op.operation {
            ZkOperation::Multi { ops: parts } => parts.iter().any(deletes),
            operation => deletes(operation),
        };
        touches && !op.definitely_failed() && op.invoked_at < before && op.ended_at() > after
    })
}

/// Every synced read that contradicts an ephemeral node's session.
pub fn check(history: &History) -> Checked<EphemeralViolation> {
    check_views(&HistoryViews::new(history))
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> Checked<EphemeralViolation> {
    let ops = history.zk_operations();
    let syncs = history.preceding_syncs();
    let ends = session_ends(history);
    let mut violations = Vec::new();
    let mut judged = 0;
    // Ephemeral creates that were acknowledged, with their session, by the path created
    // (in history order): a read looks at its own path's creates, not at every create.
    let mut creates: BTreeMap<&str, Vec<(&ZkOp<'_>, u64, SimTime)>> = BTreeMap::new();
    for op in ops {
        let ZkOperation::Create { mode, .. } = op.operation else {
            continue;
        };
        if !matches!(
            mode,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        ) {
            continue;
        }
        if let (Some(path), Some(session), Some(created_at)) = (
            op.ok().and_then(ZkResponse::created_path),
            op.session,
            op.ok_at(),
        ) {
            creates
                .entry(path)
                .or_default()
                .push((op, session, created_at));
        }
    }
    for (op, sync) in ops.iter().zip(syncs) {
        let Some(sync_invoked_at) = *sync else {
            continue;
        };
        let Some((read_done, result)) = op.completion else {
            continue;
        };
        let (path, seen) = match (op.operation, result) {
            (ZkOperation::GetData { path }, _) => match op.ok() {
                Some(ZkResponse::Data { stat, .. }) => (path, Some(*stat)),
                _ if matches!(
                    result,
                    OpResult::Fail {
                        error: OpError::Zk(ZkError::NoNode)
                    }
                ) =>
                {
                    (path, None)
                }
                _ => continue,
            },
            (ZkOperation::Exists { path }, _) => match op.ok() {
                Some(ZkResponse::Exists { stat }) => (path, *stat),
                _ => continue,
            },
            _ => continue,
        };
        judged += 1;
        // 1. No ephemeral node of an ended session.
        if let Some(stat) = seen
            && stat.ephemeral_owner != 0
            && let Some(&ended) = ends.get(&stat.ephemeral_owner)
            && ended < sync_invoked_at
        {
            violations.push(EphemeralViolation::OutlivedSession {
                read: op.op_id,
                client: op.client,
                path: path.clone(),
                session: stat.ephemeral_owner,
                session_ended_at: ended,
                sync_invoked_at,
            });
        }
        // 2. Every ephemeral node of a live session.
        for (create, session, created_at) in creates.get(path.as_str()).into_iter().flatten() {
            if *created_at >= sync_invoked_at {
                continue;
            }
            let alive = ends.get(session).is_none_or(|ended| *ended > read_done);
            let present = seen.is_some_and(|stat| stat.ephemeral_owner == *session);
            if alive && !present && !deleted_possibly(&ops, path, create.invoked_at, read_done) {
                violations.push(EphemeralViolation::MissingWhileAlive {
                    read: op.op_id,
                    client: op.client,
                    path: path.clone(),
                    session: *session,
                    create: create.op_id,
                    created_at: *created_at,
                });
            }
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::*;
    use sim::history::{Event, ProtocolEvent, Record};

    fn expired(ms: u64, session: u64) -> Record {
        Record {
            at: SimTime::from_millis(ms),
            node: Some(NodeId::server(0)),
            event: Event::Protocol(ProtocolEvent::SessionExpired { session }),
        }
    }

    #[test]
    fn a_zombie_ephemeral_fails_and_a_live_one_must_be_seen() {
        let mut base = vec![
            established(0, C1, 7),
            invoke(1, C1, 1, create("/e", CreateMode::Ephemeral)),
            ok(2, C1, 1, ZkResponse::Created { path: "/e".into() }),
        ];
        // Seen while alive: fine.
        let mut alive = base.clone();
        alive.extend(sync(10, C2, 2));
        alive.push(invoke(12, C2, 3, get_data("/e")));
        alive.push(ok(
            13,
            C2,
            3,
            ZkResponse::Data {
                data: String::new(),
                stat: stat(2, 0, 7),
            },
        ));
        assert!(check(&History::from_records(alive.clone())).is_empty());
        // Missing while alive: violation.
        let mut missing = alive[..alive.len() - 1].to_vec();
        missing.push(fail(13, C2, 3, ZkError::NoNode));
        assert!(matches!(
            check(&History::from_records(missing))[..],
            [EphemeralViolation::MissingWhileAlive { session: 7, .. }]
        ));
        // Seen after the session expired: violation.
        base.push(expired(5, 7));
        base.extend(sync(10, C2, 2));
        base.push(invoke(12, C2, 3, get_data("/e")));
        base.push(ok(
            13,
            C2,
            3,
            ZkResponse::Data {
                data: String::new(),
                stat: stat(2, 0, 7),
            },
        ));
        assert!(matches!(
            check(&History::from_records(base))[..],
            [EphemeralViolation::OutlivedSession { session: 7, .. }]
        ));
    }

    #[test]
    fn a_create2_ephemeral_missing_while_alive_fails() {
        // The zookeeper-client drop-in's create is create2: its reply carries the stat.
        let mut missing = vec![
            established(0, C1, 7),
            invoke(1, C1, 1, create("/e", CreateMode::Ephemeral)),
            ok(2, C1, 1, created2("/e", 7)),
        ];
        missing.extend(sync(10, C2, 2));
        missing.push(invoke(12, C2, 3, get_data("/e")));
        missing.push(fail(13, C2, 3, ZkError::NoNode));
        assert!(matches!(
            check(&History::from_records(missing))[..],
            [EphemeralViolation::MissingWhileAlive {
                session: 7,
                create: OpId(1),
                ..
            }]
        ));
    }
}
