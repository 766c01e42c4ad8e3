//! ZooKeeper's znode operations as a sequential specification: writes (create, setData,
//! delete, multi) are linearizable; reads are linearizable only after a `sync` of the same
//! client process, from the sync's invocation to the read's return ("ZooKeeper Programmer's
//! Guide", *Consistency Guarantees*). Plain reads are served by the connected server and may
//! be stale by design (sequential consistency): they are left out, and counted.
//!
//! # Per-path partitioning
//!
//! Each operation is split into one sub-operation per path; each path is checked on its
//! own. A create also checks that its parent exists (on the parent's path); a `getChildren`
//! checks the parent's stat and, for every checked path under it, whether it was listed.
//! A path's state is whether it exists, its data, version, and the czxid / mzxid that the
//! first read (or a setData's stat) shows, and its children's stat as ZooKeeper keeps it:
//! `numChildren`, `cversion` (bumped by every child created, not by a delete, as in
//! ZooKeeper's `DataTree`) and `pzxid` (bound where a stat shows it; a child created or
//! deleted moves it to a zxid the checker learns from the next stat). A create adds a
//! "child created" step on its parent's path and a delete a "child deleted" step, so the
//! parent's counts follow its children's operations. A parent with a child the check leaves
//! out (an ephemeral one, which session expiry deletes without a client operation, or an
//! unknown sequential name) has its children's stat left out too; `zk_sequential_names`
//! checks the sequence numbers.
//!
//! Left out (and counted): ACL operations (`getACL`, `setACL`: ACLs are not modelled; an
//! operation refused with `NoAuth` failed definitely and is left out like other failures),
//! ephemeral nodes (session expiry deletes them without a client
//! operation; `zk_ephemeral_lifetime` checks them), sequential names that a create whose
//! outcome is unknown may have produced (the name is unknown), failed multis, operations
//! refused because the session had expired, and plain reads.

use super::{
    Skipped, TimeUnit,
    model::{Model, Operation, OperationHistory, Outcome, partition_by_key},
    register::Interner,
};
use crate::history::zk::{ZkOp, parent_of, preceding_syncs, sequence_appended, zk_operations};
use sim::history::{
    History, OpError, OpResult, Response,
    zk::{CreateMode, Stat, ZkError, ZkOperation, ZkResponse},
};
use std::collections::{BTreeMap, BTreeSet};

/// What an operation does or observes on one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathAction {
    /// Create it with this (interned) data.
    Create(u32),
    /// Replace its data, if the version matches (`None`: any).
    SetData(u32, Option<i32>),
    /// Delete it, if the version matches.
    Delete(Option<i32>),
    /// Read its data and stat.
    GetData,
    /// Ask whether it exists (and its stat).
    Exists,
    /// Its parent's `getChildren` listed it (`true`) or not.
    Listed(bool),
    /// A child was created under it (it must exist; done: one more child, cversion + 1).
    HasChild,
    /// A child under it was deleted (done: one child fewer, pzxid moved).
    ChildDeleted,
}

/// A stat as a response showed it (the fields the model checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeenStat {
    /// Data version.
    pub version: i32,
    /// Zxid of the create.
    pub czxid: u64,
    /// Zxid of the last data change.
    pub mzxid: u64,
    /// The children's stat, where the check follows the node's children.
    pub children: Option<ChildrenStat>,
}

/// The children's part of a stat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildrenStat {
    /// Children created under the node (ZooKeeper's `cversion`).
    pub cversion: i32,
    /// Number of children.
    pub num_children: u32,
    /// Zxid of the last child created or deleted (the create's own zxid before any).
    pub pzxid: u64,
}

impl From<&Stat> for SeenStat {
    fn from(stat: &Stat) -> Self {
        Self {
            version: stat.version,
            czxid: stat.czxid,
            mzxid: stat.mzxid,
            children: Some(ChildrenStat {
                cversion: stat.cversion,
                num_children: stat.num_children,
                pzxid: stat.pzxid,
            }),
        }
    }
}

impl SeenStat {
    /// The stat without its children's part (for a node whose children are not followed).
    fn without_children(self) -> Self {
        Self {
            children: None,
            ..self
        }
    }
}

/// How one action ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionResult {
    /// Done (create, delete, a listing, a child created).
    Done,
    /// setData done, with the new stat.
    Stat(SeenStat),
    /// getData: data (interned) and stat.
    Data(u32, SeenStat),
    /// exists: the stat if it exists.
    Exists(Option<SeenStat>),
    /// A definite ZooKeeper error, an observation of the state.
    Error(PathError),
}

/// The errors that say something about the path's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathError {
    /// It (or its parent, for a create) does not exist.
    NoNode,
    /// It exists.
    NodeExists,
    /// Its version did not match.
    BadVersion,
    /// It has children.
    NotEmpty,
}

/// One operation's part on one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkInput {
    /// The path (interned).
    pub path: u32,
    /// The actions, in order.
    pub actions: Vec<PathAction>,
}

/// What the client was told, one result per action.
pub type ZkOutput = Vec<ActionResult>;

/// A live znode, as far as the checker knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Znode {
    /// Interned data (`None`: unknown).
    pub data: Option<u32>,
    /// Data version (`None`: unknown).
    pub version: Option<i32>,
    /// Create zxid, once seen.
    pub czxid: Option<u64>,
    /// Last-modification zxid, once seen.
    pub mzxid: Option<u64>,
    /// Children created under it (`cversion`), if known.
    pub cversion: Option<i32>,
    /// Number of children, if known.
    pub num_children: Option<u32>,
    /// Zxid of the last change to its children, once seen.
    pub pzxid: Option<u64>,
}

impl Znode {
    /// A node known to exist, nothing else known.
    const UNKNOWN: Znode = Znode {
        data: None,
        version: None,
        czxid: None,
        mzxid: None,
        cversion: None,
        num_children: None,
        pzxid: None,
    };

    /// A node as a stat (and maybe its data) showed it.
    fn seen(data: Option<u32>, stat: SeenStat) -> Znode {
        Znode {
            data,
            version: Some(stat.version),
            czxid: Some(stat.czxid),
            mzxid: Some(stat.mzxid),
            cversion: stat.children.map(|children| children.cversion),
            num_children: stat.children.map(|children| children.num_children),
            pzxid: stat.children.map(|children| children.pzxid),
        }
    }

    /// The node after a child was created under it.
    fn with_child_created(self) -> Znode {
        Znode {
            cversion: self.cversion.map(|cversion| cversion.wrapping_add(1)),
            num_children: self.num_children.map(|count| count + 1),
            pzxid: None,
            ..self
        }
    }

    /// The node after a child of unknown outcome was created or deleted under it.
    fn with_children_unknown(self, cversion: Option<i32>) -> Znode {
        Znode {
            cversion,
            num_children: None,
            pzxid: None,
            ..self
        }
    }
}

/// Whether the path exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZkState {
    /// It does not.
    Absent,
    /// It does.
    Present(Znode),
    /// Unknown (after an operation of unknown outcome whose effect depends on what the
    /// checker does not know); the next observation binds it.
    Unknown,
}

/// The znode specification, with the names of interned paths and data.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZkModel {
    paths: Interner,
    data: Interner,
    root: Option<u32>,
}

fn bind(known: Option<u64>, seen: u64) -> Option<Option<u64>> {
    match known {
        Some(value) if value != seen => None,
        _ => Some(Some(seen)),
    }
}

fn bind_exact<T: PartialEq + Copy>(known: Option<T>, seen: T) -> Option<Option<T>> {
    match known {
        Some(value) if value != seen => None,
        _ => Some(Some(seen)),
    }
}

/// Checks a stat against the node; the node with what the stat revealed bound.
fn observe(node: Znode, stat: SeenStat) -> Option<Znode> {
    if node.version.is_some_and(|version| version != stat.version) {
        return None;
    }
    let (cversion, num_children, pzxid) = match stat.children {
        Some(children) => (
            bind_exact(node.cversion, children.cversion)?,
            bind_exact(node.num_children, children.num_children)?,
            bind(node.pzxid, children.pzxid)?,
        ),
        None => (node.cversion, node.num_children, node.pzxid),
    };
    Some(Znode {
        data: node.data,
        version: Some(stat.version),
        czxid: bind(node.czxid, stat.czxid)?,
        mzxid: bind(node.mzxid, stat.mzxid)?,
        cversion,
        num_children,
        pzxid,
    })
}

fn version_matches(node: &Znode, expected: Option<i32>) -> Option<bool> {
    match expected {
        None => Some(true),
        Some(expected) => node.version.map(|version| version == expected),
    }
}

/// One action on `state`, with its result (`None`: unknown outcome).
fn apply(state: ZkState, action: PathAction, result: Option<ActionResult>) -> Option<ZkState> {
    use ActionResult as R;
    use PathAction as A;
    use ZkState::{Absent, Present};
    let fresh = |data| Znode {
        data: Some(data),
        version: Some(0),
        czxid: None,
        mzxid: None,
        cversion: Some(0),
        num_children: Some(0),
        pzxid: None,
    };
    match (action, result, state) {
        // An unknown outcome: the operation took effect (or failed) as the state dictates.
        (A::Create(data), None, Absent) => Some(Present(fresh(data))),
        (A::SetData(data, expected), None, Present(node)) => match version_matches(&node, expected)
        {
            Some(true) => Some(Present(Znode {
                data: Some(data),
                version: node.version.map(|version| version + 1),
                mzxid: None,
                ..node
            })),
            Some(false) => Some(state),
            // The version is unknown: so is the outcome, and the data.
            None => Some(Present(Znode {
                data: None,
                version: None,
                mzxid: None,
                ..node
            })),
        },
        (A::Delete(_), None, Present(node)) if node.num_children.is_some_and(|count| count > 0) => {
            Some(state)
        }
        (A::Delete(expected), None, Present(node)) => match version_matches(&node, expected) {
            Some(true) => Some(Absent),
            Some(false) => Some(state),
            // Deleted or not: unknown until observed.
            None => Some(ZkState::Unknown),
        },
        // A child of unknown outcome: the counts are unknown (a delete leaves cversion).
        (A::HasChild, None, Present(node)) => Some(Present(node.with_children_unknown(None))),
        (A::ChildDeleted, None, Present(node)) => {
            Some(Present(node.with_children_unknown(node.cversion)))
        }
        (_, None, _) => Some(state),

        // An unknown state takes whatever a definite result shows.
        (action, Some(result), ZkState::Unknown) => Some(match (action, result) {
            (A::Create(data), R::Done) => Present(fresh(data)),
            (A::HasChild | A::ChildDeleted, R::Done) => Present(Znode::UNKNOWN),
            (A::SetData(data, _), R::Stat(stat)) | (A::GetData, R::Data(data, stat)) => {
                Present(Znode::seen(Some(data), stat))
            }
            (A::Exists, R::Exists(Some(stat))) => Present(Znode::seen(None, stat)),
            (A::Delete(_), R::Done)
            | (_, R::Error(PathError::NoNode))
            | (A::Exists, R::Exists(None))
            | (A::Listed(false), R::Done) => Absent,
            _ => Present(Znode::UNKNOWN),
        }),

        (A::Create(data), Some(R::Done), Absent) => Some(Present(fresh(data))),
        (A::Create(_), Some(R::Error(PathError::NodeExists)), Present(_)) => Some(state),
        (A::Create(_), Some(R::Error(PathError::NoNode)), Absent) => Some(state),
        (A::SetData(data, expected), Some(R::Stat(stat)), Present(node)) => {
            if version_matches(&node, expected) == Some(false) {
                return None;
            }
            if node
                .version
                .is_some_and(|version| version + 1 != stat.version)
            {
                return None;
            }
            if node.czxid.is_some_and(|czxid| czxid != stat.czxid) {
                return None;
            }
            let node = observe(
                Znode {
                    version: None,
                    mzxid: None,
                    ..node
                },
                stat,
            )?;
            Some(Present(Znode {
                data: Some(data),
                ..node
            }))
        }
        (
            A::SetData(_, expected) | A::Delete(expected),
            Some(R::Error(PathError::BadVersion)),
            Present(node),
        ) => (version_matches(&node, expected) != Some(true)).then_some(state),
        (A::SetData(..) | A::Delete(_), Some(R::Error(PathError::NoNode)), Absent) => Some(state),
        (A::Delete(expected), Some(R::Done), Present(node)) => {
            (version_matches(&node, expected) != Some(false) && node.num_children.unwrap_or(0) == 0)
                .then_some(Absent)
        }
        // A NotEmpty delete shows the node exists with children (if the count is followed).
        (A::Delete(_), Some(R::Error(PathError::NotEmpty)), Present(node)) => {
            (node.num_children != Some(0)).then_some(state)
        }
        (A::GetData, Some(R::Data(data, stat)), Present(node)) => {
            if node.data.is_some_and(|known| known != data) {
                return None;
            }
            let node = observe(node, stat)?;
            Some(Present(Znode {
                data: Some(data),
                ..node
            }))
        }
        (A::GetData | A::Exists, Some(R::Error(PathError::NoNode)), Absent) => Some(state),
        (A::Exists, Some(R::Exists(None)), Absent) => Some(state),
        (A::Exists, Some(R::Exists(Some(stat))), Present(node)) => {
            Some(Present(observe(node, stat)?))
        }
        (A::Listed(true), Some(R::Done), Present(_))
        | (A::Listed(false), Some(R::Done), Absent) => Some(state),
        (A::HasChild, Some(R::Done), Present(node)) => Some(Present(node.with_child_created())),
        (A::HasChild, Some(R::Error(PathError::NodeExists)), Present(_)) => Some(state),
        (A::ChildDeleted, Some(R::Done), Present(node)) => match node.num_children {
            Some(0) => None,
            count => Some(Present(Znode {
                num_children: count.map(|count| count - 1),
                pzxid: None,
                ..node
            })),
        },
        (A::HasChild, Some(R::Error(PathError::NoNode)), Absent) => Some(state),
        _ => None,
    }
}

impl Model for ZkModel {
    type State = ZkState;
    type Input = ZkInput;
    type Output = ZkOutput;

    fn init(&self) -> ZkState {
        ZkState::Absent
    }

    fn step(&self, state: &ZkState, input: &ZkInput, output: Option<&ZkOutput>) -> Option<ZkState> {
        // The root always exists; the checker never sees it created.
        let mut state = if Some(input.path) == self.root {
            ZkState::Present(Znode::UNKNOWN)
        } else {
            *state
        };
        if output.is_some_and(|results| results.len() != input.actions.len()) {
            return None;
        }
        for (index, action) in input.actions.iter().enumerate() {
            let result = output.map(|results| results[index]);
            state = apply(state, *action, result)?;
        }
        Some(state)
    }

    fn is_read_only(&self, input: &ZkInput) -> bool {
        input.actions.iter().all(|action| {
            matches!(
                action,
                PathAction::GetData | PathAction::Exists | PathAction::Listed(_)
            )
        })
    }

    fn partition(&self, history: &[Operation<ZkInput, ZkOutput>]) -> Vec<Vec<usize>> {
        partition_by_key(history, |input| input.path)
    }

    fn describe_partition(
        &self,
        history: &[Operation<ZkInput, ZkOutput>],
        partition: &[usize],
    ) -> String {
        match partition.first() {
            Some(&first) => format!("path {}", self.paths.name(history[first].input.path)),
            None => "empty".into(),
        }
    }

    fn describe_operation(&self, input: &ZkInput, output: Option<&ZkOutput>) -> String {
        let path = self.paths.name(input.path);
        let data = |data: u32| self.data.name(data).to_string();
        let version = |version: Option<i32>| version.map_or("any".to_string(), |v| v.to_string());
        let stat = |stat: &SeenStat| {
            let children = stat.children.map_or(String::new(), |children| {
                format!(
                    ", cversion {}, numChildren {}, pzxid {:#x}",
                    children.cversion, children.num_children, children.pzxid
                )
            });
            format!(
                "version {}, czxid {:#x}, mzxid {:#x}{children}",
                stat.version, stat.czxid, stat.mzxid
            )
        };
        let parts: Vec<String> = input
            .actions
            .iter()
            .enumerate()
            .map(|(index, action)| {
                let call = match action {
                    PathAction::Create(d) => format!("create({path}, {})", data(*d)),
                    PathAction::SetData(d, v) => {
                        format!("setData({path}, {}, version {})", data(*d), version(*v))
                    }
                    PathAction::Delete(v) => format!("delete({path}, version {})", version(*v)),
                    PathAction::GetData => format!("sync+getData({path})"),
                    PathAction::Exists => format!("sync+exists({path})"),
                    PathAction::Listed(_) => format!("sync+getChildren(parent of {path})"),
                    PathAction::HasChild => format!("create(a child of {path})"),
                    PathAction::ChildDeleted => format!("delete(a child of {path})"),
                };
                let result = match output.map(|results| &results[index]) {
                    None => "unknown".to_string(),
                    Some(ActionResult::Done) => match action {
                        PathAction::Listed(true) => "listed".into(),
                        PathAction::Listed(false) => "not listed".into(),
                        _ => "ok".into(),
                    },
                    Some(ActionResult::Stat(s)) => stat(s),
                    Some(ActionResult::Data(d, s)) => format!("{} ({})", data(*d), stat(s)),
                    Some(ActionResult::Exists(None)) => "absent".into(),
                    Some(ActionResult::Exists(Some(s))) => format!("exists ({})", stat(s)),
                    Some(ActionResult::Error(error)) => format!("{error:?}"),
                };
                format!("{call} -> {result}")
            })
            .collect();
        parts.join("; ")
    }

    fn describe_state(&self, state: &ZkState) -> String {
        match state {
            ZkState::Absent => "absent".into(),
            ZkState::Unknown => "unknown".into(),
            ZkState::Present(node) => format!(
                "{} (version {}, czxid {}, mzxid {}, cversion {}, numChildren {}, pzxid {})",
                node.data
                    .map_or("?".to_string(), |d| self.data.name(d).to_string()),
                node.version.map_or("?".to_string(), |v| v.to_string()),
                node.czxid.map_or("?".to_string(), |z| format!("{z:#x}")),
                node.mzxid.map_or("?".to_string(), |z| format!("{z:#x}")),
                node.cversion.map_or("?".to_string(), |v| v.to_string()),
                node.num_children.map_or("?".to_string(), |n| n.to_string()),
                node.pzxid.map_or("?".to_string(), |z| format!("{z:#x}")),
            ),
        }
    }
}

/// Whether `path` is `prefix` with a sequence appended (before or past the counter's wrap).
fn is_sequential_name(path: &str, prefix: &str) -> bool {
    sequence_appended(prefix, path).is_some()
}

/// The paths the check must leave out, with why.
fn excluded_paths(ops: &[ZkOp<'_>]) -> BTreeMap<String, &'static str> {
    let mut excluded = BTreeMap::new();
    let mut created = BTreeSet::new();
    let mut unknown_prefixes = Vec::new();
    let mut seen_paths = BTreeSet::new();
    let mut creates = Vec::new();
    for op in ops {
        let responses: Vec<&ZkResponse> = match op.ok() {
            Some(ZkResponse::Multi { results }) => results.iter().collect(),
            Some(response) => vec![response],
            None => Vec::new(),
        };
        let operations = sub_operations(op.operation);
        for (index, operation) in operations.iter().enumerate() {
            match operation {
                ZkOperation::Create { path, mode, .. } => {
                    let actual = match responses.get(index) {
                        Some(ZkResponse::Created { path }) => Some(path.clone()),
                        _ => None,
                    };
                    let sequential = matches!(
                        mode,
                        CreateMode::PersistentSequential | CreateMode::EphemeralSequential
                    );
                    match (&actual, sequential) {
                        (Some(actual), _) => {
                            created.insert(actual.clone());
                        }
                        (None, true) if !op.definitely_failed() => {
                            unknown_prefixes.push(path.clone())
                        }
                        _ => {}
                    }
                    creates.push((actual.unwrap_or_else(|| path.clone()), *mode));
                }
                ZkOperation::Delete { path, .. }
                | ZkOperation::SetData { path, .. }
                | ZkOperation::GetData { path }
                | ZkOperation::Exists { path } => {
                    seen_paths.insert(path.clone());
                }
                _ => {}
            }
        }
        for response in responses {
            let stat = match response {
                ZkResponse::Data { stat, .. } | ZkResponse::Stat { stat } => Some(stat),
                ZkResponse::Exists { stat } => stat.as_ref(),
                _ => None,
            };
            if let (Some(stat), Some(path)) = (stat, op_path(op.operation))
                && stat.ephemeral_owner != 0
            {
                excluded.insert(
                    path.to_string(),
                    "ephemeral node (session expiry deletes it)",
                );
            }
        }
    }
    for (path, mode) in creates {
        if matches!(
            mode,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        ) {
            excluded.insert(path, "ephemeral node (session expiry deletes it)");
        }
    }
    for path in seen_paths {
        if !created.contains(&path)
            && unknown_prefixes
                .iter()
                .any(|prefix| is_sequential_name(&path, prefix))
        {
            excluded
                .entry(path)
                .or_insert("a sequential name a create of unknown outcome may have made");
        }
    }
    excluded
}

/// A multi's operations, or the operation itself.
fn sub_operations(operation: &ZkOperation) -> &[ZkOperation] {
    match operation {
        ZkOperation::Multi { ops } => ops,
        other => std::slice::from_ref(other),
    }
}

fn op_path(operation: &ZkOperation) -> Option<&str> {
    match operation {
        ZkOperation::Create { path, .. }
        | ZkOperation::Delete { path, .. }
        | ZkOperation::SetData { path, .. }
        | ZkOperation::GetData { path }
        | ZkOperation::Exists { path }
        | ZkOperation::GetChildren { path }
        | ZkOperation::Sync { path }
        | ZkOperation::GetAcl { path }
        | ZkOperation::SetAcl { path, .. } => Some(path),
        ZkOperation::Multi { .. } => None,
    }
}

fn path_error(error: &ZkError) -> Option<PathError> {
    match error {
        ZkError::NoNode => Some(PathError::NoNode),
        ZkError::NodeExists => Some(PathError::NodeExists),
        ZkError::BadVersion => Some(PathError::BadVersion),
        ZkError::NotEmpty => Some(PathError::NotEmpty),
        _ => None,
    }
}

/// The ZooKeeper operations of a coordsim history, split per path, ready to check.
pub fn from_history(history: &History) -> (ZkModel, OperationHistory<ZkInput, ZkOutput>) {
    let ops = zk_operations(history);
    let syncs = preceding_syncs(&ops);
    let excluded = excluded_paths(&ops);
    let mut model = ZkModel::default();
    model.root = Some(model.paths.intern("/"));
    let mut checked = OperationHistory {
        time_unit: TimeUnit::Nanoseconds,
        ..OperationHistory::default()
    };
    // Every path the history names and does not exclude (for getChildren listings).
    let mut universe = BTreeSet::new();
    for op in &ops {
        let operations = sub_operations(op.operation);
        for operation in operations {
            if let Some(path) = op_path(operation)
                && !matches!(
                    operation,
                    ZkOperation::Create {
                        mode: CreateMode::PersistentSequential | CreateMode::EphemeralSequential,
                        ..
                    }
                )
            {
                universe.insert(path.to_string());
            }
        }
        if let Some(ZkResponse::Created { path }) = op.ok() {
            universe.insert(path.clone());
        }
        if let Some(ZkResponse::Multi { results }) = op.ok() {
            for result in results {
                if let ZkResponse::Created { path } = result {
                    universe.insert(path.clone());
                }
            }
        }
    }
    universe.retain(|path| !excluded.contains_key(path));
    // Parents of a left-out child: their children's stat changes out of the check's sight.
    let untracked_children: BTreeSet<&str> = excluded.keys().map(|path| parent_of(path)).collect();
    let seen = |path: &str, stat: &Stat| {
        let stat = SeenStat::from(stat);
        if untracked_children.contains(path) {
            stat.without_children()
        } else {
            stat
        }
    };

    for (index, op) in ops.iter().enumerate() {
        let id = op.op_id.0;
        let mut skip = |reason| checked.skipped.push(Skipped { id, reason });
        let is_read = matches!(
            op.operation,
            ZkOperation::GetData { .. }
                | ZkOperation::Exists { .. }
                | ZkOperation::GetChildren { .. }
        );
        if matches!(op.operation, ZkOperation::Sync { .. }) {
            continue; // checked through the reads it precedes
        }
        if matches!(
            op.operation,
            ZkOperation::GetAcl { .. } | ZkOperation::SetAcl { .. }
        ) {
            skip("ACL operation (ACLs and aversion are not modelled)");
            continue;
        }
        let invoked_at = if is_read {
            match syncs[index] {
                Some(sync_invoked) => sync_invoked,
                None => {
                    skip(
                        "plain read (sequentially consistent by design: served by the connected server)",
                    );
                    continue;
                }
            }
        } else {
            op.invoked_at
        };
        // The result: per operation (a multi has one per sub-operation), or unknown.
        let results: Option<Vec<Result<&ZkResponse, PathError>>> = match op.completion {
            None | Some((_, OpResult::Unknown { .. })) => None,
            Some((
                _,
                OpResult::Ok {
                    response: Response::Zk(ZkResponse::Multi { results }),
                },
            )) => Some(results.iter().map(Ok).collect()),
            Some((
                _,
                OpResult::Ok {
                    response: Response::Zk(response),
                },
            )) => Some(vec![Ok(response)]),
            Some((
                _,
                OpResult::Fail {
                    error: OpError::Zk(error),
                },
            )) => match path_error(error) {
                Some(error) if !matches!(op.operation, ZkOperation::Multi { .. }) => {
                    Some(vec![Err(error)])
                }
                _ => {
                    skip(match error {
                        ZkError::SessionExpired => "refused: the session had expired",
                        ZkError::MultiFailed { .. } => "failed multi (rolled back)",
                        _ => "failed definitely (did not take effect)",
                    });
                    continue;
                }
            },
            Some(_) => {
                skip("a result that is not a ZooKeeper result");
                continue;
            }
        };
        let operations = sub_operations(op.operation);
        if results
            .as_ref()
            .is_some_and(|results| results.len() != operations.len())
        {
            skip("a response that does not match the operation");
            continue;
        }
        // Actions per path, in order.
        let mut parts: BTreeMap<String, (Vec<PathAction>, Vec<ActionResult>)> = BTreeMap::new();
        let mut mismatch = false;
        for (position, operation) in operations.iter().enumerate() {
            let result = results.as_ref().map(|results| results[position]);
            let mut add = |path: &str, action, result: Option<ActionResult>| {
                if path != "/" && !universe.contains(path) {
                    return;
                }
                let entry = parts.entry(path.to_string()).or_default();
                entry.0.push(action);
                if let Some(result) = result {
                    entry.1.push(result);
                }
            };
            let error = |result: Option<Result<&ZkResponse, PathError>>| match result {
                Some(Err(error)) => Some(ActionResult::Error(error)),
                _ => None,
            };
            match operation {
                ZkOperation::Create { path, data, mode } => {
                    let actual = match result {
                        Some(Ok(ZkResponse::Created { path })) => Some(path.as_str()),
                        Some(Ok(_)) => {
                            mismatch = true;
                            None
                        }
                        _ if matches!(mode, CreateMode::Persistent | CreateMode::Ephemeral) => {
                            Some(path.as_str())
                        }
                        _ => None,
                    };
                    let outcome = match result {
                        None => None,
                        Some(Ok(_)) => Some(ActionResult::Done),
                        Some(Err(error)) => Some(ActionResult::Error(error)),
                    };
                    let data = model.data.intern(data);
                    if let Some(actual) = actual {
                        // NoNode is about the parent; the node itself is then absent too.
                        add(actual, PathAction::Create(data), outcome);
                    }
                    let parent = parent_of(actual.unwrap_or(path));
                    if parent != "/" {
                        // Done: a child more; NodeExists: the parent exists, no change.
                        add(parent, PathAction::HasChild, outcome);
                    }
                }
                ZkOperation::SetData {
                    path,
                    data,
                    version,
                } => {
                    let data = model.data.intern(data);
                    let outcome = match result {
                        Some(Ok(ZkResponse::Stat { stat })) => {
                            Some(ActionResult::Stat(seen(path, stat)))
                        }
                        Some(Ok(_)) => {
                            mismatch = true;
                            None
                        }
                        other => error(other),
                    };
                    add(path, PathAction::SetData(data, *version), outcome);
                }
                ZkOperation::Delete { path, version } => {
                    let outcome = match result {
                        Some(Ok(ZkResponse::Deleted)) => Some(ActionResult::Done),
                        Some(Ok(_)) => {
                            mismatch = true;
                            None
                        }
                        other => error(other),
                    };
                    add(path, PathAction::Delete(*version), outcome);
                    // A failed delete says nothing certain of the parent.
                    let parent = parent_of(path);
                    if parent != "/" && matches!(outcome, None | Some(ActionResult::Done)) {
                        add(parent, PathAction::ChildDeleted, outcome);
                    }
                }
                ZkOperation::GetData { path } => {
                    let outcome = match result {
                        Some(Ok(ZkResponse::Data { data, stat })) => Some(ActionResult::Data(
                            model.data.intern(data),
                            seen(path, stat),
                        )),
                        Some(Ok(_)) => {
                            mismatch = true;
                            None
                        }
                        other => error(other),
                    };
                    add(path, PathAction::GetData, outcome);
                }
                ZkOperation::Exists { path } => {
                    let outcome = match result {
                        Some(Ok(ZkResponse::Exists { stat })) => Some(ActionResult::Exists(
                            stat.as_ref().map(|stat| seen(path, stat)),
                        )),
                        Some(Ok(_)) => {
                            mismatch = true;
                            None
                        }
                        other => error(other),
                    };
                    add(path, PathAction::Exists, outcome);
                }
                ZkOperation::GetChildren { path } => match result {
                    Some(Ok(ZkResponse::Children { children, stat })) => {
                        add(
                            path,
                            PathAction::Exists,
                            Some(ActionResult::Exists(Some(seen(path, stat)))),
                        );
                        let prefix = if path == "/" {
                            "/".to_string()
                        } else {
                            format!("{path}/")
                        };
                        let listed: BTreeSet<String> = children
                            .iter()
                            .map(|child| format!("{prefix}{child}"))
                            .collect();
                        let under: Vec<String> = universe
                            .iter()
                            .filter(|candidate| {
                                parent_of(candidate) == path.as_str() && candidate.as_str() != "/"
                            })
                            .cloned()
                            .collect();
                        for child in under {
                            let is_listed = listed.contains(&child);
                            add(
                                &child,
                                PathAction::Listed(is_listed),
                                Some(ActionResult::Done),
                            );
                        }
                    }
                    Some(Ok(_)) => mismatch = true,
                    other => add(
                        path,
                        PathAction::Exists,
                        error(other).map(|_| ActionResult::Exists(None)),
                    ),
                },
                ZkOperation::Sync { .. }
                | ZkOperation::Multi { .. }
                | ZkOperation::GetAcl { .. }
                | ZkOperation::SetAcl { .. } => mismatch = true,
            }
        }
        if mismatch {
            skip("a response that does not match the operation, or a nested multi");
            continue;
        }
        if parts.is_empty() {
            skip("touches only ephemeral or unknown sequential nodes");
            continue;
        }
        let returned_at = op.completion.map(|(at, _)| at.as_nanos());
        let lane = checked.lane(&format!("{}/{}", op.client, op.process));
        for (path, (actions, path_results)) in parts {
            let path_id = model.paths.intern(&path);
            let outcome = match (results.is_some(), returned_at) {
                (true, Some(at)) => Outcome::Returned {
                    at,
                    output: path_results,
                },
                _ => Outcome::Unknown,
            };
            checked.operations.push(Operation {
                id,
                lane,
                input: ZkInput {
                    path: path_id,
                    actions,
                },
                invoked_at: invoked_at.as_nanos(),
                outcome,
            });
        }
    }
    (model, checked)
}

#[cfg(test)]
mod tests {
    use super::is_sequential_name;

    #[test]
    fn sequential_names_are_recognised_on_both_sides_of_the_counters_wrap() {
        assert!(is_sequential_name("/q/n-0000000012", "/q/n-"));
        assert!(is_sequential_name("/q/n--000000015", "/q/n-"));
        assert!(is_sequential_name("/q/n--2147483648", "/q/n-"));
        assert!(!is_sequential_name("/q/n-12", "/q/n-"));
        assert!(!is_sequential_name("/q/n-00000000012", "/q/n-"));
        assert!(!is_sequential_name("/q/m-0000000012", "/q/n-"));
    }
}
