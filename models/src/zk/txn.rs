//! Transactions of the znode tree: what the leader proposes after validating a request.

use super::acl::NodeAcl;
use sim::{
    digest::StableHasher,
    history::{
        RequestRef,
        zk::{Stat, WatchEventType, ZkError, ZkResponse},
    },
};
use std::sync::Arc;

/// A session id: the zxid (as `u64`) of the transaction that created the session.
pub type SessionId = u64;

/// Why a session is closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// The leader saw no ping for the session timeout.
    Expired,
    /// The client asked.
    Closed,
}

/// A transaction with the request it came from (ZooKeeper's `TxnHeader`: client id, cxid).
///
/// Immutable once made, and cheap to clone: the log, the disk, every follower's proposal
/// and every replica's apply share one body, and its digest (which every replica records
/// for every applied transaction) is computed once, here.
#[derive(Clone, Debug, PartialEq)]
pub struct Txn {
    session: SessionId,
    cxid: u64,
    body: Arc<TxnBody>,
    digest: u64,
    /// The leader's clock when it prepared the transaction, in ms (ZooKeeper's
    /// `TxnHeader.time`): a create's `ctime`, a change's `mtime`. Not part of the digest.
    time_ms: u64,
}

/// The change itself. The leader has validated it against the state it will apply to, so
/// applying it cannot fail on a correct replica.
#[derive(Clone, Debug, PartialEq)]
pub enum TxnBody {
    /// Open a session; its id is this transaction's zxid.
    CreateSession {
        /// Negotiated timeout.
        timeout_ms: u64,
        /// The server the client connected to.
        origin: u16,
    },
    /// Close a session and delete its ephemeral nodes.
    CloseSession {
        /// Why.
        reason: CloseReason,
    },
    /// Create a node at its final path (sequence number already appended).
    Create {
        /// Final path.
        path: String,
        /// Data.
        data: String,
        /// Owning session for an ephemeral node, else 0.
        ephemeral_owner: SessionId,
        /// The parent's count of children created, after this create (ZooKeeper's
        /// `CreateTxn.parentCVersion`).
        parent_cversion: i32,
        /// The node's ACL (validated, `auth` expanded).
        acl: NodeAcl,
    },
    /// Delete a node without children.
    Delete {
        /// Path.
        path: String,
    },
    /// Replace a node's data.
    SetData {
        /// Path.
        path: String,
        /// Data.
        data: String,
        /// The node's version after this change.
        version: i32,
    },
    /// Replace a node's ACL.
    SetAcl {
        /// Path.
        path: String,
        /// The new ACL (validated, `auth` expanded).
        acl: NodeAcl,
        /// The node's ACL version after this change.
        aversion: i32,
    },
    /// Several changes, all applied (the leader checked they all succeed).
    Multi(Vec<TxnBody>),
    /// A multi's version check, which passed: no change (ZooKeeper's `CheckVersionTxn`).
    Check {
        /// Path.
        path: String,
    },
    /// A request that failed validation: no change, the error goes back to the client.
    Error(ZkError),
    /// A request forwarded by a server that no longer owns the session (the client resumed
    /// it elsewhere since): no change, and the connection it came on is closed, as
    /// ZooKeeper does on `SessionMovedException`.
    SessionMoved,
}

/// What applying a transaction produced, for the server that answers the client.
#[derive(Clone, Debug, PartialEq)]
pub enum TxnResult {
    /// The change's response.
    Done(ZkResponse),
    /// The request's error (from an error transaction).
    Failed(ZkError),
    /// The request came through a server the session had moved away from.
    SessionMoved,
    /// A session opened.
    SessionCreated {
        /// Its id.
        session: SessionId,
        /// Its timeout.
        timeout_ms: u64,
    },
    /// A session closed.
    SessionClosed {
        /// Its id.
        session: SessionId,
        /// Why.
        reason: CloseReason,
        /// How many ephemeral nodes went with it.
        ephemerals_deleted: usize,
    },
}

/// Applying a transaction: the result and the watch events it triggers, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct ApplyOutcome {
    /// The result.
    pub result: TxnResult,
    /// `(path, event)` for every watch the change fires.
    pub triggers: Vec<(String, WatchEventType)>,
}

impl Txn {
    /// The transaction asked for by request `cxid` of `session`: `session` is 0 for a
    /// session creation, and `cxid` then the token of the server connection that asked.
    pub fn new(session: SessionId, cxid: u64, body: TxnBody) -> Self {
        let mut hasher = StableHasher::new();
        hasher.write_u64(session);
        hasher.write_u64(cxid);
        hash_body(&mut hasher, &body);
        Self {
            session,
            cxid,
            body: Arc::new(body),
            digest: hasher.finish().0,
            time_ms: 0,
        }
    }

    /// The transaction stamped with the leader's clock (`time_ms`) when it prepared it.
    pub fn at(mut self, time_ms: u64) -> Self {
        self.time_ms = time_ms;
        self
    }

    /// The leader's clock when it prepared the transaction, in ms.
    pub fn time_ms(&self) -> u64 {
        self.time_ms
    }

    /// The session that asked (0 for a session creation).
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// The client's request id within the session (for a session creation: the token of
    /// the server connection that asked).
    pub fn cxid(&self) -> u64 {
        self.cxid
    }

    /// What to do.
    pub fn body(&self) -> &TxnBody {
        &self.body
    }

    /// A stable digest of the whole transaction, to compare replicas.
    pub fn digest(&self) -> u64 {
        self.digest
    }

    /// The client request whose change this transaction carries: its header (session,
    /// cxid) when it changes the tree for a client's request. `None` for a refusal (an
    /// error or session-moved transaction: the request took no effect), for session
    /// creation and closing (no recorded operation asks for them) and for the server's
    /// own transactions (session 0).
    pub fn request(&self) -> Option<RequestRef> {
        let changes_for_client = !matches!(
            *self.body,
            TxnBody::Error(_)
                | TxnBody::SessionMoved
                | TxnBody::CreateSession { .. }
                | TxnBody::CloseSession { .. }
        );
        (self.session != 0 && changes_for_client).then_some(RequestRef {
            client: self.session,
            sequence: self.cxid,
        })
    }
}

fn hash_str(hasher: &mut StableHasher, text: &str) {
    hasher.write_u64(text.len() as u64);
    hasher.write_bytes(text.as_bytes());
}

fn hash_body(hasher: &mut StableHasher, body: &TxnBody) {
    match body {
        TxnBody::CreateSession { timeout_ms, origin } => {
            hasher.write_u64(1);
            hasher.write_u64(*timeout_ms);
            hasher.write_u64(u64::from(*origin));
        }
        TxnBody::CloseSession { reason } => {
            hasher.write_u64(2);
            hasher.write_u64(*reason as u64);
        }
        TxnBody::Create {
            path,
            data,
            ephemeral_owner,
            parent_cversion,
            acl,
        } => {
            hasher.write_u64(3);
            hash_str(hasher, path);
            hash_str(hasher, data);
            hasher.write_u64(*ephemeral_owner);
            hasher.write_u64(*parent_cversion as u64);
            // The open ACL adds nothing: digests of runs without ACLs stay as they were.
            if !acl.is_open() {
                hash_acl(hasher, acl);
            }
        }
        TxnBody::SetAcl {
            path,
            acl,
            aversion,
        } => {
            hasher.write_u64(10);
            hash_str(hasher, path);
            hash_acl(hasher, acl);
            hasher.write_u64(*aversion as u64);
        }
        TxnBody::Delete { path } => {
            hasher.write_u64(4);
            hash_str(hasher, path);
        }
        TxnBody::SetData {
            path,
            data,
            version,
        } => {
            hasher.write_u64(5);
            hash_str(hasher, path);
            hash_str(hasher, data);
            hasher.write_u64(*version as u64);
        }
        TxnBody::Multi(bodies) => {
            hasher.write_u64(6);
            hasher.write_u64(bodies.len() as u64);
            for body in bodies {
                hash_body(hasher, body);
            }
        }
        // 7 was a `sync`'s transaction: a sync now takes none (and no zxid), as in ZooKeeper.
        TxnBody::Error(error) => {
            hasher.write_u64(8);
            hash_str(hasher, &format!("{error:?}"));
        }
        TxnBody::SessionMoved => hasher.write_u64(9),
        TxnBody::Check { path } => {
            hasher.write_u64(11);
            hash_str(hasher, path);
        }
    }
}

fn hash_acl(hasher: &mut StableHasher, acl: &NodeAcl) {
    let entries = acl.entries();
    hasher.write_u64(entries.len() as u64);
    for entry in &entries {
        hasher.write_u64(u64::from(entry.perms.0));
        hash_str(hasher, &entry.scheme);
        hash_str(hasher, &entry.id);
    }
}

/// A stat's `version`-style counter that never panics on overflow.
pub(crate) fn bump(counter: i32) -> i32 {
    counter.wrapping_add(1)
}

/// Stat with the derived fields filled in.
pub(crate) fn full_stat(stat: &Stat, children: usize, data: &str) -> Stat {
    Stat {
        num_children: u32::try_from(children).unwrap_or(u32::MAX),
        data_length: u32::try_from(data.len()).unwrap_or(u32::MAX),
        ..*stat
    }
}
