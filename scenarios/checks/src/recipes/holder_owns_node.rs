//! A ZooKeeper lock holder holds by a node of its own session. The lock is the holder's
//! ephemeral node at the head of the line; the node lives as long as the session that owns
//! it, not as long as the client that believes in it. A holder whose node belongs to
//! another session — an earlier session of the same client, found again by a protected
//! create's GUID after the client gave that session up — holds a lock that the servers take
//! away when they expire that session, with no event to the holder's session and no loss
//! the holder could notice (CURATOR-498; `recipe.protection_without_session_check`).
//! Mutual exclusion rarely shows it: the node's deletion reaches both the holder's watch on
//! it and its successor, and the fenced resource refuses the stale token.
//!
//! **Reads:** at the client nodes, in order: the client library's `SessionEstablished`
//! (which session a process runs in from then on), its `Invoke`/`Complete` records of
//! `exists` calls (the path asked and the `Stat` the server returned, with the node's
//! `czxid` and `ephemeral_owner`), and the lock recipes' `Requested`, `Acquired { token }`
//! and `GaveUp` steps. The queue lock reads its own node with `exists` once it is first in
//! line and takes the lock with that node's `czxid` as its token, so the last `exists` of
//! the wait whose `czxid` is the acquired token is the server's own word on the node the
//! holder holds by; its `ephemeral_owner` is compared with the session the process ran the
//! `exists` in. An acquisition with no such read (the herd lock, which holds by the node its
//! create returned; etcd) is not judged.

use crate::Violation;
use sim::{
    NodeId,
    history::{
        Event, History, OpId, OpResult, Operation, RecipeEvent, Response,
        recipe::LockStep,
        zk::{ZkEvent, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// A lock taken by a node that another session owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderNotOwner {
    /// The lock.
    pub lock: String,
    /// The holder: client node and process.
    pub holder: (NodeId, u32),
    /// The holder's session.
    pub session: u64,
    /// The node it holds by.
    pub node: String,
    /// That node's `czxid`: the token it acquired with.
    pub token: u64,
    /// The session that owns the node, as the server said.
    pub owner: u64,
    /// When the holder's `exists` returned the node.
    pub read_at: SimTime,
    /// When it acquired.
    pub acquired_at: SimTime,
}

impl fmt::Display for HolderNotOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} in session {:#x} acquired `{}` at {} with token {} by {}, which the server \
             said at {} is owned by session {:#x}: the lock goes when that session expires, \
             unknown to the holder",
            self.holder.0,
            self.holder.1,
            self.session,
            self.lock,
            self.acquired_at,
            self.token,
            self.node,
            self.read_at,
            self.owner
        )
    }
}

impl Violation for HolderNotOwner {
    fn property(&self) -> &'static str {
        "a holder holds by its own session's node"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Recipes, Locks; CURATOR-498"
    }
}

/// A node read during a wait: path, `czxid`, owner, the reader's session, when.
struct Read {
    path: String,
    czxid: u64,
    owner: u64,
    session: u64,
    at: SimTime,
}

/// Every acquisition by a node the server said another session owns.
pub fn check(history: &History) -> Vec<HolderNotOwner> {
    let mut sessions: BTreeMap<(NodeId, u32), u64> = BTreeMap::new();
    // Waits under way: the nodes read since `Requested`.
    let mut waits: BTreeMap<(NodeId, u32), Vec<Read>> = BTreeMap::new();
    // `exists` calls in flight: the path, the process and its session at the invocation.
    let mut asked: BTreeMap<OpId, (String, (NodeId, u32), u64)> = BTreeMap::new();
    let mut violations = Vec::new();
    for record in history.records() {
        let Some(node) = record.node else { continue };
        match &record.event {
            Event::Zk(ZkEvent::SessionEstablished {
                process, session, ..
            }) => {
                sessions.insert((node, *process), *session);
            }
            Event::Invoke {
                client,
                process,
                op_id,
                operation: Operation::Zk(ZkOperation::Exists { path }),
            } => {
                if let Some(&session) = sessions.get(&(*client, *process)) {
                    asked.insert(*op_id, (path.clone(), (*client, *process), session));
                }
            }
            Event::Complete { op_id, result } => {
                let Some((path, key, session)) = asked.remove(op_id) else {
                    continue;
                };
                if let OpResult::Ok {
                    response:
                        Response::Zk(ZkResponse::Exists {
                            stat: Some(stat), ..
                        }),
                } = result
                    && let Some(reads) = waits.get_mut(&key)
                {
                    reads.push(Read {
                        path,
                        czxid: stat.czxid,
                        owner: stat.ephemeral_owner,
                        session,
                        at: record.at,
                    });
                }
            }
            Event::Recipe(RecipeEvent::Lock {
                process,
                lock,
                step,
            }) => {
                let key = (node, *process);
                match step {
                    LockStep::Requested { .. } => {
                        waits.insert(key, Vec::new());
                    }
                    LockStep::Acquired { token, .. } => {
                        let Some(reads) = waits.remove(&key) else {
                            continue;
                        };
                        if let Some(read) = reads.iter().rev().find(|read| read.czxid == *token)
                            && read.owner != read.session
                        {
                            violations.push(HolderNotOwner {
                                lock: lock.clone(),
                                holder: key,
                                session: read.session,
                                node: read.path.clone(),
                                token: *token,
                                owner: read.owner,
                                read_at: read.at,
                                acquired_at: record.at,
                            });
                        }
                    }
                    LockStep::GaveUp { .. } => {
                        waits.remove(&key);
                    }
                    LockStep::Woken { .. } | LockStep::Released { .. } | LockStep::Lost { .. } => {}
                }
            }
            _ => {}
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, established, exclusive, exists_owned, lock_step, requested};
    use sim::history::Record;

    const OLD: u64 = 7;
    const NEW: u64 = 9;

    fn history(steps: Vec<Vec<Record>>) -> History {
        History::from_records(steps.into_iter().flatten().collect())
    }

    #[test]
    fn holding_by_a_node_of_its_own_session_passes() {
        // Its old session's node (czxid 10) is found in the new session and not taken; the
        // lock is taken by a node the new session made.
        let good = history(vec![
            vec![established(0, C1, OLD)],
            vec![lock_step(1, C1, requested())],
            vec![established(3_000, C1, NEW)],
            vec![lock_step(3_001, C1, requested())],
            exists_owned(3_002, 1, "/lock/_c_1-lock-1", OLD, 10).to_vec(),
            exists_owned(3_010, 2, "/lock/_c_1-lock-5", NEW, 20).to_vec(),
            vec![lock_step(3_012, C1, exclusive(20))],
        ]);
        assert_eq!(check(&good), vec![]);
    }

    #[test]
    fn holding_by_an_earlier_sessions_node_is_reported() {
        // The create of session 7 took effect, its reply lost; the client gave the session
        // up, carried the create into session 9, found the node by its GUID and took the
        // lock by it.
        let bad = history(vec![
            vec![established(0, C1, OLD)],
            vec![lock_step(1, C1, requested())],
            vec![lock_step(
                2_100,
                C1,
                LockStep::GaveUp {
                    why: "the session or lease ended".into(),
                },
            )],
            vec![established(3_000, C1, NEW)],
            vec![lock_step(3_001, C1, requested())],
            exists_owned(3_010, 1, "/lock/_c_1-lock-1", OLD, 10).to_vec(),
            vec![lock_step(3_012, C1, exclusive(10))],
        ]);
        let violations = check(&bad);
        assert_eq!(violations.len(), 1);
        assert_eq!((violations[0].owner, violations[0].session), (OLD, NEW));
        assert!(
            violations[0].to_string().contains("owned by session 0x7"),
            "{}",
            violations[0]
        );
    }

    #[test]
    fn acquisitions_without_a_read_of_the_node_are_not_judged() {
        // The herd lock holds by the node its create returned: no `exists` of it.
        let history = history(vec![
            vec![established(0, C1, NEW)],
            vec![lock_step(1, C1, requested())],
            exists_owned(2, 1, "/lock", OLD, 10).to_vec(),
            vec![lock_step(9, C1, exclusive(12))],
        ]);
        assert_eq!(check(&history), vec![]);
    }
}
