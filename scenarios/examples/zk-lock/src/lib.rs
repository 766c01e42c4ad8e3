//! A ZooKeeper lock, written only against `zookeeper-client` 0.11 and `tokio`: the code a
//! service runs in production, unchanged under coordsim's tests.
//!
//! The lock is the seed post's ("Zookeeper分布式锁", after go-zookeeper's `Lock` and
//! ZooKeeper's recipes): each contender creates an ephemeral-sequential child of the lock's
//! directory, the lowest number holds, every other watches the child just below its own.
//! Four ways to take it, one [`Recipe`] each:
//!
//! - [`Recipe::AsThePostWrites`]: what a reader of the post writes. Its tests find an
//!   orphaned node after a lost create reply, and a holder that keeps working after its
//!   session expired.
//! - [`Recipe::Protected`]: a GUID in the node's name, connection losses retried, and a
//!   holder that stops when its session state is `Expired` or `Disconnected` and fences its
//!   writes with its node's `czxid`.
//! - [`Recipe::CratesOwnLock`]: zookeeper-client's own `Client::lock` with the protected
//!   holder.
//! - [`Recipe::Herd`]: the herd-style lock the post describes first and warns against (one
//!   lock node, every waiter watches it, each release wakes them all), with the protected
//!   recipe's protections, so that comparing it with [`Recipe::Protected`] measures the
//!   style and not a bug. The tests compare the two with coordsim's `LockComparison`
//!   (`tests/compare_locks.rs`): with 16 clients a herd release woke 14.7 waiters on
//!   average, a queue release 1.00.
//!
//! One term of a [`Locker`]: take the lock, work a number of rounds while holding it,
//! release it. [`run`] connects and takes term after term, with a new session whenever the
//! old one has ended.
//!
//! Without `--cfg madsim` the crate builds against the real `zookeeper-client` and `tokio`
//! (the dependencies are stand-ins that re-export them), as
//! `models/etcd-client/both-ways.sh` checks.

mod herd;
mod line;
mod post;
mod protected;

use std::{future::Future, time::Duration};
use zookeeper_client::{Acls, Client, Error, LockClient, LockPrefix, SessionState};

/// What the holder does with the lock it believes it holds: the service's own work (in its
/// tests, writes to coordsim's fenced resource and the beliefs the recipe checks judge).
pub trait Holding {
    /// The locker has a new session (its first, or one after the last ended), through
    /// `client`.
    fn connected(&mut self, client: &Client);
    /// The locker is about to ask for the lock.
    fn requested(&mut self);
    /// A watch on `watched` (the lock node, or the waiter's predecessor) fired while the
    /// locker waited: the notifications a lock comparison counts per release. zookeeper-
    /// client's own `Client::lock` waits inside the crate and reports none.
    fn woken(&mut self, watched: &str);
    /// The locker believes it holds the lock; `token` is its node's `czxid` (a later
    /// holder's is higher).
    fn acquired(&mut self, token: i64);
    /// One round of work while holding, with `fence` the token to send with it, if the
    /// recipe fences (the post's does not).
    fn work(&mut self, fence: Option<i64>, round: u32) -> impl Future<Output = ()>;
    /// The locker finished its rounds and is letting go.
    fn released(&mut self, token: i64);
    /// The locker stopped holding because of its session, in state `state`.
    fn lost(&mut self, token: i64, state: SessionState);
}

/// How the locker takes the lock and what it trusts while it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recipe {
    /// The seed post's lock, as its reader writes it: no GUID, every error back to the
    /// caller, no look at the session while holding, no fencing token.
    AsThePostWrites,
    /// With a GUID in the node's name, connection losses retried, a holder that stops when
    /// its session is not `SyncConnected`, and fenced writes.
    Protected,
    /// zookeeper-client's own `Client::lock` (a Curator-style prefix, `lock-`), with the
    /// protected recipe's holder: it stops when its session is not `SyncConnected`, and
    /// fences its writes.
    CratesOwnLock,
    /// Herd-style: every waiter tries to create the one node `{dir}/lock` and, failing,
    /// watches it, so each release wakes every waiter. Protected as [`Recipe::Protected`]
    /// is: a lost create reply is settled by the node's owner, connection losses are
    /// retried, the holder stops on its session state and fences its writes, and it deletes
    /// the shared node only while the node is its own.
    Herd,
}

/// A node this client holds the lock by.
#[derive(Debug)]
pub(crate) struct Held<'a> {
    /// Its path.
    pub(crate) path: String,
    /// Its `czxid`: the fencing token.
    pub(crate) token: i64,
    /// Whether another client's node can stand at the same path.
    pub(crate) name: NodeName,
    /// The crate's lock, which deletes the node when dropped (`None`: the recipe deletes
    /// it itself).
    pub(crate) guard: Option<LockClient<'a>>,
}

/// Whether a lock node's path is its client's alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeName {
    /// A sequential name no other client gets.
    Unique,
    /// Every client creates the same path: after this client's node goes, another's may
    /// stand there.
    Shared,
}

/// A client that takes one lock, term after term.
#[derive(Clone, Debug)]
pub struct Locker {
    /// The lock's directory (its parent must exist; the directory is made if missing).
    pub dir: String,
    /// Rounds of work per term.
    pub rounds: u32,
    /// Time between rounds.
    pub round_interval: Duration,
    /// How it takes the lock.
    pub recipe: Recipe,
}

impl Locker {
    /// One term: take the lock, work, let go. `attempt` numbers this client's terms (the
    /// protected recipe's GUID uses it). An error is the store's answer to one of its calls.
    pub async fn term(
        &self,
        client: &Client,
        attempt: u64,
        holding: &mut impl Holding,
    ) -> Result<(), Error> {
        holding.requested();
        let held = match self.recipe {
            Recipe::AsThePostWrites => post::lock(client, &self.dir, holding).await?,
            Recipe::Protected => {
                let guid = format!("{:x}-{attempt}", client.session_id().0);
                protected::lock(client, &self.dir, &guid, holding).await?
            }
            Recipe::CratesOwnLock => crates_lock(client, &self.dir).await?,
            Recipe::Herd => herd::lock(client, &self.dir, holding).await?,
        };
        holding.acquired(held.token);
        let trusts_session = self.recipe == Recipe::AsThePostWrites;
        let fence = (!trusts_session).then_some(held.token);
        for round in 0..self.rounds {
            if !trusts_session {
                let state = client.state();
                if state != SessionState::SyncConnected {
                    holding.lost(held.token, state);
                    let_go(client, &held).await;
                    return Ok(());
                }
            }
            holding.work(fence, round).await;
            tokio::time::sleep(self.round_interval).await;
        }
        // It stops acting before it lets go: the next in line holds as soon as the node goes.
        holding.released(held.token);
        if trusts_session {
            // The post's `Unlock`: one delete, its error to the caller (who, after a lost
            // reply, tries the lock again behind the node it still holds).
            return client.delete(&held.path, None).await;
        }
        let_go(client, &held).await;
        // The crate's lock deletes its node again in the background: gone already, a no-op.
        drop(held.guard);
        Ok(())
    }
}

/// Deletes the node `held` holds by, retrying lost connections; a shared path only while
/// the node there is still the one it took (its `czxid` is the token).
async fn let_go(client: &Client, held: &Held<'_>) {
    match held.name {
        NodeName::Unique => protected::delete_until_gone(client, &held.path).await,
        NodeName::Shared => herd::delete_while_own(client, &held.path, held.token).await,
    }
}

/// Takes the lock of `dir` with zookeeper-client's `Client::lock`; the token is its node's
/// `czxid`, read back.
async fn crates_lock<'a>(client: &'a Client, dir: &str) -> Result<Held<'a>, Error> {
    let lock = client
        .lock(
            LockPrefix::new_curator(dir, "lock-")?,
            b"",
            Acls::anyone_all(),
        )
        .await?;
    let path = lock.lock_path().to_string();
    let token = match client.check_stat(&path).await? {
        Some(stat) => stat.czxid,
        // Gone already: its session ended as it took the lock.
        None => return Err(Error::SessionExpired),
    };
    Ok(Held {
        path,
        token,
        name: NodeName::Unique,
        guard: Some(lock),
    })
}

/// Connects to `cluster` with `session_timeout` and runs `locker`'s terms for ever, with a
/// new session whenever the old one has ended (expired or closed), a tenth of a second
/// between a failed term and the next.
pub async fn run(
    cluster: &str,
    session_timeout: Duration,
    locker: &Locker,
    holding: &mut impl Holding,
) {
    let mut attempt = 0;
    loop {
        let client = match Client::connector()
            .with_session_timeout(session_timeout)
            .connect(cluster)
            .await
        {
            Ok(client) => client,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        holding.connected(&client);
        // Another client may have made it (`NodeExists`); any other failure shows again as
        // the term's `NoNode`, which makes it again.
        let _ = make_dir(&client, &locker.dir).await;
        while !client.state().is_terminated() {
            attempt += 1;
            match locker.term(&client, attempt, holding).await {
                Ok(()) => {}
                Err(Error::NoNode) => {
                    let _ = make_dir(&client, &locker.dir).await;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
}

/// Creates the lock's directory (persistent).
async fn make_dir(client: &Client, dir: &str) -> Result<(), Error> {
    let options =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    client.create(dir, b"", &options).await.map(|_| ())
}
