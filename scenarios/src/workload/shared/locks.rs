//! `locks`: every client process takes one lock again and again, and in each critical
//! section works for a while, then writes to the fenced resource `r1` with its token.
//!
//! The lock is one of the lock recipes (`zk_herd_lock`, `zk_queue_lock`, `zk_rw_lock` on the
//! ZAB store, `etcd_mutex` on the Raft store). With the read/write lock each turn is a
//! writer's (a seeded draw, `writer_percent` of the turns) or a reader's: a reader holds the
//! read lock for the same work but does not write (it only reads what the writers fenced). A holder stops when it learns it lost the lock (session
//! expired, lease gone, connection interrupted), drops its session when the store says it
//! ended, and starts a new one. The critical section is the work (during which the holder
//! watches for the loss of its lock) and then the write, with no look at the lock in
//! between: a holder paused during the work resumes and writes, as a process paused between
//! its check and its write does. After the heal, every client process must take the lock
//! once more and write, within the liveness bound.

use super::recipe_session::{LockNodeAcl, RecipeSession, RecipeStore, Session};
use crate::workload::{Pending, Workers};
use models::{
    recipes::{
        CarriedJoin, EtcdMutex, FencedResource, Fencing, RecipeBug, RecipeBugs, RecipeError,
        ResourceClient, ZkHerdLock, ZkQueueLock, ZkRwLock,
    },
    zk::SessionExpiry,
};
use rand::Rng;
use serde::{Deserialize, Serialize};
use sim::history::recipe::LockMode;
use sim::{NodeContext, NodeId, Sim};
use std::{
    pin::pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures_util::future::{Either, select};

/// The lock's path (ZooKeeper) or key prefix (etcd).
pub const LOCK_NAME: &str = "/locks/shared";

/// The fenced resource's name in the history.
pub const RESOURCE_NAME: &str = "resource";

/// Which lock recipe the clients use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockRecipe {
    /// ZooKeeper: one ephemeral node, everyone watches it.
    ZkHerdLock,
    /// ZooKeeper: ephemeral-sequential children, each watches its predecessor.
    ZkQueueLock,
    /// etcd: `concurrency.Mutex`.
    EtcdMutex,
    /// ZooKeeper: the read/write lock ("Shared Locks"), readers and writers in one line.
    ZkRwLock,
}

/// Parameters of `locks`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Locks {
    /// The recipe.
    pub recipe: LockRecipe,
    /// Client processes per client node, each with its own session.
    pub processes_per_client: u32,
    /// Work in the critical section before the write, milliseconds.
    pub hold_ms: u64,
    /// Pause between a release and the next request, milliseconds.
    pub think_ms: u64,
    /// How long one acquisition may wait before giving up, milliseconds.
    pub patience_ms: u64,
    /// ZooKeeper session timeout, or etcd lease TTL, milliseconds.
    pub session_timeout_ms: u64,
    /// Whether the resource checks tokens.
    pub fencing: Fencing,
    /// Who ends a ZooKeeper session as its client sees it. With
    /// `after_disconnected_timeout` the clients are Curator's: they also give a session up
    /// after a session timeout without a connection, and the queue lock carries a join
    /// whose reply that loss swallowed into the process's next session (as Curator's retry
    /// loop does).
    #[serde(skip_serializing_if = "is_told_by_server")]
    pub session_expiry: SessionExpiry,
    /// With the read/write lock: the share of turns, in percent, that take the write lock
    /// (the others take the read lock). The exclusive locks ignore it.
    pub writer_percent: u32,
    /// The ACL of the ZooKeeper lock's nodes (`creator_all`: every client authenticates as
    /// the lock's digest user and makes its nodes with `CREATOR_ALL_ACL`).
    #[serde(skip_serializing_if = "is_open")]
    pub node_acl: LockNodeAcl,
}

impl Locks {
    /// What every scenario of this lock runs: exclusion as the clients believed it (the
    /// read/write lock's: writers alone; readers share), the fenced resource's exclusion and
    /// that it refuses only stale writers, no acquisition while held, the herd bound (the
    /// read/write lock's form of it: readers wait only for writers, since a writer's release
    /// wakes every reader behind it by design), and on ZooKeeper's lines the waiters' and
    /// holders' own nodes, no lost wake-up, and the sequence names they are ordered by.
    pub(crate) fn checks(&self) -> Vec<&'static str> {
        let mut checks = vec![
            "recipe.fenced_writes",
            "recipe.holder_not_refused",
            "recipe.no_acquire_while_held",
        ];
        match self.recipe {
            LockRecipe::ZkRwLock => checks.extend([
                "recipe.rw_exclusion",
                "recipe.rw_reader_waits_only_for_writers",
            ]),
            _ => checks.extend(["recipe.mutual_exclusion", "recipe.herd_effect"]),
        }
        match self.recipe {
            LockRecipe::ZkQueueLock | LockRecipe::ZkRwLock => checks.extend([
                "recipe.no_orphan_waiter",
                "recipe.holder_owns_node",
                "recipe.no_lost_wakeup",
                "zk.sequential_names",
            ]),
            LockRecipe::ZkHerdLock | LockRecipe::EtcdMutex => {}
        }
        checks
    }
}

fn is_open(acl: &LockNodeAcl) -> bool {
    *acl == LockNodeAcl::Open
}

fn is_told_by_server(expiry: &SessionExpiry) -> bool {
    *expiry == SessionExpiry::ToldByServer
}

impl Default for Locks {
    fn default() -> Self {
        Self {
            recipe: LockRecipe::ZkQueueLock,
            processes_per_client: 1,
            hold_ms: 50,
            think_ms: 20,
            patience_ms: 10_000,
            session_timeout_ms: 2_000,
            fencing: Fencing::On,
            session_expiry: SessionExpiry::ToldByServer,
            writer_percent: 30,
            node_acl: LockNodeAcl::Open,
        }
    }
}

/// How a client process's turn with the lock ended.
enum Turn {
    /// It held the lock and wrote (or tried to: the resource may not have answered).
    Held,
    /// It did not get the lock in time.
    TimedOut,
    /// Its session or lease is over: it needs a new one.
    SessionOver,
}

impl Locks {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.writer_percent > 100 {
            return Err(format!(
                "expected a writer share of at most 100 %, got {}",
                self.writer_percent
            ));
        }
        if self.processes_per_client == 0 || self.session_timeout_ms < 100 || self.patience_ms == 0
        {
            return Err(format!(
                "expected at least one process per client, a session timeout of at least \
                 100 ms and a patience above 0 ms, got {} processes, {} ms, {} ms",
                self.processes_per_client, self.session_timeout_ms, self.patience_ms
            ));
        }
        if self.recipe == LockRecipe::EtcdMutex && self.node_acl != LockNodeAcl::Open {
            return Err(
                "expected node_acl = \"open\" with etcd's mutex (ACLs are ZooKeeper's)".into(),
            );
        }
        Ok(())
    }

    /// The mode of a turn: with the read/write lock, the write lock for `writer_percent` of
    /// the turns; the exclusive locks have only one.
    fn draw_mode(&self, modes: &mut impl Rng) -> LockMode {
        if self.recipe == LockRecipe::ZkRwLock && modes.gen_range(0..100) >= self.writer_percent {
            LockMode::Shared
        } else {
            LockMode::Exclusive
        }
    }

    /// Starts the fenced resource on `r1`.
    pub(crate) fn start_resource(&self, sim: &Sim, bugs: RecipeBugs) -> FencedResource {
        FencedResource::start(sim, NodeId::resource(0), RESOURCE_NAME, self.fencing, bugs)
    }

    pub(crate) fn start(
        &self,
        sim: &Sim,
        store: &RecipeStore,
        resource: &FencedResource,
        bugs: RecipeBugs,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        let mut workers = Vec::new();
        for node in sim.clients() {
            for process in 0..self.processes_per_client {
                let (locks, store, resource, stop) =
                    (self.clone(), store.clone(), resource.clone(), stop.clone());
                let context = sim.node(node);
                workers.push(sim.spawn(node, async move {
                    let mut client =
                        LockClient::new(&locks, &store, &resource, &context, process, bugs);
                    let mut modes = context.rng(&format!("locks-mode-{process}"));
                    let mut turn = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        turn += 1;
                        let mode = locks.draw_mode(&mut modes);
                        client.take_turn(turn, mode).await;
                        context
                            .clock()
                            .sleep(Duration::from_millis(locks.think_ms))
                            .await;
                    }
                    client.close().await;
                }));
            }
        }
        workers
    }

    /// After the heal: every client process takes the lock once more and writes.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        store: &RecipeStore,
        resource: &FencedResource,
        bugs: RecipeBugs,
        pending: &Pending,
    ) -> Result<(), String> {
        let waiting: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
        let note =
            |waiting: &Vec<String>| format!("{} still waiting for {LOCK_NAME}", waiting.join(", "));
        let mut tasks = Vec::new();
        for node in sim.clients() {
            for process in 0..self.processes_per_client {
                let who = format!("{node}/{process}");
                waiting.lock().expect("not poisoned").push(who.clone());
                let (locks, store, resource, waiting, pending) = (
                    self.clone(),
                    store.clone(),
                    resource.clone(),
                    waiting.clone(),
                    pending.clone(),
                );
                let context = sim.node(node);
                tasks.push(sim.spawn(node, async move {
                    // Its own process number: the workers' sessions are closed or expiring.
                    let mut client =
                        LockClient::new(&locks, &store, &resource, &context, 100 + process, bugs);
                    let mut modes = context.rng(&format!("locks-final-mode-{process}"));
                    let mut turn = 0;
                    loop {
                        turn += 1;
                        let mode = locks.draw_mode(&mut modes);
                        if let Turn::Held = client.take_turn(1_000_000 + turn, mode).await {
                            break;
                        }
                    }
                    client.close().await;
                    let mut waiting = waiting.lock().expect("not poisoned");
                    waiting.retain(|name| *name != who);
                    pending.set(note(&waiting));
                }));
            }
        }
        pending.set(note(&waiting.lock().expect("not poisoned")));
        for task in tasks {
            task.await
                .map_err(|error| format!("a final lock task failed: {error}"))?;
        }
        Ok(())
    }
}

/// One client process: its session (made on demand) and its resource connection.
struct LockClient {
    locks: Locks,
    context: NodeContext,
    process: u32,
    resource: ResourceClient,
    bugs: RecipeBugs,
    session: RecipeSession,
    /// The queue lock's join carried across sessions, for Curator's clients.
    carried: Option<CarriedJoin>,
}

impl LockClient {
    fn new(
        locks: &Locks,
        store: &RecipeStore,
        resource: &FencedResource,
        context: &NodeContext,
        process: u32,
        bugs: RecipeBugs,
    ) -> Self {
        Self {
            bugs,
            locks: locks.clone(),
            context: context.clone(),
            process,
            resource: resource.client(context, process),
            session: RecipeSession::new(
                store,
                context,
                process,
                Duration::from_millis(locks.session_timeout_ms),
                Duration::from_millis(locks.patience_ms),
            )
            .with_expiry(locks.session_expiry)
            .with_node_acl(locks.node_acl),
            carried: (locks.session_expiry == SessionExpiry::AfterDisconnectedTimeout)
                .then(CarriedJoin::default),
        }
    }

    /// One request for the lock and, if granted, one critical section.
    async fn take_turn(&mut self, turn: u64, mode: LockMode) -> Turn {
        if !self.session.ensure().await {
            return Turn::SessionOver;
        }
        let hold = Duration::from_millis(self.locks.hold_ms);
        let value = format!("{}/{}#{turn}", self.context.id(), self.process);
        let patience = Duration::from_millis(self.locks.patience_ms);
        let clock = self.context.clock().clone();
        let turn = match self.session.parts().expect("just ensured") {
            (Session::Zk(zk), _) => {
                let guard = match self.locks.recipe {
                    LockRecipe::ZkRwLock => {
                        ZkRwLock::new(zk, &self.context, LOCK_NAME)
                            .with_bugs(self.bugs)
                            .acquire(mode, patience)
                            .await
                    }
                    LockRecipe::ZkHerdLock => {
                        ZkHerdLock::new(zk, &self.context, LOCK_NAME)
                            .with_bugs(self.bugs)
                            .acquire(patience)
                            .await
                    }
                    _ => {
                        let lock =
                            ZkQueueLock::new(zk, &self.context, LOCK_NAME).with_bugs(self.bugs);
                        match &self.carried {
                            Some(carried) => lock.carrying(carried),
                            None => lock,
                        }
                        .acquire(patience)
                        .await
                    }
                };
                match guard {
                    Ok(guard) => {
                        let worked = matches!(
                            select(pin!(clock.sleep(hold)), pin!(guard.lost())).await,
                            Either::Left(_)
                        );
                        // A reader of the read/write lock holds but does not write.
                        if worked && mode == LockMode::Exclusive {
                            // No look at the lock between the work and the write: a pause
                            // here is a pause between a check and a write.
                            let _ = self
                                .resource
                                .write(fencing_token(self.bugs, guard.token()), value)
                                .await;
                        }
                        if worked {
                            guard.release().await;
                        } else {
                            guard.abandon().await;
                        }
                        Turn::Held
                    }
                    Err(RecipeError::TimedOut) => Turn::TimedOut,
                    Err(_) => Turn::SessionOver,
                }
            }
            (Session::Etcd(session), client) => {
                let client = client.expect("made on the Raft store");
                let mut mutex = EtcdMutex::new(&self.context, self.process, session, LOCK_NAME)
                    .with_bugs(self.bugs);
                match mutex.lock(client, session, patience).await {
                    Ok(guard) => {
                        let worked = matches!(
                            select(pin!(clock.sleep(hold)), pin!(guard.lost(session))).await,
                            Either::Left(_)
                        );
                        if worked {
                            let _ = self
                                .resource
                                .write(fencing_token(self.bugs, guard.token()), value)
                                .await;
                            mutex.unlock(client, guard, session).await;
                        }
                        Turn::Held
                    }
                    Err(RecipeError::TimedOut) => Turn::TimedOut,
                    Err(_) => Turn::SessionOver,
                }
            }
        };
        self.session.close_if_over().await;
        turn
    }

    /// Ends the session (deleting its ephemeral nodes or revoking its lease).
    async fn close(&mut self) {
        self.session.close().await;
    }
}

/// The token the critical section (or a leader's work) sends: none with `recipe.no_fencing`.
pub(crate) fn fencing_token(bugs: RecipeBugs, token: u64) -> Option<u64> {
    (!bugs.has(RecipeBug::NoFencing)).then_some(token)
}
