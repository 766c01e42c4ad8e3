//! Linearizable reads with ReadIndex (Raft thesis §6.4; etcd `ReadIndex`).
//!
//! 1. The leader waits until it has committed an entry of its own term (its no-op): before
//!    that, its commit index may lag entries an earlier leader already committed.
//! 2. It records its commit index as the read index and starts a heartbeat round — unless a
//!    round is in flight: then the read is queued, and once the round in flight is
//!    acknowledged one new round confirms every read queued meanwhile (etcd's server batches
//!    pending reads into one ReadIndex the same way). A read is only ever confirmed by a
//!    round that started after it arrived.
//! 3. Once a majority (itself included) answered that round, nobody else can have been
//!    leader of a later term when the read arrived: the read index is current.
//! 4. The read is served once the state machine has applied up to the read index.

use super::{
    config::RaftBug,
    core::{PendingRead, RaftCore, Role},
    effect::Effect,
    types::ReadRequestId,
};

impl<C: Clone, S: Clone> RaftCore<C, S> {
    pub(super) fn handle_read_index(&mut self, request: ReadRequestId) {
        let Role::Leader(leader) = &mut self.role else {
            let leader_hint = self.leader;
            self.output.push(Effect::ReadRejected {
                request,
                leader_hint,
            });
            return;
        };
        if self.config.has(RaftBug::ReadWithoutReadIndex) {
            // The bug: no quorum round; local state is assumed current.
            self.ready_reads.push_back((request, self.commit_index));
            self.apply_committed();
            return;
        }
        let term_committed = self.commit_index >= leader.term_start_index;
        if !term_committed && !self.config.has(RaftBug::ReadIndexBeforeTermCommit) {
            leader.reads_waiting_for_term_commit.push(request);
            return;
        }
        leader.queued_reads.push((request, self.commit_index));
        self.start_read_round_unless_one_is_in_flight();
    }

    /// Step 2: starts a round for the queued reads, unless a round is in flight: then they
    /// wait for it to be acknowledged and share the next one.
    fn start_read_round_unless_one_is_in_flight(&mut self) {
        let Role::Leader(leader) = &mut self.role else {
            return;
        };
        if leader.queued_reads.is_empty() || !leader.pending_reads.is_empty() {
            return;
        }
        leader.read_round += 1;
        let round = leader.read_round;
        for (request, read_index) in leader.queued_reads.drain(..) {
            leader.pending_reads.push_back(PendingRead {
                request,
                read_index,
                round,
            });
        }
        if self.config.quorum() > 1 {
            self.broadcast_heartbeat();
        }
        self.confirm_reads();
    }

    /// Step 1 done: the no-op of this term is committed.
    pub(super) fn start_reads_waiting_for_term_commit(&mut self) {
        let read_index = self.commit_index;
        let Role::Leader(leader) = &mut self.role else {
            return;
        };
        let waiting = std::mem::take(&mut leader.reads_waiting_for_term_commit);
        leader
            .queued_reads
            .extend(waiting.into_iter().map(|request| (request, read_index)));
        self.start_read_round_unless_one_is_in_flight();
    }

    /// Step 3: reads whose round a majority acknowledged move on to wait for the apply.
    pub(super) fn confirm_reads(&mut self) {
        let quorum = self.config.quorum();
        let Role::Leader(leader) = &mut self.role else {
            return;
        };
        while let Some(front) = leader.pending_reads.front() {
            let acknowledged = 1 + leader
                .progress
                .values()
                .filter(|progress| progress.acked_read_round >= front.round)
                .count();
            if acknowledged < quorum {
                break;
            }
            let read = leader.pending_reads.pop_front().expect("front exists");
            self.ready_reads.push_back((read.request, read.read_index));
        }
        // The round in flight is acknowledged: the reads that came meanwhile get theirs.
        self.start_read_round_unless_one_is_in_flight();
        self.apply_committed();
    }

    /// Leadership is lost: unconfirmed reads cannot be served here.
    pub(super) fn reject_pending_reads(&mut self) {
        let Role::Leader(leader) = &mut self.role else {
            return;
        };
        let unconfirmed: Vec<ReadRequestId> = leader
            .pending_reads
            .drain(..)
            .map(|read| read.request)
            .chain(leader.queued_reads.drain(..).map(|(request, _)| request))
            .chain(leader.reads_waiting_for_term_commit.drain(..))
            .collect();
        for request in unconfirmed {
            self.output.push(Effect::ReadRejected {
                request,
                leader_hint: None,
            });
        }
    }
}
