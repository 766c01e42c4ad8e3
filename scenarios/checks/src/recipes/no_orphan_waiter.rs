//! No lock waiter waits behind a node of its own session. A ZooKeeper lock waiter that finds
//! a node owned by its own session must be taking the lock through it: any other node of
//! its session is an orphan — a sequential create that took effect although its reply was
//! lost, then made again (ZooKeeper Recipes, the note on creating lock nodes with a GUID;
//! Curator's `withProtection`, CURATOR-45) — and an ephemeral node leaves only with its
//! session or by its owner's delete, which the client does not know to make. Waiting behind
//! it, the client waits for itself for as long as its session lives, and every waiter after
//! it waits too (`recipe.unprotected_seq_create`).
//!
//! **Reads:** the lock waits of [`crate::history::lock_waits`] (the clients' own records:
//! their sessions, the replies of their reads that carry a node's `Stat` — `exists`,
//! `getData` as Curator watches its predecessor, `setData`, `getACL` — with the server's
//! `ephemeral_owner`, their creates' replies, their lock steps). A node is the waiter's own
//! if its create returned it during the wait, or if a read in session *s* returned it with
//! owner *s*, whichever call read it. A waiter has
//! one node in the line; so a wait violates the property when it knew two own nodes (the
//! orphan is the one it read, behind which it waited), or when it acquired with a token
//! other than the `czxid` of an own node it read. One own node read, in a wait that timed out
//! or was still under way when the history ended, is the waiter's own place in line (found
//! again by its GUID after a lost reply, or read when it came first), not an orphan.
//!
//! A waiter may also never read its orphan: zookeeper-client's `Client::lock` looks for a
//! lost node by listing names only, and when other waiters' nodes came between, it watches
//! one of theirs, and the line waits behind its orphan through them. So a listing counts
//! too, where the names tell: a waiter whose ephemeral sequential creates asked for a prefix
//! no other waiter asked for (a GUID in the name, as protected creates have) owns every
//! child named with that prefix and a sequence number. A wait that did not acquire, whose
//! last listing of its line named two such children, waited with an orphan of its own in
//! line. (A wait that acquired is judged by the token rule above.)

use crate::Checked;
use crate::{
    Violation,
    history::{
        lock_waits::{LockWait, NodeRead, WaitEnd},
        views::HistoryViews,
        zk::{parent_of, sequence_appended},
    },
};
use sim::{NodeId, history::History, time::SimTime};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A lock waiter that found a node of its own session and did not take the lock through it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrphanWaiter {
    /// The lock.
    pub lock: String,
    /// The waiter: client node and process.
    pub waiter: (NodeId, u32),
    /// The node of its own it found.
    pub node: String,
    /// How it knew the node as its own.
    pub found: Found,
    /// When the read or listing returned it.
    pub found_at: SimTime,
    /// How the wait ended: the token it acquired with, or `None` (gave up, or still waiting
    /// at the end of the history).
    pub acquired: Option<u64>,
}

/// How a waiter knew a node as its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// A read in its session returned the node, owned by that session.
    Read {
        /// The session.
        session: u64,
        /// The node's `czxid`.
        czxid: u64,
    },
    /// Its last listing of the line named the node and `twin`, both with the create prefix
    /// `prefix` that only this waiter asked for.
    Listed {
        /// The prefix.
        prefix: String,
        /// Its other node in the listing.
        twin: String,
    },
}

impl fmt::Display for OrphanWaiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} waiting for `{}` found {} ",
            self.waiter.0, self.waiter.1, self.lock, self.node
        )?;
        match &self.found {
            Found::Read { session, czxid } => write!(
                f,
                "(czxid {czxid}) owned by its own session {session:#x} at {}, and ",
                self.found_at
            )?,
            Found::Listed { prefix, twin } => {
                return write!(
                    f,
                    "and {twin} in its last listing at {}, both named with its own create \
                     prefix `{prefix}`, and never acquired: it waited with an orphan of its \
                     own in line",
                    self.found_at
                );
            }
        }
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

    fn at(&self) -> Option<SimTime> {
        // When the waiter found its own session's node.
        Some(self.found_at)
    }
}

/// Every lock waiter that waited behind a node of its own session, or took the lock through
/// another node than the own node it found.
pub fn check(history: &History) -> Checked<OrphanWaiter> {
    check_views(&HistoryViews::new(history))
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> Checked<OrphanWaiter> {
    let waits = history.lock_waits();
    // The create prefixes each waiter asked for: one only it asked for names its nodes.
    let mut askers: BTreeMap<&str, BTreeSet<(NodeId, u32)>> = BTreeMap::new();
    for wait in waits {
        for prefix in &wait.sequential_prefixes {
            askers.entry(prefix).or_default().insert(wait.waiter);
        }
    }
    let mut orphans = Vec::new();
    // Waits in which the waiter's own node was seen (read back, created, or listed under a
    // prefix only it asked for): the others say nothing about whose node it waited behind.
    let mut judged = 0;
    for wait in waits {
        let own: Vec<&NodeRead> = wait
            .reads
            .iter()
            .filter(|read| read.owned_by_reader())
            .collect();
        let mut own_paths: Vec<&str> = own
            .iter()
            .map(|read| read.path.as_str())
            .chain(wait.created.iter().map(String::as_str))
            .collect();
        own_paths.sort_unstable();
        own_paths.dedup();
        let acquired = match wait.end {
            WaitEnd::Acquired { token, .. } => Some(token),
            WaitEnd::GaveUp { .. } | WaitEnd::Unfinished => None,
        };
        let found = orphans.len();
        for read in own {
            let orphan = match acquired {
                Some(token) => token != read.czxid,
                None => own_paths.len() >= 2,
            };
            if orphan {
                orphans.push(OrphanWaiter {
                    lock: wait.lock.clone(),
                    waiter: wait.waiter,
                    node: read.path.clone(),
                    found: Found::Read {
                        session: read.session,
                        czxid: read.czxid,
                    },
                    found_at: read.at,
                    acquired,
                });
            }
        }
        let listed = listed_own(wait, &askers);
        judged += u64::from(!own_paths.is_empty() || listed.is_some());
        if let Some((prefix, names, at)) = listed
            && acquired.is_none()
            && orphans.len() == found
            && let [orphan, twin, ..] = names.as_slice()
        {
            orphans.push(OrphanWaiter {
                lock: wait.lock.clone(),
                waiter: wait.waiter,
                node: orphan.clone(),
                found: Found::Listed {
                    prefix: prefix.to_string(),
                    twin: twin.clone(),
                },
                found_at: at,
                acquired,
            });
        }
    }
    Checked::new(orphans, judged)
}

/// The children of `wait`'s last listing named with a create prefix only its waiter asked
/// for, lowest sequence first: the prefix, their paths and when the listing returned; `None`
/// when it listed no such prefix's parent.
fn listed_own<'w>(
    wait: &'w LockWait,
    askers: &BTreeMap<&str, BTreeSet<(NodeId, u32)>>,
) -> Option<(&'w str, Vec<String>, SimTime)> {
    let (parent, named, at) = wait.last_listing.as_ref()?;
    let prefix = wait.sequential_prefixes.iter().find(|prefix| {
        parent_of(prefix) == parent
            && askers
                .get(prefix.as_str())
                .is_some_and(|waiters| waiters.len() == 1)
    })?;
    let mut own: Vec<(i32, &String)> = named
        .iter()
        .filter_map(|path| Some((sequence_appended(prefix, path)?, path)))
        .collect();
    own.sort_unstable();
    Some((
        prefix,
        own.into_iter().map(|(_, path)| path.clone()).collect(),
        *at,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{
        C1, create, established, exclusive, exists_owned, invoke, lock_step, ok, requested,
    };
    use sim::history::{
        Record,
        recipe::LockStep,
        zk::{CreateMode, ZkResponse},
    };

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
        assert_eq!(
            violations[0].found,
            Found::Read {
                session: SESSION,
                czxid: 10
            }
        );
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
    fn a_node_a_create2_returned_is_its_own_too() {
        use sim::history::zk::Stat;
        // The zookeeper-client drop-in creates with `create2`: its reply carries the stat.
        let mut second = created(2, 3, "/lock/lock-2");
        second[1] = ok(
            3,
            C1,
            3,
            ZkResponse::CreatedWithStat {
                path: "/lock/lock-2".into(),
                stat: Stat {
                    czxid: 11,
                    ephemeral_owner: SESSION,
                    ..Stat::default()
                },
            },
        );
        let bad = history(vec![
            vec![established(0, C1, SESSION)],
            vec![lock_step(1, C1, requested())],
            second,
            exists_owned(4, 1, "/lock/lock-1", SESSION, 10).to_vec(),
        ]);
        assert_eq!(check(&bad).len(), 1);
    }

    /// A wait whose create's reply was lost: after `before` (records from 2 ms), the waiter
    /// finds its node by GUID, reads it, waits behind another session's node and gives up.
    fn found_again_then_timed_out(before: Vec<Record>) -> History {
        history(vec![
            vec![established(0, C1, SESSION)],
            vec![lock_step(1, C1, requested())],
            before,
            exists_owned(4, 1, "/lock/_c_1-lock-1", SESSION, 10).to_vec(),
            exists_owned(6, 2, "/lock/_c_2-lock-0", 99, 9).to_vec(),
            vec![lock_step(
                9,
                C1,
                LockStep::GaveUp {
                    why: "timed out".into(),
                },
            )],
        ])
    }

    #[test]
    fn its_one_node_found_again_in_a_wait_that_times_out_is_no_orphan() {
        // One node of its own: its place in line.
        assert_eq!(check(&found_again_then_timed_out(Vec::new())), vec![]);
    }

    #[test]
    fn the_parents_a_waiter_made_are_not_nodes_of_its_line() {
        // As above, after making the lock's parent (a persistent create, `ensure_parents`):
        // found at 256 clients under faults (compare-locks, zk_queue_lock seed 6), where the
        // parent counted as a second own node and a timed-out wait as an orphan's.
        let parent = vec![
            invoke(2, C1, 3, create("/lock", CreateMode::Persistent)),
            ok(
                3,
                C1,
                3,
                ZkResponse::Created {
                    path: "/lock".into(),
                },
            ),
        ];
        assert_eq!(check(&found_again_then_timed_out(parent)), vec![]);
    }

    #[test]
    fn nodes_of_its_session_found_outside_a_wait_are_not_judged() {
        let history = history(vec![
            vec![established(0, C1, SESSION)],
            exists_owned(2, 1, "/members/c1", SESSION, 10).to_vec(),
        ]);
        assert_eq!(check(&history), vec![]);
    }

    #[test]
    fn an_orphan_read_with_get_data_is_reported() {
        use crate::test_history::get_data;
        use sim::history::zk::Stat;
        // Curator's waiter reads its predecessor with getData: the orphan is its own.
        let bad = history(vec![
            vec![established(0, C1, SESSION)],
            vec![lock_step(1, C1, requested())],
            created(2, 3, "/lock/lock-2"),
            vec![
                invoke(4, C1, 1, get_data("/lock/lock-1")),
                ok(
                    5,
                    C1,
                    1,
                    ZkResponse::Data {
                        data: String::new(),
                        stat: Stat {
                            czxid: 10,
                            ephemeral_owner: SESSION,
                            ..Stat::default()
                        },
                    },
                ),
            ],
        ]);
        let violations = check(&bad);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].node, "/lock/lock-1");
    }

    /// C1 asks twice for the prefix `prefix` (the first reply lost, the second making
    /// `…-3`), then lists `/lock` with `listed` and gives up; C2 asked for `other_prefix`.
    fn listed_then_gave_up(prefix: &str, other_prefix: &str, listed: &[&str]) -> History {
        use crate::test_history::C2;
        use sim::history::zk::ZkOperation;
        let lost = invoke(2, C1, 3, create(prefix, CreateMode::EphemeralSequential));
        let again = vec![
            invoke(3, C1, 4, create(prefix, CreateMode::EphemeralSequential)),
            ok(
                4,
                C1,
                4,
                ZkResponse::Created {
                    path: format!("{prefix}0000000003"),
                },
            ),
        ];
        let listing = vec![
            invoke(
                5,
                C1,
                5,
                ZkOperation::GetChildren {
                    path: "/lock".into(),
                },
            ),
            ok(
                6,
                C1,
                5,
                ZkResponse::ChildNames {
                    children: listed.iter().map(ToString::to_string).collect(),
                },
            ),
        ];
        history(vec![
            vec![established(0, C1, SESSION), established(0, C2, SESSION + 1)],
            vec![lock_step(1, C1, requested()), lock_step(1, C2, requested())],
            vec![lost],
            vec![invoke(
                2,
                C2,
                9,
                create(other_prefix, CreateMode::EphemeralSequential),
            )],
            again,
            listing,
            vec![lock_step(
                9,
                C1,
                LockStep::GaveUp {
                    why: "timed out".into(),
                },
            )],
        ])
    }

    #[test]
    fn an_orphan_named_with_its_own_prefix_in_its_last_listing_is_reported() {
        // zookeeper-client's lock after a lost create: it never reads its first node, and
        // watches another waiter's, which waits behind that orphan.
        let listed = [
            "_c_g1-lock-0000000000",
            "_c_g2-lock-0000000001",
            "_c_g1-lock-0000000003",
        ];
        let bad = listed_then_gave_up("/lock/_c_g1-lock-", "/lock/_c_g2-lock-", &listed);
        let violations = check(&bad);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].node, "/lock/_c_g1-lock-0000000000");
        assert_eq!(
            violations[0].found,
            Found::Listed {
                prefix: "/lock/_c_g1-lock-".into(),
                twin: "/lock/_c_g1-lock-0000000003".into()
            }
        );
        assert!(violations[0].to_string().contains("an orphan of its own"));
        // Its twin deleted before the last listing (as the protected lock does): clean.
        let mended = listed_then_gave_up(
            "/lock/_c_g1-lock-",
            "/lock/_c_g2-lock-",
            &["_c_g2-lock-0000000001", "_c_g1-lock-0000000003"],
        );
        assert_eq!(check(&mended), vec![]);
        assert_eq!(check_views(&HistoryViews::new(&mended)).judged, 1);
    }

    #[test]
    fn names_under_a_prefix_other_waiters_asked_for_too_say_nothing() {
        // Every waiter asks for `/lock/lock-`: the names do not say whose a node is.
        let listed = ["lock-0000000000", "lock-0000000001", "lock-0000000003"];
        let shared = listed_then_gave_up("/lock/lock-", "/lock/lock-", &listed);
        assert_eq!(check(&shared), vec![]);
    }
}
