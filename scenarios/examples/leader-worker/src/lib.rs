//! A leader-elected worker, written only against `etcd-client` 0.21 and `tokio`: the code a
//! service runs in production, unchanged under coordsim's tests.
//!
//! One term of the worker: grant a lease and keep it alive, campaign for the election under
//! it, work while leading (each round fenced by the leader key's creation revision), resign.
//! Between rounds it looks at its lease's keep-alive: once a renewal fails past the TTL, or
//! the server answers TTL 0 (the lease is gone), it stops and reports the loss.
//!
//! What it trusts is the question its tests ask. etcd's `Campaign` waits for the keys ahead
//! of its own to go and then returns, without checking that its own key is still there
//! (etcd-io/etcd#11051). A worker whose lease expired while it waited in `Campaign` is told
//! it leads while another candidate leads too. [`AfterCampaign::TrustCampaign`] is the
//! worker most readers of etcd's docs would write; [`AfterCampaign::CheckOwnKey`] reads its
//! key before it acts.
//!
//! Without `--cfg madsim` the crate builds against the real `etcd-client` and `tokio` (the
//! dependencies are stand-ins that re-export them), as `models/etcd-client/both-ways.sh`
//! checks.

use etcd_client::{Client, Error, LeaderKey, ResignOptions};
use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// What the worker does with the leadership it believes it has: the service's own work (in
/// its tests, writes to coordsim's fenced resource and the beliefs the recipe checks judge).
pub trait Leadership {
    /// The worker is about to campaign.
    fn campaigning(&mut self);
    /// The worker believes it leads, with fencing token `fence` (its election key's creation
    /// revision: a later leader's is higher).
    fn gained(&mut self, fence: i64);
    /// One round of work while leading, fenced by `fence`.
    fn work(&mut self, fence: i64, round: u32) -> impl Future<Output = ()>;
    /// The worker stopped leading, and how it knows.
    fn ended(&mut self, fence: i64, how: Ended);
}

/// How a term ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// It finished its rounds and resigned.
    Resigned,
    /// Its lease is gone: the keep-alive said so, or failed for longer than the TTL.
    LeaseLost,
}

/// What the worker does once `Campaign` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterCampaign {
    /// Believe it leads (etcd's `Campaign` says so).
    TrustCampaign,
    /// Read its own election key first, and lead only if the key is still there.
    CheckOwnKey,
}

/// A leader-elected worker.
#[derive(Clone, Debug)]
pub struct Worker {
    /// The election's name (its key prefix).
    pub election: String,
    /// This worker's value in the election.
    pub name: String,
    /// The lease's TTL, seconds (etcd's unit).
    pub ttl_s: i64,
    /// Rounds of work per term.
    pub rounds: u32,
    /// Time between rounds.
    pub round_interval: Duration,
    /// What it does once `Campaign` returns.
    pub after_campaign: AfterCampaign,
}

impl Worker {
    /// One term: lease, campaign, lead, resign. An error is the store's answer to one of its
    /// calls; the caller retries with a new term.
    pub async fn term(
        &self,
        client: &mut Client,
        leadership: &mut impl Leadership,
    ) -> Result<(), Error> {
        let lease = client.lease_grant(self.ttl_s, None).await?.id();
        let alive = Arc::new(AtomicBool::new(true));
        let keeper = match client.lease_keep_alive(lease).await {
            Ok((keeper, responses)) => tokio::spawn(keep_alive(
                keeper,
                responses,
                Duration::from_secs(self.ttl_s as u64),
                alive.clone(),
            )),
            Err(error) => {
                let _ = client.lease_revoke(lease).await;
                return Err(error);
            }
        };
        let led = self.lead(client, lease, &alive, leadership).await;
        keeper.abort();
        let _ = client.lease_revoke(lease).await;
        led
    }

    async fn lead(
        &self,
        client: &mut Client,
        lease: i64,
        alive: &AtomicBool,
        leadership: &mut impl Leadership,
    ) -> Result<(), Error> {
        leadership.campaigning();
        let mut campaign = client
            .campaign(self.election.as_str(), self.name.as_str(), lease)
            .await?;
        let leader: LeaderKey = campaign
            .take_leader()
            .ok_or_else(|| Error::ElectError("Campaign answered without a leader key".into()))?;
        if self.after_campaign == AfterCampaign::CheckOwnKey
            && client.get(leader.key(), None).await?.kvs().is_empty()
        {
            // Its lease expired while it waited: the key that made it leader is gone.
            return Ok(());
        }
        let fence = leader.rev();
        leadership.gained(fence);
        for round in 0..self.rounds {
            leadership.work(fence, round).await;
            tokio::time::sleep(self.round_interval).await;
            if !alive.load(Ordering::SeqCst) {
                leadership.ended(fence, Ended::LeaseLost);
                return Ok(());
            }
        }
        // It stops acting before it lets go: another may lead as soon as the key is deleted.
        leadership.ended(fence, Ended::Resigned);
        client
            .resign(Some(ResignOptions::new().with_leader(leader)))
            .await?;
        Ok(())
    }
}

/// Renews the lease every third of its TTL; clears `alive` when the server says the lease is
/// gone (TTL 0) or no renewal succeeded for a whole TTL.
async fn keep_alive(
    mut keeper: etcd_client::LeaseKeeper,
    mut responses: etcd_client::LeaseKeepAliveStream,
    ttl: Duration,
    alive: Arc<AtomicBool>,
) {
    let mut renewed_at = tokio::time::Instant::now();
    loop {
        let answer = match keeper.keep_alive().await {
            Ok(()) => responses.message().await,
            Err(error) => Err(error),
        };
        match answer {
            Ok(Some(response)) if response.ttl() > 0 => renewed_at = tokio::time::Instant::now(),
            Ok(Some(_)) | Ok(None) => break,
            Err(_) if renewed_at.elapsed() >= ttl => break,
            Err(_) => {}
        }
        tokio::time::sleep(ttl / 3).await;
    }
    alive.store(false, Ordering::SeqCst);
}
