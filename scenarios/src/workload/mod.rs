//! Workloads: what the clients of a scenario do, by name, with their parameters.
//!
//! Each workload runs in two parts the run driver calls: workers that run through the fault
//! phase until told to stop, and a finishing step after the heal (final reads, audits) that
//! must complete within the scenario's liveness bound. What the finishing step is still
//! waiting for is kept in a [`Pending`] note, so a liveness failure names it.

mod kv;
mod kv_leases;
mod ledger;
mod zk;
mod zk_ephemeral_holders;
mod zk_out_of_band_reads;
mod zk_script;
mod zk_sequential_creates;
mod zk_watches;

pub use kv::{KEY_PREFIX, KvMix};
pub use kv_leases::{KvLeases, LEASE_PREFIX};
pub use ledger::LedgerAppends;
pub use zk::{KEYS as ZK_KEYS, ZkMix};
pub use zk_ephemeral_holders::{ZkEphemeralHolders, holder_path};
pub use zk_out_of_band_reads::ZkOutOfBandReads;
pub use zk_script::{Wait, ZkScript, ZkStep, ZkStepOp};
pub use zk_sequential_creates::{SEQUENCE_PARENT, ZkSequentialCreates};
pub use zk_watches::ZkWatches;

use crate::scenario::{Scenario, ScenarioError, Store};
use models::{etcd::EtcdCluster, ledger::Ledger, zk::ZkEnsemble};
use serde::{Deserialize, Serialize};
use sim::{Sim, task::JoinHandle};
use std::sync::{Arc, Mutex, atomic::AtomicBool};

/// The client tasks of a workload.
pub(crate) type Workers = Vec<JoinHandle<()>>;

/// What a scenario's clients do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Workload {
    /// Reads, writes and transactions on a few keys of the Raft store.
    KvMix(KvMix),
    /// Leases granted, kept alive, revoked and abandoned on the Raft store.
    KvLeases(KvLeases),
    /// A mix of ZooKeeper operations on the ZAB store.
    ZkMix(ZkMix),
    /// A writer and watchers on the ZAB store.
    ZkWatches(ZkWatches),
    /// Appends to the demo ledger.
    Ledger(LedgerAppends),
    /// Sessions holding ephemeral nodes and watching each other's on the ZAB store.
    ZkEphemeralHolders(ZkEphemeralHolders),
    /// Protected sequential creates, back to back, on the ZAB store.
    ZkSequentialCreates(ZkSequentialCreates),
    /// An exact trace of client steps at set times on the ZAB store.
    ZkScript(ZkScript),
    /// A writer telling readers out of band what it wrote, on the ZAB store.
    ZkOutOfBandReads(ZkOutOfBandReads),
}

impl Workload {
    /// Its name in scenario files.
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::KvMix(_) => "kv_mix",
            Workload::KvLeases(_) => "kv_leases",
            Workload::ZkMix(_) => "zk_mix",
            Workload::ZkWatches(_) => "zk_watches",
            Workload::Ledger(_) => "ledger",
            Workload::ZkEphemeralHolders(_) => "zk_ephemeral_holders",
            Workload::ZkSequentialCreates(_) => "zk_sequential_creates",
            Workload::ZkScript(_) => "zk_script",
            Workload::ZkOutOfBandReads(_) => "zk_out_of_band_reads",
        }
    }

    /// The store it runs on.
    pub fn store(&self) -> Store {
        match self {
            Workload::KvMix(_) | Workload::KvLeases(_) => Store::Raft,
            Workload::ZkMix(_) | Workload::ZkWatches(_) => Store::Zab,
            Workload::Ledger(_) => Store::Ledger,
            Workload::ZkEphemeralHolders(_)
            | Workload::ZkSequentialCreates(_)
            | Workload::ZkScript(_)
            | Workload::ZkOutOfBandReads(_) => Store::Zab,
        }
    }

    pub(crate) fn validate(&self, scenario: &Scenario) -> Result<(), ScenarioError> {
        let checked = match self {
            Workload::KvMix(mix) => mix.validate(),
            Workload::KvLeases(leases) => leases.validate(),
            Workload::ZkMix(mix) => mix
                .validate()
                .and_then(|()| mix.validate_readers(scenario.clients)),
            Workload::ZkWatches(watches) => watches.validate(),
            Workload::Ledger(appends) => appends.validate(),
            Workload::ZkEphemeralHolders(holders) => holders.validate(),
            Workload::ZkSequentialCreates(creates) => creates.validate(),
            Workload::ZkScript(script) => script.validate(scenario.servers, scenario.clients),
            Workload::ZkOutOfBandReads(reads) => reads.validate(scenario.servers, scenario.clients),
        };
        checked.map_err(|problem| ScenarioError {
            file: None,
            line: None,
            field: "workload".into(),
            problem,
        })
    }

    /// Starts the workers on the running store.
    pub(crate) fn start(&self, sim: &Sim, store: &RunningStore, stop: &Arc<AtomicBool>) -> Workers {
        match (self, store) {
            (Workload::KvMix(mix), RunningStore::Raft(cluster)) => mix.start(sim, cluster, stop),
            (Workload::KvLeases(leases), RunningStore::Raft(cluster)) => {
                leases.start(sim, cluster, stop)
            }
            (Workload::ZkMix(mix), RunningStore::Zab(ensemble)) => mix.start(sim, ensemble, stop),
            (Workload::ZkWatches(watches), RunningStore::Zab(ensemble)) => {
                watches.start(sim, ensemble, stop)
            }
            (Workload::Ledger(appends), RunningStore::Ledger(ledger)) => {
                appends.start(sim, ledger, stop)
            }
            (Workload::ZkEphemeralHolders(holders), RunningStore::Zab(ensemble)) => {
                holders.start(sim, ensemble, stop)
            }
            (Workload::ZkSequentialCreates(creates), RunningStore::Zab(ensemble)) => {
                creates.start(sim, ensemble, stop)
            }
            (Workload::ZkScript(script), RunningStore::Zab(ensemble)) => {
                script.start(sim, ensemble, stop)
            }
            (Workload::ZkOutOfBandReads(reads), RunningStore::Zab(ensemble)) => {
                reads.start(sim, ensemble, stop)
            }
            _ => unreachable!("validated: the workload runs on the scenario's store"),
        }
    }

    /// The finishing step after the heal: `Ok` once done, an error if it cannot be.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        store: &RunningStore,
        pending: &Pending,
    ) -> Result<(), String> {
        match (self, store) {
            (Workload::KvMix(mix), RunningStore::Raft(cluster)) => {
                mix.finish(sim, cluster, pending).await
            }
            (Workload::KvLeases(leases), RunningStore::Raft(cluster)) => {
                leases.finish(sim, cluster, pending).await
            }
            (Workload::ZkMix(mix), RunningStore::Zab(ensemble)) => {
                mix.finish(sim, ensemble, pending).await
            }
            (Workload::ZkWatches(watches), RunningStore::Zab(ensemble)) => {
                watches.finish(sim, ensemble, pending).await
            }
            (Workload::Ledger(appends), RunningStore::Ledger(ledger)) => {
                appends.finish(sim, ledger, pending).await
            }
            (Workload::ZkEphemeralHolders(holders), RunningStore::Zab(ensemble)) => {
                holders.finish(sim, ensemble, pending).await
            }
            (Workload::ZkSequentialCreates(creates), RunningStore::Zab(ensemble)) => {
                creates.finish(sim, ensemble, pending).await
            }
            (Workload::ZkScript(script), RunningStore::Zab(ensemble)) => {
                script.finish(sim, ensemble, pending).await
            }
            (Workload::ZkOutOfBandReads(reads), RunningStore::Zab(ensemble)) => {
                reads.finish(sim, ensemble, pending).await
            }
            _ => unreachable!("validated: the workload runs on the scenario's store"),
        }
    }
}

/// A store started for a run.
#[derive(Clone)]
pub(crate) enum RunningStore {
    /// The Raft store.
    Raft(EtcdCluster),
    /// The ZAB store.
    Zab(ZkEnsemble),
    /// The demo ledger.
    Ledger(Ledger),
}

/// What the finishing step is waiting for, for the liveness report.
#[derive(Clone, Default)]
pub struct Pending(Arc<Mutex<String>>);

impl Pending {
    /// Notes what is being waited for now.
    pub fn set(&self, what: impl Into<String>) {
        *self.0.lock().expect("the pending note is never poisoned") = what.into();
    }

    /// The latest note.
    pub fn get(&self) -> String {
        self.0
            .lock()
            .expect("the pending note is never poisoned")
            .clone()
    }
}
