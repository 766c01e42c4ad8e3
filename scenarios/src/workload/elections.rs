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

use super::locks::{RESOURCE_NAME, fencing_token};
use super::recipe_session::{RecipeSession, RecipeStore, Session};
use super::{Pending, Workers};
use futures_util::future::{Either, select};
use models::{
    etcd::EtcdClient,
    recipes::{
        ElectionError, EtcdElection, EtcdLeaderObserver, FencedResource, Fencing, RecipeBugs,
        ResourceClient, ZkElection, ZkLeaderObserver,
    },
    zk::ZkClient,
};
use serde::{Deserialize, Serialize};
use sim::{NodeContext, NodeId, Sim, signal::Signal};
use std::{
    collections::BTreeMap,
    pin::pin,
    sync::{
        Arc, Mutex,
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

/// How a candidate's turn ended.
enum Turn {
    /// It led (and resigned or lost).
    Led,
    /// It did not win in time.
    TimedOut,
    /// Its session or lease is over: it needs a new one.
    SessionOver,
}

/// What a leader does while it leads.
enum Leading<'a> {
    /// Rounds of work and a write, until the term is over.
    Work {
        stop: &'a AtomicBool,
        term: LeaderTerm,
        writes_per_term: u32,
    },
    /// The finishing step: announce the win, and lead until every observer has seen it.
    UntilObserved(&'a Finish),
}

impl Leading<'_> {
    fn is_over(&self, rounds: u32) -> bool {
        match self {
            Leading::Work {
                stop,
                term,
                writes_per_term,
            } => {
                stop.load(Ordering::Relaxed)
                    || (*term == LeaderTerm::ResignAfterWrites && rounds >= *writes_per_term)
            }
            Leading::UntilObserved(_) => rounds >= 1,
        }
    }

    /// The leader `identity` lost its leadership.
    fn lost(&self, identity: &str) {
        if let Leading::UntilObserved(finish) = self {
            finish.lost(identity);
        }
    }
}

impl Elections {
    pub(super) fn validate(&self) -> Result<(), String> {
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
    pub(crate) fn start_resource(&self, sim: &Sim) -> FencedResource {
        FencedResource::start(sim, NodeId::resource(0), RESOURCE_NAME, self.fencing)
    }

    /// The observer's process number on each client node: the one after the candidates'.
    fn observer_process(&self, first: u32) -> u32 {
        first + self.candidates_per_client
    }

    pub(super) fn start(
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
                    candidate.session.close().await;
                }));
            }
            let (elections, store, stop) = (self.clone(), store.clone(), stop.clone());
            workers.push(sim.spawn(node, async move {
                let process = elections.observer_process(0);
                let mut observer = Observer::new(&elections, &store, &context, process);
                while !stop.load(Ordering::Relaxed) {
                    if let Err(ElectionError::SessionEnded | ElectionError::Store(_)) =
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
    pub(super) async fn finish(
        &self,
        sim: &Sim,
        store: &RecipeStore,
        resource: &FencedResource,
        bugs: RecipeBugs,
        pending: &Pending,
    ) -> Result<(), String> {
        let finish = Arc::new(Finish {
            observers: sim
                .clients()
                .into_iter()
                .map(|node| format!("{node}/{}", self.observer_process(FINAL_PROCESSES)))
                .collect(),
            state: Mutex::new(FinishState::default()),
            everyone_observed: Signal::new(),
            pending: pending.clone(),
        });
        finish.note();
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
                    candidate.session.close().await;
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
                        Err(ElectionError::TimedOut) => finish.check(),
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
        let misnamed = &finish.state.lock().expect("not poisoned").misnamed;
        if misnamed.is_empty() {
            Ok(())
        } else {
            Err(misnamed.join("; "))
        }
    }
}

/// The finishing step's shared state: who won, and what each observer saw last.
struct Finish {
    observers: Vec<String>,
    state: Mutex<FinishState>,
    everyone_observed: Signal,
    pending: Pending,
}

#[derive(Default)]
struct FinishState {
    /// The identity of the candidate that leads now, once one does.
    winner: Option<String>,
    /// Each observer's latest observation.
    seen: BTreeMap<String, Option<String>>,
    /// Leaders whose leader lookup named someone else.
    misnamed: Vec<String>,
}

impl Finish {
    fn won(&self, identity: &str) {
        self.state.lock().expect("not poisoned").winner = Some(identity.to_string());
        self.check();
    }

    fn lost(&self, identity: &str) {
        let mut state = self.state.lock().expect("not poisoned");
        if state.winner.as_deref() == Some(identity) {
            state.winner = None;
        }
    }

    /// The leader `identity`'s lookup of who leads, before it resigned, found `found`.
    fn looked_up(&self, identity: &str, found: Option<String>) {
        if found.as_deref() != Some(identity) {
            self.state
                .lock()
                .expect("not poisoned")
                .misnamed
                .push(format!(
                    "{identity} led, but its leader lookup found {found:?}"
                ));
        }
    }

    fn observed(&self, observer: &str, leader: Option<String>) {
        self.state
            .lock()
            .expect("not poisoned")
            .seen
            .insert(observer.to_string(), leader);
        self.check();
    }

    /// Sets `everyone_observed` once every observer's latest observation is the winner.
    fn check(&self) {
        let done = {
            let state = self.state.lock().expect("not poisoned");
            state.winner.is_some()
                && self
                    .observers
                    .iter()
                    .all(|observer| state.seen.get(observer) == Some(&state.winner))
        };
        if done {
            self.everyone_observed.set();
        }
        self.note();
    }

    fn note(&self) {
        let state = self.state.lock().expect("not poisoned");
        let note = match &state.winner {
            None => format!("no leader of {ELECTION_NAME} yet"),
            Some(winner) => {
                let behind: Vec<&str> = self
                    .observers
                    .iter()
                    .filter(|observer| state.seen.get(*observer) != Some(&state.winner))
                    .map(String::as_str)
                    .collect();
                format!(
                    "{} not yet observing the leader {winner} of {ELECTION_NAME}",
                    behind.join(", ")
                )
            }
        };
        self.pending.set(note);
    }
}

/// One candidate process: its session (made on demand) and its resource connection.
struct Candidate {
    elections: Elections,
    context: NodeContext,
    process: u32,
    identity: String,
    resource: ResourceClient,
    bugs: RecipeBugs,
    session: RecipeSession,
}

impl Candidate {
    fn new(
        elections: &Elections,
        store: &RecipeStore,
        resource: &FencedResource,
        context: &NodeContext,
        process: u32,
        bugs: RecipeBugs,
    ) -> Self {
        Self {
            elections: elections.clone(),
            context: context.clone(),
            process,
            identity: format!("{}/{process}", context.id()),
            resource: resource.client(context, process),
            bugs,
            session: RecipeSession::new(
                store,
                context,
                process,
                Duration::from_millis(elections.session_timeout_ms),
                Duration::from_millis(elections.patience_ms),
            ),
        }
    }

    /// One campaign and, if won, one term as leader.
    async fn take_turn(&mut self, turn: u64, leading: &Leading<'_>) -> Turn {
        if !self.session.ensure().await {
            return Turn::SessionOver;
        }
        let patience = Duration::from_millis(self.elections.patience_ms);
        let (context, identity, bugs) = (&self.context, self.identity.as_str(), self.bugs);
        let resource = &mut self.resource;
        let round = Round {
            leading,
            context,
            identity,
            bugs,
            work: Duration::from_millis(self.elections.work_ms),
            turn,
        };
        let turn = match self.session.parts().expect("just ensured") {
            (Session::Zk(zk), _) => {
                let election = ZkElection::new(zk, context, ELECTION_NAME).with_bugs(bugs);
                match election.campaign(identity, patience).await {
                    Ok(leadership) => {
                        let mut rounds = 0;
                        let lost = loop {
                            if leading.is_over(rounds) {
                                break false;
                            }
                            let acting = round.act(resource, leadership.token(), rounds);
                            if let Either::Right(_) =
                                select(pin!(acting), pin!(leadership.lost())).await
                            {
                                break true;
                            }
                            rounds += 1;
                        };
                        if lost {
                            leading.lost(identity);
                            leadership.abandon().await;
                        } else {
                            if let Leading::UntilObserved(finish) = leading {
                                finish.looked_up(identity, election.leader().await.ok().flatten());
                            }
                            leadership.resign().await;
                        }
                        Turn::Led
                    }
                    Err(ElectionError::TimedOut) => Turn::TimedOut,
                    Err(_) => Turn::SessionOver,
                }
            }
            (Session::Etcd(session), client) => {
                let client = client.expect("made on the Raft store");
                let mut election = EtcdElection::new(context, self.process, session, ELECTION_NAME)
                    .with_bugs(bugs);
                match election.campaign(client, session, identity, patience).await {
                    Ok(leadership) => {
                        let mut rounds = 0;
                        let lost = loop {
                            if leading.is_over(rounds) {
                                break false;
                            }
                            let acting = async {
                                // Still the leader? A deposed one learns it here (recorded).
                                if let Err(ElectionError::NotLeader | ElectionError::SessionEnded) =
                                    election.proclaim(client, &leadership, identity).await
                                {
                                    return Acted::Deposed;
                                }
                                round.act(resource, leadership.token(), rounds).await;
                                Acted::Done
                            };
                            let acted = matches!(
                                select(pin!(acting), pin!(leadership.lost(session))).await,
                                Either::Left((Acted::Done, _))
                            );
                            if !acted {
                                break true;
                            }
                            rounds += 1;
                        };
                        if lost {
                            leading.lost(identity);
                        } else {
                            if let Leading::UntilObserved(finish) = leading {
                                finish.looked_up(identity, election.leader(client).await);
                            }
                            election.resign(client, leadership, session).await;
                        }
                        Turn::Led
                    }
                    Err(ElectionError::TimedOut) => Turn::TimedOut,
                    Err(_) => Turn::SessionOver,
                }
            }
        };
        self.session.close_if_over().await;
        turn
    }
}

/// How a leader's round of work ended, on etcd.
enum Acted {
    Done,
    /// Its proclamation found it deposed.
    Deposed,
}

/// A leader's round: the work, then the write with the leadership's token (or, in the
/// finishing step, the announcement of the win and the wait for the observers).
struct Round<'a> {
    leading: &'a Leading<'a>,
    context: &'a NodeContext,
    identity: &'a str,
    bugs: RecipeBugs,
    work: Duration,
    turn: u64,
}

impl Round<'_> {
    async fn act(&self, resource: &mut ResourceClient, token: u64, round: u32) {
        match self.leading {
            Leading::Work { .. } => {
                self.context.clock().sleep(self.work).await;
                let value = format!("{}#{}.{round}", self.identity, self.turn);
                let _ = resource.write(fencing_token(self.bugs, token), value).await;
            }
            Leading::UntilObserved(finish) => {
                finish.won(self.identity);
                finish.everyone_observed.wait().await;
            }
        }
    }
}

/// One observer process: on ZooKeeper its own session, on etcd its own client (observing
/// needs no lease).
struct Observer {
    store: RecipeStore,
    context: NodeContext,
    process: u32,
    session_timeout: Duration,
    patience: Duration,
    zk: Option<(ZkClient, ZkLeaderObserver)>,
    etcd: Option<(EtcdClient, EtcdLeaderObserver)>,
}

impl Observer {
    fn new(
        elections: &Elections,
        store: &RecipeStore,
        context: &NodeContext,
        process: u32,
    ) -> Self {
        Self {
            store: store.clone(),
            context: context.clone(),
            process,
            session_timeout: Duration::from_millis(elections.session_timeout_ms),
            patience: Duration::from_millis(elections.patience_ms),
            zk: None,
            etcd: None,
        }
    }

    /// The next change of leader within [`OBSERVE_SLICE`] (recorded by the recipe's
    /// observer): the leader's identity, `None` for no leader (ZooKeeper only).
    async fn next(&mut self) -> Result<Option<String>, ElectionError> {
        match &self.store {
            RecipeStore::Zab(ensemble) => {
                if self.zk.is_none() {
                    let mut config = ensemble.client_config(self.process);
                    config.session_timeout = self.session_timeout;
                    config.connect_patience = self.patience;
                    let zk = ensemble
                        .connect(&self.context, config)
                        .await
                        .map_err(|error| ElectionError::Store(error.to_string()))?;
                    let observer = ZkLeaderObserver::new(&zk, &self.context, ELECTION_NAME);
                    self.zk = Some((zk, observer));
                }
                let (zk, observer) = self.zk.as_mut().expect("just connected");
                let observed = observer.next(OBSERVE_SLICE).await;
                if zk.is_expired() || zk.is_closed() {
                    self.close().await;
                }
                observed
            }
            RecipeStore::Raft(cluster) => {
                let (client, observer) = self.etcd.get_or_insert_with(|| {
                    (
                        EtcdClient::new(cluster, self.context.clone(), self.process),
                        EtcdLeaderObserver::new(&self.context, self.process, ELECTION_NAME),
                    )
                });
                observer.next(client, OBSERVE_SLICE).await.map(Some)
            }
        }
    }

    /// Ends the ZooKeeper session, or the etcd watch, if any.
    async fn close(&mut self) {
        if let Some((zk, _)) = self.zk.take() {
            let _ = zk.close().await;
        }
        if let Some((_, observer)) = self.etcd.take() {
            observer.close();
        }
    }
}
