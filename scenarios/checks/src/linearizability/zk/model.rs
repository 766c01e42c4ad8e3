//! The znode specification: one path's state and how each action changes it.

use crate::linearizability::{
    model::{Model, Operation, partition_by_key},
    register::Interner,
};
use sim::history::zk::Stat;
use std::collections::BTreeSet;

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
    /// A child under it was deleted (done: one child fewer, cversion + 1, pzxid moved).
    ChildDeleted,
    /// A multi's version check passed on it (it exists, with that version if one is given).
    Check(Option<i32>),
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
    /// Children created and deleted under the node (ZooKeeper's `cversion`).
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
    pub(super) fn without_children(self) -> Self {
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
    /// Children created and deleted under it (`cversion`), if known.
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

    /// The node after a child was deleted under it.
    fn with_child_deleted(self) -> Znode {
        Znode {
            cversion: self.cversion.map(|cversion| cversion.wrapping_add(1)),
            num_children: self.num_children.map(|count| count - 1),
            pzxid: None,
            ..self
        }
    }

    /// The node after a child of unknown outcome was created or deleted under it.
    fn with_children_unknown(self) -> Znode {
        Znode {
            cversion: None,
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
    pub(super) paths: Interner,
    pub(super) data: Interner,
    pub(super) root: Option<u32>,
    /// Paths with a child the check leaves out (ephemeral, unknown sequential name): their
    /// children's count and cversion change out of the check's sight, so the model never
    /// follows them (every stat of theirs is read without its children's part too).
    pub(super) untracked_children: BTreeSet<u32>,
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
///
/// Long on purpose: one state machine's match, one arm per (action, result, state), read
/// as the znode model's specification.
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
        // A child of unknown outcome: the counts are unknown.
        (A::HasChild | A::ChildDeleted, None, Present(node)) => {
            Some(Present(node.with_children_unknown()))
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
            _ => Some(Present(node.with_child_deleted())),
        },
        (A::HasChild, Some(R::Error(PathError::NoNode)), Absent) => Some(state),
        (A::Check(expected), Some(R::Done), Present(node)) => match expected {
            None => Some(state),
            Some(expected) => match node.version {
                Some(version) if version != expected => None,
                _ => Some(Present(Znode {
                    version: Some(expected),
                    ..node
                })),
            },
        },
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
        Some(match state {
            ZkState::Present(node) if self.untracked_children.contains(&input.path) => {
                ZkState::Present(node.with_children_unknown())
            }
            _ => state,
        })
    }

    fn is_read_only(&self, input: &ZkInput) -> bool {
        input.actions.iter().all(|action| {
            matches!(
                action,
                PathAction::GetData | PathAction::Exists | PathAction::Listed(_)
            )
        })
    }

    /// Failed creates (`NodeExists`, on the node and as `HasChild` on its parent: the herd
    /// lock's losers, thousands of them at 64 clients), `NoNode` errors, reads that saw a
    /// result, listings and passed checks: none changes a znode, and `apply` binds in the
    /// state whatever their acceptance relies on. So are children created and deleted under
    /// a parent whose children the model does not follow (`untracked_children`: the lock
    /// paths, whose children are ephemeral): there they change nothing the model holds,
    /// and that holds for their outcome unknown too (a lost reply, resolved as applied or
    /// not): such a step is accepted in every state and returns it unchanged, so the
    /// search places it at its first chance. The queue lock at 256 clients with faults had
    /// 65 such creates on its parent's path, each otherwise tried in and out of every order
    /// below it, and ran out of budget.
    /// Left out: `BadVersion` and `NotEmpty`, accepted on an unknown version or child count
    /// without binding it.
    fn is_observation(&self, input: &ZkInput, output: Option<&ZkOutput>) -> bool {
        use ActionResult as R;
        use PathAction as A;
        let untracked = self.untracked_children.contains(&input.path);
        let Some(results) = output else {
            return untracked
                && input
                    .actions
                    .iter()
                    .all(|action| matches!(action, A::HasChild | A::ChildDeleted));
        };
        results.len() == input.actions.len()
            && input.actions.iter().zip(results).all(|(action, result)| {
                matches!(
                    (action, result),
                    (A::Create(_) | A::HasChild, R::Error(PathError::NodeExists))
                        | (_, R::Error(PathError::NoNode))
                        | (A::GetData, R::Data(..))
                        | (A::Exists, R::Exists(_))
                        | (A::Listed(_) | A::Check(_), R::Done)
                ) || (matches!((action, result), (A::HasChild | A::ChildDeleted, R::Done))
                    && untracked)
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
                    PathAction::Check(version) => match version {
                        Some(version) => format!("multi check({path}, version {version})"),
                        None => format!("multi check({path})"),
                    },
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
