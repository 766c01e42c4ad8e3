//! `kv_leases` on the Raft store: client processes that hold leases the way lock and
//! registration recipes do. Each round a process grants a lease, puts a key on it, then
//! keeps it alive for a random number of renewals and either revokes it or abandons it (it
//! must then expire), reading the lease keys now and then. After the heal, a final
//! linearizable read of every lease key. The lease checks judge it: keys gone once their
//! lease ended, no lease expired before its TTL, abandoned leases expiring in time.

use crate::workload::{Pending, Workers};
use models::etcd::{EtcdClient, EtcdCluster, kv_response};
use rand::Rng;
use serde::{Deserialize, Serialize};
use sim::{
    Sim,
    history::{OpResult, kv::KvResponse},
};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The key prefix of the workload.
pub const LEASE_PREFIX: &str = "lease/";

/// Parameters of `kv_leases`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KvLeases {
    /// Client processes per client node.
    pub processes_per_client: u32,
    /// Time to live of each lease, milliseconds.
    pub ttl_ms: u64,
    /// Most renewals a lease gets before it is revoked or abandoned.
    pub max_renewals: u32,
    /// Percent of leases revoked at the end of their renewals (the rest are abandoned).
    pub revoke_percent: u32,
}

impl Default for KvLeases {
    fn default() -> Self {
        Self {
            processes_per_client: 2,
            ttl_ms: 1_000,
            max_renewals: 4,
            revoke_percent: 30,
        }
    }
}

impl KvLeases {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.ttl_ms < 100 {
            return Err(format!(
                "a lease TTL of {} ms (expected at least 100 ms)",
                self.ttl_ms
            ));
        }
        if self.revoke_percent > 100 || self.processes_per_client == 0 {
            return Err(
                "expected revoke_percent at most 100 and at least one process per client".into(),
            );
        }
        Ok(())
    }

    pub(crate) fn start(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        let mut workers = Vec::new();
        for node in sim.clients() {
            for process in 0..self.processes_per_client {
                let context = sim.node(node);
                let (cluster, stop, leases) = (cluster.clone(), stop.clone(), self.clone());
                workers.push(sim.spawn(node, async move {
                    let mut rng = context.rng(&format!("lease-workload-{process}"));
                    let clock = context.clock().clone();
                    let mut client = EtcdClient::new(&cluster, context, process);
                    let renewal = Duration::from_millis(leases.ttl_ms / 3);
                    let mut round = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        round += 1;
                        let Some(lease) = granted(&client.lease_grant(leases.ttl_ms).await) else {
                            clock.sleep(renewal).await;
                            continue;
                        };
                        let key = format!("{LEASE_PREFIX}{node}-{process}-{round}");
                        let _ = client.put_with_lease(&key, "held", lease).await;
                        for _ in 0..rng.gen_range(0..=leases.max_renewals) {
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            clock.sleep(renewal).await;
                            let _ = client.lease_keep_alive(lease).await;
                            if rng.gen_bool(0.3) {
                                let _ = client.get_prefix(LEASE_PREFIX).await;
                            }
                        }
                        if rng.gen_range(0..100) < leases.revoke_percent {
                            let _ = client.lease_revoke(lease).await;
                        }
                        let _ = client.get_prefix(LEASE_PREFIX).await;
                    }
                }));
            }
        }
        workers
    }

    /// After the heal: a linearizable read of every lease key from the first client.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        pending: &Pending,
    ) -> Result<(), String> {
        super::final_read(sim, cluster, pending, LEASE_PREFIX).await
    }
}

fn granted(result: &OpResult) -> Option<u64> {
    match kv_response(result)? {
        KvResponse::LeaseGrant { lease, .. } => Some(*lease),
        _ => None,
    }
}
