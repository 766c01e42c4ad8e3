//! The ZAB store's scenarios: ZAB under faults (`zab`), the scripted traces of its known bugs
//! (`traces`), ZooKeeper's sessions and znodes (`sessions`, `znodes`), and the ZooKeeper-only
//! recipes (`primitives`: the queue, counter, barrier, configuration and rendezvous); `steps`
//! builds the scripted client steps the traces use.

pub(super) mod primitives;
pub(super) mod sessions;
pub(super) mod steps;
pub(super) mod traces;
pub(super) mod zab;
pub(super) mod znodes;
