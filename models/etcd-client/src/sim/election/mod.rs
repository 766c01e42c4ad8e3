//! etcd-client's election client (0.21.1 `src/rpc/election.rs`), as the etcd server answers
//! it: its v3election service (`server/etcdserver/api/v3election/election.go`) runs
//! `concurrency.Election` (`client/v3/concurrency/election.go`) under the caller's lease,
//! through a session made `WithLease(lease)`; this client runs the same steps
//! ([`super::concurrency`]), each a model call under its own process, in the same order.
//!
//! [`ElectionClient::campaign`] reproduces etcd-io/etcd#11051 by default: after waiting for
//! the keys created before its own, it returns leadership without looking whether its own
//! key still exists. [`models::etcd::CampaignCheck::RecheckOwnKey`] (the scenario's
//! `tuning.campaign_check`) switches on the open fix, etcd-io/etcd#22387.

mod types;

pub use types::{
    CampaignResponse, LeaderKey, LeaderResponse, ProclaimOptions, ProclaimResponse, ResignOptions,
    ResignResponse,
};

use super::concurrency::{
    self, MISSING_LEADER_KEY, NO_LEADER, NOT_LEADER, created_at, delete, first_create, get,
    own_key, put, read, session_lease, txn, wait_deletes,
};
use super::error::{Result, concurrency_error};
use super::{
    error::text,
    responses::{KeyValue, ResponseHeader},
};
use futures_util::Stream;
use models::etcd::{
    CampaignCheck, ChangeKind, EtcdClient, GetOptions, WatchItem, WatchOptions, prefix_range_end,
};
use std::{
    pin::Pin,
    task::{Context, Poll},
};

/// etcd-client's `ElectionClient`: one sequential process in the history.
pub struct ElectionClient {
    client: EtcdClient,
    maker: super::ClientMaker,
    check: CampaignCheck,
}

/// The election `name`'s prefix: `NewElection(s, pfx)` keeps `pfx + "/"`.
fn prefix_of(name: &str) -> String {
    format!("{name}/")
}

/// A clone is a handle of its own: a process of its own in the history, as clones of
/// etcd-client's may call concurrently.
impl Clone for ElectionClient {
    fn clone(&self) -> Self {
        Self::new(self.maker.clone())
    }
}

impl ElectionClient {
    /// The history process this handle's calls are recorded as
    /// ([`super::coordsim::history_process`]).
    pub(in crate::sim) fn history_process(&self) -> u32 {
        self.client.process()
    }

    pub(in crate::sim) fn new(maker: super::ClientMaker) -> Self {
        Self {
            client: maker.make(),
            check: maker.campaign_check(),
            maker,
        }
    }

    /// Puts a value as eligible for the election on the prefix key. Multiple sessions can
    /// participate in the election for the same prefix, but only one can be the leader at a
    /// time (etcd-client's `ElectionClient::campaign`; etcd's `Election.Campaign`).
    pub async fn campaign(
        &mut self,
        name: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        lease: i64,
    ) -> Result<CampaignResponse> {
        let name = name.into();
        let (prefix, value) = (
            prefix_of(&text(name.clone(), "name")?),
            text(value.into(), "value")?,
        );
        let client = &mut self.client;
        let lease = session_lease(client, lease).await?;
        let key = own_key(&prefix, lease);
        let joined = txn(
            client,
            vec![created_at(&key, 0)],
            vec![put(&key, &value, lease)],
            vec![get(&key, GetOptions::new())],
        )
        .await?;
        let mut rev = joined.revision;
        if !joined.succeeded {
            let mine = joined
                .read(0)
                .first()
                .ok_or_else(|| concurrency::missing("the campaigner's key"))?;
            rev = mine.create_revision;
            if mine.value != value
                && let Err(error) = proclaim(client, &key, rev, lease, &value).await
            {
                let _ = resign(client, &key, rev).await;
                return Err(error);
            }
        }
        // etcd-io/etcd#11051: upstream returns after this wait without looking at its own
        // key. The fix (#22387) watches the key during the wait, and here reads it after.
        let fixed = self.check == CampaignCheck::RecheckOwnKey;
        wait_deletes(client, &prefix, rev - 1, fixed.then_some(key.as_str())).await?;
        if fixed {
            let (_, kvs) = read(client, &key, GetOptions::new()).await?;
            if kvs.first().map(|kv| kv.create_revision) != Some(rev) {
                return Err(concurrency_error(NOT_LEADER));
            }
        }
        Ok(CampaignResponse {
            header: ResponseHeader::at(joined.revision),
            leader: Some(LeaderKey {
                name,
                key: key.into_bytes(),
                rev: rev as i64,
                lease: lease as i64,
            }),
        })
    }

    /// Lets the leader announce a new value without another election (etcd-client's
    /// `ElectionClient::proclaim`; etcd's `Election.Proclaim` on a resumed election): fails
    /// with `election: not leader` if the leader's key no longer has its revision.
    pub async fn proclaim(
        &mut self,
        value: impl Into<Vec<u8>>,
        options: Option<ProclaimOptions>,
    ) -> Result<ProclaimResponse> {
        let value = text(value.into(), "value")?;
        let leader = options
            .and_then(|options| options.leader)
            .ok_or_else(|| concurrency_error(MISSING_LEADER_KEY))?;
        let key = text(leader.key, "leader key")?;
        let lease = session_lease(&mut self.client, leader.lease).await?;
        let rev = leader_rev(leader.rev);
        let revision = proclaim(&mut self.client, &key, rev, lease, &value).await?;
        Ok(ProclaimResponse {
            header: ResponseHeader::at(revision),
        })
    }

    /// Returns the leader value for the current election (etcd-client's
    /// `ElectionClient::leader`): the key under the prefix created first; `election: no
    /// leader` if there is none.
    pub async fn leader(&mut self, name: impl Into<Vec<u8>>) -> Result<LeaderResponse> {
        let prefix = prefix_of(&text(name.into(), "name")?);
        let (revision, kvs) = read(&mut self.client, &prefix, first_create()).await?;
        let first = kvs
            .into_iter()
            .next()
            .ok_or_else(|| concurrency_error(NO_LEADER))?;
        Ok(LeaderResponse {
            header: ResponseHeader::at(revision),
            kv: Some(KeyValue::from_model(first)),
        })
    }

    /// Releases election leadership (etcd-client's `ElectionClient::resign`; etcd's
    /// `Election.Resign`): deletes the leader's key if it still has its revision. Like
    /// etcd, it succeeds whether or not the key was still the leader's.
    pub async fn resign(&mut self, option: Option<ResignOptions>) -> Result<ResignResponse> {
        let leader = option
            .and_then(|option| option.leader)
            .ok_or_else(|| concurrency_error(MISSING_LEADER_KEY))?;
        let key = text(leader.key, "leader key")?;
        // etcd makes the session (granting a lease for none) before it resigns.
        session_lease(&mut self.client, leader.lease).await?;
        let revision = resign(&mut self.client, &key, leader_rev(leader.rev)).await?;
        Ok(ResignResponse {
            header: ResponseHeader::at(revision),
        })
    }

    /// Returns a stream that observes ordered leader proposals on every current elected
    /// leader key (etcd-client's `ElectionClient::observe`; etcd's `Election.Observe`),
    /// followed by a task on this node with a model client of its own. The stream ends when
    /// a read or a watch fails, as etcd's does; dropping it stops the task.
    pub async fn observe(&mut self, name: impl Into<Vec<u8>>) -> Result<ObserveStream> {
        let prefix = prefix_of(&text(name.into(), "name")?);
        let (sender, answers) = async_channel::unbounded();
        let task = sim::task::spawn_local(observe(self.maker.make(), prefix, sender));
        Ok(ObserveStream {
            answers: Box::pin(answers),
            task,
        })
    }
}

/// A revision of etcd-client (`i64`) as the model's.
fn leader_rev(rev: i64) -> u64 {
    u64::try_from(rev).unwrap_or(0)
}

/// `Election.Proclaim`: puts `value` at `key` if it was created at `rev`; the revision.
async fn proclaim(
    client: &mut EtcdClient,
    key: &str,
    rev: u64,
    lease: u64,
    value: &str,
) -> Result<u64> {
    let answer = txn(
        client,
        vec![created_at(key, rev)],
        vec![put(key, value, lease)],
        Vec::new(),
    )
    .await?;
    match answer.succeeded {
        true => Ok(answer.revision),
        false => Err(concurrency_error(NOT_LEADER)),
    }
}

/// `Election.Resign`: deletes `key` if it was created at `rev`; the revision.
async fn resign(client: &mut EtcdClient, key: &str, rev: u64) -> Result<u64> {
    let answer = txn(
        client,
        vec![created_at(key, rev)],
        vec![delete(key)],
        Vec::new(),
    )
    .await?;
    Ok(answer.revision)
}

/// `Election.observe`: reports the first-created key under `prefix` (waiting for a put if
/// there is none), then each put to it, until it is deleted; again. Returns when a read or
/// a watch fails, or the stream was dropped.
async fn observe(
    mut client: EtcdClient,
    prefix: String,
    sender: async_channel::Sender<LeaderResponse>,
) {
    loop {
        let Ok((revision, kvs)) = read(&mut client, &prefix, first_create()).await else {
            return;
        };
        let first = match kvs.into_iter().next() {
            Some(first) => first,
            None => {
                let options = WatchOptions::new()
                    .with_range(prefix_range_end(&prefix))
                    .with_start_revision(revision);
                let Some(first) = next_change(&mut client, &prefix, options, ChangeKind::Put).await
                else {
                    return;
                };
                first
            }
        };
        let header_revision = first.mod_revision.max(revision);
        if send(&sender, header_revision, first.clone()).await.is_err() {
            return;
        }
        let options = WatchOptions::new().with_start_revision(header_revision + 1);
        let mut watch = client.watch_with_options(&first.key, options).await;
        'leader: loop {
            let WatchItem::Changes(changes) = watch.next().await else {
                watch.close();
                return;
            };
            for change in changes {
                if change.kind == ChangeKind::Delete {
                    break 'leader;
                }
                let revision = change.revision();
                if send(&sender, revision, change.kv).await.is_err() {
                    return;
                }
            }
        }
        watch.close();
    }
}

/// The key of the first change of `kind` on a watch of `key` with `options`; `None` if the
/// watch ends first.
async fn next_change(
    client: &mut EtcdClient,
    key: &str,
    options: WatchOptions,
    kind: ChangeKind,
) -> Option<sim::history::kv::KeyValue> {
    let mut watch = client.watch_with_options(key, options).await;
    let found = loop {
        match watch.next().await {
            WatchItem::Changes(changes) => {
                if let Some(change) = changes.into_iter().find(|change| change.kind == kind) {
                    break Some(change.kv);
                }
            }
            WatchItem::Progress { .. } => {}
            WatchItem::Compacted { .. } | WatchItem::Canceled => break None,
        }
    };
    watch.close();
    found
}

async fn send(
    sender: &async_channel::Sender<LeaderResponse>,
    revision: u64,
    kv: sim::history::kv::KeyValue,
) -> std::result::Result<(), ()> {
    let response = LeaderResponse {
        header: ResponseHeader::at(revision),
        kv: Some(KeyValue::from_model(kv)),
    };
    sender.send(response).await.map_err(|_| ())
}

/// Response stream of `Observe` operation (etcd-client's `ObserveStream`).
pub struct ObserveStream {
    answers: Pin<Box<async_channel::Receiver<LeaderResponse>>>,
    task: sim::task::JoinHandle<()>,
}

impl std::fmt::Debug for ObserveStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObserveStream").finish_non_exhaustive()
    }
}

impl ObserveStream {
    /// Fetches the next message from this stream (`None`: the observation ended).
    pub async fn message(&mut self) -> Result<Option<LeaderResponse>> {
        Ok(self.answers.recv().await.ok())
    }
}

impl Stream for ObserveStream {
    type Item = Result<LeaderResponse>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut()
            .answers
            .as_mut()
            .poll_next(cx)
            .map(|answer| answer.map(Ok))
    }
}

impl Drop for ObserveStream {
    /// The server stops observing when the client's stream goes.
    fn drop(&mut self) {
        self.task.abort();
    }
}
