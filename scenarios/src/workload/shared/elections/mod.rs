//! `elections`: client processes campaign in one election again and again; a leader works
//! as leader, writing to the fenced resource `r1` with its leadership's token a few times,
//! then resigns (or, with [`LeaderTerm::UntilLost`], leads until it loses or the run stops);
//! one observer process per client node follows who leads (`OnNewLeader`).
//!
//! The election is one of the election recipes (`zk_election` on the ZAB store,
//! `etcd_election` on the Raft store). A leader watches for the loss of its leadership
//! through all its work and writes and stops the moment it learns of it (`OnStoppedLeading`);
//! a leader paused meanwhile learns nothing until it resumes, and its write in flight is then
//! a deposed leader's, which the fenced resource must refuse. On etcd the leader proclaims
//! itself before each round of work: a leader whose key is gone finds out there. After the
//! heal, a leader must be elected and every client node's observer must observe that same
//! leader, within the liveness bound.

mod candidate;
mod finish;
mod observer;

use super::locks::RESOURCE_NAME;
use super::recipe_session::RecipeStore;
use crate::workload::{Pending, Workers};
use candidate::{Candidate, Leading, Turn};
use finish::Finish;
use models::recipes::{FencedResource, Fencing, RecipeBugs, RecipeError};
use observer::Observer;
use serde::{Deserialize, Serialize};
use sim::{NodeId, Sim};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The election's node (ZooKeeper) or key prefix (etcd).
pub const ELECTION_NAME: &str = "/elections/leader";

/// The first process number of the finishing step's clients: the workers' sessions are
/// closed or expiring, and their identities must not be taken for the new ones'.
const FINAL_PROCESSES: u32 = 100;

/// How long an observer waits for a change before looking at the run's state again.
const OBSERVE_SLICE: Duration = Duration::from_millis(500);

/// Which election recipe the clients use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElectionRecipe {
    /// ZooKeeper: ephemeral-sequential candidates, each watches its predecessor.
    ZkElection,
    /// etcd: `concurrency.Election`.
    EtcdElection,
}

/// How long a leader leads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaderTerm {
    /// It resigns after `writes_per_term` rounds of work and writes: the lead moves on.
    #[default]
    ResignAfterWrites,
    /// It works and writes until it loses the leadership or the run stops.
    UntilLost,
}

/// Parameters of `elections`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Elections {
    /// The recipe.
    pub recipe: ElectionRecipe,
    /// Candidate processes per client node, each with its own session.
    pub candidates_per_client: u32,
    /// How long a leader leads.
    pub term: LeaderTerm,
    /// Rounds of work and a write per term, with [`LeaderTerm::ResignAfterWrites`].
    pub writes_per_term: u32,
    /// Work in each round before the write, milliseconds.
    pub work_ms: u64,
    /// Pause between a term (or a failed campaign) and the next campaign, milliseconds.
    pub think_ms: u64,
    /// How long one campaign may wait before giving up, milliseconds.
    pub patience_ms: u64,
    /// ZooKeeper session timeout, or etcd lease TTL, milliseconds.
    pub session_timeout_ms: u64,
    /// Whether the resource checks tokens.
    pub fencing: Fencing,
}

impl Elections {
    /// The checks an election always brings: one leader at a time (as believed), its writes
    /// judged at the fenced resource (exclusive, and refused only when stale), no campaign
    /// won while leading, a leader's going wakes only its successor; and on ZooKeeper's line
    /// no lost wake-up (a candidate waits in line as a lock waiter does).
    pub(crate) fn checks(&self) -> Vec<&'static str> {
        let mut checks = vec![
            "recipe.leader_uniqueness",
            "recipe.fenced_writes",
            "recipe.holder_not_refused",
            "recipe.herd_effect",
            "recipe.no_acquire_while_held",
        ];
        if self.recipe == ElectionRecipe::ZkElection {
            checks.push("recipe.no_lost_wakeup");
        }
        checks
    }
}

impl Default for Elections {
    fn default() -> Self {
        Self {
            recipe: ElectionRecipe::ZkElection,
            candidates_per_client: 1,
            term: LeaderTerm::ResignAfterWrites,
            writes_per_term: 3,
            work_ms: 50,
            think_ms: 20,
            patience_ms: 10_000,
            session_timeout_ms: 2_000,
            fencing: Fencing::On,
        }
    }
}

impl Elections {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.candidates_per_client == 0
            || self.session_timeout_ms < 100
            || self.patience_ms == 0
            || self.writes_per_term == 0
        {
            return Err(format!(
                "expected at least one candidate per client, a session timeout of at least \
                 100 ms, a patience above 0 ms and at least one write per term, got {} \
                 candidates, {} ms, {} ms, {} writes",
                self.candidates_per_client,
                self.session_timeout_ms,
                self.patience_ms,
                self.writes_per_term
            ));
        }
        Ok(())
    }

    /// Starts the fenced resource on `r1`.
    pub(crate) fn start_resource(&self, sim: &Sim, bugs: RecipeBugs) -> FencedResource {
        FencedResource::start(sim, NodeId::resource(0), RESOURCE_NAME, self.fencing, bugs)
    }

    /// The observer's process number on each client node: the one after the candidates'.
    fn observer_process(&self, first: u32) -> u32 {
        first + self.candidates_per_client
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
            let context = sim.node(node);
            for process in 0..self.candidates_per_client {
                let (elections, store, resource, stop, context) = (
                    self.clone(),
                    store.clone(),
                    resource.clone(),
                    stop.clone(),
                    context.clone(),
                );
                workers.push(sim.spawn(node, async move {
                    let mut candidate =
                        Candidate::new(&elections, &store, &resource, &context, process, bugs);
                    let leading = Leading::Work {
                        stop: &stop,
                        term: elections.term,
                        writes_per_term: elections.writes_per_term,
                    };
                    let mut turn = 0;
                    while !stop.load(Ordering::Relaxed) {
                        turn += 1;
                        candidate.take_turn(turn, &leading).await;
                        context
                            .clock()
                            .sleep(Duration::from_millis(elections.think_ms))
                            .await;
                    }
                    candidate.close().await;
                }));
            }
            let (elections, store, stop) = (self.clone(), store.clone(), stop.clone());
            workers.push(sim.spawn(node, async move {
                let process = elections.observer_process(0);
                let mut observer = Observer::new(&elections, &store, &context, process);
                while !stop.load(Ordering::Relaxed) {
                    if let Err(RecipeError::SessionEnded | RecipeError::Store(_)) =
                        observer.next().await
                    {
                        context
                            .clock()
                            .sleep(Duration::from_millis(elections.think_ms))
                            .await;
                    }
                }
                observer.close().await;
            }));
        }
        workers
    }

    /// After the heal: fresh candidates campaign until one leads, and every client node's
    /// observer must see that leader; each final leader's lookup of who leads must name it.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        store: &RecipeStore,
        resource: &FencedResource,
        bugs: RecipeBugs,
        pending: &Pending,
    ) -> Result<(), String> {
        let observers = sim
            .clients()
            .into_iter()
            .map(|node| format!("{node}/{}", self.observer_process(FINAL_PROCESSES)))
            .collect();
        let finish = Arc::new(Finish::new(observers, pending));
        let mut tasks = Vec::new();
        for node in sim.clients() {
            let context = sim.node(node);
            for process in 0..self.candidates_per_client {
                let (elections, store, resource, finish, context) = (
                    self.clone(),
                    store.clone(),
                    resource.clone(),
                    finish.clone(),
                    context.clone(),
                );
                tasks.push(sim.spawn(node, async move {
                    let process = FINAL_PROCESSES + process;
                    let mut candidate =
                        Candidate::new(&elections, &store, &resource, &context, process, bugs);
                    let mut turn = 0;
                    // Until everyone saw a leader. The candidates in line behind it then
                    // each lead in turn and resign at once.
                    loop {
                        turn += 1;
                        let took = candidate
                            .take_turn(1_000_000 + turn, &Leading::UntilObserved(&finish))
                            .await;
                        if finish.everyone_observed.is_set() {
                            break;
                        }
                        if let Turn::SessionOver = took {
                            context
                                .clock()
                                .sleep(Duration::from_millis(elections.think_ms))
                                .await;
                        }
                    }
                    candidate.close().await;
                }));
            }
            let (elections, store, finish) = (self.clone(), store.clone(), finish.clone());
            tasks.push(sim.spawn(node, async move {
                let process = elections.observer_process(FINAL_PROCESSES);
                let who = format!("{}/{process}", context.id());
                let mut observer = Observer::new(&elections, &store, &context, process);
                while !finish.everyone_observed.is_set() {
                    match observer.next().await {
                        Ok(leader) => finish.observed(&who, leader),
                        Err(RecipeError::TimedOut) => finish.check(),
                        Err(_) => {
                            context
                                .clock()
                                .sleep(Duration::from_millis(elections.think_ms))
                                .await;
                        }
                    }
                }
                observer.close().await;
            }));
        }
        for task in tasks {
            task.await
                .map_err(|error| format!("a final election task failed: {error}"))?;
        }
        let misnamed = finish.misnamed();
        if misnamed.is_empty() {
            Ok(())
        } else {
            Err(misnamed.join("; "))
        }
    }
}
