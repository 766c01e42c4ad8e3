//! `cas_counter` on the Raft store: client processes increment one counter with
//! compare-and-swap transactions, as a lock-free counter on etcd does: read the counter
//! (value and mod revision), then `if mod_revision == seen then put value + 1`. A
//! transaction whose compare fails lost a race to another process; one whose answer never
//! came may or may not have incremented. After the heal, a final linearizable read of the
//! counter: it must count every acknowledged increment, and no more than those plus the
//! increments of unknown outcome.

use super::final_read;
use crate::workload::{Pending, Workers};
use models::etcd::{EtcdClient, EtcdCluster, kv_response};
use serde::{Deserialize, Serialize};
use sim::{
    Sim,
    history::kv::{Compare, CompareOperator, CompareTarget, KvOperation, KvResponse},
};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The counter's key.
pub const COUNTER_KEY: &str = "counter";

/// Parameters of `cas_counter`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CasCounter {
    /// Client processes per client node, all incrementing the one counter.
    pub processes_per_client: u32,
    /// Pause between a process's increments, milliseconds.
    pub think_time_ms: u64,
}

impl Default for CasCounter {
    fn default() -> Self {
        Self {
            processes_per_client: 1,
            think_time_ms: 20,
        }
    }
}

impl CasCounter {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.processes_per_client == 0 {
            return Err("expected at least one process per client".into());
        }
        Ok(())
    }

    /// Every process increments until told to stop.
    pub(crate) fn start(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        let mut workers = Vec::new();
        for node in sim.clients() {
            for process in 0..self.processes_per_client {
                let (context, cluster, stop) = (sim.node(node), cluster.clone(), stop.clone());
                let think = Duration::from_millis(self.think_time_ms);
                workers.push(sim.spawn(node, async move {
                    let clock = context.clock().clone();
                    let mut client = EtcdClient::new(&cluster, context, process);
                    while !stop.load(Ordering::Relaxed) {
                        increment(&mut client).await;
                        clock.sleep(think).await;
                    }
                }));
            }
        }
        workers
    }

    /// After the heal: a linearizable read of the counter.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        pending: &Pending,
    ) -> Result<(), String> {
        final_read(sim, cluster, pending, COUNTER_KEY).await
    }
}

/// One attempt: read the counter, then put its successor if nobody changed it since.
async fn increment(client: &mut EtcdClient) {
    let (value, mod_revision) = match kv_response(&client.get(COUNTER_KEY).await) {
        Some(KvResponse::Get { kvs, .. }) => match kvs.first() {
            // The counter holds what this workload wrote: a number.
            Some(kv) => match kv.value.parse::<u64>() {
                Ok(value) => (value, kv.mod_revision),
                Err(_) => return,
            },
            // Not created yet: a transaction on mod revision 0 creates it.
            None => (0, 0),
        },
        _ => return,
    };
    let _ = client
        .txn(
            vec![Compare {
                key: COUNTER_KEY.into(),
                target: CompareTarget::ModRevision(mod_revision),
                operator: CompareOperator::Equal,
                range_end: None,
            }],
            vec![KvOperation::Put {
                prev_kv: false,
                key: COUNTER_KEY.into(),
                value: (value + 1).to_string(),
                lease: None,
            }],
            vec![],
        )
        .await;
}
