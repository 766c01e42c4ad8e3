//! Workloads that each exercise one feature of the etcd-like store under a fault plan:
//! leases held through faults ([`LeaseKeeper`]), watches resumed after reconnects
//! ([`WatchResume`]), a compare-and-swap counter ([`CasCounter`]) and watches from a
//! compaction revision ([`CompactedWatch`]).
//!
//! Their steps are timed by simulated time since the world started, the clock a scenario's
//! fault plan is written in, so that a plan can aim at a step ("pause the holder once its
//! lease is granted", "crash servers once the watch is open"). Everything they do is
//! recorded in the history by the client library (operations, watch records); checks and
//! tests read nothing else.

mod cas_counter;
mod compacted_watch;
pub(super) mod kv;
pub(super) mod kv_leases;
mod lease_keeper;
pub(super) mod pubsub;
mod watch_resume;

pub use cas_counter::{COUNTER_KEY, CasCounter};
pub use compacted_watch::CompactedWatch;
pub use lease_keeper::{HeldLease, LeaseKeeper, Renewal};
pub use watch_resume::WatchResume;

use super::Pending;
use models::etcd::{EtcdClient, EtcdCluster, kv_response};
use sim::{NodeId, Sim, time::SimTime};

/// Waits until `at_ms` milliseconds of simulated time since the world started (at once if
/// that has passed). The fault plan is timed by the same clock; a node's local clock may be
/// offset and drifting, so it cannot line steps up with the plan.
async fn until(at_ms: u64) {
    let now = sim::time::now();
    let at = SimTime::from_millis(at_ms);
    if at > now {
        sim::time::sleep(at.saturating_duration_since(now)).await;
    }
}

/// The finishing step of the Raft store's workloads: a linearizable read of every key under
/// `prefix` from the first client, retried until it succeeds (what the durability checker
/// compares acknowledged writes against).
pub(crate) async fn final_read(
    sim: &Sim,
    cluster: &EtcdCluster,
    pending: &Pending,
    prefix: &'static str,
) -> Result<(), String> {
    let reader = NodeId::client(0);
    let (context, cluster, pending) = (sim.node(reader), cluster.clone(), pending.clone());
    sim.spawn(reader, async move {
        let mut client = EtcdClient::new(&cluster, context, 1_000);
        let mut attempt = 0;
        loop {
            attempt += 1;
            pending.set(format!(
                "{reader}: final read of {prefix}* (attempt {attempt})"
            ));
            if kv_response(&client.get_prefix(prefix).await).is_some() {
                return;
            }
        }
    })
    .await
    .map_err(|_| format!("{reader}'s final read task died"))
}
