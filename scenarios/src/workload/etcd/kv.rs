//! `kv_mix` on the Raft store: client processes doing random reads, writes and compare-and-put
//! transactions on a few keys while faults fire; after the heal, a final linearizable read of
//! every key (what the durability checker compares acknowledged writes against).

use crate::workload::{Pending, Workers};
use models::etcd::{ClientConfig, EtcdClient, EtcdCluster};
use rand::Rng;
use serde::{Deserialize, Serialize};
use sim::{
    Sim,
    history::kv::{Compare, CompareOperator, CompareTarget, KvOperation, ReadConsistency},
};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The key prefix of the workload.
pub const KEY_PREFIX: &str = "key/";

/// Parameters of `kv_mix`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KvMix {
    /// Client processes per client node.
    pub processes_per_client: u32,
    /// Keys the workload touches (`key/0`…).
    pub keys: usize,
    /// Longest pause between a process's operations, milliseconds.
    pub think_time_ms: u64,
    /// Puts, percent.
    pub put_percent: u32,
    /// Linearizable gets, percent.
    pub get_percent: u32,
    /// Serializable gets, percent.
    pub serializable_get_percent: u32,
    /// Compare-and-put transactions, percent (the rest are deletes).
    pub txn_percent: u32,
    /// How long one attempt waits for its answer, milliseconds.
    pub request_timeout_ms: u64,
    /// How long a connection attempt may take, milliseconds.
    pub connect_timeout_ms: u64,
    /// Pause before retrying when no server knows a leader, milliseconds.
    pub retry_backoff_ms: u64,
}

impl Default for KvMix {
    fn default() -> Self {
        let client = ClientConfig::default();
        Self {
            processes_per_client: 2,
            keys: 4,
            think_time_ms: 40,
            put_percent: 45,
            get_percent: 35,
            serializable_get_percent: 5,
            txn_percent: 10,
            request_timeout_ms: millis(client.request_timeout),
            connect_timeout_ms: millis(client.connect_timeout),
            retry_backoff_ms: millis(client.retry_backoff),
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl KvMix {
    pub(crate) fn validate(&self) -> Result<(), String> {
        let percent =
            self.put_percent + self.get_percent + self.serializable_get_percent + self.txn_percent;
        if percent > 100 {
            return Err(format!(
                "the operation mix adds up to {percent}% (expected at most 100; deletes take the rest)"
            ));
        }
        if self.keys == 0 || self.processes_per_client == 0 {
            return Err("expected at least one key and one process per client".into());
        }
        Ok(())
    }

    fn client_config(&self) -> ClientConfig {
        ClientConfig {
            request_timeout: Duration::from_millis(self.request_timeout_ms),
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            retry_backoff: Duration::from_millis(self.retry_backoff_ms),
            ..ClientConfig::default()
        }
    }

    /// Starts every client process; each runs until `stop`.
    pub(crate) fn start(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        let mut workers = Vec::new();
        for client in sim.clients() {
            for process in 0..self.processes_per_client {
                let context = sim.node(client);
                let (cluster, stop, mix) = (cluster.clone(), stop.clone(), self.clone());
                workers.push(sim.spawn(client, async move {
                    let mut rng = context.rng(&format!("kv-workload-{process}"));
                    let clock = context.clock().clone();
                    let mut client = EtcdClient::new(&cluster, context, process)
                        .with_config(mix.client_config());
                    let mut sequence = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        sequence += 1;
                        let operation = mix.random_operation(&mut rng, client.process(), sequence);
                        let _ = client.execute(operation).await;
                        let think = rng.gen_range(0..=mix.think_time_ms);
                        clock.sleep(Duration::from_millis(think)).await;
                    }
                }));
            }
        }
        workers
    }

    /// After the heal: a linearizable read of every key from the first client succeeds.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        pending: &Pending,
    ) -> Result<(), String> {
        super::final_read(sim, cluster, pending, KEY_PREFIX).await
    }

    fn random_operation(&self, rng: &mut impl Rng, process: u32, sequence: u64) -> KvOperation {
        let key = format!("{KEY_PREFIX}{}", rng.gen_range(0..self.keys));
        let value = format!("p{process}-{sequence}-{}", rng.r#gen::<u16>());
        let roll = rng.gen_range(0..100);
        let puts = self.put_percent;
        let gets = puts + self.get_percent;
        let serializable = gets + self.serializable_get_percent;
        let txns = serializable + self.txn_percent;
        let get = |key: String, consistency| KvOperation::Get {
            key,
            range_end: None,
            revision: None,
            consistency,
        };
        match roll {
            roll if roll < puts => KvOperation::Put {
                prev_kv: false,
                key,
                value,
                lease: None,
            },
            roll if roll < gets => get(key, ReadConsistency::Linearizable),
            roll if roll < serializable => get(key, ReadConsistency::Serializable),
            roll if roll < txns => KvOperation::Txn {
                compares: vec![Compare {
                    key: key.clone(),
                    target: CompareTarget::Version(rng.gen_range(0..4)),
                    operator: CompareOperator::Greater,
                    range_end: None,
                }],
                success: vec![KvOperation::Put {
                    prev_kv: false,
                    key: key.clone(),
                    value,
                    lease: None,
                }],
                failure: vec![get(key, ReadConsistency::Linearizable)],
            },
            _ => KvOperation::Delete {
                prev_kv: false,
                key,
                range_end: None,
            },
        }
    }
}
