//! Within one session, plain reads never go back in time, show the session's own
//! acknowledged writes, and a reconnect never lands on a server behind the session.
//!
//! ZooKeeper reads may be stale, but not arbitrarily: "Single System Image: a client will
//! see the same view of the service regardless of the server that it connects to. i.e., a
//! client will never see an older view of the system even if the client fails over to a
//! different server with the same session" (ZooKeeper Programmer's Guide, *Consistency
//! Guarantees*); requests of one client are executed in the order it sent them (*FIFO client
//! order*, Hunt et al., USENIX ATC 2010, §2.3), so a read sent after a write's reply sees
//! it. The server enforces the fail-over half: `ZooKeeperServer.processConnectRequest`
//! refuses a client that has seen a later zxid than the server's last ("Refusing session
//! request for client … as it has seen zxid … our last zxid is …").
//!
//! Judged from what the client observed only, per session (one session id of one client
//! process; a new session after an expiry starts with no knowledge, and other sessions'
//! reads are not compared: ZooKeeper lets them be staler). The knowledge a read is held to
//! comes from the session's operations that *completed before the read was invoked* and the
//! watch events delivered to it before then, path by path:
//! - the highest `mzxid` seen on the path (a read's stat, the session's acknowledged
//!   `setData`, a `NodeDataChanged`/`NodeCreated` event's zxid) and the data at it;
//! - the highest `pzxid` seen on the path (a read's stat, a `NodeChildrenChanged` zxid);
//! - a *deletion bound* `B`: every incarnation of the node created before zxid `B` is gone.
//!   From a `NodeDeleted` event (its zxid), the session's acknowledged `delete`, or a read
//!   that showed the node absent (for these two, 1 + the highest zxid the session had seen
//!   anywhere when it invoked them: the delete was proposed after that, the read served a
//!   state at least that new);
//! - whether the node was last seen present (by a read, or the session's acknowledged
//!   `create` or `setData`) or deleted by the session's own acknowledged `delete`.
//!
//! A later successful read of the path (`getData`, `exists`, `getChildren`; a `NoNode`
//! failure counts as a read showing the node absent) must then not show:
//! 1. the node with an `mzxid` or `pzxid` lower than the one seen (both only grow along the
//!    sequence of states, across deletes and re-creates), or with other data at the same
//!    `mzxid`;
//! 2. the node with a `czxid` below the deletion bound;
//! 3. the node absent after it was seen present — unless a `delete` of the path that is not
//!    known to have failed was invoked before the read completed (for the session's own
//!    `create`/`setData`: and was not acknowledged before that write was invoked, as such a
//!    delete came before it), the node was another session's ephemeral, or the session had
//!    ended by then (by the earliest record of its end, the leader's included: this only
//!    excuses);
//! 4. the node present after the session's own `delete` of it was acknowledged — unless a
//!    `create` of the path not known to have failed, and not acknowledged before the
//!    delete was invoked, was invoked before the read completed.
//!
//! A `getChildren` also judges the children the session knows of: a child shown present or
//! absent by the listing is held to rules 3 and 4.
//!
//! Each violation names the guarantee: (c) *reconnect not behind* if the session resumed
//! (the client's `SessionResumed`, naming the server) after the earlier observation, and the
//! read was answered on that connection — the server accepted a client that had seen more
//! than it had (the evidence is the client's: its record of where it reconnected and what
//! it read there; no server's word is taken);
//! otherwise (b) *read your writes* if the earlier observation was the session's own write,
//! else (a) *monotonic reads*.
//!
//! **Reads:** client operations (`Invoke`/`Complete`) and the client's own session events
//! (`ZkEvent::SessionEstablished`, `SessionResumed` naming the server, `SessionExpired`,
//! `WatchDelivered`), all recorded by the client library at the client node. No server event is
//! trusted.

use crate::Checked;
use crate::Violation;
use crate::history::views::HistoryViews;
use crate::history::zk::{ZkOp, child_name, session_ends};
use sim::{
    NodeId,
    history::{
        Event, History, OpError, OpId, OpResult, Response,
        zk::{CreateMode, Stat, WatchEventType, ZkError, ZkEvent, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::{borrow::Cow, collections::BTreeMap, fmt};

/// Which session guarantee a read broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Guarantee {
    /// (a) The read showed an older state than the session had already observed.
    MonotonicReads,
    /// (b) The read did not show the session's own acknowledged write (or a later state).
    ReadYourWrites,
    /// (c) The session reconnected to a server after its earlier observation, and that
    /// server answered the read with an older state: it accepted a client that had seen a
    /// later zxid than its own.
    ReconnectNotBehind,
}

impl fmt::Display for Guarantee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Guarantee::MonotonicReads => "monotonic reads",
            Guarantee::ReadYourWrites => "read your writes",
            Guarantee::ReconnectNotBehind => "reconnect not behind the session",
        })
    }
}

/// What the session observed before the read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    /// The operation that observed it, or `None` for a watch event.
    pub op: Option<OpId>,
    /// What it was: `setData`, `getData`, `delete`, `watch NodeDeleted`, …
    pub what: String,
    /// When it completed (or the watch event was delivered).
    pub at: SimTime,
    /// The zxid it showed that the read is compared with, if any.
    pub zxid: Option<u64>,
}

/// A read of a session that went back behind what the session had observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionWentBack {
    /// The guarantee broken.
    pub guarantee: Guarantee,
    /// The session.
    pub session: u64,
    /// The client node.
    pub client: NodeId,
    /// Its logical process.
    pub process: u32,
    /// The path.
    pub path: String,
    /// The earlier observation.
    pub earlier: Observation,
    /// The read.
    pub read: OpId,
    /// When it was invoked.
    pub read_invoked_at: SimTime,
    /// When it completed.
    pub read_completed_at: SimTime,
    /// The zxid the read showed that was compared (`mzxid`, `pzxid` or `czxid`), if any.
    pub read_zxid: Option<u64>,
    /// The server the session had reconnected to before the read, and when (for (c)).
    pub reconnect: Option<(NodeId, SimTime)>,
    /// What the read showed against what was observed.
    pub problem: String,
}

impl fmt::Display for SessionWentBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let zxid = |zxid: Option<u64>| zxid.map_or(String::new(), |z| format!(" (zxid {z:#x})"));
        let earlier = match self.earlier.op {
            Some(op) => format!("{} {op}", self.earlier.what),
            None => self.earlier.what.clone(),
        };
        write!(
            f,
            "{}: session {:#x} of {}/{}: read {} of {} invoked at {} and answered at {}{} {}; \
             earlier {} at {}{}",
            self.guarantee,
            self.session,
            self.client,
            self.process,
            self.read,
            self.path,
            self.read_invoked_at,
            self.read_completed_at,
            zxid(self.read_zxid),
            self.problem,
            earlier,
            self.earlier.at,
            zxid(self.earlier.zxid),
        )?;
        if let Some((server, at)) = self.reconnect {
            write!(
                f,
                "; in between, the session reconnected to {server} at {at}"
            )?;
        }
        Ok(())
    }
}

impl Violation for SessionWentBack {
    fn property(&self) -> &'static str {
        "session consistency"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Programmer's Guide, Consistency Guarantees (single system image); FIFO \
         client order (Hunt et al., USENIX ATC 2010, §2.3); ZooKeeperServer.processConnectRequest \
         (refuses a client that has seen a later zxid)"
    }

    fn at(&self) -> Option<SimTime> {
        // When the read completed.
        Some(self.read_completed_at)
    }
}

/// A session: client node, process, session id.
type SessionKey = (NodeId, u32, u64);

/// Where a piece of knowledge came from.
#[derive(Clone, Debug)]
struct Source {
    op: Option<OpId>,
    /// Borrowed for an operation's name: a source is made for every observation and cloned
    /// into every piece of knowledge it raises, and a string per clone showed in profiles.
    what: Cow<'static, str>,
    /// When the observing operation was invoked (for a watch event: when it was delivered).
    invoked_at: SimTime,
    /// When it completed (or the watch event was delivered).
    at: SimTime,
    /// Position in the history of the record that completed it (or delivered the event).
    position: usize,
    /// The session's own acknowledged write.
    own_write: bool,
}

#[derive(Clone, Debug)]
struct Seen<T> {
    value: T,
    source: Source,
}

#[derive(Clone, Debug)]
enum Presence {
    /// Last seen present; `foreign_ephemeral` if another session's ephemeral.
    Present {
        source: Source,
        foreign_ephemeral: bool,
    },
    /// Deleted by the session's own acknowledged delete.
    DeletedByOwn { source: Source },
}

#[derive(Clone, Debug, Default)]
struct PathKnowledge {
    /// Highest mzxid seen, with the data at it when known.
    data: Option<Seen<(u64, Option<String>)>>,
    /// Highest pzxid seen.
    children: Option<Seen<u64>>,
    /// Every incarnation created below this zxid is gone.
    gone_below: Option<Seen<u64>>,
    presence: Option<Presence>,
}

impl PathKnowledge {
    fn raise_data(&mut self, mzxid: u64, data: Option<String>, source: &Source) {
        match &mut self.data {
            Some(seen) if seen.value.0 > mzxid => {}
            Some(seen) if seen.value.0 == mzxid => {
                if seen.value.1.is_none() {
                    seen.value.1 = data;
                }
            }
            _ => {
                self.data = Some(Seen {
                    value: (mzxid, data),
                    source: source.clone(),
                })
            }
        }
    }

    fn raise(field: &mut Option<Seen<u64>>, zxid: u64, source: &Source) {
        if field.as_ref().is_none_or(|seen| seen.value < zxid) {
            *field = Some(Seen {
                value: zxid,
                source: source.clone(),
            });
        }
    }
}

#[derive(Clone, Debug, Default)]
struct SessionKnowledge {
    paths: BTreeMap<String, PathKnowledge>,
    /// Highest zxid seen anywhere.
    max_zxid: u64,
    /// (position, time, server, resumed) of each (re)connection.
    attaches: Vec<(usize, SimTime, NodeId, bool)>,
}

impl SessionKnowledge {
    fn path(&mut self, path: &str) -> &mut PathKnowledge {
        self.paths.entry(path.to_string()).or_default()
    }

    fn saw(&mut self, zxid: u64) {
        self.max_zxid = self.max_zxid.max(zxid);
    }
}

/// What a read showed about one path.
#[derive(Clone, Copy, Debug)]
enum Shown<'a> {
    Absent,
    /// Present, with the stat and data when the read returned them (a child listed by
    /// `getChildren` has neither).
    Present(Option<(&'a Stat, Option<&'a str>)>),
}

fn read_path(operation: &ZkOperation) -> Option<&str> {
    match operation {
        ZkOperation::GetData { path }
        | ZkOperation::Exists { path }
        | ZkOperation::GetChildren { path } => Some(path),
        _ => None,
    }
}

fn operation_name(operation: &ZkOperation) -> &'static str {
    match operation {
        ZkOperation::Create { .. } => "create",
        ZkOperation::Delete { .. } => "delete",
        ZkOperation::SetData { .. } => "setData",
        ZkOperation::GetData { .. } => "getData",
        ZkOperation::Exists { .. } => "exists",
        ZkOperation::GetChildren { .. } => "getChildren",
        ZkOperation::Sync { .. } => "sync",
        ZkOperation::Multi { .. } => "multi",
        ZkOperation::GetAcl { .. } => "getACL",
        ZkOperation::SetAcl { .. } => "setACL",
        ZkOperation::Check { .. } => "check",
        ZkOperation::GetEphemerals { .. } => "getEphemerals",
        ZkOperation::GetAllChildrenNumber { .. } => "getAllChildrenNumber",
        ZkOperation::AddWatch { .. } => "addWatch",
        ZkOperation::RemoveWatches { .. } => "removeWatches",
        ZkOperation::MultiRead { .. } => "multiRead",
    }
}

/// What a completed read showed about its own path: `None` unless it succeeded or failed
/// with `NoNode`.
fn shown_by<'a>(operation: &ZkOperation, result: &'a OpResult) -> Option<Shown<'a>> {
    let response = match result {
        OpResult::Ok {
            response: Response::Zk(response),
        } => response,
        OpResult::Fail {
            error: OpError::Zk(ZkError::NoNode),
        } if read_path(operation).is_some() => return Some(Shown::Absent),
        _ => return None,
    };
    match (operation, response) {
        (ZkOperation::GetData { .. }, ZkResponse::Data { data, stat }) => {
            Some(Shown::Present(Some((stat, Some(data.as_str())))))
        }
        (ZkOperation::Exists { .. }, ZkResponse::Exists { stat: Some(stat) })
        | (ZkOperation::GetChildren { .. }, ZkResponse::Children { stat, .. }) => {
            Some(Shown::Present(Some((stat, None))))
        }
        (ZkOperation::Exists { .. }, ZkResponse::Exists { stat: None }) => Some(Shown::Absent),
        _ => None,
    }
}

/// Whether an operation of `ops` that may create (`creates`) or else delete `path`, not
/// known to have failed and not acknowledged before `not_acked_before` (if given), was
/// invoked before `before`.
fn possibly(
    ops: &[ZkOp<'_>],
    path: &str,
    creates: bool,
    not_acked_before: Option<SimTime>,
    before: SimTime,
) -> bool {
    ops.iter().any(|op| {
        if op.definitely_failed() || op.invoked_at >= before {
            return false;
        }
        if let (Some(limit), Some(acked)) = (not_acked_before, op.ok_at())
            && acked < limit
        {
            return false;
        }
        // The names sequential creates actually made, where known.
        let made: Vec<Option<&str>> = match op.ok() {
            Some(ZkResponse::Multi { results }) => {
                results.iter().map(ZkResponse::created_path).collect()
            }
            Some(response) => vec![response.created_path()],
            None => Vec::new(),
        };
        let touches = |index: usize, operation: &ZkOperation| match operation {
            ZkOperation::Create {
                path: target, mode, ..
            } if creates => match made.get(index).copied().flatten() {
                Some(made) => made == path,
                None => {
                    target == path
                        || (matches!(
                            mode,
                            CreateMode::PersistentSequential | CreateMode::EphemeralSequential
                        ) && path.starts_with(target.as_str()))
                }
            },
            ZkOperation::Delete { path: target, .. } if !creates => target == path,
            _ => false,
        };
        match op.operation {
            ZkOperation::Multi { ops: parts } => {
                parts.iter().enumerate().any(|(i, part)| touches(i, part))
            }
            operation => touches(0, operation),
        }
    })
}

/// A contradiction found: the observation, the zxids compared, what is wrong.
struct Contradiction {
    source: Source,
    earlier_zxid: Option<u64>,
    read_zxid: Option<u64>,
    problem: String,
}

/// A read in flight: what its session knew when it was invoked.
///
/// Copied only when the session is about to learn something while the read is in flight
/// (`None` until then: the session's knowledge is still what it was at invocation). A
/// lock's waiters list a directory whose every past child their session remembers, and
/// copying that at every listing cost more than the rest of the check.
struct AtInvocation {
    /// The read's session.
    session: SessionKey,
    /// The path read.
    path: String,
    /// Whether it lists the path's children.
    listing: bool,
    /// The read's path and (for `getChildren`) its known children, once copied.
    known: Option<BTreeMap<String, PathKnowledge>>,
}

/// What a session knows of `path` and, for a listing, of its children.
fn known_paths<'a>(
    paths: &'a BTreeMap<String, PathKnowledge>,
    path: &'a str,
    listing: bool,
) -> impl Iterator<Item = (&'a String, &'a PathKnowledge)> {
    // Every path that starts with `path` (children among them) sorts in one run right from
    // `path` on, so the scan stops at the first that does not, instead of walking all the
    // session knows.
    paths
        .range::<str, _>((std::ops::Bound::Included(path), std::ops::Bound::Unbounded))
        .take_while(move |(known, _)| known.starts_with(path))
        .filter(move |(known, _)| {
            known.as_str() == path
                || (listing && known.as_str() != "/" && child_name(known, path).is_some())
        })
}

struct Walk<'h> {
    ops: &'h [ZkOp<'h>],
    ends: BTreeMap<u64, SimTime>,
    sessions: BTreeMap<SessionKey, SessionKnowledge>,
    /// Per operation in flight: the highest zxid its session had seen at invocation.
    max_at_invocation: BTreeMap<OpId, u64>,
    /// Per read in flight: what its session knew of its paths at invocation.
    reads: BTreeMap<OpId, AtInvocation>,
    violations: Vec<SessionWentBack>,
}

impl<'h> Walk<'h> {
    fn key(op: &ZkOp<'_>) -> Option<SessionKey> {
        op.session.map(|session| (op.client, op.process, session))
    }

    fn source(op: &ZkOp<'_>, position: usize, own_write: bool) -> Source {
        Source {
            op: Some(op.op_id),
            what: Cow::Borrowed(operation_name(op.operation)),
            invoked_at: op.invoked_at,
            at: op.ended_at(),
            position,
            own_write,
        }
    }

    fn invoked(&mut self, op: &ZkOp<'_>) {
        let Some(key) = Self::key(op) else { return };
        let session = self.sessions.entry(key).or_default();
        self.max_at_invocation.insert(op.op_id, session.max_zxid);
        let Some(path) = read_path(op.operation) else {
            return;
        };
        let listing = matches!(op.operation, ZkOperation::GetChildren { .. });
        self.reads.insert(
            op.op_id,
            AtInvocation {
                session: key,
                path: path.to_string(),
                listing,
                known: None,
            },
        );
    }

    /// Copies what `key`'s session knows for each of its reads in flight that has no copy
    /// yet: called before the session learns anything.
    fn freeze_reads_of(&mut self, key: SessionKey) {
        let Some(session) = self.sessions.get(&key) else {
            return;
        };
        for read in self.reads.values_mut() {
            if read.session == key && read.known.is_none() {
                let known = known_paths(&session.paths, &read.path, read.listing)
                    .map(|(known, knowledge)| (known.clone(), knowledge.clone()))
                    .collect();
                read.known = Some(known);
            }
        }
    }

    fn completed(&mut self, op: &ZkOp<'h>, position: usize) {
        let Some(key) = Self::key(op) else { return };
        let max_at_invocation = self.max_at_invocation.remove(&op.op_id).unwrap_or(0);
        let at_invocation = self.reads.remove(&op.op_id);
        let Some((_, result)) = op.completion else {
            return;
        };
        if let (Some(path), Some(shown)) = (read_path(op.operation), shown_by(op.operation, result))
        {
            if let Some(at_invocation) = at_invocation {
                let contradictions = match &at_invocation.known {
                    Some(known) => self.judge(op, key.2, path, shown, known.iter()),
                    None => {
                        // Nothing learned since the invocation: judge by the live knowledge.
                        let paths = &self.sessions.get(&key).expect("invoked in a session").paths;
                        let known = known_paths(paths, path, at_invocation.listing);
                        self.judge(op, key.2, path, shown, known)
                    }
                };
                for (known_path, contradiction) in contradictions {
                    self.report(op, key, position, &known_path, contradiction);
                }
            }
            self.freeze_reads_of(key);
            self.learn_from_read(op, key, position, path, shown, max_at_invocation);
        } else if let Some(response) = op.ok() {
            self.freeze_reads_of(key);
            self.learn_from_write(op, key, position, response, max_at_invocation);
        }
    }

    /// The contradictions between `read` and what its session knew, by path.
    fn judge<'k>(
        &self,
        read: &ZkOp<'_>,
        session: u64,
        path: &str,
        shown: Shown<'_>,
        known: impl Iterator<Item = (&'k String, &'k PathKnowledge)>,
    ) -> Vec<(String, Contradiction)> {
        let mut contradictions = Vec::new();
        let listed: Option<&[String]> = match read.ok() {
            Some(ZkResponse::Children { children, .. }) => Some(children),
            _ => None,
        };
        for (known_path, knowledge) in known {
            let shown_here = if known_path == path {
                shown
            } else {
                let Some(children) = listed else { continue };
                // A listing shows a child without its stat: it can contradict only what the
                // session believes of the child's presence (rules 3 and 4), so a child of no
                // known presence (most of a lock waiter's past predecessors) needs no search
                // of the listing.
                if knowledge.presence.is_none() {
                    continue;
                }
                let name = child_name(known_path, path)
                    .expect("a known path other than the read's is its child (known_paths)");
                if children.iter().any(|child| child == name) {
                    Shown::Present(None)
                } else {
                    Shown::Absent
                }
            };
            if let Some(contradiction) =
                self.contradiction(read, session, known_path, shown_here, knowledge)
            {
                contradictions.push((known_path.clone(), contradiction));
            }
        }
        contradictions
    }

    /// The first rule (of the module's four) the read breaks for this path.
    fn contradiction(
        &self,
        read: &ZkOp<'_>,
        session: u64,
        path: &str,
        shown: Shown<'_>,
        knowledge: &PathKnowledge,
    ) -> Option<Contradiction> {
        let done = read.ended_at();
        match shown {
            Shown::Present(stat) => {
                if let Some((stat, data)) = stat {
                    // Rule 1: mzxid and pzxid only grow; one mzxid, one data.
                    if let Some(seen) = &knowledge.data {
                        let (mzxid, seen_data) = &seen.value;
                        if stat.mzxid < *mzxid {
                            return Some(Contradiction {
                                source: seen.source.clone(),
                                earlier_zxid: Some(*mzxid),
                                read_zxid: Some(stat.mzxid),
                                problem: format!(
                                    "shows mzxid {:#x}, older than mzxid {mzxid:#x}",
                                    stat.mzxid
                                ),
                            });
                        }
                        if let (Some(data), Some(seen_data)) = (data, seen_data)
                            && stat.mzxid == *mzxid
                            && data != seen_data
                        {
                            return Some(Contradiction {
                                source: seen.source.clone(),
                                earlier_zxid: Some(*mzxid),
                                read_zxid: Some(stat.mzxid),
                                problem: format!(
                                    "shows data {data:?} at mzxid {mzxid:#x}, where {seen_data:?} \
                                     was seen"
                                ),
                            });
                        }
                    }
                    if let Some(seen) = &knowledge.children
                        && stat.pzxid < seen.value
                    {
                        return Some(Contradiction {
                            source: seen.source.clone(),
                            earlier_zxid: Some(seen.value),
                            read_zxid: Some(stat.pzxid),
                            problem: format!(
                                "shows pzxid {:#x}, older than pzxid {:#x}",
                                stat.pzxid, seen.value
                            ),
                        });
                    }
                    // Rule 2: incarnations created before the deletion bound are gone.
                    if let Some(seen) = &knowledge.gone_below
                        && stat.czxid < seen.value
                    {
                        return Some(Contradiction {
                            source: seen.source.clone(),
                            earlier_zxid: Some(seen.value),
                            read_zxid: Some(stat.czxid),
                            problem: format!(
                                "shows the node created at czxid {:#x}, but every node created \
                                 there before zxid {:#x} was deleted",
                                stat.czxid, seen.value
                            ),
                        });
                    }
                }
                // Rule 4: present after the session's own delete, with no create since.
                if let Some(Presence::DeletedByOwn { source }) = &knowledge.presence
                    && !possibly(self.ops, path, true, Some(source.invoked_at), done)
                {
                    return Some(Contradiction {
                        source: source.clone(),
                        earlier_zxid: None,
                        read_zxid: stat.map(|(stat, _)| stat.czxid),
                        problem: "shows the node the session deleted, and no create can explain it"
                            .to_string(),
                    });
                }
                None
            }
            Shown::Absent => {
                // Rule 3: absent after seen present, with no delete since.
                let Some(Presence::Present {
                    source,
                    foreign_ephemeral,
                }) = &knowledge.presence
                else {
                    return None;
                };
                let session_ended = self.ends.get(&session).is_some_and(|end| *end <= done);
                let not_acked_before = source.own_write.then_some(source.invoked_at);
                if *foreign_ephemeral
                    || session_ended
                    || possibly(self.ops, path, false, not_acked_before, done)
                {
                    return None;
                }
                Some(Contradiction {
                    source: source.clone(),
                    earlier_zxid: None,
                    read_zxid: None,
                    problem: "shows the node absent, and no delete can explain it".to_string(),
                })
            }
        }
    }

    fn report(
        &mut self,
        read: &ZkOp<'_>,
        key: SessionKey,
        position: usize,
        path: &str,
        contradiction: Contradiction,
    ) {
        let Contradiction {
            source,
            earlier_zxid,
            read_zxid,
            problem,
        } = contradiction;
        // The connection that answered the read: the session's last (re)connection before
        // the reply. If it is a reconnection made after the observation, the server it
        // landed on was behind the session.
        let connection = self.sessions.get(&key).and_then(|session| {
            session
                .attaches
                .iter()
                .rev()
                .find(|(at_position, ..)| *at_position < position)
                .copied()
        });
        let reconnect = match connection {
            Some((at_position, at, server, true)) if at_position > source.position => {
                Some((server, at))
            }
            _ => None,
        };
        let guarantee = match (reconnect, source.own_write) {
            (Some(_), _) => Guarantee::ReconnectNotBehind,
            (None, true) => Guarantee::ReadYourWrites,
            (None, false) => Guarantee::MonotonicReads,
        };
        self.violations.push(SessionWentBack {
            guarantee,
            session: key.2,
            client: key.0,
            process: key.1,
            path: path.to_string(),
            earlier: Observation {
                op: source.op,
                what: source.what.into_owned(),
                at: source.at,
                zxid: earlier_zxid,
            },
            read: read.op_id,
            read_invoked_at: read.invoked_at,
            read_completed_at: read.ended_at(),
            read_zxid,
            reconnect,
            problem,
        });
    }

    fn learn_from_read(
        &mut self,
        op: &ZkOp<'_>,
        key: SessionKey,
        position: usize,
        path: &str,
        shown: Shown<'_>,
        max_at_invocation: u64,
    ) {
        let source = Self::source(op, position, false);
        let session = self.sessions.entry(key).or_default();
        match shown {
            Shown::Present(Some((stat, data))) => {
                session.saw(stat.czxid.max(stat.mzxid).max(stat.pzxid));
                let knowledge = session.path(path);
                knowledge.raise_data(stat.mzxid, data.map(str::to_string), &source);
                PathKnowledge::raise(&mut knowledge.children, stat.pzxid, &source);
                knowledge.presence = Some(Presence::Present {
                    source,
                    foreign_ephemeral: stat.ephemeral_owner != 0 && stat.ephemeral_owner != key.2,
                });
            }
            Shown::Present(None) => {}
            Shown::Absent => {
                // The read served a state at least as new as everything seen before it.
                let knowledge = session.path(path);
                if max_at_invocation > 0 {
                    PathKnowledge::raise(&mut knowledge.gone_below, max_at_invocation + 1, &source);
                }
                knowledge.presence = None;
            }
        }
    }

    fn learn_from_write(
        &mut self,
        op: &ZkOp<'_>,
        key: SessionKey,
        position: usize,
        response: &ZkResponse,
        max_at_invocation: u64,
    ) {
        let source = Self::source(op, position, true);
        let session = self.sessions.entry(key).or_default();
        let mut learn = |operation: &ZkOperation, response: &ZkResponse| match (operation, response)
        {
            (ZkOperation::SetData { path, data, .. }, ZkResponse::Stat { stat }) => {
                session.saw(stat.czxid.max(stat.mzxid).max(stat.pzxid));
                let knowledge = session.path(path);
                knowledge.raise_data(stat.mzxid, Some(data.clone()), &source);
                knowledge.presence = Some(Presence::Present {
                    source: source.clone(),
                    foreign_ephemeral: false,
                });
            }
            (ZkOperation::Create { .. }, response) => {
                if let Some(path) = response.created_path() {
                    session.path(path).presence = Some(Presence::Present {
                        source: source.clone(),
                        foreign_ephemeral: false,
                    });
                }
            }
            (ZkOperation::Delete { path, .. }, ZkResponse::Deleted) => {
                // Proposed after everything the session had seen when it asked.
                let knowledge = session.path(path);
                if max_at_invocation > 0 {
                    PathKnowledge::raise(&mut knowledge.gone_below, max_at_invocation + 1, &source);
                }
                knowledge.presence = Some(Presence::DeletedByOwn {
                    source: source.clone(),
                });
            }
            _ => {}
        };
        match (op.operation, response) {
            (ZkOperation::Multi { ops: parts }, ZkResponse::Multi { results }) => {
                for (part, result) in parts.iter().zip(results) {
                    learn(part, result);
                }
            }
            (operation, response) => learn(operation, response),
        }
    }

    fn watch_delivered(
        &mut self,
        key: SessionKey,
        at: SimTime,
        position: usize,
        path: &str,
        event: WatchEventType,
        zxid: u64,
    ) {
        let source = Source {
            op: None,
            what: Cow::Owned(format!("watch event {event:?}")),
            invoked_at: at,
            at,
            position,
            own_write: false,
        };
        self.freeze_reads_of(key);
        let session = self.sessions.entry(key).or_default();
        session.saw(zxid);
        let knowledge = session.path(path);
        match event {
            // The change at `zxid` set the node's mzxid to it (a create: czxid = mzxid).
            WatchEventType::NodeCreated | WatchEventType::NodeDataChanged => {
                knowledge.raise_data(zxid, None, &source);
                knowledge.presence = None;
            }
            // The node was gone at `zxid`: every incarnation created before is deleted.
            WatchEventType::NodeDeleted => {
                PathKnowledge::raise(&mut knowledge.gone_below, zxid, &source);
                knowledge.presence = None;
            }
            WatchEventType::NodeChildrenChanged => {
                PathKnowledge::raise(&mut knowledge.children, zxid, &source);
            }
        }
    }
}

/// Every read that went back behind what its own session had observed.
pub fn check(history: &History) -> Checked<SessionWentBack> {
    check_views(&HistoryViews::new(history))
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> Checked<SessionWentBack> {
    let ops = history.zk_operations();
    let index: BTreeMap<OpId, usize> = ops
        .iter()
        .enumerate()
        .map(|(position, op)| (op.op_id, position))
        .collect();
    let mut walk = Walk {
        ops: &ops,
        ends: session_ends(history),
        sessions: BTreeMap::new(),
        max_at_invocation: BTreeMap::new(),
        reads: BTreeMap::new(),
        violations: Vec::new(),
    };
    for (position, record) in history.records().iter().enumerate() {
        match &record.event {
            Event::Invoke { op_id, .. } => {
                if let Some(&i) = index.get(op_id) {
                    walk.invoked(&ops[i]);
                }
            }
            Event::Complete { op_id, .. } => {
                if let Some(&i) = index.get(op_id) {
                    walk.completed(&ops[i], position);
                }
            }
            Event::Zk(
                ZkEvent::SessionEstablished {
                    process,
                    session,
                    server,
                    ..
                }
                | ZkEvent::SessionResumed {
                    process,
                    session,
                    server,
                },
            ) => {
                let Some(node) = record.node else { continue };
                let resumed = matches!(record.event, Event::Zk(ZkEvent::SessionResumed { .. }));
                walk.sessions
                    .entry((node, *process, *session))
                    .or_default()
                    .attaches
                    .push((position, record.at, *server, resumed));
            }
            Event::Zk(ZkEvent::WatchDelivered {
                process,
                session,
                path,
                event,
                zxid,
                ..
            }) => {
                let Some(node) = record.node else { continue };
                walk.watch_delivered(
                    (node, *process, *session),
                    record.at,
                    position,
                    path,
                    *event,
                    *zxid,
                );
            }
            _ => {}
        }
    }
    // Every operation of a session is judged against what that session saw before it.
    let judged = ops.iter().filter(|op| op.session.is_some()).count() as u64;
    Checked::new(walk.violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::*;
    use sim::history::{Record, zk::CreateMode};

    const S1: NodeId = NodeId::server(1);

    fn zxid(epoch: u64, counter: u64) -> u64 {
        epoch << 32 | counter
    }

    fn node(czxid: u64, mzxid: u64) -> Stat {
        Stat {
            czxid,
            mzxid,
            pzxid: czxid,
            ..Stat::default()
        }
    }

    fn data(value: &str, stat: Stat) -> ZkResponse {
        ZkResponse::Data {
            data: value.into(),
            stat,
        }
    }

    /// `client`'s session `session` reads `path` (op `op`, invoked at `ms`, answered 1 ms
    /// later) and gets `response`.
    fn read(ms: u64, client: NodeId, op: u64, path: &str, response: ZkResponse) -> [Record; 2] {
        [
            invoke(ms, client, op, get_data(path)),
            ok(ms + 1, client, op, response),
        ]
    }

    fn write(
        ms: u64,
        client: NodeId,
        op: u64,
        operation: ZkOperation,
        response: ZkResponse,
    ) -> [Record; 2] {
        [
            invoke(ms, client, op, operation),
            ok(ms + 1, client, op, response),
        ]
    }

    fn delete(path: &str) -> ZkOperation {
        ZkOperation::Delete {
            path: path.into(),
            version: None,
        }
    }

    fn set_stat(czxid: u64, mzxid: u64) -> ZkResponse {
        ZkResponse::Stat {
            stat: node(czxid, mzxid),
        }
    }

    fn resumed(ms: u64, client: NodeId, session: u64, server: NodeId) -> Record {
        record(
            ms,
            client,
            Event::Zk(ZkEvent::SessionResumed {
                process: 0,
                session,
                server,
            }),
        )
    }

    fn watch(ms: u64, client: NodeId, path: &str, event: WatchEventType, zxid: u64) -> Record {
        record(
            ms,
            client,
            Event::Zk(ZkEvent::WatchDelivered {
                process: 0,
                session: 7,
                op_id: OpId(99),
                path: path.into(),
                kind: sim::history::zk::WatchKind::Data,
                event,
                zxid,
            }),
        )
    }

    fn history(parts: Vec<Vec<Record>>) -> History {
        let mut records: Vec<Record> = parts.into_iter().flatten().collect();
        records.sort_by_key(|record| record.at);
        History::from_records(records)
    }

    fn guarantees(history: &History) -> Vec<(Guarantee, u64, String)> {
        check(history)
            .into_iter()
            .map(|v| (v.guarantee, v.read.0, v.path))
            .collect()
    }

    #[test]
    fn a_read_older_than_one_the_session_already_saw_fails() {
        let bad = history(vec![
            vec![established(1, C1, 7)],
            read(10, C1, 1, "/x", data("new", node(2, 9))).to_vec(),
            read(20, C1, 2, "/x", data("old", node(2, 4))).to_vec(),
        ]);
        let violations = check(&bad);
        assert_eq!(violations.len(), 1, "{violations:?}");
        let violation = &violations[0];
        assert_eq!(violation.guarantee, Guarantee::MonotonicReads);
        assert_eq!(
            (violation.session, violation.client, violation.process),
            (7, C1, 0)
        );
        assert_eq!(violation.earlier.op, Some(OpId(1)));
        assert_eq!(violation.earlier.zxid, Some(9));
        assert_eq!((violation.read, violation.read_zxid), (OpId(2), Some(4)));
        assert_eq!(violation.path, "/x");
        assert_eq!(violation.property(), "session consistency");
        assert!(
            violation.to_string().contains("older than mzxid 0x9"),
            "{violation}"
        );
        // The same read order the other way round is fine: state moves forward.
        let good = history(vec![
            vec![established(1, C1, 7)],
            read(10, C1, 1, "/x", data("old", node(2, 4))).to_vec(),
            read(20, C1, 2, "/x", data("new", node(2, 9))).to_vec(),
        ]);
        assert!(check(&good).is_empty());
    }

    #[test]
    fn watch_events_and_absent_reads_bound_later_reads() {
        // A data watch fired at zxid 9: a later read must show mzxid 9 or later.
        let changed = history(vec![
            vec![established(1, C1, 7)],
            vec![watch(5, C1, "/x", WatchEventType::NodeDataChanged, 9)],
            read(10, C1, 1, "/x", data("old", node(2, 4))).to_vec(),
        ]);
        assert_eq!(
            guarantees(&changed),
            [(Guarantee::MonotonicReads, 1, "/x".to_string())]
        );
        // The node was deleted at 9: it cannot be seen again with a czxid below that.
        let deleted = history(vec![
            vec![established(1, C1, 7)],
            vec![watch(5, C1, "/x", WatchEventType::NodeDeleted, 9)],
            read(10, C1, 1, "/x", data("old", node(2, 4))).to_vec(),
            read(20, C1, 2, "/x", data("again", node(12, 12))).to_vec(),
        ]);
        assert_eq!(
            guarantees(&deleted),
            [(Guarantee::MonotonicReads, 1, "/x".to_string())]
        );
        // After seeing zxid 20 elsewhere, the session saw /x absent: a /x created at 10
        // cannot show up later.
        let absent = history(vec![
            vec![established(1, C1, 7)],
            read(10, C1, 1, "/a", data("a", node(20, 20))).to_vec(),
            vec![
                invoke(20, C1, 2, get_data("/x")),
                fail(21, C1, 2, ZkError::NoNode),
            ],
            read(30, C1, 3, "/x", data("x", node(10, 10))).to_vec(),
            read(40, C1, 4, "/x", data("x", node(25, 25))).to_vec(),
        ]);
        assert_eq!(
            guarantees(&absent),
            [(Guarantee::MonotonicReads, 3, "/x".to_string())]
        );
    }

    #[test]
    fn a_read_missing_the_sessions_own_write_fails() {
        // setData acknowledged at mzxid 9, then a read showing mzxid 4.
        let stale = history(vec![
            vec![established(1, C1, 7)],
            write(10, C1, 1, set_data("/x", "mine"), set_stat(2, 9)).to_vec(),
            read(20, C1, 2, "/x", data("old", node(2, 4))).to_vec(),
        ]);
        let violations = check(&stale);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].guarantee, Guarantee::ReadYourWrites);
        assert_eq!(violations[0].earlier.op, Some(OpId(1)));
        assert_eq!(violations[0].earlier.what, "setData");
        // Same mzxid, other data: not the write either.
        let other = history(vec![
            vec![established(1, C1, 7)],
            write(10, C1, 1, set_data("/x", "mine"), set_stat(2, 9)).to_vec(),
            read(20, C1, 2, "/x", data("theirs", node(2, 9))).to_vec(),
        ]);
        assert_eq!(check(&other).len(), 1);
        // Its own create, then NoNode.
        let created = history(vec![
            vec![established(1, C1, 7)],
            write(
                10,
                C1,
                1,
                create("/y", CreateMode::Persistent),
                ZkResponse::Created { path: "/y".into() },
            )
            .to_vec(),
            vec![
                invoke(20, C1, 2, get_data("/y")),
                fail(21, C1, 2, ZkError::NoNode),
            ],
        ]);
        assert_eq!(
            guarantees(&created),
            [(Guarantee::ReadYourWrites, 2, "/y".to_string())]
        );
        // Its own delete, then the node.
        let deleted = history(vec![
            vec![established(1, C1, 7)],
            write(10, C1, 1, delete("/z"), ZkResponse::Deleted).to_vec(),
            read(20, C1, 2, "/z", data("z", node(3, 3))).to_vec(),
        ]);
        assert_eq!(
            guarantees(&deleted),
            [(Guarantee::ReadYourWrites, 2, "/z".to_string())]
        );
        // Its own create of a child, then a listing without it.
        let listed = history(vec![
            vec![established(1, C1, 7)],
            write(
                10,
                C1,
                1,
                create("/p/c", CreateMode::Persistent),
                ZkResponse::Created {
                    path: "/p/c".into(),
                },
            )
            .to_vec(),
            vec![
                invoke(20, C1, 2, ZkOperation::GetChildren { path: "/p".into() }),
                ok(
                    21,
                    C1,
                    2,
                    ZkResponse::Children {
                        children: vec!["d".into()],
                        stat: node(1, 1),
                    },
                ),
            ],
        ]);
        assert_eq!(
            guarantees(&listed),
            [(Guarantee::ReadYourWrites, 2, "/p/c".to_string())]
        );
    }

    #[test]
    fn a_reconnect_to_a_server_behind_the_session_fails() {
        let bad = history(vec![
            vec![established(1, C1, 7)],
            write(
                10,
                C1,
                1,
                set_data("/x", "new"),
                set_stat(zxid(1, 2), zxid(2, 1)),
            )
            .to_vec(),
            vec![resumed(15, C1, 7, S1)],
            read(20, C1, 2, "/x", data("old", node(zxid(1, 2), zxid(1, 2)))).to_vec(),
        ]);
        let violations = check(&bad);
        assert_eq!(violations.len(), 1);
        let violation = &violations[0];
        assert_eq!(violation.guarantee, Guarantee::ReconnectNotBehind);
        assert_eq!(violation.reconnect, Some((S1, SimTime::from_millis(15))));
        assert_eq!(violation.earlier.zxid, Some(zxid(2, 1)));
        assert_eq!(violation.read_zxid, Some(zxid(1, 2)));
        assert!(
            violation.to_string().contains("reconnected to s2"),
            "{violation}"
        );
        // A reconnect before the observation is not to blame: that is read-your-writes.
        let earlier = history(vec![
            vec![established(1, C1, 7), resumed(5, C1, 7, S1)],
            write(
                10,
                C1,
                1,
                set_data("/x", "new"),
                set_stat(zxid(1, 2), zxid(2, 1)),
            )
            .to_vec(),
            read(20, C1, 2, "/x", data("old", node(zxid(1, 2), zxid(1, 2)))).to_vec(),
        ]);
        assert_eq!(check(&earlier)[0].guarantee, Guarantee::ReadYourWrites);
        // Reconnecting to a server that is up to date is fine.
        let fresh = history(vec![
            vec![established(1, C1, 7)],
            write(
                10,
                C1,
                1,
                set_data("/x", "new"),
                set_stat(zxid(1, 2), zxid(2, 1)),
            )
            .to_vec(),
            vec![resumed(15, C1, 7, S1)],
            read(20, C1, 2, "/x", data("new", node(zxid(1, 2), zxid(2, 1)))).to_vec(),
        ]);
        assert!(check(&fresh).is_empty());
    }

    #[test]
    fn zookeeper_legal_staleness_passes() {
        // Another session may read older state than this session wrote.
        let other_session = history(vec![
            vec![established(1, C1, 7), established(1, C2, 8)],
            write(10, C1, 1, set_data("/x", "new"), set_stat(2, 9)).to_vec(),
            read(20, C2, 2, "/x", data("old", node(2, 4))).to_vec(),
        ]);
        assert!(check(&other_session).is_empty());
        // After its session expired, the client's new session starts with no knowledge.
        let new_session = history(vec![
            vec![established(1, C1, 7)],
            write(10, C1, 1, set_data("/x", "new"), set_stat(2, 9)).to_vec(),
            vec![
                record(
                    15,
                    C1,
                    Event::Zk(ZkEvent::SessionExpired {
                        process: 0,
                        session: 7,
                    }),
                ),
                established(16, C1, 8),
            ],
            read(20, C1, 2, "/x", data("old", node(2, 4))).to_vec(),
        ]);
        assert!(check(&new_session).is_empty());
        // A read invoked before the session's write was acknowledged may miss it.
        let concurrent = history(vec![
            vec![established(1, C1, 7)],
            vec![
                invoke(10, C1, 1, set_data("/x", "new")),
                invoke(11, C1, 2, get_data("/x")),
                ok(12, C1, 2, data("old", node(2, 4))),
                ok(13, C1, 1, set_stat(2, 9)),
            ],
        ]);
        assert!(check(&concurrent).is_empty());
        // Another client may delete the node the session saw, or re-create one it deleted.
        let others = history(vec![
            vec![established(1, C1, 7), established(1, C2, 8)],
            write(10, C1, 1, set_data("/x", "mine"), set_stat(2, 9)).to_vec(),
            write(12, C2, 2, delete("/x"), ZkResponse::Deleted).to_vec(),
            vec![
                invoke(20, C1, 3, get_data("/x")),
                fail(21, C1, 3, ZkError::NoNode),
            ],
            write(30, C1, 4, delete("/y"), ZkResponse::Deleted).to_vec(),
            write(
                32,
                C2,
                5,
                create("/y", CreateMode::Persistent),
                ZkResponse::Created { path: "/y".into() },
            )
            .to_vec(),
            read(40, C1, 6, "/y", data("", node(12, 12))).to_vec(),
        ]);
        assert!(check(&others).is_empty(), "{:?}", check(&others));
        // Another session's ephemeral may vanish without a delete (its session ended).
        let ephemeral = history(vec![
            vec![established(1, C1, 7)],
            read(
                10,
                C1,
                1,
                "/e",
                data(
                    "",
                    Stat {
                        ephemeral_owner: 8,
                        ..node(2, 2)
                    },
                ),
            )
            .to_vec(),
            vec![
                invoke(20, C1, 2, get_data("/e")),
                fail(21, C1, 2, ZkError::NoNode),
            ],
        ]);
        assert!(check(&ephemeral).is_empty());
    }

    #[test]
    fn a_create2_reply_is_read_as_a_create_reply() {
        // The zookeeper-client drop-in's create is create2: its reply carries the stat.
        let own_create = history(vec![
            vec![established(1, C1, 7)],
            write(
                10,
                C1,
                1,
                create("/y", CreateMode::Persistent),
                created2("/y", 0),
            )
            .to_vec(),
            vec![
                invoke(20, C1, 2, get_data("/y")),
                fail(21, C1, 2, ZkError::NoNode),
            ],
        ]);
        assert_eq!(
            guarantees(&own_create),
            [(Guarantee::ReadYourWrites, 2, "/y".to_string())]
        );
        // The session deletes n-5; another's sequential create made n-6, not n-5, so it
        // cannot explain n-5 read back.
        let deleted = "/q/n-0000000005";
        let other_name = history(vec![
            vec![established(1, C1, 7)],
            write(10, C1, 1, delete(deleted), ZkResponse::Deleted).to_vec(),
            write(
                12,
                C2,
                2,
                create("/q/n-", CreateMode::PersistentSequential),
                created2("/q/n-0000000006", 0),
            )
            .to_vec(),
            read(20, C1, 3, deleted, data("", node(3, 3))).to_vec(),
        ]);
        assert_eq!(
            guarantees(&other_name),
            [(Guarantee::ReadYourWrites, 3, deleted.to_string())]
        );
    }

    #[test]
    fn it_is_registered_as_a_zookeeper_check() {
        let check = crate::by_name("zk.session_consistency").unwrap();
        assert_eq!(check.property, "session consistency");
    }
}
