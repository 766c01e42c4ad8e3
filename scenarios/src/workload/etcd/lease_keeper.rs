//! `lease_keeper` on the Raft store: the first client (the holder) grants a few named leases
//! at a set time, attaches a key to each (`lease/<name>`) and renews each on its own
//! schedule in the background: never (abandoned at once), until a set time, or until the
//! server says the lease is gone. Meanwhile every client reads the lease keys now and then,
//! and the holder asks each lease's remaining time to live. After the heal, a final
//! linearizable read of the lease keys.
//!
//! A fault plan aims at the moments this makes: the holder paused past a TTL, the leader
//! deposed while a lease is kept alive, the leader cut off with a reader once a lease is
//! abandoned. The lease checks judge the history (keys gone once their lease ended, no
//! lease expired before its TTL, abandoned leases expiring in time); tests read from it when
//! each lease was granted, renewed, asked about and ended.
//!
//! ```toml
//! [workload]
//! kind = "lease_keeper"
//! grant_at_ms = 1000
//! leases = [
//!   { name = "kept", ttl_ms = 1000, renewal = { until_ms = 4500 } },
//!   { name = "abandoned", ttl_ms = 1000, renewal = "never" },   # or "until_gone"
//! ]
//! ```

use super::{final_read, until};
use crate::workload::{LEASE_PREFIX, Pending, Workers, spawn_per_client};
use models::etcd::{ClientConfig, EtcdClient, EtcdCluster, kv_response, lease_gone};
use serde::{Deserialize, Serialize};
use sim::{
    NodeContext, Sim,
    history::{OpResult, kv::KvResponse},
    time::SimTime,
};
use std::{
    collections::BTreeSet,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// Parameters of `lease_keeper`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LeaseKeeper {
    /// When the holder grants its leases, milliseconds of simulated time since the world
    /// started (the plan's clock).
    pub grant_at_ms: u64,
    /// The leases the holder grants, in this order.
    pub leases: Vec<HeldLease>,
    /// How often a lease being kept alive is renewed, milliseconds.
    pub renew_every_ms: u64,
    /// How often each client reads the lease keys (and the holder asks each lease's
    /// remaining time to live), milliseconds.
    pub read_every_ms: u64,
    /// How long one operation may take in all, retries included, milliseconds: a reader
    /// stranded with a server that cannot answer gives up on a read this soon and tries
    /// again.
    pub operation_timeout_ms: u64,
}

/// One lease the holder grants.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeldLease {
    /// Its name: the key attached to it is `lease/<name>`.
    pub name: String,
    /// Its time to live, milliseconds.
    pub ttl_ms: u64,
    /// How the holder renews it.
    pub renewal: Renewal,
}

/// How the holder renews a lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Renewal {
    /// Never: the lease is abandoned once granted and must expire.
    Never,
    /// Until this time (milliseconds of simulated time since the world started), then
    /// abandoned.
    UntilMs(u64),
    /// Until the server says the lease is gone (expired or revoked), as etcd's keep-alive
    /// loop does.
    UntilGone,
}

impl HeldLease {
    /// The key attached to the lease.
    fn key(&self) -> String {
        format!("{LEASE_PREFIX}{}", self.name)
    }
}

impl Default for LeaseKeeper {
    fn default() -> Self {
        Self {
            grant_at_ms: 1_000,
            leases: vec![HeldLease {
                name: "lock".into(),
                ttl_ms: 1_000,
                renewal: Renewal::UntilGone,
            }],
            renew_every_ms: 300,
            read_every_ms: 200,
            operation_timeout_ms: 3_000,
        }
    }
}

impl LeaseKeeper {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.leases.is_empty() {
            return Err("no leases to hold (expected at least one in `leases`)".into());
        }
        let mut names = BTreeSet::new();
        for lease in &self.leases {
            if lease.name.is_empty() || !names.insert(lease.name.as_str()) {
                return Err(format!(
                    "lease name {:?} is empty or used twice (expected unique names)",
                    lease.name
                ));
            }
            if lease.ttl_ms < 100 {
                return Err(format!(
                    "lease `{}` has a TTL of {} ms (expected at least 100 ms)",
                    lease.name, lease.ttl_ms
                ));
            }
            if lease.renewal != Renewal::Never && self.renew_every_ms >= lease.ttl_ms {
                return Err(format!(
                    "lease `{}` is renewed every {} ms, not within its TTL of {} ms (expected \
                     renew_every_ms below the TTL of every lease kept alive)",
                    lease.name, self.renew_every_ms, lease.ttl_ms
                ));
            }
        }
        if self.renew_every_ms == 0 || self.read_every_ms == 0 || self.operation_timeout_ms == 0 {
            return Err(
                "expected positive renew_every_ms, read_every_ms and operation_timeout_ms".into(),
            );
        }
        Ok(())
    }

    fn client_config(&self) -> ClientConfig {
        ClientConfig {
            operation_timeout: Duration::from_millis(self.operation_timeout_ms),
            ..ClientConfig::default()
        }
    }

    /// The holder on the first client, readers on the others.
    pub(crate) fn start(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        spawn_per_client(sim, |index, _, context| {
            let (cluster, stop) = (cluster.clone(), stop.clone());
            let keeper = self.clone();
            async move {
                if index == 0 {
                    keeper.hold(cluster, context, stop).await;
                } else {
                    keeper.read(cluster, context, stop).await;
                }
            }
        })
    }

    /// After the heal: a linearizable read of every lease key.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        pending: &Pending,
    ) -> Result<(), String> {
        final_read(sim, cluster, pending, LEASE_PREFIX).await
    }

    /// Grants the leases, renews them in the background, and reads the keys and the
    /// leases' remaining time until told to stop.
    async fn hold(self, cluster: EtcdCluster, context: NodeContext, stop: Arc<AtomicBool>) {
        until(self.grant_at_ms).await;
        let mut client =
            EtcdClient::new(&cluster, context.clone(), 0).with_config(self.client_config());
        let mut granted = Vec::new();
        let mut renewals = Vec::new();
        for (index, lease) in self.leases.iter().enumerate() {
            let Some(id) = self.grant(&mut client, lease, &context, &stop).await else {
                continue;
            };
            granted.push(id);
            if lease.renewal == Renewal::Never {
                continue;
            }
            // Each renewal loop is its own client process, as etcd's keep-alive stream is.
            let process = 1 + u32::try_from(index).expect("few leases");
            let renewer = EtcdClient::new(&cluster, context.clone(), process)
                .with_config(self.client_config());
            let every = Duration::from_millis(self.renew_every_ms);
            renewals.push(sim::task::spawn_local(renew(
                renewer,
                id,
                lease.renewal,
                every,
                context.clone(),
                stop.clone(),
            )));
        }
        let every = Duration::from_millis(self.read_every_ms);
        while !stop.load(Ordering::Relaxed) {
            let _ = client.get_prefix(LEASE_PREFIX).await;
            for id in &granted {
                let _ = client.lease_time_to_live(*id).await;
            }
            context.clock().sleep(every).await;
        }
        for renewal in renewals {
            let _ = renewal.await;
        }
    }

    /// Grants `lease` and attaches its key, retrying until both are acknowledged; `None` if
    /// told to stop first, or if the lease was gone before its key could be attached.
    async fn grant(
        &self,
        client: &mut EtcdClient,
        lease: &HeldLease,
        context: &NodeContext,
        stop: &AtomicBool,
    ) -> Option<u64> {
        let backoff = Duration::from_millis(50);
        let id = loop {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(KvResponse::LeaseGrant { lease, .. }) =
                kv_response(&client.lease_grant(lease.ttl_ms).await)
            {
                break *lease;
            }
            context.clock().sleep(backoff).await;
        };
        loop {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            match client.put_with_lease(&lease.key(), "held", id).await {
                OpResult::Ok { .. } => return Some(id),
                result if lease_gone(&result) => return None,
                _ => context.clock().sleep(backoff).await,
            }
        }
    }

    /// Reads the lease keys every `read_every_ms` until told to stop.
    async fn read(self, cluster: EtcdCluster, context: NodeContext, stop: Arc<AtomicBool>) {
        until(self.grant_at_ms).await;
        let mut client =
            EtcdClient::new(&cluster, context.clone(), 0).with_config(self.client_config());
        let every = Duration::from_millis(self.read_every_ms);
        while !stop.load(Ordering::Relaxed) {
            let _ = client.get_prefix(LEASE_PREFIX).await;
            context.clock().sleep(every).await;
        }
    }
}

/// Renews `lease` every `every` while `renewal` says so, until the server says it is gone or
/// the workload is told to stop.
async fn renew(
    mut client: EtcdClient,
    lease: u64,
    renewal: Renewal,
    every: Duration,
    context: NodeContext,
    stop: Arc<AtomicBool>,
) {
    loop {
        let renewing = match renewal {
            Renewal::Never => false,
            Renewal::UntilMs(at_ms) => sim::time::now() < SimTime::from_millis(at_ms),
            Renewal::UntilGone => true,
        };
        if !renewing || stop.load(Ordering::Relaxed) {
            return;
        }
        if lease_gone(&client.lease_keep_alive(lease).await) {
            return;
        }
        context.clock().sleep(every).await;
    }
}
