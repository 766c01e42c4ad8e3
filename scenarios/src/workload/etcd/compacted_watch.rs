//! `compacted_watch` on the Raft store: the election waiter of etcd-io/etcd#18089, round
//! after round on the first client. Each round, under its own prefix `election/<round>/`: a
//! leader key is put and deleted (its holder resigned), history is compacted at the
//! delete's revision, and a waiter watches the prefix from that revision — the compaction
//! revision itself stays watchable, and the delete at it is the event the waiter waits for.
//! Then the next candidate's key is put, and the round waits until the watch has delivered
//! up to that put (or gives up after a while) and closes the watch. After the heal, a final
//! linearizable read of the election keys.
//!
//! `etcd.watch_delivery` judges it: every acknowledged change from the watch's start up to
//! the last change it delivered must have been delivered, the delete included.

use super::final_read;
use crate::workload::{Pending, Workers};
use models::etcd::{EtcdClient, EtcdCluster, WatchItem, kv_response, prefix_range_end};
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

/// The prefix under which each round's election keys live.
const ELECTION_PREFIX: &str = "election/";

/// Parameters of `compacted_watch`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompactedWatch {
    /// Pause between rounds, milliseconds.
    pub round_every_ms: u64,
    /// How long a round waits for its watch to deliver the next candidate's put,
    /// milliseconds.
    pub watch_wait_ms: u64,
}

impl Default for CompactedWatch {
    fn default() -> Self {
        Self {
            round_every_ms: 200,
            watch_wait_ms: 1_000,
        }
    }
}

impl CompactedWatch {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.watch_wait_ms == 0 {
            return Err("expected a positive watch_wait_ms".into());
        }
        Ok(())
    }

    /// The rounds, on the first client.
    pub(crate) fn start(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        let waiter = sim.clients()[0];
        let (context, cluster, stop) = (sim.node(waiter), cluster.clone(), stop.clone());
        let workload = self.clone();
        vec![sim.spawn(waiter, async move {
            let mut client = EtcdClient::new(&cluster, context.clone(), 0);
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                round += 1;
                workload.round(&mut client, round).await;
                context
                    .clock()
                    .sleep(Duration::from_millis(workload.round_every_ms))
                    .await;
            }
        })]
    }

    /// After the heal: a linearizable read of every election key.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        pending: &Pending,
    ) -> Result<(), String> {
        final_read(sim, cluster, pending, ELECTION_PREFIX).await
    }

    /// One round; a step that is not acknowledged ends it early (the next round starts
    /// afresh under its own prefix).
    async fn round(&self, client: &mut EtcdClient, round: u64) {
        let prefix = format!("{ELECTION_PREFIX}{round}/");
        let leader = format!("{prefix}leader");
        if kv_response(&client.put(&leader, "me").await).is_none() {
            return;
        }
        let Some(KvResponse::Delete { revision, .. }) =
            kv_response(&client.delete(&leader).await).cloned()
        else {
            return;
        };
        if !matches!(client.compact(revision).await, OpResult::Ok { .. }) {
            return;
        }
        let mut watch = client
            .watch(&prefix, Some(prefix_range_end(&prefix)), revision)
            .await;
        let Some(KvResponse::Put { revision: next, .. }) =
            kv_response(&client.put(&format!("{prefix}next"), "you").await).cloned()
        else {
            watch.close();
            return;
        };
        let wait = Duration::from_millis(self.watch_wait_ms);
        let _ = sim::time::timeout(wait, async {
            while watch.next_revision() <= next {
                if let WatchItem::Compacted { .. } = watch.next().await {
                    return;
                }
            }
        })
        .await;
        watch.close();
    }
}
