//! Leader election: PreVote, RequestVote, and becoming leader (Raft §5.2, thesis §9.6).

use super::{
    config::RaftBug,
    core::{AfterPersist, LeaderState, Progress, RaftCore, ReplicationMode, Role},
    effect::{Effect, Observation},
    message::Message,
    types::EntryPayload,
};
use sim::NodeId;
use std::collections::{BTreeSet, VecDeque};

impl<C: Clone, S: Clone> RaftCore<C, S> {
    /// The election timer fired: ask for pre-votes (or, without PreVote, campaign at once).
    pub(super) fn start_election(&mut self) {
        if self.config.has(RaftBug::NoPreVoteNoCheckQuorum) {
            self.become_candidate();
        } else {
            self.become_pre_candidate();
        }
    }

    fn peers(&self) -> Vec<NodeId> {
        self.config
            .voters
            .iter()
            .copied()
            .filter(|node| *node != self.config.id)
            .collect()
    }

    fn become_pre_candidate(&mut self) {
        if let Role::Leader(_) = &self.role {
            return;
        }
        self.role = Role::PreCandidate {
            granted: BTreeSet::from([self.config.id]),
        };
        self.leader = None;
        self.reset_election_deadline();
        let message = Message::PreVote {
            term: self.term + 1,
            last_log_index: self.log.last_index(),
            last_log_term: self.log.last_term(),
        };
        for peer in self.peers() {
            self.send(peer, message.clone());
        }
        self.maybe_win_pre_vote();
    }

    fn maybe_win_pre_vote(&mut self) {
        if let Role::PreCandidate { granted } = &self.role
            && granted.len() >= self.config.quorum()
        {
            self.become_candidate();
        }
    }

    /// Raises the term and votes for itself; the vote requests go out once that is durable,
    /// and the own vote counts only then (a crash must not forget a vote already counted).
    fn become_candidate(&mut self) {
        self.term += 1;
        self.voted_for = Some(self.config.id);
        self.role = Role::Candidate {
            granted: BTreeSet::new(),
            retry_at: self.now + self.config.heartbeat_interval,
        };
        self.leader = None;
        self.reset_election_deadline();
        let term = self.term;
        self.mark_hard_state_dirty();
        let persisted = self
            .flush_hard_state(AfterPersist::OwnVote { term })
            .expect("the new term is not yet written");
        let message = Message::RequestVote {
            term,
            last_log_index: self.log.last_index(),
            last_log_term: self.log.last_term(),
        };
        for peer in self.peers() {
            self.output.push(Effect::SendAfterPersist {
                after: persisted,
                to: peer,
                message: message.clone(),
            });
        }
    }

    /// Sends the vote request again to voters that have not granted it yet.
    pub(super) fn retry_vote_requests(&mut self) {
        let now = self.now;
        let interval = self.config.heartbeat_interval;
        let Role::Candidate { granted, retry_at } = &mut self.role else {
            return;
        };
        if now < *retry_at {
            return;
        }
        *retry_at = now + interval;
        let waiting: Vec<NodeId> = self
            .config
            .voters
            .iter()
            .copied()
            .filter(|voter| *voter != self.config.id && !granted.contains(voter))
            .collect();
        let message = Message::RequestVote {
            term: self.term,
            last_log_index: self.log.last_index(),
            last_log_term: self.log.last_term(),
        };
        for voter in waiting {
            self.send_when_durable(voter, message.clone());
        }
    }

    pub(super) fn handle_pre_vote(
        &mut self,
        from: NodeId,
        term: u64,
        last_log_index: u64,
        last_log_term: u64,
    ) {
        // A follower that hears from a live leader does not help anyone depose it.
        if self.in_leader_lease() {
            return;
        }
        let granted = term > self.term
            && self
                .log
                .candidate_is_up_to_date(last_log_term, last_log_index);
        let reply_term = if granted { term } else { self.term };
        self.send_in_durable_term(
            from,
            Message::PreVoteResponse {
                term: reply_term,
                granted,
            },
        );
    }

    pub(super) fn handle_pre_vote_response(&mut self, from: NodeId, term: u64, granted: bool) {
        if !granted || term != self.term + 1 {
            return;
        }
        if let Role::PreCandidate { granted } = &mut self.role {
            granted.insert(from);
        }
        self.maybe_win_pre_vote();
    }

    pub(super) fn handle_request_vote(
        &mut self,
        from: NodeId,
        last_log_index: u64,
        last_log_term: u64,
    ) {
        let can_vote =
            self.voted_for == Some(from) || (self.voted_for.is_none() && self.leader.is_none());
        let granted = can_vote
            && self
                .log
                .candidate_is_up_to_date(last_log_term, last_log_index);
        let reply = Message::RequestVoteResponse {
            term: self.term,
            granted,
        };
        if !granted {
            self.send_when_durable(from, reply);
            return;
        }
        self.voted_for = Some(from);
        self.restart_election_timer();
        self.mark_hard_state_dirty();
        if self.config.has(RaftBug::VolatileVote) {
            // The bug: answer at once; the vote itself is never written down.
            self.flush_hard_state(AfterPersist::Nothing);
            self.send(from, reply);
        } else {
            self.send_when_durable(from, reply);
        }
    }

    pub(super) fn handle_vote_response(&mut self, from: NodeId, granted: bool) {
        if !granted {
            return;
        }
        if let Role::Candidate { granted, .. } = &mut self.role {
            granted.insert(from);
        }
        self.maybe_win_election();
    }

    pub(super) fn maybe_win_election(&mut self) {
        if let Role::Candidate { granted, .. } = &self.role
            && granted.len() >= self.config.quorum()
        {
            self.become_leader();
        }
    }

    fn become_leader(&mut self) {
        let next_index = self.log.last_index() + 1;
        let progress = self
            .peers()
            .into_iter()
            .map(|peer| {
                (
                    peer,
                    Progress {
                        next_index,
                        match_index: 0,
                        mode: ReplicationMode::Probe,
                        acked_read_round: 0,
                        recently_active: false,
                    },
                )
            })
            .collect();
        self.role = Role::Leader(Box::new(LeaderState {
            progress,
            self_match: 0,
            term_start_index: next_index,
            heartbeat_deadline: self.now + self.config.heartbeat_interval,
            check_quorum_deadline: self.now + self.config.election_timeout_min,
            read_round: 0,
            pending_reads: VecDeque::new(),
            queued_reads: Vec::new(),
            reads_waiting_for_term_commit: Vec::new(),
        }));
        self.leader = Some(self.config.id);
        self.output.push(Effect::Observe(Observation::BecameLeader {
            term: self.term,
        }));
        // Raft §8: a no-op of the new term; committing it commits everything before it.
        self.append_as_leader(EntryPayload::Noop);
        for peer in self.peers() {
            self.send_append(peer);
        }
    }
}
