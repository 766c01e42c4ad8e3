//! The znode tree every server applies committed transactions to (ZooKeeper's `DataTree`).

use super::{
    acl::{AuthId, NodeAcl},
    path,
    txn::{ApplyOutcome, SessionId, Txn, TxnBody, TxnResult, full_stat},
};
use crate::zab::{StateMachine, Zxid};
use sim::history::{
    RequestRef,
    zk::{Perms, Stat, WatchEventType, ZkError, ZkResponse},
};
use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

/// The owner a container carries instead of a session (ZooKeeper's
/// `EphemeralType.CONTAINER_EPHEMERAL_OWNER`, `Long.MIN_VALUE`); a stat shows 0.
pub const CONTAINER_OWNER: SessionId = 1 << 63;

/// When a change happens: its zxid and the leader's clock when it prepared it (ms).
#[derive(Clone, Copy, Debug, Default)]
struct Stamp {
    zxid: u64,
    time_ms: u64,
}

/// One znode.
#[derive(Clone, Debug, PartialEq)]
pub struct Znode {
    /// Its data.
    pub data: String,
    /// Its stat as ZooKeeper persists it (`StatPersisted`): `cversion` here counts the
    /// children created under it, and the stat a client reads derives its `cversion`,
    /// `num_children` and `data_length` (see [`Znode::stat`]).
    stat: Stat,
    /// Child names.
    children: BTreeSet<String>,
    /// Who may do what (not inherited from the parent, as in ZooKeeper).
    acl: NodeAcl,
    /// How many times the ACL was set (ZooKeeper's `Stat.aversion`).
    aversion: i32,
}

impl Znode {
    /// The ACL.
    pub fn acl(&self) -> &NodeAcl {
        &self.acl
    }

    /// The ACL's version.
    pub fn aversion(&self) -> i32 {
        self.aversion
    }

    /// The full stat, as a client reads it. Its `cversion` counts the children created AND
    /// deleted: ZooKeeper keeps only the creates and derives the rest, as
    /// `DataNode.copyStat` does (`cversion * 2 - numChildren`: "for every create there is a
    /// delete except for the children still present"). A create then a delete under a
    /// fresh parent reads 1, then 2 (checked against ZooKeeper 3.8.0).
    pub fn stat(&self) -> Stat {
        let stat = full_stat(&self.stat, self.children.len(), &self.data);
        Stat {
            // A container's owner is a marker, shown as 0 (`DataNode.getClientEphemeralOwner`).
            ephemeral_owner: if self.is_container() {
                0
            } else {
                stat.ephemeral_owner
            },
            aversion: self.aversion,
            cversion: self
                .stat
                .cversion
                .wrapping_mul(2)
                .wrapping_sub(stat.num_children as i32),
            ..stat
        }
    }

    /// Whether it is a container (deleted by the leader once its last child is gone).
    pub fn is_container(&self) -> bool {
        self.stat.ephemeral_owner == CONTAINER_OWNER
    }

    /// How many children were ever created under it (ZooKeeper's persisted `cversion`):
    /// the counter that names sequential children (`PrepRequestProcessor` appends
    /// `parentRecord.stat.getCversion()`, which deletes do not move).
    pub fn children_created(&self) -> i32 {
        self.stat.cversion
    }

    /// Child names, in order.
    pub fn children(&self) -> impl Iterator<Item = &str> {
        self.children.iter().map(String::as_str)
    }
}

/// The tree, the live sessions and each session's ephemeral nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct DataTree {
    nodes: BTreeMap<String, Znode>,
    sessions: BTreeMap<SessionId, u64>,
    ephemerals: BTreeMap<SessionId, BTreeSet<String>>,
}

/// The nodes every ZooKeeper server starts with, besides the root (`DataTree`'s
/// constructor): `/zookeeper`, `/zookeeper/quota` (open) and `/zookeeper/config` (read
/// only), none counted as created, so the root's stat shows cversion -1 and
/// `/zookeeper`'s -2 (as ZooKeeper 3.8.0 answers). None of them, nor the root, can be
/// deleted (`DataTree.isSpecialPath`).
pub const SPECIAL_PATHS: [&str; 4] = ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"];

impl Default for DataTree {
    fn default() -> Self {
        let node = |children: &[&str], acl: NodeAcl| Znode {
            data: String::new(),
            stat: Stat::default(),
            children: children.iter().map(|name| name.to_string()).collect(),
            acl,
            aversion: 0,
        };
        let read_only = NodeAcl::from_entries(vec![sim::history::zk::Acl::new(
            Perms::READ,
            "world",
            "anyone",
        )]);
        let mut nodes = BTreeMap::new();
        nodes.insert("/".to_string(), node(&["zookeeper"], NodeAcl::Open));
        nodes.insert(
            "/zookeeper".to_string(),
            node(&["config", "quota"], NodeAcl::Open),
        );
        nodes.insert("/zookeeper/quota".to_string(), node(&[], NodeAcl::Open));
        nodes.insert("/zookeeper/config".to_string(), node(&[], read_only));
        Self {
            nodes,
            sessions: BTreeMap::new(),
            ephemerals: BTreeMap::new(),
        }
    }
}

impl DataTree {
    /// The node at `path`.
    pub fn node(&self, path: &str) -> Option<&Znode> {
        self.nodes.get(path)
    }

    /// Number of znodes (the root included).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether only the nodes every server starts with exist ([`SPECIAL_PATHS`]).
    pub fn is_empty(&self) -> bool {
        self.nodes.len() == SPECIAL_PATHS.len()
    }

    /// Live sessions and their timeouts.
    pub fn sessions(&self) -> &BTreeMap<SessionId, u64> {
        &self.sessions
    }

    /// Ephemeral nodes of `session`.
    pub fn ephemerals_of(&self, session: SessionId) -> impl Iterator<Item = &str> {
        self.ephemerals
            .get(&session)
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// `getData` by a session authenticated as `ids` (READ on the node). Reads look the path
    /// up and check nothing else about it, as ZooKeeper's `FinalRequestProcessor` (`/a//x`
    /// is `NoNode`; see [`path`]).
    pub fn get_data(&self, path: &str, ids: &[AuthId]) -> Result<ZkResponse, ZkError> {
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        node.acl.check(Perms::READ, ids)?;
        Ok(ZkResponse::Data {
            data: node.data.clone(),
            stat: node.stat(),
        })
    }

    /// `exists` (not ACL-controlled, as in ZooKeeper).
    pub fn exists(&self, path: &str) -> Result<ZkResponse, ZkError> {
        Ok(ZkResponse::Exists {
            stat: self.nodes.get(path).map(Znode::stat),
        })
    }

    /// `getChildren` by a session authenticated as `ids` (READ on the node).
    pub fn get_children(&self, path: &str, ids: &[AuthId]) -> Result<ZkResponse, ZkError> {
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        node.acl.check(Perms::READ, ids)?;
        Ok(ZkResponse::Children {
            children: node.children.iter().cloned().collect(),
            stat: node.stat(),
        })
    }

    /// `getACL` by a session authenticated as `ids`: READ or ADMIN on the node, as in
    /// ZooKeeper's `FinalRequestProcessor`; without ADMIN the digest hashes are hidden.
    pub fn get_acl(&self, path: &str, ids: &[AuthId]) -> Result<ZkResponse, ZkError> {
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        node.acl.check(Perms::READ.union(Perms::ADMIN), ids)?;
        Ok(ZkResponse::Acl {
            acl: node.acl.shown_to(ids),
            aversion: node.aversion,
            stat: node.stat(),
        })
    }

    /// `getEphemerals` of `session` (`FinalRequestProcessor`): its ephemeral nodes whose
    /// path starts with `prefix` as a string (`/`, or blank, for all), in path order. No
    /// ACL is checked.
    pub fn get_ephemerals(&self, session: SessionId, prefix: &str) -> ZkResponse {
        let all = prefix.trim().is_empty() || prefix.trim() == "/";
        ZkResponse::Ephemerals {
            paths: self
                .ephemerals_of(session)
                .filter(|path| all || path.starts_with(prefix))
                .map(str::to_string)
                .collect(),
        }
    }

    /// `getAllChildrenNumber` by a session authenticated as `ids` (`FinalRequestProcessor`:
    /// the node must exist, READ on it): how many nodes lie below it
    /// (`DataTree.getAllChildrenNumber`; below the root, the `/zookeeper` subtree too).
    pub fn get_all_children_number(
        &self,
        path: &str,
        ids: &[AuthId],
    ) -> Result<ZkResponse, ZkError> {
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        node.acl.check(Perms::READ, ids)?;
        let below = if path == "/" {
            self.nodes.len() - 1
        } else {
            let prefix = format!("{path}/");
            self.nodes
                .range::<str, _>((
                    std::ops::Bound::Excluded(prefix.as_str()),
                    std::ops::Bound::Unbounded,
                ))
                .take_while(|(key, _)| key.starts_with(&prefix))
                .count()
        };
        Ok(ZkResponse::ChildrenNumber {
            number: u32::try_from(below).unwrap_or(u32::MAX),
        })
    }

    /// The containers the leader deletes now (ZooKeeper's
    /// `ContainerManager.getCandidates`): those that have had a child and have none. (A
    /// container that never had one stays: `maxNeverUsedIntervalMs` is 0 by default.)
    pub fn empty_containers(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, node)| {
                node.is_container() && node.children_created() > 0 && node.children.is_empty()
            })
            .map(|(path, _)| path.clone())
            .collect()
    }

    /// Applies a prepared change to a scratch copy (the zxid does not matter there).
    pub(crate) fn apply_prepared(&mut self, session: SessionId, body: &TxnBody) {
        let mut triggers = Vec::new();
        self.apply_body(Stamp::default(), session, body, &mut triggers);
    }

    /// Applies one change; on a replica that diverged (only with known bugs on) a change
    /// that does not fit fails without effect instead of panicking.
    fn apply_body(
        &mut self,
        stamp: Stamp,
        session: SessionId,
        body: &TxnBody,
        triggers: &mut Vec<(String, WatchEventType)>,
    ) -> TxnResult {
        let zxid = stamp.zxid;
        match body {
            TxnBody::CreateSession { timeout_ms, .. } => {
                self.sessions.insert(zxid, *timeout_ms);
                TxnResult::SessionCreated {
                    session: zxid,
                    timeout_ms: *timeout_ms,
                }
            }
            TxnBody::CloseSession { reason } => {
                let doomed: Vec<String> = self
                    .ephemerals
                    .remove(&session)
                    .unwrap_or_default()
                    .into_iter()
                    .collect();
                // Children before parents cannot arise (ephemerals have no children).
                for path in &doomed {
                    self.delete_node(zxid, path, triggers);
                }
                self.sessions.remove(&session);
                TxnResult::SessionClosed {
                    session,
                    reason: *reason,
                    ephemerals_deleted: doomed.len(),
                }
            }
            TxnBody::Create {
                path,
                data,
                ephemeral_owner,
                parent_cversion,
                acl,
            } => match self.create_node(
                stamp,
                path,
                data,
                *ephemeral_owner,
                *parent_cversion,
                acl,
                triggers,
            ) {
                // With the stat, for a `create2`; the server answers a plain create
                // without it (`ReplyShape`).
                Ok(()) => TxnResult::Done(ZkResponse::CreatedWithStat {
                    path: path.clone(),
                    stat: self
                        .nodes
                        .get(path.as_str())
                        .map(Znode::stat)
                        .unwrap_or_default(),
                }),
                Err(error) => TxnResult::Failed(error),
            },
            TxnBody::Delete { path } => {
                if !self.nodes.contains_key(path) {
                    return TxnResult::Failed(ZkError::NoNode);
                }
                self.delete_node(zxid, path, triggers);
                TxnResult::Done(ZkResponse::Deleted)
            }
            TxnBody::SetData {
                path,
                data,
                version,
            } => {
                let Some(node) = self.nodes.get_mut(path) else {
                    return TxnResult::Failed(ZkError::NoNode);
                };
                node.data = data.clone();
                node.stat.version = *version;
                node.stat.mzxid = zxid;
                node.stat.mtime_ms = stamp.time_ms;
                triggers.push((path.clone(), WatchEventType::NodeDataChanged));
                TxnResult::Done(ZkResponse::Stat { stat: node.stat() })
            }
            TxnBody::SetAcl {
                path,
                acl,
                aversion,
            } => {
                // No watch fires for an ACL change, as in ZooKeeper.
                let Some(node) = self.nodes.get_mut(path) else {
                    return TxnResult::Failed(ZkError::NoNode);
                };
                node.acl = acl.clone();
                node.aversion = *aversion;
                TxnResult::Done(ZkResponse::AclSet {
                    aversion: *aversion,
                    stat: node.stat(),
                })
            }
            TxnBody::Multi(bodies) => {
                let mut results = Vec::with_capacity(bodies.len());
                for (index, body) in bodies.iter().enumerate() {
                    match self.apply_body(stamp, session, body, triggers) {
                        TxnResult::Done(response) => results.push(response),
                        TxnResult::Failed(error) => {
                            return TxnResult::Failed(ZkError::MultiFailed {
                                index,
                                error: Box::new(error),
                            });
                        }
                        _ => return TxnResult::Failed(ZkError::BadArguments),
                    }
                }
                TxnResult::Done(ZkResponse::Multi { results })
            }
            TxnBody::Check { .. } => TxnResult::Done(ZkResponse::Checked),
            TxnBody::Error(error) => TxnResult::Failed(error.clone()),
            TxnBody::SessionMoved => TxnResult::SessionMoved,
        }
    }

    fn create_node(
        &mut self,
        stamp: Stamp,
        path: &str,
        data: &str,
        ephemeral_owner: SessionId,
        parent_cversion: i32,
        acl: &NodeAcl,
        triggers: &mut Vec<(String, WatchEventType)>,
    ) -> Result<(), ZkError> {
        if self.nodes.contains_key(path) {
            return Err(ZkError::NodeExists);
        }
        let zxid = stamp.zxid;
        let parent_path = path::parent(path);
        let parent = self.nodes.get_mut(parent_path).ok_or(ZkError::NoNode)?;
        parent.children.insert(path::name(path).to_string());
        parent.stat.cversion = parent_cversion;
        parent.stat.pzxid = zxid;
        self.nodes.insert(
            path.to_string(),
            Znode {
                data: data.to_string(),
                stat: Stat {
                    czxid: zxid,
                    mzxid: zxid,
                    pzxid: zxid,
                    version: 0,
                    cversion: 0,
                    ephemeral_owner,
                    num_children: 0,
                    data_length: 0,
                    aversion: 0,
                    ctime_ms: stamp.time_ms,
                    mtime_ms: stamp.time_ms,
                },
                children: BTreeSet::new(),
                acl: acl.clone(),
                aversion: 0,
            },
        );
        if ephemeral_owner != 0 && ephemeral_owner != CONTAINER_OWNER {
            self.ephemerals
                .entry(ephemeral_owner)
                .or_default()
                .insert(path.to_string());
        }
        triggers.push((path.to_string(), WatchEventType::NodeCreated));
        triggers.push((parent_path.to_string(), WatchEventType::NodeChildrenChanged));
        Ok(())
    }

    fn delete_node(&mut self, zxid: u64, path: &str, triggers: &mut Vec<(String, WatchEventType)>) {
        let Some(node) = self.nodes.remove(path) else {
            return;
        };
        let owner = node.stat.ephemeral_owner;
        if owner != 0
            && let Some(set) = self.ephemerals.get_mut(&owner)
        {
            set.remove(path);
            if set.is_empty() {
                self.ephemerals.remove(&owner);
            }
        }
        let parent_path = path::parent(path);
        if let Some(parent) = self.nodes.get_mut(parent_path) {
            // As ZooKeeper's `DataTree.deleteNode`: the parent's pzxid moves, its count of
            // creates does not (the `cversion` a stat shows does: see `Znode::stat`).
            parent.children.remove(path::name(path));
            parent.stat.pzxid = zxid;
        }
        triggers.push((path.to_string(), WatchEventType::NodeDeleted));
        triggers.push((parent_path.to_string(), WatchEventType::NodeChildrenChanged));
    }
}

impl StateMachine for DataTree {
    type Txn = Txn;
    type Snapshot = Arc<DataTree>;
    type Output = ApplyOutcome;

    fn apply(&mut self, zxid: Zxid, txn: &Txn) -> ApplyOutcome {
        let mut triggers = Vec::new();
        let stamp = Stamp {
            zxid: zxid.as_u64(),
            time_ms: txn.time_ms(),
        };
        let result = self.apply_body(stamp, txn.session(), txn.body(), &mut triggers);
        ApplyOutcome { result, triggers }
    }

    fn snapshot(&self) -> Arc<DataTree> {
        Arc::new(self.clone())
    }

    fn restore(snapshot: &Arc<DataTree>) -> Self {
        (**snapshot).clone()
    }

    fn digest(txn: &Txn) -> u64 {
        txn.digest()
    }

    fn request(txn: &Txn) -> Option<RequestRef> {
        txn.request()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zk::acl::{AuthId, AuthScheme, NodeAcl};
    use sim::history::zk::{Acl, Perms};

    fn txn(body: TxnBody) -> Txn {
        Txn::new(0, 0, body)
    }

    #[test]
    fn acls_are_applied_snapshotted_and_hashed() {
        let alice = AuthId {
            scheme: AuthScheme::Digest,
            id: "alice:hash".into(),
        };
        let only_alice = NodeAcl::from_entries(vec![Acl::new(Perms::ALL, "digest", &alice.id)]);
        let create = |acl: NodeAcl| {
            txn(TxnBody::Create {
                path: "/a".into(),
                data: "d".into(),
                ephemeral_owner: 0,
                parent_cversion: 1,
                acl,
            })
        };
        let mut tree = DataTree::default();
        tree.apply(Zxid::new(1, 1), &create(only_alice.clone()));
        let set = txn(TxnBody::SetAcl {
            path: "/a".into(),
            acl: NodeAcl::Open,
            aversion: 1,
        });
        // Recovery (a snapshot restored, as SNAP and restarts do) keeps the ACL.
        let restored = DataTree::restore(&tree.snapshot());
        assert_eq!(restored, tree);
        assert_eq!(restored.node("/a").map(Znode::acl), Some(&only_alice));
        assert_eq!(restored.get_data("/a", &[]), Err(ZkError::NoAuth));
        assert!(restored.get_data("/a", &[alice]).is_ok());
        assert!(restored.exists("/a").is_ok());
        // A setACL moves aversion; a tree with another ACL is another tree.
        let mut opened = tree.clone();
        opened.apply(Zxid::new(1, 2), &set);
        assert_eq!(opened.node("/a").map(Znode::aversion), Some(1));
        assert_ne!(opened, tree);
        // Replica agreement compares digests: the ACL is part of them, the open one adds
        // nothing (histories of runs without ACLs keep their digests).
        assert_ne!(
            DataTree::digest(&create(only_alice)),
            DataTree::digest(&create(NodeAcl::Open))
        );
    }
}
