//! Reading the ZooKeeper operations of a history: one sub-operation per path, with what
//! is left out and why.

use super::{ActionResult, PathAction, PathError, SeenStat, ZkInput, ZkModel, ZkOutput};
use crate::history::{
    applied_requests::AppliedRequests,
    views::HistoryViews,
    zk::{ZkOp, parent_of, sequence_appended},
};
use crate::linearizability::{
    Skipped, TimeUnit,
    model::{Operation, OperationHistory, Outcome},
    register::Interner,
    resolve::resolve,
};
use sim::{
    history::{
        History, OpError, OpResult, Response,
        zk::{CreateMode, Stat, ZkError, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

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
        // One per sub-operation; `None` for a multiRead's read that failed on its own.
        let responses: Vec<Option<&ZkResponse>> = match op.ok() {
            Some(ZkResponse::Multi { results }) => results.iter().map(Some).collect(),
            Some(ZkResponse::MultiRead { results }) => {
                results.iter().map(|result| result.as_ref().ok()).collect()
            }
            Some(response) => vec![Some(response)],
            None => Vec::new(),
        };
        let operations = sub_operations(op.operation);
        for (index, operation) in operations.iter().enumerate() {
            match operation {
                ZkOperation::Create { path, mode, .. } => {
                    let actual = responses
                        .get(index)
                        .copied()
                        .flatten()
                        .and_then(ZkResponse::created_path)
                        .map(str::to_string);
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
        for (index, response) in responses.into_iter().enumerate() {
            let stat = match response {
                Some(ZkResponse::Data { stat, .. } | ZkResponse::Stat { stat }) => Some(stat),
                Some(ZkResponse::Exists { stat }) => stat.as_ref(),
                _ => None,
            };
            // A multiRead's reads each name their own path (a multi's writes are left as
            // they were: their stats are not read here).
            let path = match op.operation {
                ZkOperation::MultiRead { ops } => ops.get(index).and_then(op_path),
                operation => op_path(operation),
            };
            if let (Some(stat), Some(path)) = (stat, path)
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
        } else if mode == CreateMode::Container {
            excluded.insert(path, "container (the leader deletes it once empty)");
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
        ZkOperation::Multi { ops } | ZkOperation::MultiRead { ops } => ops,
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
        | ZkOperation::SetAcl { path, .. }
        | ZkOperation::Check { path, .. }
        | ZkOperation::GetAllChildrenNumber { path } => Some(path),
        ZkOperation::GetEphemerals { .. } => None,
        ZkOperation::Multi { .. } | ZkOperation::MultiRead { .. } => None,
        ZkOperation::AddWatch { .. } | ZkOperation::RemoveWatches { .. } => None,
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

/// One result per sub-operation (a multi has one per sub-operation), `None` if unknown.
type SubResults<'a> = Option<Vec<Result<&'a ZkResponse, PathError>>>;

/// Per path, the actions an operation takes there and the results it was told.
type PathParts = BTreeMap<String, (Vec<PathAction>, Vec<ActionResult>)>;

/// One operation as the check takes it: from when, until when, and its parts per path.
struct ReadOperation {
    invoked_at: SimTime,
    /// When it returned, if its result is known.
    returned_at: Option<u64>,
    parts: PathParts,
}

/// The ZooKeeper operations of a coordsim history, split per path, ready to check.
pub fn from_history(history: &History) -> (ZkModel, OperationHistory<ZkInput, ZkOutput>) {
    from_views(&HistoryViews::new(history))
}

/// What [`from_history`] returns, reading the history through views the checks share.
pub fn from_views(history: &HistoryViews<'_>) -> (ZkModel, OperationHistory<ZkInput, ZkOutput>) {
    let ops = history.zk_operations();
    let syncs = history.preceding_syncs();
    let excluded = excluded_paths(&ops);
    let mut model = ZkModel::default();
    model.root = Some(model.paths.intern("/"));
    let mut checked = OperationHistory {
        time_unit: TimeUnit::Nanoseconds,
        ..OperationHistory::default()
    };
    let universe = checked_paths(&ops, &excluded);
    // Parents of a left-out child: their children's stat changes out of the check's sight.
    let untracked_children: BTreeSet<&str> = excluded.keys().map(|path| parent_of(path)).collect();
    for parent in &untracked_children {
        let parent = model.paths.intern(parent);
        model.untracked_children.insert(parent);
    }
    for (index, op) in ops.iter().enumerate() {
        if matches!(op.operation, ZkOperation::Sync { .. }) {
            continue; // checked through the reads it precedes
        }
        let mut split = PathSplit {
            data: &mut model.data,
            universe: &universe,
            untracked_children: &untracked_children,
            parts: BTreeMap::new(),
            mismatch: false,
        };
        match read_operation(op, syncs[index], &mut split) {
            Ok(read) => push_parts(&mut model, &mut checked, op, read),
            Err(reason) => checked.skipped.push(Skipped {
                id: op.op_id.0,
                reason,
            }),
        }
    }
    resolve(&model, &mut checked, &AppliedRequests::of(history));
    (model, checked)
}

/// Every path the history names and does not exclude (for getChildren listings).
fn checked_paths(ops: &[ZkOp<'_>], excluded: &BTreeMap<String, &'static str>) -> BTreeSet<String> {
    let mut universe = BTreeSet::new();
    for op in ops {
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
        if let Some(path) = op.ok().and_then(ZkResponse::created_path) {
            universe.insert(path.to_string());
        }
        if let Some(ZkResponse::Multi { results }) = op.ok() {
            // A create inside a multi answers as a create does: its path, or its stat too.
            for path in results.iter().filter_map(ZkResponse::created_path) {
                universe.insert(path.to_string());
            }
        }
    }
    universe.retain(|path| !excluded.contains_key(path));
    universe
}

/// An operation's parts per path, or why the check leaves it out.
fn read_operation(
    op: &ZkOp<'_>,
    sync_invoked: Option<SimTime>,
    split: &mut PathSplit<'_>,
) -> Result<ReadOperation, &'static str> {
    if matches!(
        op.operation,
        ZkOperation::GetAcl { .. } | ZkOperation::SetAcl { .. }
    ) {
        return Err("ACL operation (ACLs and aversion are not modelled)");
    }
    if matches!(
        op.operation,
        ZkOperation::GetEphemerals { .. } | ZkOperation::GetAllChildrenNumber { .. }
    ) {
        return Err(
            "getEphemerals or getAllChildrenNumber (a session's or a subtree's view, not one path's)",
        );
    }
    if matches!(
        op.operation,
        ZkOperation::AddWatch { .. } | ZkOperation::RemoveWatches { .. }
    ) {
        // The watch checkers judge what the watches deliver.
        return Err("addWatch or removeWatches (a session's watches, not the tree's state)");
    }
    let invoked_at = checked_invocation(op, sync_invoked)?;
    let results = sub_results(op)?;
    let operations = sub_operations(op.operation);
    if results
        .as_ref()
        .is_some_and(|results| results.len() != operations.len())
    {
        return Err("a response that does not match the operation");
    }
    for (position, operation) in operations.iter().enumerate() {
        let result = results.as_ref().map(|results| results[position]);
        split.add_operation(operation, result);
    }
    if split.mismatch {
        return Err("a response that does not match the operation, or a nested multi");
    }
    if split.parts.is_empty() {
        return Err("touches only ephemeral or unknown sequential nodes");
    }
    let returned_at = match results {
        Some(_) => op.completion.map(|(at, _)| at.as_nanos()),
        None => None,
    };
    Ok(ReadOperation {
        invoked_at,
        returned_at,
        parts: std::mem::take(&mut split.parts),
    })
}

/// From when an operation counts: a write from its invocation, a read from the invocation
/// of the sync before it; a plain read is left out.
fn checked_invocation(
    op: &ZkOp<'_>,
    sync_invoked: Option<SimTime>,
) -> Result<SimTime, &'static str> {
    // A multiRead is answered by the connected server as its reads are.
    let is_read = matches!(
        op.operation,
        ZkOperation::GetData { .. }
            | ZkOperation::Exists { .. }
            | ZkOperation::GetChildren { .. }
            | ZkOperation::MultiRead { .. }
    );
    if !is_read {
        return Ok(op.invoked_at);
    }
    sync_invoked
        .ok_or("plain read (sequentially consistent by design: served by the connected server)")
}

/// The result per sub-operation, or unknown; a definite failure other than a path error is
/// left out (it did not take effect).
fn sub_results<'a>(op: &ZkOp<'a>) -> Result<SubResults<'a>, &'static str> {
    match op.completion {
        None | Some((_, OpResult::Unknown { .. })) => Ok(None),
        Some((
            _,
            OpResult::Ok {
                response: Response::Zk(ZkResponse::Multi { results }),
            },
        )) => Ok(Some(results.iter().map(Ok).collect())),
        Some((
            _,
            OpResult::Ok {
                response: Response::Zk(ZkResponse::MultiRead { results }),
            },
        )) => results
            .iter()
            .map(|result| match result {
                Ok(response) => Ok(Ok(response)),
                Err(error) => path_error(error)
                    .map(Err)
                    .ok_or("a multiRead read refused (NoAuth: ACLs are not modelled)"),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some((
            _,
            OpResult::Ok {
                response: Response::Zk(response),
            },
        )) => Ok(Some(vec![Ok(response)])),
        Some((
            _,
            OpResult::Fail {
                error: OpError::Zk(error),
            },
        )) => match path_error(error) {
            Some(error) if !matches!(op.operation, ZkOperation::Multi { .. }) => {
                Ok(Some(vec![Err(error)]))
            }
            _ => Err(match error {
                ZkError::SessionExpired => "refused: the session had expired",
                ZkError::MultiFailed { .. } => "failed multi (rolled back)",
                _ => "failed definitely (did not take effect)",
            }),
        },
        Some(_) => Err("a result that is not a ZooKeeper result"),
    }
}

/// Adds an operation's parts, one per path, to the history to check.
fn push_parts(
    model: &mut ZkModel,
    checked: &mut OperationHistory<ZkInput, ZkOutput>,
    op: &ZkOp<'_>,
    read: ReadOperation,
) {
    let lane = checked.lane(&format!("{}/{}", op.client, op.process));
    for (path, (actions, path_results)) in read.parts {
        let path_id = model.paths.intern(&path);
        let outcome = match read.returned_at {
            Some(at) => Outcome::Returned {
                at,
                output: path_results,
            },
            None => Outcome::Unknown,
        };
        checked.operations.push(Operation {
            id: op.op_id.0,
            lane,
            input: ZkInput {
                path: path_id,
                actions,
            },
            invoked_at: read.invoked_at.as_nanos(),
            outcome,
        });
    }
}

/// The actions per path of one operation, as its sub-operations are read.
struct PathSplit<'a> {
    data: &'a mut Interner,
    universe: &'a BTreeSet<String>,
    untracked_children: &'a BTreeSet<&'a str>,
    parts: PathParts,
    /// A response that does not match its operation (or a nested multi) was seen.
    mismatch: bool,
}

/// A path error as an action's result; anything else says nothing.
fn error_result(result: Option<Result<&ZkResponse, PathError>>) -> Option<ActionResult> {
    match result {
        Some(Err(error)) => Some(ActionResult::Error(error)),
        _ => None,
    }
}

impl PathSplit<'_> {
    /// Adds an action on a checked path (the root, or a path in the universe).
    fn add(&mut self, path: &str, action: PathAction, result: Option<ActionResult>) {
        if path != "/" && !self.universe.contains(path) {
            return;
        }
        let entry = self.parts.entry(path.to_string()).or_default();
        entry.0.push(action);
        if let Some(result) = result {
            entry.1.push(result);
        }
    }

    /// A stat as the check can use it: without its children's part under a parent with a
    /// left-out child.
    fn seen(&self, path: &str, stat: &Stat) -> SeenStat {
        let stat = SeenStat::from(stat);
        if self.untracked_children.contains(path) {
            stat.without_children()
        } else {
            stat
        }
    }

    /// Adds the actions of one (sub-)operation with its result.
    fn add_operation(
        &mut self,
        operation: &ZkOperation,
        result: Option<Result<&ZkResponse, PathError>>,
    ) {
        match operation {
            ZkOperation::Create { path, data, mode } => self.add_create(path, data, *mode, result),
            ZkOperation::SetData {
                path,
                data,
                version,
            } => {
                let data = self.data.intern(data);
                let outcome = match result {
                    Some(Ok(ZkResponse::Stat { stat })) => {
                        Some(ActionResult::Stat(self.seen(path, stat)))
                    }
                    Some(Ok(_)) => {
                        self.mismatch = true;
                        None
                    }
                    other => error_result(other),
                };
                self.add(path, PathAction::SetData(data, *version), outcome);
            }
            ZkOperation::Delete { path, version } => {
                let outcome = match result {
                    Some(Ok(ZkResponse::Deleted)) => Some(ActionResult::Done),
                    Some(Ok(_)) => {
                        self.mismatch = true;
                        None
                    }
                    other => error_result(other),
                };
                self.add(path, PathAction::Delete(*version), outcome);
                // A failed delete says nothing certain of the parent.
                let parent = parent_of(path);
                if parent != "/" && matches!(outcome, None | Some(ActionResult::Done)) {
                    self.add(parent, PathAction::ChildDeleted, outcome);
                }
            }
            ZkOperation::GetData { path } => {
                let outcome = match result {
                    Some(Ok(ZkResponse::Data { data, stat })) => Some(ActionResult::Data(
                        self.data.intern(data),
                        self.seen(path, stat),
                    )),
                    Some(Ok(_)) => {
                        self.mismatch = true;
                        None
                    }
                    other => error_result(other),
                };
                self.add(path, PathAction::GetData, outcome);
            }
            ZkOperation::Exists { path } => {
                let outcome = match result {
                    Some(Ok(ZkResponse::Exists { stat })) => Some(ActionResult::Exists(
                        stat.as_ref().map(|stat| self.seen(path, stat)),
                    )),
                    Some(Ok(_)) => {
                        self.mismatch = true;
                        None
                    }
                    other => error_result(other),
                };
                self.add(path, PathAction::Exists, outcome);
            }
            ZkOperation::GetChildren { path } => self.add_children(path, result),
            ZkOperation::Check { path, version } => {
                let outcome = match result {
                    Some(Ok(ZkResponse::Checked)) => Some(ActionResult::Done),
                    Some(Ok(_)) => {
                        self.mismatch = true;
                        None
                    }
                    other => error_result(other),
                };
                self.add(path, PathAction::Check(*version), outcome);
            }
            ZkOperation::Sync { .. }
            | ZkOperation::GetEphemerals { .. }
            | ZkOperation::GetAllChildrenNumber { .. }
            | ZkOperation::Multi { .. }
            | ZkOperation::MultiRead { .. }
            | ZkOperation::GetAcl { .. }
            | ZkOperation::SetAcl { .. }
            | ZkOperation::AddWatch { .. }
            | ZkOperation::RemoveWatches { .. } => self.mismatch = true,
        }
    }

    /// A create: on the node's path (when its name is known) and a child more on its parent.
    fn add_create(
        &mut self,
        path: &str,
        data: &str,
        mode: CreateMode,
        result: Option<Result<&ZkResponse, PathError>>,
    ) {
        let actual = match result {
            Some(Ok(response)) => {
                let created = response.created_path();
                self.mismatch |= created.is_none();
                created
            }
            _ if matches!(mode, CreateMode::Persistent | CreateMode::Ephemeral) => Some(path),
            _ => None,
        };
        let outcome = match result {
            None => None,
            Some(Ok(_)) => Some(ActionResult::Done),
            Some(Err(error)) => Some(ActionResult::Error(error)),
        };
        let data = self.data.intern(data);
        if let Some(actual) = actual {
            // NoNode is about the parent; the node itself is then absent too.
            self.add(actual, PathAction::Create(data), outcome);
            // A `create2` shows the new node's stat, as a read right after it would.
            if let Some(stat) = result
                .and_then(Result::ok)
                .and_then(ZkResponse::created_stat)
            {
                let stat = self.seen(actual, stat);
                self.add(
                    actual,
                    PathAction::Exists,
                    Some(ActionResult::Exists(Some(stat))),
                );
            }
        }
        let parent = parent_of(actual.unwrap_or(path));
        if parent != "/" {
            // Done: a child more; NodeExists: the parent exists, no change.
            self.add(parent, PathAction::HasChild, outcome);
        }
    }

    /// A getChildren: the parent's stat (unless a multiRead answered the names alone), and
    /// for every checked path under it whether it was listed.
    fn add_children(&mut self, path: &str, result: Option<Result<&ZkResponse, PathError>>) {
        match result {
            Some(Ok(ZkResponse::Children { children, stat })) => {
                let stat = self.seen(path, stat);
                self.add(
                    path,
                    PathAction::Exists,
                    Some(ActionResult::Exists(Some(stat))),
                );
                self.add_listing(path, children);
            }
            Some(Ok(ZkResponse::ChildNames { children })) => self.add_listing(path, children),
            Some(Ok(_)) => self.mismatch = true,
            other => self.add(
                path,
                PathAction::Exists,
                error_result(other).map(|_| ActionResult::Exists(None)),
            ),
        }
    }

    /// For every checked path under `path`, whether `children` lists it.
    fn add_listing(&mut self, path: &str, children: &[String]) {
        if path == "/" || path.is_empty() {
            return self.add_listing_by_scan(path, children);
        }
        let listed: BTreeSet<&str> = children.iter().map(String::as_str).collect();
        // The universe is sorted, so the paths that start with `path/` are one range of it:
        // a listing reads that range, not the whole universe (a lock's waiters list their
        // parent over and over).
        let universe = self.universe;
        let under = universe
            .range::<str, _>((Bound::Excluded(path), Bound::Unbounded))
            .take_while(|candidate| candidate.starts_with(path))
            .filter_map(|candidate| {
                let name = candidate[path.len()..].strip_prefix('/')?;
                (!name.contains('/')).then_some((candidate, name))
            });
        for (child, name) in under {
            let is_listed = listed.contains(name);
            self.add(
                child,
                PathAction::Listed(is_listed),
                Some(ActionResult::Done),
            );
        }
    }

    /// [`PathSplit::add_listing`] under the root (or an empty path): every path in the
    /// universe whose parent it is, found by reading them all.
    fn add_listing_by_scan(&mut self, path: &str, children: &[String]) {
        let prefix = if path == "/" {
            "/".to_string()
        } else {
            format!("{path}/")
        };
        let listed: BTreeSet<String> = children
            .iter()
            .map(|child| format!("{prefix}{child}"))
            .collect();
        let under: Vec<String> = self
            .universe
            .iter()
            .filter(|candidate| parent_of(candidate) == path && candidate.as_str() != "/")
            .cloned()
            .collect();
        for child in under {
            let is_listed = listed.contains(&child);
            self.add(
                &child,
                PathAction::Listed(is_listed),
                Some(ActionResult::Done),
            );
        }
    }
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
