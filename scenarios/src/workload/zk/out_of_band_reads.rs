//! `zk_out_of_band_reads` on the ZAB store: ZooKeeper's "hidden channel". The first client
//! writes `/x` round after round; after each acknowledgement it tells the other clients,
//! out of band (not through ZooKeeper), and waits until each has read `/x` once. A reader's
//! read is plain, so from a follower it may miss the write it was just told about
//! (sequential consistency: "ZooKeeper does not guarantee simultaneously consistent views
//! across clients"; Programmer's Guide, *Consistency Guarantees*); every `sync_every`-th
//! round it syncs first, and then it may not. The writes and reads are in the history; the
//! tellings are not (the checks judge the reads against acknowledgement times, which is
//! what a telling follows). After the heal, the `zk_mix` audit.

use crate::workload::{Pending, Workers, ZkMix};
use models::zk::{ZkClient, ZkClientError, ZkEnsemble};
use serde::{Deserialize, Serialize};
use sim::{NodeContext, NodeId, Sim, history::zk::CreateMode};
use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The node written and read.
const OUT_OF_BAND_PATH: &str = "/x";

/// Parameters of `zk_out_of_band_reads`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZkOutOfBandReads {
    /// The servers the writer (the first client) may use (all if empty).
    pub writer_servers: Vec<NodeId>,
    /// The servers the readers (the other clients) may use (all if empty).
    pub reader_servers: Vec<NodeId>,
    /// Every this many rounds a reader syncs before it reads.
    pub sync_every: u64,
    /// Session timeout the clients ask for, milliseconds.
    pub session_timeout_ms: u64,
}

impl Default for ZkOutOfBandReads {
    fn default() -> Self {
        Self {
            writer_servers: Vec::new(),
            reader_servers: Vec::new(),
            sync_every: 3,
            session_timeout_ms: 2_000,
        }
    }
}

/// How often a waiting client looks at the out-of-band relay.
const POLL: Duration = Duration::from_millis(1);

/// The out-of-band channel: the last round the writer told of, and the last each reader read.
#[derive(Default)]
struct Relay {
    told: u64,
    read: BTreeMap<NodeId, u64>,
}

impl ZkOutOfBandReads {
    pub(crate) fn validate(&self, servers: usize, clients: usize) -> Result<(), String> {
        if clients < 2 {
            return Err(format!(
                "{clients} client (expected a writer and at least one reader)"
            ));
        }
        if let Some(node) = self
            .writer_servers
            .iter()
            .chain(&self.reader_servers)
            .find(|node| !node.is_server() || node.ordinal() >= servers)
        {
            return Err(format!(
                "{node} is not a server of the scenario (s1..s{servers})"
            ));
        }
        if self.sync_every == 0 || self.session_timeout_ms == 0 {
            return Err("expected a positive sync_every and session timeout".into());
        }
        Ok(())
    }

    pub(crate) fn start(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        let relay = Arc::new(Mutex::new(Relay::default()));
        let clients = sim.clients();
        let readers: Vec<NodeId> = clients[1..].to_vec();
        clients
            .iter()
            .enumerate()
            .map(|(index, &node)| {
                let (ensemble, context, stop) = (ensemble.clone(), sim.node(node), stop.clone());
                let (relay, readers, parameters) = (relay.clone(), readers.clone(), self.clone());
                sim.spawn(node, async move {
                    let servers = if index == 0 {
                        &parameters.writer_servers
                    } else {
                        &parameters.reader_servers
                    };
                    let timeout = Duration::from_millis(parameters.session_timeout_ms);
                    let Some(zk) = connect(&ensemble, &context, servers, timeout, &stop).await
                    else {
                        return;
                    };
                    if index == 0 {
                        write(&zk, &relay, &readers, &stop).await
                    } else {
                        read(&zk, context.id(), &relay, parameters.sync_every, &stop).await
                    }
                })
            })
            .collect()
    }

    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        pending: &Pending,
    ) -> Result<(), String> {
        ZkMix::default().finish(sim, ensemble, pending).await
    }
}

async fn connect(
    ensemble: &ZkEnsemble,
    context: &NodeContext,
    servers: &[NodeId],
    session_timeout: Duration,
    stop: &AtomicBool,
) -> Option<ZkClient> {
    let mut config = ensemble.client_config(context.id().ordinal() as u32);
    if !servers.is_empty() {
        config.servers = servers.to_vec();
    }
    config.session_timeout = session_timeout;
    while !stop.load(Ordering::SeqCst) {
        if let Ok(zk) = ensemble.connect(context, config.clone()).await {
            return Some(zk);
        }
    }
    None
}

/// Writes round after round; tells the readers after each acknowledgement and waits until
/// they have read.
async fn write(zk: &ZkClient, relay: &Mutex<Relay>, readers: &[NodeId], stop: &AtomicBool) {
    let mut round = 0u64;
    let mut created = false;
    while !stop.load(Ordering::SeqCst) {
        let written = if created {
            zk.set_data(OUT_OF_BAND_PATH, &(round + 1).to_string(), None)
                .await
                .map(drop)
        } else {
            zk.create(OUT_OF_BAND_PATH, "0", CreateMode::Persistent)
                .await
                .map(drop)
        };
        match written {
            Ok(()) | Err(ZkClientError::Api(_)) if !created => {
                created = true;
                continue;
            }
            Ok(()) => round += 1,
            Err(ZkClientError::ConnectionLoss) => continue,
            Err(_) => return,
        }
        relay.lock().expect("the relay is never poisoned").told = round;
        while !stop.load(Ordering::SeqCst) {
            let all_read = {
                let relay = relay.lock().expect("the relay is never poisoned");
                readers
                    .iter()
                    .all(|reader| relay.read.get(reader).copied().unwrap_or(0) >= round)
            };
            if all_read {
                break;
            }
            sim::time::sleep(POLL).await;
        }
    }
}

/// Reads once per round it is told of; syncs first every `sync_every`-th round. Whatever
/// the read's outcome, the round is done; a reader whose session ended is done for good.
async fn read(zk: &ZkClient, me: NodeId, relay: &Mutex<Relay>, sync_every: u64, stop: &AtomicBool) {
    let mut last = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let told = relay.lock().expect("the relay is never poisoned").told;
        if told == last {
            sim::time::sleep(POLL).await;
            continue;
        }
        last = told;
        let synced = if told.is_multiple_of(sync_every) {
            zk.sync("/").await
        } else {
            Ok(())
        };
        let outcome = match synced {
            Ok(()) => zk.get_data(OUT_OF_BAND_PATH).await.map(drop),
            Err(error) => Err(error),
        };
        let session_ended = matches!(
            outcome,
            Err(ZkClientError::SessionExpired | ZkClientError::Closed)
        );
        relay
            .lock()
            .expect("the relay is never poisoned")
            .read
            .insert(me, if session_ended { u64::MAX } else { told });
        if session_ended {
            return;
        }
    }
}
