//! What coordsim's tests need from a [`Client`] that zookeeper-client has no call for. Not
//! in zookeeper-client: code that uses it compiles only under `--cfg madsim`, so keep it in
//! test harnesses (`tests/`), never in the code under test.

use super::Client;

/// The history process `client`'s calls are recorded as: one per session, shared by its
/// clones (the crate doc's *History processes*; the etcd-client drop-in has the same
/// accessor, `etcd_client::coordsim::history_process`, one per handle there). A test
/// harness records its lock beliefs as this process
/// (`coordsim::testing::UserNode::lock_as`), so the checks that join a waiter's beliefs
/// with its calls (`recipe.no_orphan_waiter`, `recipe.holder_owns_node`) find both.
pub fn history_process(client: &Client) -> u32 {
    client.session.process()
}
