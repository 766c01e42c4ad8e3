//! `watch_resume` on the Raft store: the first client writes (puts, and now and then a
//! delete) a few keys under `watch/` at a steady pace; at a set time every other client
//! opens a watch on the prefix from a past revision and follows it until told to stop. The
//! watch stream reconnects by itself when its server crashes or is cut off and resumes from
//! the revision after the last change it delivered, so a plan that breaks its connections
//! tests exactly that. After the heal, a final linearizable read of the keys.
//!
//! `etcd.watch_delivery` judges the history: every acknowledged change after the start
//! revision delivered once, in order, with its content, across the reconnects.

use super::{final_read, until};
use crate::workload::{Pending, Workers, spawn_per_client};
use models::etcd::{EtcdClient, EtcdCluster, WatchItem, kv_response, prefix_range_end};
use serde::{Deserialize, Serialize};
use sim::{NodeContext, Sim, history::kv::KvResponse};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The prefix of the keys the writer writes and the watchers watch.
const WATCH_PREFIX: &str = "watch/";

/// How often a watcher waiting for changes looks whether it was told to stop.
const STOP_POLL: Duration = Duration::from_millis(100);

/// Parameters of `watch_resume`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WatchResume {
    /// Keys the writer writes (`watch/0`…).
    pub keys: usize,
    /// Pause between the writer's writes, milliseconds.
    pub write_every_ms: u64,
    /// One write in this many is a delete (of a key that may or may not exist); the others
    /// are puts.
    pub delete_one_in: u32,
    /// When the watchers open their watches, milliseconds of simulated time since the world
    /// started (the plan's clock).
    pub watch_at_ms: u64,
    /// How many revisions before the current one a watch starts: a watch from a past
    /// revision must first replay the changes since, then follow new ones.
    pub rewind_revisions: u64,
}

impl Default for WatchResume {
    fn default() -> Self {
        Self {
            keys: 7,
            write_every_ms: 50,
            delete_one_in: 9,
            watch_at_ms: 1_000,
            rewind_revisions: 2,
        }
    }
}

impl WatchResume {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.keys == 0 || self.delete_one_in == 0 || self.write_every_ms == 0 {
            return Err(
                "expected at least one key, a positive write_every_ms and delete_one_in".into(),
            );
        }
        Ok(())
    }

    /// The writer on the first client, watchers on the others.
    pub(crate) fn start(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        spawn_per_client(sim, |index, _, context| {
            let (cluster, stop) = (cluster.clone(), stop.clone());
            let workload = self.clone();
            async move {
                if index == 0 {
                    workload.write(cluster, context, stop).await;
                } else {
                    workload.watch(cluster, context, stop).await;
                }
            }
        })
    }

    /// After the heal: a linearizable read of every key.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        cluster: &EtcdCluster,
        pending: &Pending,
    ) -> Result<(), String> {
        final_read(sim, cluster, pending, WATCH_PREFIX).await
    }

    async fn write(self, cluster: EtcdCluster, context: NodeContext, stop: Arc<AtomicBool>) {
        let mut client = EtcdClient::new(&cluster, context.clone(), 0);
        let every = Duration::from_millis(self.write_every_ms);
        let mut round = 0u64;
        while !stop.load(Ordering::Relaxed) {
            round += 1;
            let key = format!("{WATCH_PREFIX}{}", round % self.keys as u64);
            if round.is_multiple_of(u64::from(self.delete_one_in)) {
                let _ = client.delete(&key).await;
            } else {
                let _ = client.put(&key, &format!("v{round}")).await;
            }
            context.clock().sleep(every).await;
        }
    }

    /// Opens the watch from `rewind_revisions` before the current revision and follows it
    /// until told to stop, then closes it.
    async fn watch(self, cluster: EtcdCluster, context: NodeContext, stop: Arc<AtomicBool>) {
        until(self.watch_at_ms).await;
        let mut client = EtcdClient::new(&cluster, context.clone(), 0);
        let current = loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            if let Some(KvResponse::Get { revision, .. }) =
                kv_response(&client.get_prefix(WATCH_PREFIX).await)
            {
                break *revision;
            }
        };
        let start = current.saturating_sub(self.rewind_revisions).max(1);
        let mut stream = client
            .watch(WATCH_PREFIX, Some(prefix_range_end(WATCH_PREFIX)), start)
            .await;
        'follow: while !stop.load(Ordering::Relaxed) {
            // The same `next` future across the polls: nothing it received is dropped until
            // the workload stops.
            let next = stream.next();
            futures_util::pin_mut!(next);
            loop {
                match sim::time::timeout(STOP_POLL, &mut next).await {
                    Ok(WatchItem::Changes(_) | WatchItem::Progress { .. }) => break,
                    // A watch from a compacted revision is over (nothing compacts here).
                    Ok(WatchItem::Compacted { .. } | WatchItem::Canceled) => break 'follow,
                    Err(_) if stop.load(Ordering::Relaxed) => break 'follow,
                    Err(_) => {}
                }
            }
        }
        stream.close();
    }
}
