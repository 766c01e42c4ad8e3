//! A candidate process: it campaigns, and while it leads, works and writes with its
//! leadership's token, watching for the loss of its leadership all along.

use super::finish::Finish;
use super::{ELECTION_NAME, Elections, LeaderTerm};
use crate::workload::shared::locks::fencing_token;
use crate::workload::shared::recipe_session::{RecipeSession, RecipeStore, Session};
use futures_util::future::{Either, select};
use models::recipes::{
    EtcdElection, FencedResource, RecipeBugs, RecipeError, ResourceClient, ZkElection,
};
use sim::NodeContext;
use std::{
    pin::pin,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

/// How a candidate's turn ended.
pub(super) enum Turn {
    /// It led (and resigned or lost).
    Led,
    /// It did not win in time.
    TimedOut,
    /// Its session or lease is over: it needs a new one.
    SessionOver,
}

/// What a leader does while it leads.
pub(super) enum Leading<'a> {
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

/// One candidate process: its session (made on demand) and its resource connection.
pub(super) struct Candidate {
    elections: Elections,
    context: NodeContext,
    process: u32,
    identity: String,
    resource: ResourceClient,
    bugs: RecipeBugs,
    session: RecipeSession,
}

impl Candidate {
    pub(super) fn new(
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
    pub(super) async fn take_turn(&mut self, turn: u64, leading: &Leading<'_>) -> Turn {
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
                    Err(RecipeError::TimedOut) => Turn::TimedOut,
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
                                if let Err(RecipeError::NotLeader | RecipeError::SessionEnded) =
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
                    Err(RecipeError::TimedOut) => Turn::TimedOut,
                    Err(_) => Turn::SessionOver,
                }
            }
        };
        self.session.close_if_over().await;
        turn
    }

    /// Ends its session (deleting its node or revoking its lease).
    pub(super) async fn close(&mut self) {
        self.session.close().await;
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
