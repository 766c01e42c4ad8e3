//! `zk_watches` on the ZAB store: the first client writes a few nodes round after round
//! (data changes, children created, nodes created that others watch for with `exists`); the
//! other clients keep data, children and exists watches set on them and wait for each to
//! fire, through failovers. After the heal, every client passes the `zk_mix` audit.

use crate::workload::{Pending, Workers, ZkMix, spawn_per_client};
use models::zk::{ZkClient, ZkClientError, ZkEnsemble};
use serde::{Deserialize, Serialize};
use sim::{Sim, history::zk::CreateMode};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The nodes the writer changes and the watchers watch.
const PATHS: [&str; 3] = ["/w0", "/w1", "/w2"];

/// Parameters of `zk_watches`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZkWatches {
    /// Session timeout the clients ask for, milliseconds.
    pub session_timeout_ms: u64,
}

impl Default for ZkWatches {
    fn default() -> Self {
        Self {
            session_timeout_ms: 3_000,
        }
    }
}

impl ZkWatches {
    pub(crate) fn validate(&self) -> Result<(), String> {
        self.audit().validate()
    }

    /// The audit after the heal is `zk_mix`'s, with this workload's session timeout.
    fn audit(&self) -> ZkMix {
        ZkMix {
            session_timeout_ms: self.session_timeout_ms,
            ..ZkMix::default()
        }
    }

    pub(crate) fn start(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        spawn_per_client(sim, |index, _, context| {
            let (ensemble, stop) = (ensemble.clone(), stop.clone());
            let mut config = ensemble.client_config(index as u32);
            config.session_timeout = Duration::from_millis(self.session_timeout_ms);
            async move {
                let Ok(zk) = ensemble.connect(&context, config).await else {
                    return;
                };
                if index == 0 {
                    writer(zk, stop).await
                } else {
                    watcher(zk, stop).await
                }
            }
        })
    }

    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        pending: &Pending,
    ) -> Result<(), String> {
        self.audit().finish(sim, ensemble, pending).await
    }
}

async fn writer(zk: ZkClient, stop: Arc<AtomicBool>) {
    for path in PATHS {
        while !matches!(
            zk.create(path, "0", CreateMode::Persistent).await,
            Ok(_) | Err(ZkClientError::Api(_))
        ) {}
    }
    let mut round = 0u64;
    while !stop.load(Ordering::SeqCst) {
        round += 1;
        let path = PATHS[(round % 3) as usize];
        let _ = zk.set_data(path, &round.to_string(), None).await;
        if round.is_multiple_of(4) {
            let _ = zk
                .create(&format!("/w0/c{round}"), "", CreateMode::Persistent)
                .await;
        }
        if round.is_multiple_of(6) {
            let _ = zk
                .create(&format!("/x{}", round / 6), "", CreateMode::Persistent)
                .await;
        }
        if zk.is_expired() {
            return;
        }
    }
}

async fn watcher(zk: ZkClient, stop: Arc<AtomicBool>) {
    let mut round = 0u64;
    while !stop.load(Ordering::SeqCst) && !zk.is_expired() {
        round += 1;
        let mut watches = Vec::new();
        for path in PATHS {
            if let Ok((_, _, watch)) = zk.get_data_watch(path).await {
                watches.push(watch);
            }
        }
        if let Ok((_, _, watch)) = zk.get_children_watch("/w0").await {
            watches.push(watch);
        }
        if let Ok((_, watch)) = zk.exists_watch(&format!("/x{}", round + 1)).await {
            watches.push(watch);
        }
        // Each watch fires once, when its node next changes; once the writer stops, some
        // never will, so wait for them only until the workload is told to stop.
        for watch in watches {
            let fired = watch.fired();
            futures_util::pin_mut!(fired);
            loop {
                match sim::time::timeout(Duration::from_millis(200), &mut fired).await {
                    Ok(_) => break,
                    Err(_) if stop.load(Ordering::SeqCst) => return,
                    Err(_) => {}
                }
            }
        }
    }
}
