//! No lock waiter waits behind a node of its own session. A ZooKeeper lock waiter that finds
//! a node owned by its own session must be taking the lock through it: any other node of
//! its session is an orphan — a sequential create that took effect although its reply was
//! lost, then made again (ZooKeeper Recipes, the note on creating lock nodes with a GUID;
//! Curator's `withProtection`, CURATOR-45) — and an ephemeral node leaves only with its
//! session or by its owner's delete, which the client does not know to make. Waiting behind
//! it, the client waits for itself for as long as its session lives, and every waiter after
//! it waits too (`recipe.unprotected_seq_create`).
//!
//! **Reads:** at the client nodes, in order: the client library's `SessionEstablished`
//! (which session a process runs in), its `Invoke`/`Complete` records of `exists` calls (the
//! path asked, and the `Stat` the server returned with the node's `ephemeral_owner`), and
//! the lock recipes' `Requested`, `Acquired { token }` and `GaveUp` steps (a process waits
//! from `Requested` to the next `Acquired` or `GaveUp`). An `exists` that a waiting process
//! invoked in session *s* and that returned a node whose `ephemeral_owner` is *s* is a node
//! of its own session, as the server said; unless the wait ends with `Acquired` whose token
//! is that node's `czxid` (the lock taken through it, as the queue lock does with its own
//! node and the herd lock with the lock node), the waiter looked at — and waited behind — an
//! orphan. A wait still under way when the history ends is judged as one that did not take
//! the lock through the node.

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

/// A lock waiter that found a node of its own session and did not take the lock through it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrphanWaiter {
    /// The lock.
    pub lock: String,
    /// The waiter: client node and process.
    pub waiter: (NodeId, u32),
    /// Its session.
    pub session: u64,
    /// The node of its session it found.
    pub node: String,
    /// That node's `czxid`.
    pub czxid: u64,
    /// When the `exists` returned it.
    pub found_at: SimTime,
    /// How the wait ended: the token it acquired with, or `None` (gave up, or still waiting
    /// at the end of the history).
    pub acquired: Option<u64>,
}

impl fmt::Display for OrphanWaiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} waiting for `{}` found {} (czxid {}) owned by its own session {:#x} at {}, \
             and ",
            self.waiter.0,
            self.waiter.1,
            self.lock,
            self.node,
            self.czxid,
            self.session,
            self.found_at
        )?;
        match self.acquired {
            Some(token) => write!(f, "then acquired through another node (token {token})"),
            None => f.write_str("never acquired through it: it waited behind its own node"),
        }
    }
}

impl Violation for OrphanWaiter {
    fn property(&self) -> &'static str {
        "no waiter behind its own session's node"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Recipes, Locks (the GUID note on sequential creates); CURATOR-45"
    }
}

/// A process's wait for a lock, and the nodes of its own session it found meanwhile.
struct Wait {
    lock: String,
    found: Vec<(String, u64, SimTime, u64)>,
}

/// Every lock waiter that found a node of its own session and did not take the lock
/// through it.
pub fn check(history: &History) -> Vec<OrphanWaiter> {
    let mut sessions: BTreeMap<(NodeId, u32), u64> = BTreeMap::new();
    let mut waits: BTreeMap<(NodeId, u32), Wait> = BTreeMap::new();
    // `exists` calls in flight: the path, the process and its session at the invocation.
    let mut asked: BTreeMap<OpId, (String, (NodeId, u32), u64)> = BTreeMap::new();
    let mut orphans = Vec::new();
    let mut judge = |key: (NodeId, u32), wait: Wait, acquired: Option<u64>| {
        for (node, czxid, found_at, session) in wait.found {
            if acquired != Some(czxid) {
                orphans.push(OrphanWaiter {
                    lock: wait.lock.clone(),
                    waiter: key,
                    session,
                    node,
                    czxid,
                    found_at,
                    acquired,
                });
            }
        }
    };
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
                    && stat.ephemeral_owner == session
                    && let Some(wait) = waits.get_mut(&key)
                {
                    wait.found.push((path, stat.czxid, record.at, session));
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
                        if let Some(wait) = waits.remove(&key) {
                            judge(key, wait, None);
                        }
                        waits.insert(
                            key,
                            Wait {
                                lock: lock.clone(),
                                found: Vec::new(),
                            },
                        );
                    }
                    LockStep::Acquired { token, .. } => {
                        if let Some(wait) = waits.remove(&key) {
                            judge(key, wait, Some(*token));
                        }
                    }
                    LockStep::GaveUp { .. } => {
                        if let Some(wait) = waits.remove(&key) {
                            judge(key, wait, None);
                        }
                    }
                    LockStep::Woken { .. } | LockStep::Released { .. } | LockStep::Lost { .. } => {}
                }
            }
            _ => {}
        }
    }
    for (key, wait) in std::mem::take(&mut waits) {
        judge(key, wait, None);
    }
    orphans
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, established, exclusive, exists_owned, lock_step, requested};
    use sim::history::Record;

    const SESSION: u64 = 7;

    fn history(steps: Vec<Vec<Record>>) -> History {
        History::from_records(steps.into_iter().flatten().collect())
    }

    #[test]
    fn taking_the_lock_through_its_own_node_passes() {
        // Behind another session's node, then first: its own node is the lock.
        let good = history(vec![
            vec![established(0, C1, SESSION)],
            vec![lock_step(1, C1, requested())],
            exists_owned(2, 1, "/lock/a-lock-1", 99, 10).to_vec(),
            exists_owned(5, 2, "/lock/a-lock-2", SESSION, 11).to_vec(),
            vec![lock_step(7, C1, exclusive(11))],
        ]);
        assert_eq!(check(&good), vec![]);
    }

    #[test]
    fn waiting_behind_an_orphan_of_its_own_session_is_reported() {
        // Its first create took effect (czxid 10) but its reply was lost; the client made a
        // second node and waits behind the first, then gives up.
        let bad = history(vec![
            vec![established(0, C1, SESSION)],
            vec![lock_step(1, C1, requested())],
            exists_owned(2, 1, "/lock/lock-1", SESSION, 10).to_vec(),
            vec![lock_step(
                9,
                C1,
                LockStep::GaveUp {
                    why: "timed out".into(),
                },
            )],
        ]);
        let violations = check(&bad);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].czxid, 10);
        assert!(violations[0].to_string().contains("its own node"));
        // Still waiting when the history ends: the same.
        let waiting = history(vec![
            vec![established(0, C1, SESSION)],
            vec![lock_step(1, C1, requested())],
            exists_owned(2, 1, "/lock/lock-1", SESSION, 10).to_vec(),
        ]);
        assert_eq!(check(&waiting).len(), 1);
    }

    #[test]
    fn nodes_of_its_session_found_outside_a_wait_are_not_judged() {
        let history = history(vec![
            vec![established(0, C1, SESSION)],
            exists_owned(2, 1, "/members/c1", SESSION, 10).to_vec(),
        ]);
        assert_eq!(check(&history), vec![]);
    }
}
