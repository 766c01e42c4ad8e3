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
//! (which session a process runs in), its `Invoke`/`Complete` records of `create` calls (the
//! path a successful create returned) and of `exists` calls (the path asked, and the `Stat`
//! the server returned with the node's `ephemeral_owner`), and the lock recipes'
//! `Requested`, `Acquired { token }` and `GaveUp` steps (a process waits from `Requested` to
//! the next `Acquired` or `GaveUp`). A node is the waiter's own if its create returned it
//! during the wait, or if an `exists` invoked in session *s* returned it with
//! `ephemeral_owner` *s*, as the server said. A waiter has one node in the line; so a wait
//! violates the property when it knew two own nodes (the orphan is the one it found by
//! `exists`, behind which it waited), or when it acquired with a token other than the
//! `czxid` of an own node it found. One own node found, in a wait that timed out or was
//! still under way when the history ended, is the waiter's own place in line (found again
//! by its GUID after a lost reply, or read when it came first), not an orphan.

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

/// A process's wait for a lock, and the nodes of its own session it knew meanwhile.
struct Wait {
    lock: String,
    /// Own nodes read with `exists`: path, `czxid`, when, session.
    found: Vec<(String, u64, SimTime, u64)>,
    /// Own nodes its creates returned.
    created: Vec<String>,
}

impl Wait {
    /// How many distinct nodes of its own session the waiter knew.
    fn own_nodes(&self) -> usize {
        let mut paths: Vec<&str> = self
            .found
            .iter()
            .map(|(path, ..)| path.as_str())
            .chain(self.created.iter().map(String::as_str))
            .collect();
        paths.sort_unstable();
        paths.dedup();
        paths.len()
    }
}

/// A call in flight that can tell a waiter of a node of its own session.
enum Asked {
    /// `exists` of this path, by this process, in this session.
    Exists(String, (NodeId, u32), u64),
    /// `create`, by this process.
    Create((NodeId, u32)),
}

/// Every lock waiter that found a node of its own session and did not take the lock
/// through it.
pub fn check(history: &History) -> Vec<OrphanWaiter> {
    let mut sessions: BTreeMap<(NodeId, u32), u64> = BTreeMap::new();
    let mut waits: BTreeMap<(NodeId, u32), Wait> = BTreeMap::new();
    // `exists` calls in flight: the path, the process and its session at the invocation.
    let mut asked: BTreeMap<OpId, Asked> = BTreeMap::new();
    let mut orphans = Vec::new();
    let mut judge = |key: (NodeId, u32), wait: Wait, acquired: Option<u64>| {
        let two_own_nodes = wait.own_nodes() >= 2;
        for (node, czxid, found_at, session) in &wait.found {
            let orphan = match acquired {
                Some(token) => token != *czxid,
                None => two_own_nodes,
            };
            if orphan {
                orphans.push(OrphanWaiter {
                    lock: wait.lock.clone(),
                    waiter: key,
                    session: *session,
                    node: node.clone(),
                    czxid: *czxid,
                    found_at: *found_at,
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
                operation: Operation::Zk(operation),
            } => match operation {
                ZkOperation::Exists { path } => {
                    if let Some(&session) = sessions.get(&(*client, *process)) {
                        asked.insert(
                            *op_id,
                            Asked::Exists(path.clone(), (*client, *process), session),
                        );
                    }
                }
                ZkOperation::Create { .. } => {
                    asked.insert(*op_id, Asked::Create((*client, *process)));
                }
                _ => {}
            },
            Event::Complete {
                op_id,
                result: OpResult::Ok { response },
            } => match (asked.remove(op_id), response) {
                (
                    Some(Asked::Exists(path, key, session)),
                    Response::Zk(ZkResponse::Exists {
                        stat: Some(stat), ..
                    }),
                ) if stat.ephemeral_owner == session => {
                    if let Some(wait) = waits.get_mut(&key) {
                        wait.found.push((path, stat.czxid, record.at, session));
                    }
                }
                (Some(Asked::Create(key)), Response::Zk(ZkResponse::Created { path })) => {
                    if let Some(wait) = waits.get_mut(&key) {
                        wait.created.push(path.clone());
                    }
                }
                _ => {}
            },
            Event::Complete { op_id, .. } => {
                asked.remove(op_id);
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
                                created: Vec::new(),
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
    use crate::test_history::{
        C1, create, established, exclusive, exists_owned, invoke, lock_step, ok, requested,
    };
    use sim::history::{Record, zk::CreateMode};

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

    fn created(ms: u64, op: u64, path: &str) -> Vec<Record> {
        vec![
            invoke(
                ms,
                C1,
                op,
                create("/lock/lock-", CreateMode::EphemeralSequential),
            ),
            ok(ms + 1, C1, op, ZkResponse::Created { path: path.into() }),
        ]
    }

    #[test]
    fn waiting_behind_an_orphan_of_its_own_session_is_reported() {
        // Its first create took effect (czxid 10) but its reply was lost; the client made a
        // second node and waits behind the first, then gives up.
        let bad = history(vec![
            vec![established(0, C1, SESSION)],
            vec![lock_step(1, C1, requested())],
            created(2, 3, "/lock/lock-2"),
            exists_owned(4, 1, "/lock/lock-1", SESSION, 10).to_vec(),
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
            created(2, 3, "/lock/lock-2"),
            exists_owned(4, 1, "/lock/lock-1", SESSION, 10).to_vec(),
        ]);
        assert_eq!(check(&waiting).len(), 1);
    }

    #[test]
    fn its_one_node_found_again_in_a_wait_that_times_out_is_no_orphan() {
        // The create's reply was lost; the waiter found its node by GUID, read it, waited
        // behind another session's node and gave up: one node of its own, its place in line.
        let timed_out = history(vec![
            vec![established(0, C1, SESSION)],
            vec![lock_step(1, C1, requested())],
            exists_owned(4, 1, "/lock/_c_1-lock-1", SESSION, 10).to_vec(),
            exists_owned(6, 2, "/lock/_c_2-lock-0", 99, 9).to_vec(),
            vec![lock_step(
                9,
                C1,
                LockStep::GaveUp {
                    why: "timed out".into(),
                },
            )],
        ]);
        assert_eq!(check(&timed_out), vec![]);
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
