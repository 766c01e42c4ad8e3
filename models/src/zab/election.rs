//! Fast leader election (ZooKeeper's `FastLeaderElection`).
//!
//! A looking server votes for itself and tells everyone; on hearing a better vote (higher
//! epoch, then higher last zxid, then higher server id) in its round it adopts it and tells
//! everyone again. Once a quorum's latest votes in the round agree with its own, it waits
//! `finalize_wait` for a better vote and then decides: lead if the vote names it, else follow.
//! Servers already following or leading answer a looking server with the vote that elected
//! their leader, so a late server joins the established leader once a quorum of such answers
//! agree and the leader itself says it leads. An observer votes in no election: it sends
//! notifications only to ask, voters answer it and count nothing it sent, and it observes the
//! leader that a quorum of voters say they follow.

use super::{
    config::ZabBug,
    core::ZabCore,
    effect::Effect,
    message::{Notification, PeerState, Vote},
    role::{Election, Role},
    state_machine::StateMachine,
};
use sim::{NodeId, clock::LocalTime};

impl<S: StateMachine, A> ZabCore<S, A> {
    /// Leaves the current role and starts a new election round.
    pub(super) fn start_election(&mut self, now: LocalTime) {
        self.leave_role();
        self.round += 1;
        self.vote = self.own_vote();
        let mut election = Election::idle();
        election.received.insert(self.config.me, self.vote);
        election.resend_interval = self.config.notification_resend_min;
        election.resend_at = now + election.resend_interval;
        self.role = Role::Looking(election);
        self.broadcast_notification();
        self.check_election_quorum(now);
    }

    fn own_vote(&self) -> Vote {
        Vote {
            epoch: self.current_epoch,
            zxid: self.last_logged(),
            leader: self.config.me,
        }
    }

    /// Whether `new` is a better vote than `current` (ZooKeeper's `totalOrderPredicate`):
    /// a higher epoch, then a higher last zxid, then a higher server id.
    fn beats(&self, new: Vote, current: Vote) -> bool {
        if self.has_bug(ZabBug::FleNontransitiveOrder) {
            // ZOOKEEPER-1419: the id tie-break asks for equal zxids but not equal epochs.
            new.epoch > current.epoch
                || (new.epoch == current.epoch && new.zxid > current.zxid)
                || (new.zxid == current.zxid && new.leader > current.leader)
        } else {
            new > current
        }
    }

    fn broadcast_notification(&mut self) {
        let notification = self.my_notification();
        for index in 0..self.config.ensemble.len() {
            let to = self.config.ensemble[index];
            if to != self.config.me {
                self.effects.push(Effect::Notify { to, notification });
            }
        }
    }

    fn election_mut(&mut self) -> &mut Election {
        match &mut self.role {
            Role::Looking(election) => election,
            _ => unreachable!("only called while looking"),
        }
    }

    pub(super) fn looking_receive(&mut self, now: LocalTime, from: NodeId, n: Notification) {
        match n.state {
            PeerState::Looking => {
                if n.round > self.round {
                    // A newer round: forget this round's votes, vote afresh.
                    self.round = n.round;
                    let own = self.own_vote();
                    self.vote = if self.beats(n.vote, own) { n.vote } else { own };
                    let (me, vote) = (self.config.me, self.vote);
                    let election = self.election_mut();
                    election.received.clear();
                    election.received.insert(me, vote);
                    election.decide_at = None;
                    self.broadcast_notification();
                } else if n.round < self.round {
                    // Help a server in an older round catch up.
                    let reply = self.my_notification();
                    self.effects.push(Effect::Notify {
                        to: from,
                        notification: reply,
                    });
                    return;
                } else if self.beats(n.vote, self.vote) {
                    self.vote = n.vote;
                    let (me, vote) = (self.config.me, self.vote);
                    let election = self.election_mut();
                    election.received.insert(me, vote);
                    election.decide_at = None;
                    self.broadcast_notification();
                }
                self.election_mut().received.insert(from, n.vote);
                self.check_election_quorum(now);
            }
            PeerState::Following | PeerState::Leading => {
                let quorum = self.quorum;
                let me = self.config.me;
                let round = self.round;
                let election = self.election_mut();
                if n.round == round {
                    election.received.insert(from, n.vote);
                    let agree = election
                        .received
                        .values()
                        .filter(|vote| **vote == n.vote)
                        .count();
                    if agree >= quorum && check_leader(election, me, round, n.vote.leader, round) {
                        self.finish_election(now, n.vote);
                        return;
                    }
                }
                self.out_of_election_receive(now, from, n);
            }
        }
    }

    /// ZooKeeper's out-of-election path: `from` follows or leads already. Once a quorum of
    /// such servers name the same leader in one round, and that leader itself says it leads,
    /// this server joins it in that round.
    fn out_of_election_receive(&mut self, now: LocalTime, from: NodeId, n: Notification) {
        let (quorum, me, round) = (self.quorum, self.config.me, self.round);
        let election = self.election_mut();
        election
            .out_of_election
            .insert(from, (n.vote, n.round, n.state));
        let agree = election
            .out_of_election
            .values()
            .filter(|(vote, vote_round, _)| *vote == n.vote && *vote_round == n.round)
            .count();
        if agree >= quorum && check_leader(election, me, round, n.vote.leader, n.round) {
            self.round = n.round;
            self.finish_election(now, n.vote);
        }
    }

    fn check_election_quorum(&mut self, now: LocalTime) {
        if self.config.observing() {
            // An observer decides nothing from votes: it waits to be told who leads.
            return;
        }
        let (quorum, vote, finalize) = (self.quorum, self.vote, self.config.finalize_wait);
        let election = self.election_mut();
        let agree = election.received.values().filter(|v| **v == vote).count();
        if agree >= quorum && election.decide_at.is_none() {
            election.decide_at = Some(now + finalize);
        }
    }

    pub(super) fn election_tick(&mut self, now: LocalTime) {
        let (quorum, vote, max) = (self.quorum, self.vote, self.config.notification_resend_max);
        let election = self.election_mut();
        if election.decide_at.is_some_and(|at| now >= at) {
            let agree = election.received.values().filter(|v| **v == vote).count();
            if agree >= quorum {
                self.finish_election(now, vote);
                return;
            }
            election.decide_at = None;
        }
        let election = self.election_mut();
        if now >= election.resend_at {
            election.resend_interval = (election.resend_interval * 2).min(max);
            election.resend_at = now + election.resend_interval;
            self.broadcast_notification();
        }
    }

    /// An observer looking for the leader heard from voter `from`. It takes part in no
    /// vote (its own notifications only ask; voters count nothing an observer sends), so it
    /// waits for what voters that already follow or lead say: once a quorum of them, in one
    /// round, name the same leader and that leader itself says it leads, it observes that
    /// leader (ZooKeeper's out-of-election path, which an observer also takes).
    pub(super) fn observer_receive(&mut self, now: LocalTime, from: NodeId, n: Notification) {
        if n.state == PeerState::Looking || !self.config.is_voter(n.vote.leader) {
            return;
        }
        self.out_of_election_receive(now, from, n);
    }

    fn finish_election(&mut self, now: LocalTime, vote: Vote) {
        self.vote = vote;
        if self.config.observing() {
            // Never leads: observes the voters' leader, as a follower would follow it.
            self.become_following(now, vote.leader);
        } else if vote.leader == self.config.me {
            self.become_leading(now);
        } else {
            self.become_following(now, vote.leader);
        }
    }
}

/// ZooKeeper's `checkLeader`: a leader other than this server must say it leads; this
/// server may only lead a round it took part in.
fn check_leader(
    election: &Election,
    me: NodeId,
    my_round: u64,
    leader: NodeId,
    round: u64,
) -> bool {
    if leader == me {
        return my_round == round;
    }
    matches!(
        election.out_of_election.get(&leader),
        Some((_, _, PeerState::Leading))
    )
}
