//! The lock with the protections ZooKeeper's recipes and Curator add to the seed post's:
//!
//! - **A GUID in the node's name** (`{dir}/_c_{guid}-lock-{sequence}`, Curator's
//!   `withProtection` form): when a create's reply is lost (`ConnectionLoss`), the client
//!   lists the directory and takes the child with its GUID, if the create took effect,
//!   instead of making a second node.
//! - **Connection losses are retried** in the wait, in the same session: the node is still
//!   in line, and a new one would queue behind it.
//! - **A holder stops on a session it cannot vouch for**: before each round of work it looks
//!   at the client's session state, and stops when it is `Expired` (the node is gone) or
//!   `Disconnected` (it may expire before the client hears again); and it writes with its
//!   node's `czxid` as the fencing token, so a write sent before it knew is refused by a
//!   resource that saw a newer holder's.
//!
//! The GUID is the session id and a per-client attempt number: unique, as a UUID is, and the
//! same in every replay of a seed.

use crate::{
    Held, Holding, NodeName,
    line::{self, OwnNode},
};
use std::time::Duration;
use zookeeper_client::{Acls, Client, CreateMode, Error};

/// How long to wait before retrying a call that lost its connection.
pub(crate) const RETRY_INTERVAL: Duration = Duration::from_millis(100);

/// Takes the lock of `dir` with a node named after `guid`.
pub(crate) async fn lock(
    client: &Client,
    dir: &str,
    guid: &str,
    holding: &mut impl Holding,
) -> Result<Held<'static>, Error> {
    let held = join_line(client, dir, guid).await?;
    let name = held.path.rsplit('/').next().unwrap_or_default().to_string();
    loop {
        match line::wait_until_first(client, dir, &name, OwnNode::Listed, holding).await {
            Ok(()) => return Ok(held),
            Err(Error::ConnectionLoss) => tokio::time::sleep(RETRY_INTERVAL).await,
            Err(error) => {
                // Leave the line rather than keep a node no one waits for.
                delete_until_gone(client, &held.path).await;
                return Err(error);
            }
        }
    }
}

/// Creates this client's node in the line, or finds it after a lost reply.
async fn join_line(client: &Client, dir: &str, guid: &str) -> Result<Held<'static>, Error> {
    let prefix = format!("{dir}/_c_{guid}-lock-");
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let mut lost_a_reply = false;
    loop {
        match client.create(&prefix, b"", &options).await {
            Ok((stat, sequence)) => {
                let path = format!("{prefix}{sequence}");
                if lost_a_reply {
                    delete_twins(client, dir, guid, &path).await?;
                }
                return Ok(Held {
                    path,
                    token: stat.czxid,
                    name: NodeName::Unique,
                    guard: None,
                });
            }
            Err(Error::ConnectionLoss) => {
                lost_a_reply = true;
                if let Some(found) = find_own(client, dir, guid).await? {
                    return Ok(found);
                }
            }
            Err(error) => return Err(error),
        }
    }
}

/// Deletes the children of `dir` named with `guid` other than `own` (a path). A create whose
/// reply was lost may commit after the look for it: a server the client reconnected to can
/// answer the listing before it has applied that create (found by this example's crash
/// test, seed 5). Once this client's next create succeeded there, its listing shows every
/// earlier one, so the twins go here.
async fn delete_twins(client: &Client, dir: &str, guid: &str, own: &str) -> Result<(), Error> {
    let marker = format!("_c_{guid}-");
    let children = loop {
        match client.list_children(dir).await {
            Ok(children) => break children,
            Err(Error::ConnectionLoss) => tokio::time::sleep(RETRY_INTERVAL).await,
            Err(error) => return Err(error),
        }
    };
    for child in children.iter().filter(|child| child.starts_with(&marker)) {
        let path = format!("{dir}/{child}");
        if path != own {
            delete_until_gone(client, &path).await;
        }
    }
    Ok(())
}

/// The child of `dir` named with `guid`, if the lost create made one.
async fn find_own(client: &Client, dir: &str, guid: &str) -> Result<Option<Held<'static>>, Error> {
    let marker = format!("_c_{guid}-");
    loop {
        let children = match client.list_children(dir).await {
            Ok(children) => children,
            Err(Error::ConnectionLoss) => {
                tokio::time::sleep(RETRY_INTERVAL).await;
                continue;
            }
            Err(error) => return Err(error),
        };
        let Some(child) = children.iter().find(|child| child.starts_with(&marker)) else {
            return Ok(None);
        };
        let path = format!("{dir}/{child}");
        match client.check_stat(&path).await {
            Ok(Some(stat)) => {
                return Ok(Some(Held {
                    path,
                    token: stat.czxid,
                    name: NodeName::Unique,
                    guard: None,
                }));
            }
            Ok(None) => return Ok(None),
            Err(Error::ConnectionLoss) => tokio::time::sleep(RETRY_INTERVAL).await,
            Err(error) => return Err(error),
        }
    }
}

/// Deletes `path` until it is gone or the session is (an ephemeral node goes with it).
pub(crate) async fn delete_until_gone(client: &Client, path: &str) {
    loop {
        match client.delete(path, None).await {
            Err(Error::ConnectionLoss) => tokio::time::sleep(RETRY_INTERVAL).await,
            Ok(()) | Err(_) => return,
        }
    }
}
