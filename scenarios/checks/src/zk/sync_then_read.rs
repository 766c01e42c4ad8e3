//! `sync` then read sees every write acknowledged before the `sync` started.
//!
//! ZooKeeper reads are sequentially consistent: a follower may serve stale data. The
//! documented way to read fresh data is `sync` then read ("ZooKeeper Programmer's Guide",
//! *Consistency Guarantees*): the read must reflect every write that completed before the
//! sync was issued. ZOOKEEPER-1675 (and Jepsen's 2019 note) shows a leader that answers
//! `sync` without confirming it still leads breaks this across a leader change.
//!
//! For each read preceded by a successful `sync` of the same client process, and each write
//! acknowledged (to anyone) before that sync was invoked, on the read's path:
//! - `setData`: the read's stat has an `mzxid` at least the write's (same data if equal);
//! - `create`: the node exists; `delete`: it does not;
//!
//! unless a concurrent or later operation could explain the difference (a delete or create
//! of the path not known to have finished before the write started), or the node is
//! ephemeral (its session may have ended; see `zk_ephemeral_lifetime`). `getChildren` is
//! checked the same way for creates and deletes of children.
//!
//! **Reads:** client operations only (`Invoke`/`Complete` of `sim::history::zk` operations with
//! the Stats the responses carried, recorded by the client library). No server event is
//! trusted.

use crate::history::views::HistoryViews;
use crate::history::zk::{ZkOp, parent_of};
use crate::{Checked, Violation};
use sim::{
    NodeId,
    history::{
        History, OpError, OpId, OpResult,
        zk::{CreateMode, Stat, ZkError, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

/// A read after a sync missed a write acknowledged before the sync.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleReadAfterSync {
    /// The read.
    pub read: OpId,
    /// Who read.
    pub client: NodeId,
    /// When the sync before it was invoked.
    pub sync_invoked_at: SimTime,
    /// The write it missed.
    pub write: OpId,
    /// When that write was acknowledged.
    pub write_acknowledged_at: SimTime,
    /// The path.
    pub path: String,
    /// What the read should have reflected and what it showed.
    pub problem: String,
}

impl fmt::Display for StaleReadAfterSync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} read {} on {} after a sync invoked at {}, but missed write {} acknowledged at {}: {}",
            self.client,
            self.path,
            self.read,
            self.sync_invoked_at,
            self.write,
            self.write_acknowledged_at,
            self.problem
        )
    }
}

impl Violation for StaleReadAfterSync {
    fn property(&self) -> &'static str {
        "sync then read sees prior acknowledged writes"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Programmer's Guide, Consistency Guarantees (sync); ZOOKEEPER-1675"
    }

    fn at(&self) -> Option<SimTime> {
        // When the sync before the stale read was invoked.
        Some(self.sync_invoked_at)
    }
}

#[derive(Clone, Debug)]
enum Fact {
    Set { data: String, mzxid: u64 },
    Created,
    Deleted,
}

#[derive(Clone, Debug)]
struct Write {
    op: OpId,
    invoked_at: SimTime,
    acknowledged_at: SimTime,
    path: String,
    fact: Fact,
}

/// Acknowledged writes, path by path, from plain writes and multis.
fn acknowledged_writes(ops: &[ZkOp<'_>]) -> Vec<Write> {
    let mut writes = Vec::new();
    for op in ops {
        let (Some(response), Some(acknowledged_at)) = (op.ok(), op.ok_at()) else {
            continue;
        };
        let mut push = |operation: &ZkOperation, response: &ZkResponse| {
            let (path, fact) = match (operation, response) {
                (ZkOperation::SetData { path, data, .. }, ZkResponse::Stat { stat }) => (
                    path.clone(),
                    Fact::Set {
                        data: data.clone(),
                        mzxid: stat.mzxid,
                    },
                ),
                (ZkOperation::Create { .. }, response) => match response.created_path() {
                    Some(path) => (path.to_string(), Fact::Created),
                    None => return,
                },
                (ZkOperation::Delete { path, .. }, ZkResponse::Deleted) => {
                    (path.clone(), Fact::Deleted)
                }
                _ => return,
            };
            writes.push(Write {
                op: op.op_id,
                invoked_at: op.invoked_at,
                acknowledged_at,
                path,
                fact,
            });
        };
        match (op.operation, response) {
            (ZkOperation::Multi { ops: parts }, ZkResponse::Multi { results }) => {
                for (part, result) in parts.iter().zip(results) {
                    push(part, result);
                }
            }
            (operation, response) => push(operation, response),
        }
    }
    writes
}

/// Paths that may be ephemeral (any ephemeral create not known to have failed).
fn maybe_ephemeral(ops: &[ZkOp<'_>]) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut paths = BTreeSet::new();
    let mut parents = BTreeSet::new();
    for op in ops {
        let ZkOperation::Create { path, mode, .. } = op.operation else {
            continue;
        };
        if op.definitely_failed()
            || !matches!(
                mode,
                CreateMode::Ephemeral | CreateMode::EphemeralSequential
            )
        {
            continue;
        }
        match op.ok().and_then(ZkResponse::created_path) {
            Some(path) => {
                paths.insert(path.to_string());
            }
            _ if *mode == CreateMode::Ephemeral => {
                paths.insert(path.clone());
            }
            // An unknown ephemeral-sequential create may have made any child name.
            _ => {
                parents.insert(parent_of(path).to_string());
            }
        }
    }
    (paths, parents)
}

/// Whether an operation that creates (or deletes) `path`, not known to have failed and not
/// known to have finished before `write` started, was invoked before `deadline`.
fn explained_by(
    ops: &[ZkOp<'_>],
    path: &str,
    creates: bool,
    write_invoked_at: SimTime,
    deadline: SimTime,
) -> bool {
    ops.iter().any(|op| {
        if op.definitely_failed() || op.invoked_at >= deadline || op.ended_at() < write_invoked_at {
            return false;
        }
        let touches = |operation: &ZkOperation| match operation {
            ZkOperation::Create {
                path: target, mode, ..
            } if creates => {
                target == path
                    || (matches!(
                        mode,
                        CreateMode::PersistentSequential | CreateMode::EphemeralSequential
                    ) && path.starts_with(target.as_str()))
            }
            ZkOperation::Delete { path: target, .. } if !creates => target == path,
            _ => false,
        };
        match op.operation {
            ZkOperation::Multi { ops: parts } => parts.iter().any(touches),
            operation => touches(operation),
        }
    })
}

/// The writes of `writes` acknowledged before `at`.
fn acknowledged_before<'w>(
    writes: &'w [&'w Write],
    at: SimTime,
) -> impl Iterator<Item = &'w Write> + 'w {
    writes
        .iter()
        .copied()
        .filter(move |write| write.acknowledged_at < at)
}

/// Every read after a sync that missed a write acknowledged before that sync.
pub fn check(history: &History) -> Checked<StaleReadAfterSync> {
    check_views(&HistoryViews::new(history))
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> Checked<StaleReadAfterSync> {
    let ops = history.zk_operations();
    let syncs = history.preceding_syncs();
    let writes = acknowledged_writes(&ops);
    let (ephemeral, ephemeral_parents) = maybe_ephemeral(&ops);
    let judge = Judge {
        ops: &ops,
        writes: WriteIndex::of(&writes),
        ephemeral: &ephemeral,
        ephemeral_parents: &ephemeral_parents,
    };
    let mut violations = Vec::new();
    let mut judged = 0;
    for (op, sync) in ops.iter().zip(syncs) {
        let Some(sync_invoked_at) = *sync else {
            continue;
        };
        let Some((read_done, result)) = op.completion else {
            continue;
        };
        let Some((path, seen)) = what_the_read_saw(op, result) else {
            continue;
        };
        judged += 1;
        let read = SyncedRead {
            op,
            path,
            sync_invoked_at,
            read_done,
        };
        judge.writes_on_the_path(&read, seen, &mut violations);
        if let Some(ZkResponse::Children { children, .. }) = op.ok() {
            judge.writes_on_children(&read, children, &mut violations);
        }
    }
    Checked::new(violations, judged)
}

/// What a read saw of its node: `Some(None)` that it does not exist, `Some(Some(..))` its
/// stat (and its data, for `getData`). `None` for an operation that is no read, or a read
/// that failed otherwise (it says nothing about the node).
type NodeSeen<'a> = Option<(Option<&'a str>, Stat)>;

/// The path a read asked about and what it saw of the node there, if it is a read this
/// check judges.
fn what_the_read_saw<'a>(op: &ZkOp<'a>, result: &OpResult) -> Option<(&'a String, NodeSeen<'a>)> {
    let path = match op.operation {
        ZkOperation::GetData { path }
        | ZkOperation::Exists { path }
        | ZkOperation::GetChildren { path } => path,
        _ => return None,
    };
    let seen = match (op.operation, op.ok()) {
        (ZkOperation::GetData { .. }, Some(ZkResponse::Data { data, stat })) => {
            Some((Some(data.as_str()), *stat))
        }
        (ZkOperation::Exists { .. }, Some(ZkResponse::Exists { stat })) => {
            stat.map(|stat| (None, stat))
        }
        (ZkOperation::GetChildren { .. }, Some(ZkResponse::Children { stat, .. })) => {
            Some((None, *stat))
        }
        (ZkOperation::GetData { .. } | ZkOperation::GetChildren { .. }, None)
            if matches!(
                result,
                OpResult::Fail {
                    error: OpError::Zk(ZkError::NoNode)
                }
            ) =>
        {
            None
        }
        _ => return None,
    };
    Some((path, seen))
}

/// The acknowledged writes indexed once, so that each read looks only at the writes on its
/// path and on its children rather than every read scanning every write.
struct WriteIndex<'w> {
    on: BTreeMap<&'w str, Vec<&'w Write>>,
    /// Writes on children, by parent and then by the child's name.
    below: BTreeMap<&'w str, BTreeMap<&'w str, Vec<&'w Write>>>,
}

impl<'w> WriteIndex<'w> {
    fn of(writes: &'w [Write]) -> Self {
        let mut index = WriteIndex {
            on: BTreeMap::new(),
            below: BTreeMap::new(),
        };
        for write in writes {
            index.on.entry(write.path.as_str()).or_default().push(write);
            if write.path != "/" {
                let name = &write.path[write.path.rfind('/').map_or(0, |i| i + 1)..];
                index
                    .below
                    .entry(parent_of(&write.path))
                    .or_default()
                    .entry(name)
                    .or_default()
                    .push(write);
            }
        }
        index
    }
}

/// A read after a sync, being judged.
struct SyncedRead<'r, 'a> {
    op: &'r ZkOp<'a>,
    path: &'a String,
    sync_invoked_at: SimTime,
    read_done: SimTime,
}

impl SyncedRead<'_, '_> {
    /// The read missed `write`, as `problem` says.
    fn missed(&self, write: &Write, problem: String) -> StaleReadAfterSync {
        StaleReadAfterSync {
            read: self.op.op_id,
            client: self.op.client,
            sync_invoked_at: self.sync_invoked_at,
            write: write.op,
            write_acknowledged_at: write.acknowledged_at,
            path: self.path.clone(),
            problem,
        }
    }
}

/// What every read is judged against: the operations (to explain a difference), the
/// acknowledged writes, and the paths that may be ephemeral.
struct Judge<'j, 'a> {
    ops: &'j [ZkOp<'a>],
    writes: WriteIndex<'j>,
    ephemeral: &'j BTreeSet<String>,
    ephemeral_parents: &'j BTreeSet<String>,
}

impl Judge<'_, '_> {
    /// The writes on the read's own path acknowledged before its sync: the latest
    /// `setData`'s mzxid and data, creates and deletes.
    fn writes_on_the_path(
        &self,
        read: &SyncedRead<'_, '_>,
        seen: NodeSeen<'_>,
        violations: &mut Vec<StaleReadAfterSync>,
    ) {
        let path = read.path.as_str();
        let on_path = self
            .writes
            .on
            .get(path)
            .into_iter()
            .flatten()
            .copied()
            .filter(|w| w.acknowledged_at < read.sync_invoked_at);
        let latest_set = on_path
            .clone()
            .filter_map(|w| match &w.fact {
                Fact::Set { mzxid, .. } => Some((*mzxid, w)),
                _ => None,
            })
            .max_by_key(|(mzxid, _)| *mzxid);
        let is_ephemeral =
            self.ephemeral.contains(path) || self.ephemeral_parents.contains(parent_of(path));
        let explained = |write: &Write, creates: bool| {
            explained_by(self.ops, path, creates, write.invoked_at, read.read_done)
        };
        if let Some((mzxid, write)) = latest_set {
            match seen {
                Some((data, stat)) => {
                    if stat.mzxid < mzxid {
                        violations.push(read.missed(
                            write,
                            format!("mzxid {:#x} older than {mzxid:#x}", stat.mzxid),
                        ));
                    } else if let (Some(data), Fact::Set { data: written, .. }) =
                        (data, &write.fact)
                        && stat.mzxid == mzxid
                        && data != written
                    {
                        violations.push(read.missed(
                            write,
                            format!("data {data:?} at mzxid {mzxid:#x}, written {written:?}"),
                        ));
                    }
                }
                None => {
                    if !is_ephemeral && !explained(write, false) {
                        violations.push(read.missed(write, "node missing".into()));
                    }
                }
            }
        }
        for write in on_path {
            match (&write.fact, seen) {
                (Fact::Created, None) if !is_ephemeral && !explained(write, false) => {
                    violations.push(read.missed(write, "created node missing".into()))
                }
                (Fact::Deleted, Some(_)) if !explained(write, true) => {
                    violations.push(read.missed(write, "deleted node present".into()))
                }
                _ => {}
            }
        }
    }

    /// The writes on children of the read's path acknowledged before its sync, against
    /// the `children` it listed.
    fn writes_on_children(
        &self,
        read: &SyncedRead<'_, '_>,
        children: &[String],
        violations: &mut Vec<StaleReadAfterSync>,
    ) {
        let path = read.path.as_str();
        let Some(below) = self.writes.below.get(path) else {
            return;
        };
        let explained = |write: &Write, creates: bool| {
            explained_by(
                self.ops,
                &write.path,
                creates,
                write.invoked_at,
                read.read_done,
            )
        };
        // A child created and not listed; none counts under a parent that may hold
        // ephemeral children (they may be gone with their session). A lock's directory is
        // such a parent, and its thousands of past children are not walked for each listing.
        if !self.ephemeral_parents.contains(path) {
            for (name, writes) in below {
                if children.iter().any(|child| child == name) {
                    continue;
                }
                for write in acknowledged_before(writes, read.sync_invoked_at) {
                    if matches!(write.fact, Fact::Created)
                        && !self.ephemeral.contains(&write.path)
                        && !explained(write, false)
                    {
                        violations
                            .push(read.missed(write, format!("created child {name} not listed")))
                    }
                }
            }
        }
        // A child deleted and listed: only the listed names can be.
        for name in children {
            let Some(writes) = below.get(name.as_str()) else {
                continue;
            };
            for write in acknowledged_before(writes, read.sync_invoked_at) {
                if matches!(write.fact, Fact::Deleted) && !explained(write, true) {
                    violations.push(read.missed(write, format!("deleted child {name} listed")))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::*;
    use sim::history::zk::ZkResponse;

    #[test]
    fn a_stale_read_after_sync_fails_and_a_fresh_one_passes() {
        let mut base = vec![
            invoke(1, C2, 1, set_data("/x", "new")),
            ok(
                5,
                C2,
                1,
                ZkResponse::Stat {
                    stat: stat(9, 2, 0),
                },
            ),
        ];
        base.extend(sync(10, C1, 2));
        base.push(invoke(20, C1, 3, get_data("/x")));
        let mut fresh = base.clone();
        fresh.push(ok(
            21,
            C1,
            3,
            ZkResponse::Data {
                data: "new".into(),
                stat: stat(9, 2, 0),
            },
        ));
        assert!(check(&History::from_records(fresh)).is_empty());
        let mut stale = base.clone();
        stale.push(ok(
            21,
            C1,
            3,
            ZkResponse::Data {
                data: "old".into(),
                stat: stat(4, 1, 0),
            },
        ));
        let violations = check(&History::from_records(stale));
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].write, OpId(1));
        // Without the sync, a stale read is allowed (sequential consistency).
        let mut unsynced = vec![
            invoke(1, C2, 1, set_data("/x", "new")),
            ok(
                5,
                C2,
                1,
                ZkResponse::Stat {
                    stat: stat(9, 2, 0),
                },
            ),
            invoke(20, C1, 3, get_data("/x")),
        ];
        unsynced.push(ok(
            21,
            C1,
            3,
            ZkResponse::Data {
                data: "old".into(),
                stat: stat(4, 1, 0),
            },
        ));
        assert!(check(&History::from_records(unsynced)).is_empty());
    }

    #[test]
    fn a_missing_node_is_excused_only_by_a_possible_delete() {
        let mut base = vec![
            invoke(1, C2, 1, create("/y", CreateMode::Persistent)),
            ok(2, C2, 1, ZkResponse::Created { path: "/y".into() }),
        ];
        base.extend(sync(10, C1, 2));
        base.push(invoke(20, C1, 3, get_data("/y")));
        let mut missing = base.clone();
        missing.push(fail(21, C1, 3, ZkError::NoNode));
        assert_eq!(check(&History::from_records(missing.clone())).len(), 1);
        // A delete with an unknown outcome explains it.
        missing.insert(
            0,
            invoke(
                15,
                C2,
                4,
                ZkOperation::Delete {
                    path: "/y".into(),
                    version: None,
                },
            ),
        );
        missing.sort_by_key(|r| r.at);
        assert!(check(&History::from_records(missing)).is_empty());
    }

    #[test]
    fn a_create2_then_a_synced_read_of_no_node_fails() {
        // The zookeeper-client drop-in's create is create2: its reply carries the stat.
        let mut missing = vec![
            invoke(1, C2, 1, create("/y", CreateMode::Persistent)),
            ok(2, C2, 1, created2("/y", 0)),
        ];
        missing.extend(sync(10, C1, 2));
        missing.push(invoke(20, C1, 3, get_data("/y")));
        missing.push(fail(21, C1, 3, ZkError::NoNode));
        assert_eq!(check(&History::from_records(missing)).len(), 1);
    }
}
