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
//! **Reads:** the lock waits of [`crate::history::lock_waits`] (the clients' own records:
//! their sessions, the replies of their reads that carry a node's `Stat` — `exists`,
//! `getData`, `setData`, `getACL` — with the server's `czxid` and `ephemeral_owner`, their
//! lock steps). The queue lock reads its own node with `exists` once it is first in line,
//! Curator's with `getData`, and takes the lock with that node's `czxid` as its token, so
//! the last read of the wait whose `czxid` is the acquired token, whichever call made it,
//! is the server's own word on the node the holder holds by; its owner is compared with the
//! session the read ran in. An acquisition with no such read (the herd lock, which holds by
//! the node its create returned, a reply without a `czxid`; etcd) is not judged.

use crate::Checked;
use crate::{
    Violation,
    history::{lock_waits::WaitEnd, views::HistoryViews},
};
use sim::{NodeId, history::History, time::SimTime};
use std::fmt;

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
    /// When the holder's read returned the node.
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

    fn at(&self) -> Option<SimTime> {
        // When the holder acquired.
        Some(self.acquired_at)
    }
}

/// Every acquisition by a node the server said another session owns.
pub fn check(history: &History) -> Checked<HolderNotOwner> {
    check_views(&HistoryViews::new(history))
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> Checked<HolderNotOwner> {
    // Acquisitions whose node a read showed: the others (the herd lock's; etcd's) are not
    // judged, and counted as such.
    let mut judged = 0;
    let violations = history
        .lock_waits()
        .iter()
        .filter_map(|wait| {
            let WaitEnd::Acquired { token, at } = wait.end else {
                return None;
            };
            let read = wait.reads.iter().rev().find(|read| read.czxid == token)?;
            judged += 1;
            (!read.owned_by_reader()).then(|| HolderNotOwner {
                lock: wait.lock.clone(),
                holder: wait.waiter,
                session: read.session,
                node: read.path.clone(),
                token,
                owner: read.owner,
                read_at: read.at,
                acquired_at: at,
            })
        })
        .collect();
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, established, exclusive, exists_owned, lock_step, requested};
    use sim::history::{Record, recipe::LockStep};

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

    #[test]
    fn a_node_read_with_get_data_is_judged_as_one_read_with_exists() {
        use crate::test_history::{get_data, invoke, ok};
        use sim::history::zk::{Stat, ZkResponse};
        // As Curator's LockInternals reads: getData of the node, its Stat in the reply.
        let get_data_owned = |ms, op, path: &str, owner, czxid| {
            vec![
                invoke(ms, C1, op, get_data(path)),
                ok(
                    ms + 1,
                    C1,
                    op,
                    ZkResponse::Data {
                        data: String::new(),
                        stat: Stat {
                            czxid,
                            ephemeral_owner: owner,
                            ..Stat::default()
                        },
                    },
                ),
            ]
        };
        let bad = history(vec![
            vec![established(3_000, C1, NEW)],
            vec![lock_step(3_001, C1, requested())],
            get_data_owned(3_010, 1, "/lock/_c_1-lock-1", OLD, 10),
            vec![lock_step(3_012, C1, exclusive(10))],
        ]);
        let violations = check(&bad);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!((violations[0].owner, violations[0].session), (OLD, NEW));
        let good = history(vec![
            vec![established(3_000, C1, NEW)],
            vec![lock_step(3_001, C1, requested())],
            get_data_owned(3_010, 1, "/lock/_c_1-lock-5", NEW, 20),
            vec![lock_step(3_012, C1, exclusive(20))],
        ]);
        assert_eq!(check(&good), vec![]);
    }
}
