//! What the recipes of both stores share: the recipe bugs, the fenced resource, and the
//! recorders and errors of locks, elections and membership.

pub(super) mod bugs;
pub(super) mod election;
pub(super) mod fenced_resource;
pub(super) mod held;
pub(super) mod lock;
pub(super) mod membership;
