//! Protected create (Curator's `withProtection`): a create whose node name carries a GUID,
//! so that after a lost reply the client can find the node it may have made instead of
//! making a second one.

use super::{ZkClient, ZkClientError};
use crate::zk::path;
use sim::history::zk::CreateMode;

impl ZkClient {
    /// Creates a node whose name carries a random GUID (`<parent>/_c_<guid>-<name>`), so that
    /// after a connection loss the client can find the node if the create did happen instead
    /// of creating a second one (Curator's `withProtection`). Ephemeral nodes found this way
    /// must belong to this session.
    pub async fn create_protected(
        &self,
        path: &str,
        data: &str,
        mode: CreateMode,
    ) -> Result<String, ZkClientError> {
        validate_protected(path, mode)?;
        let mut create = self.protect();
        self.create_protected_with(&mut create, path, data, mode, FoundNode::OwnedBySession)
            .await
    }

    /// A fresh GUID for a protected create, unique in the run.
    pub fn protect(&self) -> ProtectedCreate {
        use rand::Rng;
        // Unique in the run: the session id (a zxid) and a per-session counter, mixed with
        // the node's random stream so names do not reveal them.
        let (session, count) = {
            let mut state = self.shared.lock();
            state.protected_creates += 1;
            (state.session.unwrap_or(0), state.protected_creates)
        };
        let noise: u64 = self
            .shared
            .context
            .rng(&format!("zk-protected-create-{}", self.process()))
            .r#gen();
        let mut hasher = sim::digest::StableHasher::new();
        hasher.write_u64(session);
        hasher.write_u64(count);
        hasher.write_u64(noise);
        let guid =
            (u128::from(hasher.finish().0) << 64) | u128::from(session ^ count.rotate_left(48));
        ProtectedCreate {
            marker: format!("_c_{guid:032x}-"),
            outcome: CreateOutcome::NotMade,
        }
    }

    /// Makes the protected create `create` through this session: [`Self::create_protected`]
    /// with a GUID the caller keeps. A caller whose create fails with
    /// [`ZkClientError::SessionExpired`] while [`ProtectedCreate::may_exist`] may go on with
    /// it in a new session, as Curator's retry loop does after a session expiry: this first
    /// looks for a node with the GUID, and `found` says which it takes.
    pub async fn create_protected_with(
        &self,
        create: &mut ProtectedCreate,
        path: &str,
        data: &str,
        mode: CreateMode,
        found: FoundNode,
    ) -> Result<String, ZkClientError> {
        validate_protected(path, mode)?;
        let parent = path::parent(path).to_string();
        let protected = path::join(&parent, &format!("{}{}", create.marker, path::name(path)));
        let ephemeral = matches!(
            mode,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        );
        loop {
            if create.outcome == CreateOutcome::Unknown {
                // The create may have happened: look for our node before trying again.
                if let Some(node) = self
                    .find_protected(&create.marker, &parent, ephemeral, found)
                    .await?
                {
                    self.shared
                        .context
                        .history()
                        .reach(sim::coverage::Mark::IndeterminateWriteCommitted);
                    create.outcome = CreateOutcome::Made;
                    return Ok(node);
                }
                self.shared
                    .context
                    .history()
                    .reach(sim::coverage::Mark::IndeterminateWriteLost);
                create.outcome = CreateOutcome::NotMade;
            }
            match self.create(&protected, data, mode).await {
                Err(ZkClientError::ConnectionLoss) => create.outcome = CreateOutcome::Unknown,
                Err(ZkClientError::SessionExpired) => {
                    // Possibly made in the session that ended, and still there if the
                    // servers have not expired it yet.
                    create.outcome = CreateOutcome::Unknown;
                    return Err(ZkClientError::SessionExpired);
                }
                other => {
                    if other.is_ok() {
                        create.outcome = CreateOutcome::Made;
                    }
                    return other;
                }
            }
        }
    }

    /// After a create with `marker` whose outcome is unknown: the node it made, if any, as
    /// `found` accepts it.
    async fn find_protected(
        &self,
        marker: &str,
        parent: &str,
        ephemeral: bool,
        found: FoundNode,
    ) -> Result<Option<String>, ZkClientError> {
        // Sync first: the lost create may still be in the leader's pipeline (proposed, not
        // yet committed) while the server we reattached through answers a listing without
        // it, and a second create would then leave the first as an orphan of this session.
        // A sync is ordered after the leader's outstanding proposals (ZooKeeper's
        // `Leader.processSync`; here a proposal of its own), so the listing after it sees
        // the create if it ever happens. Found by `recipe.no_orphan_waiter`
        // (zk_queue_lock_crashes, seed 5).
        loop {
            match self.sync(parent).await {
                Ok(()) => break,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            }
        }
        loop {
            let (children, _) = match self.get_children(parent).await {
                Ok(listed) => listed,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            };
            let Some(name) = children.iter().find(|name| name.starts_with(marker)) else {
                return Ok(None);
            };
            let node = path::join(parent, name);
            if !ephemeral || found == FoundNode::ByGuidAlone {
                return Ok(Some(node));
            }
            match self.exists(&node).await {
                Ok(Some(stat)) if Some(stat.ephemeral_owner) == self.session_id() => {
                    return Ok(Some(node));
                }
                Ok(Some(_)) => {
                    // Made by an earlier session of this create, which the servers have not
                    // expired yet: not ours to hold by. Delete it, as Curator does since
                    // CURATOR-498, so that it does not wait in line until that session ends.
                    loop {
                        match self.delete(&node, None).await {
                            Err(ZkClientError::ConnectionLoss) => continue,
                            Err(
                                error @ (ZkClientError::SessionExpired | ZkClientError::Closed),
                            ) => {
                                return Err(error);
                            }
                            _ => return Ok(None),
                        }
                    }
                }
                Ok(None) => return Ok(None),
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            }
        }
    }
}

/// A protected create's path is checked before its GUID is drawn.
fn validate_protected(path: &str, mode: CreateMode) -> Result<(), ZkClientError> {
    let sequential = matches!(
        mode,
        CreateMode::PersistentSequential | CreateMode::EphemeralSequential
    );
    path::validate_create_request(path, sequential).map_err(ZkClientError::Api)
}

/// A protected create's GUID (Curator's `protectedId`) and what is known of its outcome,
/// kept by the caller so that the create can go on in a later session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtectedCreate {
    /// `_c_<guid>-`, the start of the node's name.
    marker: String,
    outcome: CreateOutcome,
}

impl ProtectedCreate {
    /// Whether an attempt may have made the node unbeknown to the client (its reply was
    /// lost with the connection or the session).
    pub fn may_exist(&self) -> bool {
        self.outcome == CreateOutcome::Unknown
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CreateOutcome {
    /// No attempt took effect (or none was made).
    NotMade,
    /// An attempt's reply was lost: the node may exist.
    Unknown,
    /// The node was made, and its path returned.
    Made,
}

/// Which node with its GUID a protected create takes as its own, when it looks after losing
/// an attempt's reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoundNode {
    /// An ephemeral node only if the server says the current session owns it; one an
    /// earlier session made (the create carried on into a new session) is deleted and the
    /// node made again (Curator since CURATOR-498).
    OwnedBySession,
    /// Any node with the GUID, whichever session owns it
    /// (`recipe.protection_without_session_check`, Curator before CURATOR-498): after a
    /// session change it adopts a node that goes when the old session expires.
    ByGuidAlone,
}
