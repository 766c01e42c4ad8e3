//! Workloads: what the clients of a scenario do, by name, with their parameters.
//!
//! Each workload runs in two parts the run driver calls: workers that run through the fault
//! phase until told to stop, and a finishing step after the heal (final reads, audits) that
//! must complete within the scenario's liveness bound. What the finishing step is still
//! waiting for is kept in a [`Pending`] note, so a liveness failure names it.

mod etcd;
mod ledger;
mod shared;
mod user;
mod zk;

pub use etcd::kv::{KEY_PREFIX, KvMix};
pub use etcd::kv_leases::{KvLeases, LEASE_PREFIX};
pub use etcd::pubsub::{PubSub, SUBSCRIBER_PROCESS};
pub use etcd::{
    COUNTER_KEY, CasCounter, CompactedWatch, HeldLease, LeaseKeeper, Renewal, WatchResume,
};
pub use ledger::LedgerAppends;
pub use shared::discovery::{
    DISCOVERER_PROCESS, Discovery, DiscoveryRecipe, GROUP, MEMBER_PROCESS,
};
pub use shared::elections::{ELECTION_NAME, ElectionRecipe, Elections, LeaderTerm};
pub use shared::locks::{LOCK_NAME, LockRecipe, Locks, RESOURCE_NAME};
pub use shared::recipe_session::{LOCK_USER, LockNodeAcl};
pub use user::{
    ElectionBeliefs, FencedResource, LockBeliefs, Resource, ResourceClient, ResourceUnavailable,
    ResourceVerdict, UserCode, UserNode,
};
pub use zk::double_barrier::{BARRIER_PREFIX, DoubleBarrier};
pub use zk::ephemeral_holders::{ZkEphemeralHolders, holder_path};
pub use zk::fifo_queue::{FifoQueue, QUEUE_PATH};
pub use zk::mix::{KEYS as ZK_KEYS, ZkMix};
pub use zk::out_of_band_reads::ZkOutOfBandReads;
pub use zk::ready_config::{CONFIG_PATH, ReadyConfig};
pub use zk::rendezvous::{RENDEZVOUS_PATH, Rendezvous};
pub use zk::script::{Wait, ZkScript, ZkStep, ZkStepOp};
pub use zk::sequential_creates::{SEQUENCE_PARENT, ZkSequentialCreates};
pub use zk::shared_counter::{COUNTER_PATH, SharedCounter};
pub use zk::watches::ZkWatches;

use crate::store::Store;
use models::{
    etcd::EtcdCluster,
    ledger::Ledger,
    recipes::{Fencing, RecipeBugs},
    zk::ZkEnsemble,
};
use serde::{Deserialize, Serialize};
use sim::{NodeContext, NodeId, Sim, task::JoinHandle};
use std::{
    future::Future,
    sync::{Arc, Mutex, atomic::AtomicBool},
};

/// The client tasks of a workload.
pub(crate) type Workers = Vec<JoinHandle<()>>;

/// Spawns one task on every client node, in client order: `task` gets the client's index,
/// node and context and makes its future (before the next client's, so that anything it
/// draws is drawn in the same order on every run).
pub(crate) fn spawn_per_client<F>(
    sim: &Sim,
    mut task: impl FnMut(usize, NodeId, NodeContext) -> F,
) -> Workers
where
    F: Future<Output = ()> + Send + 'static,
{
    sim.clients()
        .into_iter()
        .enumerate()
        .map(|(index, node)| {
            let context = sim.node(node);
            sim.spawn(node, task(index, node, context))
        })
        .collect()
}

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
    /// Clients taking a lock and writing to a fenced resource in their critical sections.
    Locks(Locks),
    /// A holder keeping named leases alive on its own schedule, readers of their keys, on
    /// the Raft store.
    LeaseKeeper(LeaseKeeper),
    /// A writer and watchers from a past revision that resume after reconnects, on the
    /// Raft store.
    WatchResume(WatchResume),
    /// Processes incrementing one counter with compare-and-swap transactions, on the Raft
    /// store.
    CasCounter(CasCounter),
    /// Election waiters watching from a compaction revision, on the Raft store.
    CompactedWatch(CompactedWatch),
    /// Sessions holding ephemeral nodes and watching each other's on the ZAB store.
    ZkEphemeralHolders(ZkEphemeralHolders),
    /// Protected sequential creates, back to back, on the ZAB store.
    ZkSequentialCreates(ZkSequentialCreates),
    /// An exact trace of client steps at set times on the ZAB store.
    ZkScript(ZkScript),
    /// A writer telling readers out of band what it wrote, on the ZAB store.
    ZkOutOfBandReads(ZkOutOfBandReads),
    /// Clients campaigning in an election, the leader writing to a fenced resource.
    Elections(Elections),
    /// Members joining and leaving a group, discoverers watching it, on either store.
    Discovery(Discovery),
    /// Publishers and subscribers from a revision of one topic, on the Raft store.
    PubSub(PubSub),
    /// Producers and consumers of one ZooKeeper FIFO queue, on the ZAB store.
    FifoQueue(FifoQueue),
    /// Clients incrementing one ZooKeeper counter by versioned writes, on the ZAB store.
    SharedCounter(SharedCounter),
    /// Every client passing a ZooKeeper double barrier round after round, on the ZAB store.
    DoubleBarrier(DoubleBarrier),
    /// A writer publishing a configuration behind `ready` and its readers, on the ZAB store.
    ReadyConfig(ReadyConfig),
    /// A rendezvous: its creator, a master publishing its address, workers learning it, on
    /// the ZAB store.
    Rendezvous(Rendezvous),
    /// The user's own code on every client node, on the store it names ([`UserCode`]).
    User(UserCode),
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
            Workload::Locks(_) => "locks",
            Workload::LeaseKeeper(_) => "lease_keeper",
            Workload::WatchResume(_) => "watch_resume",
            Workload::CasCounter(_) => "cas_counter",
            Workload::CompactedWatch(_) => "compacted_watch",
            Workload::ZkEphemeralHolders(_) => "zk_ephemeral_holders",
            Workload::ZkSequentialCreates(_) => "zk_sequential_creates",
            Workload::ZkScript(_) => "zk_script",
            Workload::ZkOutOfBandReads(_) => "zk_out_of_band_reads",
            Workload::Elections(_) => "elections",
            Workload::Discovery(_) => "discovery",
            Workload::PubSub(_) => "pub_sub",
            Workload::FifoQueue(_) => "fifo_queue",
            Workload::SharedCounter(_) => "shared_counter",
            Workload::DoubleBarrier(_) => "double_barrier",
            Workload::ReadyConfig(_) => "ready_config",
            Workload::Rendezvous(_) => "rendezvous",
            Workload::User(_) => "user",
        }
    }

    /// The store it runs on.
    pub fn store(&self) -> Store {
        match self {
            Workload::KvMix(_) | Workload::KvLeases(_) => Store::Raft,
            Workload::ZkMix(_) | Workload::ZkWatches(_) => Store::Zab,
            Workload::FifoQueue(_)
            | Workload::SharedCounter(_)
            | Workload::DoubleBarrier(_)
            | Workload::ReadyConfig(_)
            | Workload::Rendezvous(_) => Store::Zab,
            Workload::Ledger(_) => Store::Ledger,
            Workload::LeaseKeeper(_)
            | Workload::WatchResume(_)
            | Workload::CasCounter(_)
            | Workload::CompactedWatch(_)
            | Workload::PubSub(_) => Store::Raft,
            Workload::Discovery(discovery) => match discovery.recipe {
                DiscoveryRecipe::ZkDiscovery => Store::Zab,
                DiscoveryRecipe::EtcdDiscovery => Store::Raft,
            },
            Workload::ZkEphemeralHolders(_)
            | Workload::ZkSequentialCreates(_)
            | Workload::ZkScript(_)
            | Workload::ZkOutOfBandReads(_) => Store::Zab,
            Workload::Locks(locks) => match locks.recipe {
                LockRecipe::ZkHerdLock | LockRecipe::ZkQueueLock | LockRecipe::ZkRwLock => {
                    Store::Zab
                }
                LockRecipe::EtcdMutex => Store::Raft,
            },
            Workload::Elections(elections) => match elections.recipe {
                ElectionRecipe::ZkElection => Store::Zab,
                ElectionRecipe::EtcdElection => Store::Raft,
            },
            Workload::User(code) => code.store(),
        }
    }

    /// The checks this workload brings to every scenario that runs it, by name: the
    /// properties its recipe promises, judged from the records its clients write, and the
    /// store checks it exercises. A scenario runs them all (`checks = ["default"]` or
    /// not); taking one away needs `skip_checks` with a reason. A sweep relies on each of
    /// them: one that judged nothing in every seed fails the sweep (see
    /// [`crate::Scenario::relied_on`]).
    pub fn checks(&self) -> Vec<&'static str> {
        match self {
            Workload::KvMix(_) => vec![
                "etcd.linearizable",
                "etcd.read_sees_prior_writes",
                "etcd.acknowledged_write_durability",
            ],
            Workload::KvLeases(_) => vec!["etcd.lease_keys_removed"],
            Workload::ZkMix(_) => vec![
                "zk.linearizable",
                "zk.write_durability",
                "zk.session_consistency",
            ],
            Workload::ZkWatches(_) => vec!["zk.watch_delivery", "zk.watch_order"],
            Workload::Ledger(_) | Workload::ZkScript(_) => Vec::new(),
            Workload::Locks(locks) => locks.checks(),
            Workload::LeaseKeeper(_) => vec!["etcd.lease_keys_removed"],
            Workload::WatchResume(_) | Workload::CompactedWatch(_) => vec!["etcd.watch_delivery"],
            Workload::CasCounter(_) => vec!["etcd.linearizable"],
            Workload::ZkEphemeralHolders(_) => vec!["zk.ephemeral_lifetime"],
            Workload::ZkSequentialCreates(_) => vec!["zk.sequential_names"],
            Workload::ZkOutOfBandReads(_) => vec!["zk.sync_then_read"],
            Workload::Elections(elections) => elections.checks(),
            Workload::Discovery(_) => vec!["recipe.discovery_converges"],
            Workload::PubSub(_) => vec!["recipe.pubsub_delivery", "etcd.watch_delivery"],
            Workload::FifoQueue(_) => vec!["recipe.queue_semantics"],
            Workload::SharedCounter(_) => vec!["recipe.counter"],
            Workload::DoubleBarrier(_) => vec!["recipe.barrier"],
            Workload::ReadyConfig(_) => vec!["recipe.config_versions", "recipe.config_fresh"],
            Workload::Rendezvous(_) => vec!["recipe.rendezvous"],
            Workload::User(code) => code.checks(),
        }
    }

    /// The workloads that run on both consensus stores, as [`Workload::on_store`] maps them.
    pub const ON_BOTH_STORES: &'static str = "discovery (zk_discovery <-> etcd_discovery), \
        locks with zk_queue_lock <-> etcd_mutex, elections (zk_election <-> etcd_election)";

    /// The same workload on `store`: itself if it runs there already; otherwise the other
    /// store's recipe of the same thing, where the workload has one (ZooKeeper's discovery,
    /// queue lock and election are etcd's discovery, mutex and election, and back);
    /// `None` if it has none (the herd and read/write locks, and every store-specific
    /// workload). Parameters are kept; a ZooKeeper-only parameter (Curator's client-side
    /// session expiry, the lock nodes' ACL) means the workload has no etcd counterpart.
    pub fn on_store(&self, store: Store) -> Option<Workload> {
        if self.store() == store {
            return Some(self.clone());
        }
        match (self, store) {
            (Workload::Discovery(discovery), Store::Raft | Store::Zab) => {
                Some(Workload::Discovery(Discovery {
                    recipe: match store {
                        Store::Zab => DiscoveryRecipe::ZkDiscovery,
                        _ => DiscoveryRecipe::EtcdDiscovery,
                    },
                    ..discovery.clone()
                }))
            }
            (Workload::Locks(locks), Store::Raft)
                if locks.recipe == LockRecipe::ZkQueueLock
                    && locks.session_expiry == models::zk::SessionExpiry::ToldByServer
                    && locks.node_acl == LockNodeAcl::Open =>
            {
                Some(Workload::Locks(Locks {
                    recipe: LockRecipe::EtcdMutex,
                    ..locks.clone()
                }))
            }
            (Workload::Locks(locks), Store::Zab) if locks.recipe == LockRecipe::EtcdMutex => {
                Some(Workload::Locks(Locks {
                    recipe: LockRecipe::ZkQueueLock,
                    ..locks.clone()
                }))
            }
            (Workload::Elections(elections), Store::Raft | Store::Zab) => {
                Some(Workload::Elections(Elections {
                    recipe: match store {
                        Store::Zab => ElectionRecipe::ZkElection,
                        _ => ElectionRecipe::EtcdElection,
                    },
                    ..elections.clone()
                }))
            }
            _ => None,
        }
    }

    /// How many resource nodes (`r1..`) it needs besides the store: a fenced resource for
    /// the lock and election workloads, none for the others.
    pub fn resources(&self) -> usize {
        match self {
            Workload::Locks(_) | Workload::Elections(_) => 1,
            Workload::User(code) if code.resource() == Resource::Fenced => 1,
            _ => 0,
        }
    }

    /// Starts what the workload needs besides the store (the fenced resource on `r1`).
    pub(crate) fn start_resource(&self, sim: &Sim, bugs: RecipeBugs) -> Option<FencedResource> {
        match self {
            Workload::Locks(locks) => Some(locks.start_resource(sim, bugs)),
            Workload::Elections(elections) => Some(elections.start_resource(sim, bugs)),
            Workload::User(code) if code.resource() == Resource::Fenced => Some(
                FencedResource::start(sim, NodeId::resource(0), RESOURCE_NAME, Fencing::On, bugs),
            ),
            _ => None,
        }
    }

    /// Checks the workload's parameters against the world's size: what is wrong, in one line.
    pub(crate) fn validate(&self, servers: usize, clients: usize) -> Result<(), String> {
        match self {
            Workload::KvMix(mix) => mix.validate(),
            Workload::KvLeases(leases) => leases.validate(),
            Workload::ZkMix(mix) => mix.validate().and_then(|()| mix.validate_readers(clients)),
            Workload::ZkWatches(watches) => watches.validate(),
            Workload::Ledger(appends) => appends.validate(),
            Workload::Locks(locks) => locks.validate(),
            Workload::LeaseKeeper(keeper) => keeper.validate(),
            Workload::WatchResume(watches) => watches.validate(),
            Workload::CasCounter(counter) => counter.validate(),
            Workload::CompactedWatch(waiter) => waiter.validate(),
            Workload::ZkEphemeralHolders(holders) => holders.validate(),
            Workload::ZkSequentialCreates(creates) => creates.validate(),
            Workload::ZkScript(script) => script.validate(servers, clients),
            Workload::ZkOutOfBandReads(reads) => reads.validate(servers, clients),
            Workload::Elections(elections) => elections.validate(),
            Workload::Discovery(discovery) => discovery.validate(),
            Workload::PubSub(pubsub) => pubsub.validate(),
            Workload::FifoQueue(queue) => queue.validate(clients),
            Workload::SharedCounter(counter) => counter.validate(),
            Workload::DoubleBarrier(barrier) => barrier.validate(),
            Workload::ReadyConfig(config) => config.validate(),
            Workload::Rendezvous(rendezvous) => rendezvous.validate(),
            Workload::User(code) => code.validate(),
        }
    }

    /// Starts the workers on the running store.
    pub(crate) fn start(
        &self,
        sim: &Sim,
        store: &RunningStore,
        resource: Option<&FencedResource>,
        bugs: RecipeBugs,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        if let (Workload::Locks(locks), Some(resource)) = (self, resource) {
            return locks.start(sim, &store.recipe_store(), resource, bugs, stop);
        }
        if let (Workload::Elections(elections), Some(resource)) = (self, resource) {
            return elections.start(sim, &store.recipe_store(), resource, bugs, stop);
        }
        match (self, store) {
            (Workload::User(code), _) => code.start(sim, resource, stop),
            (Workload::Discovery(discovery), store) => discovery.start(sim, store, bugs, stop),
            (Workload::PubSub(pubsub), RunningStore::Raft(cluster)) => {
                pubsub.start(sim, cluster, bugs, stop)
            }
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
            (Workload::LeaseKeeper(keeper), RunningStore::Raft(cluster)) => {
                keeper.start(sim, cluster, stop)
            }
            (Workload::WatchResume(watches), RunningStore::Raft(cluster)) => {
                watches.start(sim, cluster, stop)
            }
            (Workload::CasCounter(counter), RunningStore::Raft(cluster)) => {
                counter.start(sim, cluster, stop)
            }
            (Workload::CompactedWatch(waiter), RunningStore::Raft(cluster)) => {
                waiter.start(sim, cluster, stop)
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
            (Workload::FifoQueue(queue), RunningStore::Zab(ensemble)) => {
                queue.start(sim, ensemble, stop)
            }
            (Workload::SharedCounter(counter), RunningStore::Zab(ensemble)) => {
                counter.start(sim, ensemble, bugs, stop)
            }
            (Workload::DoubleBarrier(barrier), RunningStore::Zab(ensemble)) => {
                barrier.start(sim, ensemble, bugs, stop)
            }
            (Workload::ReadyConfig(config), RunningStore::Zab(ensemble)) => {
                config.start(sim, ensemble, bugs, stop)
            }
            (Workload::Rendezvous(rendezvous), RunningStore::Zab(ensemble)) => {
                rendezvous.start(sim, ensemble, stop)
            }
            _ => unreachable!("validated: the workload runs on the scenario's store"),
        }
    }

    /// The finishing step after the heal: `Ok` once done, an error if it cannot be.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        store: &RunningStore,
        resource: Option<&FencedResource>,
        bugs: RecipeBugs,
        pending: &Pending,
    ) -> Result<(), String> {
        if let (Workload::Locks(locks), Some(resource)) = (self, resource) {
            return locks
                .finish(sim, &store.recipe_store(), resource, bugs, pending)
                .await;
        }
        if let (Workload::Elections(elections), Some(resource)) = (self, resource) {
            return elections
                .finish(sim, &store.recipe_store(), resource, bugs, pending)
                .await;
        }
        match (self, store) {
            // User code has no finishing step: it ran until it was stopped.
            (Workload::User(_), _) => Ok(()),
            (Workload::Discovery(discovery), _) => discovery.finish(sim, pending).await,
            (Workload::PubSub(pubsub), _) => pubsub.finish(sim, pending).await,
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
            (Workload::LeaseKeeper(keeper), RunningStore::Raft(cluster)) => {
                keeper.finish(sim, cluster, pending).await
            }
            (Workload::WatchResume(watches), RunningStore::Raft(cluster)) => {
                watches.finish(sim, cluster, pending).await
            }
            (Workload::CasCounter(counter), RunningStore::Raft(cluster)) => {
                counter.finish(sim, cluster, pending).await
            }
            (Workload::CompactedWatch(waiter), RunningStore::Raft(cluster)) => {
                waiter.finish(sim, cluster, pending).await
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
            (Workload::FifoQueue(queue), RunningStore::Zab(ensemble)) => {
                queue.finish(sim, ensemble, pending).await
            }
            (Workload::SharedCounter(counter), RunningStore::Zab(ensemble)) => {
                counter.finish(sim, ensemble, pending).await
            }
            (Workload::DoubleBarrier(barrier), RunningStore::Zab(_)) => {
                barrier.finish(pending).await
            }
            (Workload::ReadyConfig(config), RunningStore::Zab(ensemble)) => {
                config.finish(sim, ensemble, bugs, pending).await
            }
            (Workload::Rendezvous(rendezvous), RunningStore::Zab(_)) => {
                rendezvous.finish(pending).await
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

impl RunningStore {
    fn recipe_store(&self) -> shared::recipe_session::RecipeStore {
        match self {
            RunningStore::Zab(ensemble) => {
                shared::recipe_session::RecipeStore::Zab(ensemble.clone())
            }
            RunningStore::Raft(cluster) => {
                shared::recipe_session::RecipeStore::Raft(cluster.clone())
            }
            RunningStore::Ledger(_) => {
                unreachable!("validated: recipes run on a consensus store")
            }
        }
    }
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
