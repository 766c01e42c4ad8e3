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
//! `numChildren`, `cversion` (bumped by every child created and every child deleted, as
//! ZooKeeper's stat shows it: `DataNode.copyStat`) and `pzxid` (bound where a stat shows it; a child created or
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

mod from_history;
mod model;

pub use from_history::{from_history, from_views};
pub use model::{
    ActionResult, ChildrenStat, PathAction, PathError, SeenStat, ZkInput, ZkModel, ZkOutput,
    ZkState, Znode,
};
