//! Service discovery / group membership on ZooKeeper (the ZooKeeper recipes' group
//! membership; the seeds' gocorex `ZkDiscovery`):
//!
//! - a member *registers* by creating an ephemeral child of the group node named after
//!   itself, holding its value: the node lives as long as the member's session, so a member
//!   that dies drops out when its session expires; it *unregisters* by deleting the node;
//!   [`ZkRegistration::lost`] tells it when its session is gone, and with it the
//!   registration;
//! - a discoverer reads the children with a child watch and reports the view
//!   (`OnStartedDiscovering`); watches are one-shot, so on every event it reads the
//!   children again **with** a new watch, in one call, and reports the new view
//!   (`OnServiceChanged`). Whatever changed between the event and that read is in the read;
//!   whatever changes after it fires the new watch. When its session ends the watch is lost
//!   and the discoverer stops (`OnStoppedDiscovering`): the caller starts a new one.
//!
//! Member names must be unique in a group: a name held by another live session is waited
//! for.

use crate::recipes::shared::bugs::{RecipeBug, RecipeBugs};
use crate::recipes::shared::error::RecipeError;
use crate::recipes::shared::membership::MembershipRecorder;
use crate::recipes::zk::paths::ensure_parents;
use crate::zk::{Watch, ZkClient, ZkClientError};
use sim::{
    NodeContext,
    history::{
        recipe::LossReason,
        zk::{CreateMode, ZkError},
    },
};

/// A member's registration in a group: its ephemeral node.
pub struct ZkRegistration {
    zk: ZkClient,
    path: String,
    member: String,
    recorder: MembershipRecorder,
}

impl ZkRegistration {
    /// Registers `member` with `value` in `group` through `zk`'s session (creating the group
    /// node if it is the first), as the client on `context`'s node. Records the
    /// registration once the node is there and known to be this session's.
    pub async fn register(
        zk: &ZkClient,
        context: &NodeContext,
        group: &str,
        member: &str,
        value: &str,
    ) -> Result<Self, RecipeError> {
        let group = group.trim_end_matches('/');
        let path = member_path(group, member);
        loop {
            match zk.create(&path, value, CreateMode::Ephemeral).await {
                Ok(_) => break,
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    ensure_parents(zk, &path).await.map_err(RecipeError::from)?;
                }
                // Maybe ours: a create whose reply was lost may have happened.
                Err(ZkClientError::Api(ZkError::NodeExists) | ZkClientError::ConnectionLoss) => {
                    if owned_by_this_session(zk, &path).await? {
                        break;
                    }
                }
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
        let recorder = MembershipRecorder::new(context, zk.process(), group);
        recorder.registered(member);
        Ok(Self {
            zk: zk.clone(),
            path,
            member: member.to_string(),
            recorder,
        })
    }

    /// Completes when the registration is gone without the member letting go: its session
    /// expired (or was closed), or someone deleted its node. A lost connection is not a
    /// loss: the node lives while the session does, and the client reconnects.
    pub async fn lost(&self) -> LossReason {
        loop {
            match self.zk.exists_watch(&self.path).await {
                Ok((Some(stat), watch)) if Some(stat.ephemeral_owner) == self.zk.session_id() => {
                    match watch.fired().await {
                        // Its data changed or it went: look again.
                        Ok(_) => continue,
                        Err(_) => return LossReason::SessionExpired,
                    }
                }
                Ok(_) => return LossReason::NodeDeleted,
                // The call waited for a connection for a session timeout: ask again.
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(_) => return LossReason::SessionExpired,
            }
        }
    }

    /// Unregisters: deletes the node (retrying while the connection is lost) and records
    /// it. A node already gone counts as deleted; a session already over fails with
    /// [`RecipeError::SessionEnded`] (the node went with it).
    pub async fn unregister(self) -> Result<(), RecipeError> {
        loop {
            match self.zk.delete(&self.path, None).await {
                Ok(()) | Err(ZkClientError::Api(ZkError::NoNode)) => {
                    self.recorder.unregistered(&self.member);
                    return Ok(());
                }
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
    }
}

/// Whether `path` exists and belongs to `zk`'s session; waits for another session's node
/// to go (then it is not ours, and the caller creates it again).
async fn owned_by_this_session(zk: &ZkClient, path: &str) -> Result<bool, RecipeError> {
    loop {
        match zk.exists(path).await {
            Ok(Some(stat)) if Some(stat.ephemeral_owner) == zk.session_id() => return Ok(true),
            Ok(None) => return Ok(false),
            Ok(Some(_)) => {}
            Err(ZkClientError::ConnectionLoss) => continue,
            Err(error) => return Err(RecipeError::from(error)),
        }
        // Another session holds the name: wait until it lets go or its session expires.
        match zk.exists_watch(path).await {
            Ok((Some(_), watch)) => {
                if watch.fired().await.is_err() {
                    return Err(RecipeError::SessionEnded);
                }
            }
            Ok((None, _)) | Err(ZkClientError::ConnectionLoss) => {}
            Err(error) => return Err(RecipeError::from(error)),
        }
    }
}

/// A discoverer: the group's members as its client last read them, and the child watch
/// that says when to read again.
pub struct ZkDiscoverer {
    bugs: RecipeBugs,
    zk: ZkClient,
    group: String,
    recorder: MembershipRecorder,
    view: Vec<String>,
    watch: Option<Watch>,
}

impl ZkDiscoverer {
    /// Starts discovering `group` through `zk`, as the client on `context`'s node: reads
    /// the members with a child watch (creating the group node if there is none) and
    /// records the first view (`OnStartedDiscovering`).
    pub async fn start(
        zk: &ZkClient,
        context: &NodeContext,
        group: &str,
        bugs: RecipeBugs,
    ) -> Result<Self, RecipeError> {
        let group = group.trim_end_matches('/');
        let mut discoverer = Self {
            bugs,
            zk: zk.clone(),
            group: group.to_string(),
            recorder: MembershipRecorder::new(context, zk.process(), group),
            view: Vec::new(),
            watch: None,
        };
        let (members, watch) = discoverer.read_and_arm().await?;
        discoverer.watch = Some(watch);
        discoverer.show(members);
        Ok(discoverer)
    }

    /// Waits until the members change, and reports the new view (`OnServiceChanged`,
    /// recorded). Fails with [`RecipeError::SessionEnded`] when the session ends: the
    /// watch is lost, and this discoverer will see nothing more (`OnStoppedDiscovering`).
    pub async fn changed(&mut self) -> Result<Vec<String>, RecipeError> {
        let no_reread = self.bugs.has(RecipeBug::OneshotWatchNoReread);
        loop {
            let watch = match self.watch.take() {
                Some(watch) => watch,
                None => {
                    let (members, watch) = self.read_and_arm().await?;
                    // The bug: the view was brought up to date when the last event was
                    // applied; the children this re-arming read returned are not looked
                    // at, so a change since that event is missed until the next one.
                    if !no_reread && members != self.view {
                        self.watch = Some(watch);
                        return Ok(self.show(members));
                    }
                    watch
                }
            };
            if watch.fired().await.is_err() {
                return Err(RecipeError::SessionEnded);
            }
            if no_reread {
                // Apply the event: read what the group holds now; the one-shot watch is
                // re-armed when the caller next asks (after it has acted on this view).
                let members = self.read_members().await?;
                if members != self.view {
                    return Ok(self.show(members));
                }
            }
            // Correct: the loop reads the children and sets the next watch in one call.
        }
    }

    fn show(&mut self, members: Vec<String>) -> Vec<String> {
        self.recorder.view(&members);
        self.view = members.clone();
        members
    }

    /// The members (sorted) and a child watch set by the same read.
    async fn read_and_arm(&self) -> Result<(Vec<String>, Watch), RecipeError> {
        loop {
            match self.zk.get_children_watch(&self.group).await {
                Ok((mut children, _, watch)) => {
                    children.sort();
                    return Ok((children, watch));
                }
                Err(ZkClientError::Api(ZkError::NoNode)) => self.create_group().await?,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
    }

    /// The members (sorted), read without a watch.
    async fn read_members(&self) -> Result<Vec<String>, RecipeError> {
        loop {
            match self.zk.get_children(&self.group).await {
                Ok((mut children, _)) => {
                    children.sort();
                    return Ok(children);
                }
                Err(ZkClientError::Api(ZkError::NoNode)) => return Ok(Vec::new()),
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
    }

    async fn create_group(&self) -> Result<(), RecipeError> {
        // `ensure_parents` creates the ancestors of its path: the group and its parents.
        ensure_parents(&self.zk, &member_path(&self.group, "_"))
            .await
            .map_err(RecipeError::from)
    }
}

fn member_path(group: &str, member: &str) -> String {
    format!("{}/{member}", group.trim_end_matches('/'))
}
