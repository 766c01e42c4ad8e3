//! The lock as a reader of the seed post writes it ("Zookeeper分布式锁", xuqil, 2023, after
//! go-zookeeper's `Lock`): create an ephemeral-sequential child `lock-` under the lock's
//! directory, then wait in line ([`crate::line`]). Every error goes back to the caller, who
//! tries again, with a new child.
//!
//! What it misses: a create whose reply is lost (the connection to the server broke as the
//! create committed) is `ConnectionLoss` here, and the node exists all the same, owned by
//! this client's live session. The next try creates a second node and waits behind the
//! first: the client waits for itself until its session ends (an orphan; ZooKeeper's
//! recipes say to put a GUID in the name for this).

use crate::{
    Held, Holding, NodeName,
    line::{self, OwnNode},
};
use zookeeper_client::{Acls, Client, CreateMode, Error};

/// Takes the lock of `dir`; the node is `{dir}/lock-{sequence}`.
pub(crate) async fn lock(
    client: &Client,
    dir: &str,
    holding: &mut impl Holding,
) -> Result<Held<'static>, Error> {
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (stat, sequence) = client
        .create(&format!("{dir}/lock-"), b"", &options)
        .await?;
    let name = format!("lock-{sequence}");
    line::wait_until_first(client, dir, &name, OwnNode::Assumed, holding).await?;
    Ok(Held {
        path: format!("{dir}/{name}"),
        token: stat.czxid,
        name: NodeName::Unique,
        guard: None,
    })
}
