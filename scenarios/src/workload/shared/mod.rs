//! The workloads that run on either store: locks, elections and discovery, with the recipe
//! session they share (a ZooKeeper session or an etcd lease).

pub(super) mod discovery;
pub(super) mod elections;
mod lock_liveness;
pub(super) mod locks;
pub(super) mod recipe_session;
