//! The leader's request processor (ZooKeeper's `PrepRequestProcessor`): validates a write
//! against the state it will apply to and turns it into a transaction.
//!
//! The leader keeps a *prepared* tree: the committed tree plus every transaction it has
//! proposed but not yet seen committed. Because a leader's proposals all commit in order
//! (or the leader steps down and the tree is rebuilt), validating against the prepared tree
//! gives exactly the checks ZooKeeper makes against its outstanding changes.

use super::{
    acl::{self, AuthId, NodeAcl},
    path,
    sequence::SequenceWidth,
    tree::{CONTAINER_OWNER, DataTree, SPECIAL_PATHS},
    txn::{SessionId, TxnBody, bump},
};
use sim::history::zk::{CreateMode, Perms, ZkError};

/// A single write, as a client asks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOp {
    /// Create a node.
    Create {
        /// Path (for sequential modes, the prefix).
        path: String,
        /// Data.
        data: String,
        /// Mode.
        mode: CreateMode,
        /// The node's ACL, as asked (`auth` entries expand to the session's ids).
        acl: NodeAcl,
    },
    /// Delete a node, if its version matches (`None`: any version).
    Delete {
        /// Path.
        path: String,
        /// Expected version.
        version: Option<i32>,
    },
    /// Replace a node's data, if its version matches (`None`: any version).
    SetData {
        /// Path.
        path: String,
        /// Data.
        data: String,
        /// Expected version.
        version: Option<i32>,
    },
    /// Replace a node's ACL, if its ACL version matches (`None`: any version).
    SetAcl {
        /// Path.
        path: String,
        /// The new ACL, as asked.
        acl: NodeAcl,
        /// Expected ACL version (`aversion`).
        version: Option<i32>,
    },
    /// Check a node's version, in a multi only (`Op.check`): the multi fails unless the
    /// node exists with that version (`None`: any).
    Check {
        /// Path.
        path: String,
        /// Expected version.
        version: Option<i32>,
    },
}

impl WriteOp {
    /// The op's path.
    pub fn path(&self) -> &str {
        match self {
            WriteOp::Create { path, .. }
            | WriteOp::Delete { path, .. }
            | WriteOp::SetData { path, .. }
            | WriteOp::SetAcl { path, .. }
            | WriteOp::Check { path, .. } => path,
        }
    }
}

/// Whether an expected version allows the current one: `None` and -1 (ZooKeeper's "any",
/// as `checkAndIncVersion` reads it; `zookeeper-client` sends `Some(-1)` as it is) match
/// every version.
fn version_matches(expected: Option<i32>, current: i32) -> bool {
    match expected {
        None | Some(-1) => true,
        Some(expected) => expected == current,
    }
}

fn is_sequential(mode: CreateMode) -> bool {
    matches!(
        mode,
        CreateMode::PersistentSequential | CreateMode::EphemeralSequential
    )
}

fn is_ephemeral(mode: CreateMode) -> bool {
    matches!(
        mode,
        CreateMode::Ephemeral | CreateMode::EphemeralSequential
    )
}

/// Validates one write of a session authenticated as `ids` against `tree`, in ZooKeeper's
/// order of checks (ACLs: CREATE and DELETE on the parent, WRITE and ADMIN on the node); a
/// sequential create is named by the parent's counter as `width` reads it.
pub fn prepare(
    tree: &DataTree,
    session: SessionId,
    ids: &[AuthId],
    op: &WriteOp,
    width: SequenceWidth,
) -> Result<TxnBody, ZkError> {
    match op {
        WriteOp::Create {
            path,
            data,
            mode,
            acl: requested,
        } => {
            // ZooKeeper's `pRequest2TxnCreate`: split at the last `/`, look the parent up,
            // then check the full final path (so `/a//x` is NoNode, `/a/` BadArguments).
            let sequential = is_sequential(*mode);
            let parent_path = path::split_request(path)?;
            let node_acl = acl::fixup(requested, ids)?;
            let parent = tree.node(parent_path).ok_or(ZkError::NoNode)?;
            parent.acl().check(Perms::CREATE, ids)?;
            let parent_stat = parent.stat();
            let created = parent.children_created();
            let final_path = if sequential {
                // The sequence is the parent's count of creates (its persisted cversion),
                // `%010d` as in ZooKeeper (read as a signed number of the counter's width,
                // which is 32 bits unless a test narrows it).
                format!("{path}{}", width.suffix(created))
            } else {
                path.clone()
            };
            path::validate(&final_path)?;
            if tree.node(&final_path).is_some() {
                return Err(ZkError::NodeExists);
            }
            if parent_stat.ephemeral_owner != 0 {
                return Err(ZkError::NoChildrenForEphemerals);
            }
            Ok(TxnBody::Create {
                path: final_path,
                data: data.clone(),
                ephemeral_owner: match mode {
                    CreateMode::Container => CONTAINER_OWNER,
                    _ if is_ephemeral(*mode) => session,
                    _ => 0,
                },
                parent_cversion: bump(created),
                acl: node_acl,
            })
        }
        WriteOp::Delete { path, version } => {
            // `getParentPathAndValidate`: only the split (and the root, a special path) is
            // checked; a path no node can have is NoNode.
            if SPECIAL_PATHS.contains(&path.as_str()) {
                return Err(ZkError::BadArguments);
            }
            let parent = tree
                .node(path::split_request(path)?)
                .ok_or(ZkError::NoNode)?;
            parent.acl().check(Perms::DELETE, ids)?;
            let node = tree.node(path).ok_or(ZkError::NoNode)?;
            let stat = node.stat();
            if !version_matches(*version, stat.version) {
                return Err(ZkError::BadVersion);
            }
            if stat.num_children > 0 {
                return Err(ZkError::NotEmpty);
            }
            Ok(TxnBody::Delete { path: path.clone() })
        }
        WriteOp::SetData {
            path,
            data,
            version,
        } => {
            path::validate(path)?;
            let node = tree.node(path).ok_or(ZkError::NoNode)?;
            node.acl().check(Perms::WRITE, ids)?;
            let stat = node.stat();
            if !version_matches(*version, stat.version) {
                return Err(ZkError::BadVersion);
            }
            Ok(TxnBody::SetData {
                path: path.clone(),
                data: data.clone(),
                version: bump(stat.version),
            })
        }
        WriteOp::SetAcl {
            path,
            acl: requested,
            version,
        } => {
            path::validate(path)?;
            let node_acl = acl::fixup(requested, ids)?;
            let node = tree.node(path).ok_or(ZkError::NoNode)?;
            node.acl().check(Perms::ADMIN, ids)?;
            if !version_matches(*version, node.aversion()) {
                return Err(ZkError::BadVersion);
            }
            Ok(TxnBody::SetAcl {
                path: path.clone(),
                acl: node_acl,
                aversion: bump(node.aversion()),
            })
        }
        WriteOp::Check { path, version } => {
            // `PrepRequestProcessor`, `OpCode.check`: the path, the node, READ on it, the
            // version (ZooKeeper's `CheckVersionTxn` changes nothing when applied).
            path::validate(path)?;
            let node = tree.node(path).ok_or(ZkError::NoNode)?;
            node.acl().check(Perms::READ, ids)?;
            if !version_matches(*version, node.stat().version) {
                return Err(ZkError::BadVersion);
            }
            Ok(TxnBody::Check { path: path.clone() })
        }
    }
}

/// Validates a `multi`: each op against the state left by the ops before it; the first
/// failure fails the whole multi (`MultiFailed` with its index), and nothing is applied.
pub fn prepare_multi(
    tree: &DataTree,
    session: SessionId,
    ids: &[AuthId],
    ops: &[WriteOp],
    width: SequenceWidth,
) -> TxnBody {
    let mut scratch: Option<DataTree> = None;
    let mut bodies = Vec::with_capacity(ops.len());
    for (index, op) in ops.iter().enumerate() {
        let view = scratch.as_ref().unwrap_or(tree);
        match prepare(view, session, ids, op, width) {
            Ok(body) => {
                if index + 1 < ops.len() {
                    // Later ops must see this one; copy the tree only for real multis.
                    let scratch = scratch.get_or_insert_with(|| tree.clone());
                    scratch.apply_prepared(session, &body);
                }
                bodies.push(body);
            }
            Err(error) => {
                return TxnBody::Error(ZkError::MultiFailed {
                    index,
                    error: Box::new(error),
                });
            }
        }
    }
    TxnBody::Multi(bodies)
}
