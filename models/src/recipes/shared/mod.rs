//! What the recipes of both stores share: the recipe bugs, the one recipe error, the fenced
//! resource, the held token (a lock's or a leadership's), and the recorders of locks,
//! elections and membership.

pub(super) mod bugs;
pub(super) mod error;
pub(super) mod fenced_resource;
pub(super) mod held;
pub(super) mod membership;
pub(super) mod recorder;
