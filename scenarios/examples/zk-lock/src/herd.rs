//! The herd-style lock. Every contender tries to create the one ephemeral node
//! `{dir}/lock`. The one whose create succeeds holds the lock; every other contender watches
//! the node with `exists`. A release deletes the node, which wakes every waiter, and they
//! all race to create it again. This is the lock the seed post describes in its opening
//! paragraph ("当节点释放锁时，它所创建的临时节点也会被删除，从而通知其他节点可以重新竞争锁").
//! Its summary then warns against it: with the queue, "不会出现锁被释放，所有等待锁的线程/进程
//! 都会抢锁", that is, no herd effect. The ZooKeeper paper's "Simple Locks" and coordsim's own
//! `zk_herd_lock` are the same lock.
//!
//! It has the protected queue lock's protections where they matter, so that comparing the
//! two measures the style, not a bug:
//!
//! - **A lost create reply** is settled by the node's owner, read back with `exists`. With
//!   one shared name, the owner says whether the node is this session's; the queue lock
//!   needs a GUID in its node's name for the same answer.
//! - **Connection losses are retried** in the same session.
//! - **The holder** stops on its session state and fences its writes with the node's `czxid`
//!   ([`crate::Locker::term`], as for the protected lock).
//! - **It deletes only its own node.** The path is everyone's: after this client's node
//!   goes (its delete's reply lost, or its session ended), another client's node may stand
//!   there. So it deletes only while the node's `czxid` is its token.

use crate::{Held, Holding, NodeName, protected::RETRY_INTERVAL};
use zookeeper_client::{Acls, Client, CreateMode, Error, EventType};

/// Takes the lock of `dir`, whose node is `{dir}/lock`, telling `holding` each time the
/// node's watch wakes it.
pub(crate) async fn lock(
    client: &Client,
    dir: &str,
    holding: &mut impl Holding,
) -> Result<Held<'static>, Error> {
    let path = format!("{dir}/lock");
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let own_session = client.session_id().0;
    loop {
        match client.create(&path, b"", &options).await {
            Ok((stat, _)) => return Ok(held(path, stat.czxid)),
            // Another client's node, or this client's if the create took effect and its reply
            // was lost: the look below says which.
            Err(Error::NodeExists | Error::ConnectionLoss) => {}
            Err(error) => return Err(error),
        }
        let (stat, watcher) = match client.check_and_watch_stat(&path).await {
            Ok(found) => found,
            Err(Error::ConnectionLoss) => {
                tokio::time::sleep(RETRY_INTERVAL).await;
                continue;
            }
            Err(error) => return Err(error),
        };
        match stat {
            // Released between the create and the look: race for it again.
            None => continue,
            Some(stat) if stat.ephemeral_owner == own_session => {
                return Ok(held(path, stat.czxid));
            }
            Some(_) => {}
        }
        // A session event is the session's end (the next create says so), not a release.
        if watcher.changed().await.event_type != EventType::Session {
            holding.woken(&path);
        }
    }
}

fn held(path: String, token: i64) -> Held<'static> {
    Held {
        path,
        token,
        name: NodeName::Shared,
        guard: None,
    }
}

/// Deletes the node at `path` while it is the one created with `czxid` `token`, retrying
/// lost connections. Between the look and the delete, the node stays this session's: only
/// this client deletes it, and if the session ends first, the server refuses the delete.
pub(crate) async fn delete_while_own(client: &Client, path: &str, token: i64) {
    loop {
        let version = match client.check_stat(path).await {
            Ok(Some(stat)) if stat.czxid == token => stat.version,
            Err(Error::ConnectionLoss) => {
                tokio::time::sleep(RETRY_INTERVAL).await;
                continue;
            }
            // Gone, another client's, or the session ended (and the node with it).
            Ok(_) | Err(_) => return,
        };
        match client.delete(path, Some(version)).await {
            Err(Error::ConnectionLoss) => tokio::time::sleep(RETRY_INTERVAL).await,
            Ok(()) | Err(_) => return,
        }
    }
}
