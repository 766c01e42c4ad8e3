//! The waits of lock clients, from request to acquisition, with (ZooKeeper's) lock nodes
//! they learned of meanwhile: which nodes their reads revealed with the node's `Stat` (with
//! the owner the server named) and which their creates returned. Any read whose reply
//! carries the node's `Stat` reveals it: `exists`, `getData` (Curator's `LockInternals`
//! watches its predecessor with `getData`), a `setData`'s reply, `getACL`. A `getChildren`
//! reply carries the parent's `Stat`, not the children's: a listing says a node is there,
//! not who owns it; a wait keeps its last listing of the line, whose names a waiter's own
//! unique create prefix (a GUID, as protected creates carry) can tell as its own. The
//! ownership checks (`recipe.no_orphan_waiter`, `recipe.holder_owns_node`) judge these
//! waits; `coordsim compare-locks` measures acquisition latency from them (any store's: the
//! wait's times come from the lock steps every lock recipe records).
//!
//! **Reads:** at the client nodes, in order: the client library's `SessionEstablished`
//! (which session a process runs in from then on); its `Invoke`/`Complete` records of
//! `exists`, `getData`, `setData` and `getACL` calls (the path asked, and the `Stat` the
//! server returned, with the node's `czxid` and `ephemeral_owner`), of `create` calls (the
//! path an ephemeral sequential create asked for, and the path a successful create returned)
//! and of `getChildren` calls (the names listed); and the lock recipes' `Requested`,
//! `Acquired { token }` and `GaveUp` steps. A process waits from `Requested` to the next
//! `Acquired` or `GaveUp`. All of it is what the
//! client observed; the owner is the server's word in its reply, not a model's event.

use super::zk::{parent_of, sequence_appended};
use sim::{
    NodeId,
    history::{
        Event, History, OpId, OpResult, Operation, RecipeEvent, Response,
        recipe::{ElectionStep, LockStep},
        zk::{CreateMode, Stat, ZkEvent, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::collections::BTreeMap;

/// A node a waiter read (`exists`, `getData`, `setData`, `getACL`: a reply with its `Stat`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRead {
    /// Its path.
    pub path: String,
    /// Its `czxid`.
    pub czxid: u64,
    /// The session that owns it, as the server said (0: not ephemeral).
    pub owner: u64,
    /// The session the waiter read it in.
    pub session: u64,
    /// When the read returned.
    pub at: SimTime,
}

impl NodeRead {
    /// Whether the node belongs to the session that read it.
    pub fn owned_by_reader(&self) -> bool {
        self.owner == self.session
    }
}

/// How a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitEnd {
    /// The waiter acquired the lock with this token, at this time.
    Acquired {
        /// The fencing token.
        token: u64,
        /// When.
        at: SimTime,
    },
    /// The waiter gave up, at this time.
    GaveUp {
        /// When.
        at: SimTime,
    },
    /// The waiter asked again without ending this wait, or the history ended first.
    Unfinished,
}

/// One wait of one client process for one lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockWait {
    /// The lock.
    pub lock: String,
    /// The waiter: client node and process.
    pub waiter: (NodeId, u32),
    /// When the waiter recorded its request (`LockStep::Requested`).
    pub requested_at: SimTime,
    /// The nodes its reads revealed with their `Stat` (in a known session), in order.
    pub reads: Vec<NodeRead>,
    /// The nodes its successful ephemeral creates returned, in order (its places in the
    /// line; the persistent parents it made are not).
    pub created: Vec<String>,
    /// When the last of them returned.
    pub joined_at: Option<SimTime>,
    /// The paths its ephemeral sequential creates asked for (the prefix the server appends
    /// a sequence number to), each once, in order.
    pub sequential_prefixes: Vec<String>,
    /// Its last `getChildren` reply in the wait of a parent its sequential creates asked
    /// under: the parent, the listed children named with one of those prefixes and a
    /// sequence number (full paths), and when it returned. (Only those: at 256 clients a
    /// line's listing names hundreds of children, many times over.)
    pub last_listing: Option<(String, Vec<String>, SimTime)>,
    /// How it ended.
    pub end: WaitEnd,
    /// When it ended: it acquired or gave up, it asked again, or (still waiting) the
    /// history's last record.
    pub until: SimTime,
}

/// A call in flight that can tell a waiter of a lock node.
enum Asked {
    /// A read of this path whose reply carries its `Stat`, by this process, in this
    /// session.
    Read(String, (NodeId, u32), u64),
    /// An ephemeral `create` (a node of the line), by this process.
    Create((NodeId, u32)),
    /// A `getChildren` of this parent, by this process.
    Listing(String, (NodeId, u32)),
}

/// Which lines' waits to gather.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// Locks' waits only.
    Locks,
    /// Locks' waits and elections' campaigns: an election candidate waits in line as a lock
    /// waiter does (the same ZooKeeper line, `Campaigned` to `Gained` or `GaveUp`).
    LocksAndElections,
}

/// Every lock wait of the history, in the order the waits ended.
pub fn lock_waits(history: &History) -> Vec<LockWait> {
    line_waits(history, Lines::Locks)
}

/// Every wait in a line of the kinds `lines` names, in the order the waits ended; an
/// election's wait has the election's name for `lock`.
pub fn line_waits(history: &History, lines: Lines) -> Vec<LockWait> {
    read_waits(history, lines).0
}

/// Whether a reading of waits met an election step that starts or ends a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ElectionSteps {
    /// It met none (or read locks only): its waits are exactly those of
    /// [`Lines::Locks`].
    None,
    /// It met at least one. One process may campaign and wait for a lock, and its election
    /// steps then end its lock waits too: locks-only waits must be read apart.
    Met,
}

/// [`line_waits`], and whether the reading met an election step.
pub(crate) fn read_waits(history: &History, lines: Lines) -> (Vec<LockWait>, ElectionSteps) {
    let mut election_steps = ElectionSteps::None;
    let mut sessions: BTreeMap<(NodeId, u32), u64> = BTreeMap::new();
    let mut open: BTreeMap<(NodeId, u32), LockWait> = BTreeMap::new();
    let mut asked: BTreeMap<OpId, Asked> = BTreeMap::new();
    let mut ended = Vec::new();
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
                ZkOperation::Exists { path }
                | ZkOperation::GetData { path }
                | ZkOperation::SetData { path, .. }
                | ZkOperation::GetAcl { path } => {
                    if let Some(&session) = sessions.get(&(*client, *process)) {
                        asked.insert(
                            *op_id,
                            Asked::Read(path.clone(), (*client, *process), session),
                        );
                    }
                }
                // A line's nodes are ephemeral; a persistent create during the wait makes a
                // parent of the lock (`ensure_parents`), not a place in its line.
                ZkOperation::Create { path, mode, .. }
                    if matches!(
                        mode,
                        CreateMode::Ephemeral | CreateMode::EphemeralSequential
                    ) =>
                {
                    let waiter = (*client, *process);
                    if *mode == CreateMode::EphemeralSequential
                        && let Some(wait) = open.get_mut(&waiter)
                        && !wait.sequential_prefixes.contains(path)
                    {
                        wait.sequential_prefixes.push(path.clone());
                    }
                    asked.insert(*op_id, Asked::Create(waiter));
                }
                // Only a listing of a line the waiter asked to join under a sequential prefix
                // can name its nodes (the herd lock's waiters list without one, all the time).
                ZkOperation::GetChildren { path }
                    if open.get(&(*client, *process)).is_some_and(|wait| {
                        wait.sequential_prefixes
                            .iter()
                            .any(|prefix| parent_of(prefix) == path)
                    }) =>
                {
                    asked.insert(*op_id, Asked::Listing(path.clone(), (*client, *process)));
                }
                _ => {}
            },
            Event::Complete { op_id, result } => {
                let (Some(asked), OpResult::Ok { response }) = (asked.remove(op_id), result) else {
                    continue;
                };
                match (asked, response) {
                    (Asked::Read(path, waiter, session), Response::Zk(response)) => {
                        let Some(stat) = node_stat(response) else {
                            continue;
                        };
                        if let Some(wait) = open.get_mut(&waiter) {
                            wait.reads.push(NodeRead {
                                path,
                                czxid: stat.czxid,
                                owner: stat.ephemeral_owner,
                                session,
                                at: record.at,
                            });
                        }
                    }
                    // A `create2` (the zookeeper-client drop-in's create) answers with the
                    // node's stat besides its path: the same node created.
                    (Asked::Create(waiter), Response::Zk(response)) => {
                        if let (Some(path), Some(wait)) =
                            (response.created_path(), open.get_mut(&waiter))
                        {
                            wait.created.push(path.to_string());
                            wait.joined_at = Some(record.at);
                        }
                    }
                    (
                        Asked::Listing(parent, waiter),
                        Response::Zk(
                            ZkResponse::Children { children, .. }
                            | ZkResponse::ChildNames { children },
                        ),
                    ) => {
                        if let Some(wait) = open.get_mut(&waiter) {
                            let named = named_with(&wait.sequential_prefixes, &parent, children);
                            wait.last_listing = Some((parent, named, record.at));
                        }
                    }
                    _ => {}
                }
            }
            Event::Recipe(RecipeEvent::Election {
                process,
                election,
                step,
            }) if lines == Lines::LocksAndElections => {
                let step = match step {
                    ElectionStep::Campaigned => Step::Requested,
                    ElectionStep::Gained { token } => Step::Acquired(*token),
                    ElectionStep::GaveUp { .. } => Step::GaveUp,
                    _ => continue,
                };
                election_steps = ElectionSteps::Met;
                step.apply(election, (node, *process), record.at, &mut open, &mut ended);
            }
            Event::Recipe(RecipeEvent::Lock {
                process,
                lock,
                step,
            }) => {
                let step = match step {
                    LockStep::Requested { .. } => Step::Requested,
                    LockStep::Acquired { token, .. } => Step::Acquired(*token),
                    LockStep::GaveUp { .. } => Step::GaveUp,
                    LockStep::Woken { .. } | LockStep::Released { .. } | LockStep::Lost { .. } => {
                        continue;
                    }
                };
                step.apply(lock, (node, *process), record.at, &mut open, &mut ended);
            }
            _ => {}
        }
    }
    let last_at = history.records().last().map(|record| record.at);
    ended.extend(open.into_values().map(|mut wait| {
        wait.until = last_at.unwrap_or(wait.requested_at);
        wait
    }));
    (ended, election_steps)
}

/// A step of a line that starts or ends a wait.
enum Step {
    /// The waiter asked (a lock's `Requested`, an election's `Campaigned`).
    Requested,
    /// It holds (or leads) with this token.
    Acquired(u64),
    /// It gave up.
    GaveUp,
}

impl Step {
    fn apply(
        self,
        lock: &str,
        waiter: (NodeId, u32),
        at: SimTime,
        open: &mut BTreeMap<(NodeId, u32), LockWait>,
        ended: &mut Vec<LockWait>,
    ) {
        let end = match self {
            Step::Requested => {
                if let Some(mut wait) = open.remove(&waiter) {
                    wait.until = at;
                    ended.push(wait);
                }
                open.insert(
                    waiter,
                    LockWait {
                        lock: lock.to_string(),
                        waiter,
                        requested_at: at,
                        reads: Vec::new(),
                        created: Vec::new(),
                        joined_at: None,
                        sequential_prefixes: Vec::new(),
                        last_listing: None,
                        end: WaitEnd::Unfinished,
                        until: at,
                    },
                );
                return;
            }
            Step::Acquired(token) => WaitEnd::Acquired { token, at },
            Step::GaveUp => WaitEnd::GaveUp { at },
        };
        if let Some(mut wait) = open.remove(&waiter) {
            wait.end = end;
            wait.until = at;
            ended.push(wait);
        }
    }
}

/// The full paths of `children` of `parent` named with one of `prefixes` and a sequence
/// number (names are matched as they are, and only a match makes a path).
fn named_with(prefixes: &[String], parent: &str, children: &[String]) -> Vec<String> {
    let under = parent.trim_end_matches('/');
    let names: Vec<&str> = prefixes
        .iter()
        .filter(|prefix| parent_of(prefix) == parent)
        .filter_map(|prefix| prefix.get(under.len() + 1..))
        .collect();
    children
        .iter()
        .filter(|child| {
            names
                .iter()
                .any(|name| sequence_appended(name, child).is_some())
        })
        .map(|child| format!("{under}/{child}"))
        .collect()
}

/// The node's own `Stat` in a reply, if the reply carries it.
fn node_stat(response: &ZkResponse) -> Option<&Stat> {
    match response {
        ZkResponse::Exists { stat } => stat.as_ref(),
        ZkResponse::Data { stat, .. }
        | ZkResponse::Stat { stat }
        | ZkResponse::Acl { stat, .. } => Some(stat),
        _ => None,
    }
}
