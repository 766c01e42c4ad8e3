//! The Raft server core: a pure state machine from inputs to ordered [`Effect`]s.
//!
//! Inputs: [`RaftCore::step`] (a message arrived), [`RaftCore::tick`] (the local clock reached
//! a timer), [`RaftCore::propose`], [`RaftCore::read_index`], [`RaftCore::on_persisted`]
//! (a durable write finished). Every input takes the local time: the core never reads a
//! clock, and election jitter comes from the [`ElectionJitter`] the driver hands it.
//! Effects accumulate in an output buffer that the driver drains with
//! [`RaftCore::drain_effects`] after each input (one buffer, reused: no allocation per
//! message on the hot path).

use super::{
    config::{RaftBug, RaftConfig},
    effect::{DurableWrite, Effect, Observation},
    log::RaftLog,
    message::Message,
    types::{Entry, EntryPayload, HardState, PersistId, ReadRequestId, Snapshot},
};
use rand::Rng;
use sim::{NodeId, clock::LocalTime};
use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    time::Duration,
};

/// Source of randomized election timeouts (Raft §5.2), supplied by the driver.
pub trait ElectionJitter {
    /// A timeout in `[min, max]`.
    fn election_timeout(&mut self, min: Duration, max: Duration) -> Duration;
}

impl ElectionJitter for rand_chacha::ChaCha8Rng {
    fn election_timeout(&mut self, min: Duration, max: Duration) -> Duration {
        let low = u64::try_from(min.as_micros()).unwrap_or(u64::MAX);
        let high = u64::try_from(max.as_micros()).unwrap_or(u64::MAX).max(low);
        Duration::from_micros(self.gen_range(low..=high))
    }
}

/// Timeouts given in advance, for scripted tests; repeats the last one when exhausted.
#[derive(Clone, Debug)]
pub struct ScriptedTimeouts {
    timeouts: VecDeque<Duration>,
    last: Duration,
}

impl ScriptedTimeouts {
    /// These timeouts in order, then `timeouts.last()` forever (or `fallback` if empty).
    pub fn new(timeouts: impl IntoIterator<Item = Duration>, fallback: Duration) -> Self {
        let timeouts: VecDeque<Duration> = timeouts.into_iter().collect();
        let last = timeouts.back().copied().unwrap_or(fallback);
        Self { timeouts, last }
    }
}

impl ElectionJitter for ScriptedTimeouts {
    fn election_timeout(&mut self, _min: Duration, _max: Duration) -> Duration {
        self.timeouts.pop_front().unwrap_or(self.last)
    }
}

/// Room kept in the effect buffer, when entries are handed out, for the effects the same
/// input adds after them (see [`RaftCore::apply_committed`]).
pub(super) const EFFECTS_AFTER_APPLIES: usize = 16;

/// A proposal this server cannot accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProposeError {
    /// Only the leader appends to the log.
    NotLeader {
        /// The leader, if known.
        leader_hint: Option<NodeId>,
    },
}

/// Where a proposal went: it is committed iff an entry with this index *and term* is
/// applied (an applied entry with another term at this index means it was overwritten).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProposalSlot {
    /// Log index.
    pub index: u64,
    /// Term it was proposed in.
    pub term: u64,
}

/// This server's role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Role {
    Follower,
    /// Collecting pre-votes for `term + 1` without having raised its term.
    PreCandidate {
        granted: BTreeSet<NodeId>,
    },
    /// Collecting votes; its own vote counts once it is durable. Unanswered vote requests
    /// are sent again every heartbeat interval (Raft §5.1: servers retry RPCs that get no
    /// timely answer).
    Candidate {
        granted: BTreeSet<NodeId>,
        retry_at: LocalTime,
    },
    Leader(Box<LeaderState>),
}

/// The role name, for observers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleName {
    /// Follows a leader (or waits for one).
    Follower,
    /// Asking for pre-votes.
    PreCandidate,
    /// Asking for votes.
    Candidate,
    /// Leads the current term.
    Leader,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LeaderState {
    pub(super) progress: BTreeMap<NodeId, Progress>,
    /// Highest index durable in the leader's own log (counts toward commit).
    pub(super) self_match: u64,
    /// Index of this term's no-op: reads wait until it is committed.
    pub(super) term_start_index: u64,
    pub(super) heartbeat_deadline: LocalTime,
    pub(super) check_quorum_deadline: LocalTime,
    /// The last ReadIndex round started (its heartbeats carry it).
    pub(super) read_round: u64,
    /// Reads of rounds already started, waiting for a quorum to acknowledge their round.
    pub(super) pending_reads: VecDeque<PendingRead>,
    /// Reads that arrived while a round was in flight: the next round, started once that one
    /// is acknowledged, confirms them all (etcd batches reads into one ReadIndex the same
    /// way). Each with the commit index at its arrival.
    pub(super) queued_reads: Vec<(ReadRequestId, u64)>,
    pub(super) reads_waiting_for_term_commit: Vec<ReadRequestId>,
}

/// The leader's view of one follower (etcd's `Progress`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Progress {
    pub(super) next_index: u64,
    pub(super) match_index: u64,
    pub(super) mode: ReplicationMode,
    pub(super) acked_read_round: u64,
    /// Heard from since the last CheckQuorum tick (etcd's `RecentActive`).
    pub(super) recently_active: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ReplicationMode {
    /// Unknown where the follower's log diverges: one AppendEntries at a time.
    Probe,
    /// In sync: stream new entries as they are proposed.
    Replicate,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PendingRead {
    pub(super) request: ReadRequestId,
    pub(super) read_index: u64,
    pub(super) round: u64,
}

/// What to do once a durable write completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AfterPersist {
    Nothing,
    /// The leader's own log is durable up to `index`.
    LeaderSelfMatch {
        term: u64,
        index: u64,
    },
    /// The candidate's vote for itself in `term` is durable.
    OwnVote {
        term: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PendingPersist {
    pub(super) id: PersistId,
    pub(super) term: Option<u64>,
    pub(super) action: AfterPersist,
}

/// A Raft server. See the [module docs](self).
pub struct RaftCore<C, S = ()> {
    pub(super) config: RaftConfig,
    pub(super) jitter: Box<dyn ElectionJitter>,
    pub(super) term: u64,
    pub(super) voted_for: Option<NodeId>,
    pub(super) log: RaftLog<C>,
    /// The latest snapshot (taken here or installed from a leader): what the log was
    /// compacted through, and what a leader sends a follower that needs compacted entries.
    /// `Some` whenever `log.snapshot_index() > 0`, with that index.
    pub(super) snapshot: Option<Snapshot<S>>,
    /// The applied index an [`Effect::SnapshotDue`] was handed out for and not yet answered
    /// by [`RaftCore::compact`]: no second one until then.
    pub(super) snapshot_due: Option<u64>,
    pub(super) role: Role,
    pub(super) leader: Option<NodeId>,
    pub(super) commit_index: u64,
    pub(super) applied_index: u64,
    pub(super) now: LocalTime,
    pub(super) election_deadline: LocalTime,
    /// The randomized election timeout, drawn anew at every role change (etcd's
    /// `randomizedElectionTimeout`); hearing from the leader restarts it without a draw.
    pub(super) election_timeout: Duration,
    pub(super) last_leader_contact: Option<LocalTime>,
    pub(super) armed_timer: Option<LocalTime>,
    pub(super) next_persist: u64,
    pub(super) durable_through: u64,
    /// The latest write that carries the term and vote (0: what the node booted with, which
    /// is durable). A message carrying the current term waits for it.
    pub(super) hard_state_write: u64,
    pub(super) reported_durable_term: u64,
    pub(super) pending_persists: VecDeque<PendingPersist>,
    /// The term or vote changed and is not yet in a [`Effect::Persist`]: it goes into the
    /// next write, and at the latest at the end of the current input.
    pub(super) hard_state_dirty: bool,
    /// Reads confirmed by a quorum, waiting for the state machine to reach their index.
    pub(super) ready_reads: VecDeque<(ReadRequestId, u64)>,
    pub(super) output: Vec<Effect<C, S>>,
    /// Reused buffers, so that per-message work does not allocate.
    pub(super) scratch_matches: Vec<u64>,
    pub(super) scratch_peers: Vec<NodeId>,
}

impl<C: Clone, S: Clone> RaftCore<C, S> {
    /// A server booting with an empty disk.
    pub fn new(config: RaftConfig, jitter: Box<dyn ElectionJitter>, now: LocalTime) -> Self {
        Self::restore(config, jitter, now, HardState::default(), None, Vec::new())
    }

    /// A server restarting from its durable state: `hard_state`, its latest `snapshot` and
    /// the `log` entries after it (numbered from the snapshot's index + 1, or from 1). It
    /// starts as a follower whose commit and applied index are the snapshot's: the driver
    /// restores the state machine from the snapshot itself (no effect says so).
    pub fn restore(
        config: RaftConfig,
        jitter: Box<dyn ElectionJitter>,
        now: LocalTime,
        hard_state: HardState,
        snapshot: Option<Snapshot<S>>,
        log: Vec<Entry<C>>,
    ) -> Self {
        let (snapshot_index, snapshot_term) = snapshot
            .as_ref()
            .map_or((0, 0), |snapshot| (snapshot.index, snapshot.term));
        let mut core = Self {
            config,
            jitter,
            term: hard_state.term,
            voted_for: hard_state.voted_for,
            log: RaftLog::after_snapshot(snapshot_index, snapshot_term, log),
            snapshot,
            snapshot_due: None,
            role: Role::Follower,
            leader: None,
            commit_index: snapshot_index,
            applied_index: snapshot_index,
            now,
            election_deadline: now,
            election_timeout: Duration::ZERO,
            last_leader_contact: None,
            armed_timer: None,
            next_persist: 1,
            durable_through: 0,
            hard_state_write: 0,
            reported_durable_term: hard_state.term,
            pending_persists: VecDeque::new(),
            hard_state_dirty: false,
            ready_reads: VecDeque::new(),
            output: Vec::new(),
            scratch_matches: Vec::new(),
            scratch_peers: Vec::new(),
        };
        core.reset_election_deadline();
        core.update_timer();
        core
    }

    // ----- observers -------------------------------------------------------------------

    /// This server.
    pub fn id(&self) -> NodeId {
        self.config.id
    }

    /// The configuration.
    pub fn config(&self) -> &RaftConfig {
        &self.config
    }

    /// Current term.
    pub fn term(&self) -> u64 {
        self.term
    }

    /// Current role.
    pub fn role(&self) -> RoleName {
        match self.role {
            Role::Follower => RoleName::Follower,
            Role::PreCandidate { .. } => RoleName::PreCandidate,
            Role::Candidate { .. } => RoleName::Candidate,
            Role::Leader(_) => RoleName::Leader,
        }
    }

    /// Whether this server leads its current term.
    pub fn is_leader(&self) -> bool {
        matches!(self.role, Role::Leader(_))
    }

    /// The leader of the current term, if known.
    pub fn leader(&self) -> Option<NodeId> {
        self.leader
    }

    /// Commit index.
    pub fn commit_index(&self) -> u64 {
        self.commit_index
    }

    /// Index of the last entry handed out with [`Effect::Apply`].
    pub fn applied_index(&self) -> u64 {
        self.applied_index
    }

    /// The log.
    pub fn log(&self) -> &RaftLog<C> {
        &self.log
    }

    /// The latest snapshot, if any.
    pub fn snapshot(&self) -> Option<&Snapshot<S>> {
        self.snapshot.as_ref()
    }

    /// Moves every effect produced so far into `into`, in order.
    pub fn drain_effects(&mut self, into: &mut Vec<Effect<C, S>>) {
        into.append(&mut self.output);
    }

    /// Every effect produced so far, in order.
    pub fn take_effects(&mut self) -> Vec<Effect<C, S>> {
        std::mem::take(&mut self.output)
    }

    // ----- inputs ----------------------------------------------------------------------

    /// The local clock reached a timer: campaign, heartbeat or check quorum as due.
    pub fn tick(&mut self, now: LocalTime) {
        self.advance_clock(now);
        match &self.role {
            Role::Leader(_) => self.leader_tick(),
            _ => {
                if self.now >= self.election_deadline {
                    self.start_election();
                } else {
                    self.retry_vote_requests();
                }
            }
        }
        self.finish_input();
    }

    /// A message arrived from `from`.
    pub fn step(&mut self, now: LocalTime, from: NodeId, message: Message<C, S>) {
        self.advance_clock(now);
        if from != self.config.id && self.config.voters.contains(&from) {
            self.dispatch(from, message);
        }
        self.finish_input();
    }

    /// Appends `command` to the log if this server leads.
    pub fn propose(&mut self, now: LocalTime, command: C) -> Result<ProposalSlot, ProposeError> {
        self.advance_clock(now);
        if !self.is_leader() {
            return Err(ProposeError::NotLeader {
                leader_hint: self.leader,
            });
        }
        let slot = self.append_as_leader(EntryPayload::Command(command));
        self.broadcast_new_entries();
        self.finish_input();
        Ok(slot)
    }

    /// Asks to serve a linearizable read: the answer is a [`Effect::ReadReady`] once this
    /// server has confirmed its leadership with a quorum and applied up to its commit index,
    /// or a [`Effect::ReadRejected`].
    pub fn read_index(&mut self, now: LocalTime, request: ReadRequestId) {
        self.advance_clock(now);
        self.handle_read_index(request);
        self.finish_input();
    }

    /// The state machine's snapshot `data`, taken at applied index `index` (the answer to an
    /// [`Effect::SnapshotDue`]; an application may also call it on its own): the snapshot
    /// replaces the log through `index`, on disk in one durable write (a crash before it is
    /// durable keeps the old snapshot and the whole log). Ignored unless `index` is applied
    /// and newer than the current snapshot.
    pub fn compact(&mut self, now: LocalTime, index: u64, data: S) {
        self.advance_clock(now);
        if self.snapshot_due.is_some_and(|due| due <= index) {
            self.snapshot_due = None;
        }
        if index > self.applied_index || index <= self.log.snapshot_index() {
            self.finish_input();
            return;
        }
        let term = self
            .log
            .term_at(index)
            .expect("an applied entry after the snapshot is in the log");
        let snapshot = Snapshot { index, term, data };
        self.log.compact_through(index, term);
        self.snapshot = Some(snapshot.clone());
        self.persist(
            DurableWrite {
                snapshot: Some(snapshot),
                ..DurableWrite::default()
            },
            AfterPersist::Nothing,
        );
        self.output
            .push(Effect::Observe(Observation::SnapshotTaken { index, term }));
        self.finish_input();
    }

    /// Every durable write with id ≤ `id` is now durable.
    pub fn on_persisted(&mut self, now: LocalTime, id: PersistId) {
        self.advance_clock(now);
        self.durable_through = self.durable_through.max(id.0);
        let mut highest_term = None;
        while let Some(pending) = self.pending_persists.front().copied() {
            if pending.id > id {
                break;
            }
            self.pending_persists.pop_front();
            if let Some(term) = pending.term {
                highest_term = Some(highest_term.map_or(term, |t: u64| t.max(term)));
            }
            match pending.action {
                AfterPersist::Nothing => {}
                AfterPersist::LeaderSelfMatch { term, index } => {
                    if term == self.term {
                        if let Role::Leader(leader) = &mut self.role {
                            leader.self_match = leader.self_match.max(index);
                        }
                        self.maybe_commit();
                    }
                }
                AfterPersist::OwnVote { term } => {
                    if term == self.term {
                        if let Role::Candidate { granted, .. } = &mut self.role {
                            granted.insert(self.config.id);
                        }
                        self.maybe_win_election();
                    }
                }
            }
        }
        if let Some(term) = highest_term
            && term > self.reported_durable_term
        {
            self.reported_durable_term = term;
            self.output
                .push(Effect::Observe(Observation::TermPersisted { term }));
        }
        self.finish_input();
    }

    // ----- shared helpers --------------------------------------------------------------

    fn advance_clock(&mut self, now: LocalTime) {
        // A clock stepped backwards must not move timers: keep the latest reading.
        self.now = self.now.max(now);
    }

    fn dispatch(&mut self, from: NodeId, message: Message<C, S>) {
        let message_term = message.term();
        if message_term > self.term {
            match &message {
                // A pre-vote does not raise anyone's term; a granted pre-vote response
                // echoes the term we would campaign in.
                Message::PreVote { .. } => {}
                Message::PreVoteResponse { granted: true, .. } => {}
                // CheckQuorum's leader lease: a server that hears from a live leader ignores
                // disruptive candidates (etcd `inLease`, Raft thesis §9.6).
                Message::RequestVote { .. } if self.in_leader_lease() => return,
                Message::AppendEntries { .. }
                | Message::InstallSnapshot { .. }
                | Message::Heartbeat { .. } => {
                    self.become_follower(message_term, Some(from));
                }
                _ => self.become_follower(message_term, None),
            }
        } else if message_term < self.term {
            self.reply_to_stale(from, &message);
            return;
        }
        match message {
            Message::PreVote {
                term,
                last_log_index,
                last_log_term,
            } => self.handle_pre_vote(from, term, last_log_index, last_log_term),
            Message::PreVoteResponse { term, granted } => {
                self.handle_pre_vote_response(from, term, granted)
            }
            Message::RequestVote {
                last_log_index,
                last_log_term,
                ..
            } => self.handle_request_vote(from, last_log_index, last_log_term),
            Message::RequestVoteResponse { granted, .. } => {
                self.handle_vote_response(from, granted)
            }
            Message::AppendEntries {
                prev_log_index,
                prev_log_term,
                entries,
                leader_commit,
                ..
            } => self.handle_append_entries(
                from,
                prev_log_index,
                prev_log_term,
                entries,
                leader_commit,
            ),
            Message::AppendEntriesResponse { outcome, .. } => {
                self.handle_append_response(from, outcome)
            }
            Message::InstallSnapshot { snapshot, .. } => {
                self.handle_install_snapshot(from, snapshot)
            }
            Message::Heartbeat {
                commit, read_round, ..
            } => self.handle_heartbeat(from, commit, read_round),
            Message::HeartbeatResponse { read_round, .. } => {
                self.handle_heartbeat_response(from, read_round)
            }
        }
    }

    /// A message from an older term: tell the sender the current term so a deposed leader
    /// or stale candidate steps down (Raft §5.1); ignore stale responses.
    fn reply_to_stale(&mut self, from: NodeId, message: &Message<C, S>) {
        let term = self.term;
        let reply = match message {
            Message::AppendEntries { prev_log_index, .. } => Message::AppendEntriesResponse {
                term,
                outcome: super::message::AppendOutcome::Rejected {
                    rejected_prev_index: *prev_log_index,
                    retry_hint: self.log.last_index(),
                },
            },
            Message::InstallSnapshot { snapshot, .. } => Message::AppendEntriesResponse {
                term,
                outcome: super::message::AppendOutcome::Rejected {
                    rejected_prev_index: snapshot.index,
                    retry_hint: self.log.last_index(),
                },
            },
            Message::Heartbeat { read_round, .. } => Message::HeartbeatResponse {
                term,
                read_round: *read_round,
            },
            Message::PreVote { .. } => Message::PreVoteResponse {
                term,
                granted: false,
            },
            Message::RequestVote { .. } => Message::RequestVoteResponse {
                term,
                granted: false,
            },
            _ => return,
        };
        self.send_in_durable_term(from, reply);
    }

    pub(super) fn send(&mut self, to: NodeId, message: Message<C, S>) {
        self.output.push(Effect::Send { to, message });
    }

    /// Sends `message`, which carries the current term, once that term (and the vote) is
    /// durable: at once if it is, else after the write that holds it. A term learned in this
    /// very step is written first. etcd sends the messages of a `Ready` only after the
    /// `HardState` of that `Ready` is saved: a reply must never announce a term that a crash
    /// could still take back.
    pub(super) fn send_in_durable_term(&mut self, to: NodeId, message: Message<C, S>) {
        self.flush_hard_state(AfterPersist::Nothing);
        if self.durable_through < self.hard_state_write {
            self.output.push(Effect::SendAfterPersist {
                after: PersistId(self.hard_state_write),
                to,
                message,
            });
        } else {
            self.send(to, message);
        }
    }

    /// Sends `message` once everything written so far is durable (at once if it is).
    pub(super) fn send_when_durable(&mut self, to: NodeId, message: Message<C, S>) {
        self.flush_hard_state(AfterPersist::Nothing);
        let last_issued = self.next_persist - 1;
        if self.durable_through < last_issued {
            self.output.push(Effect::SendAfterPersist {
                after: PersistId(last_issued),
                to,
                message,
            });
        } else {
            self.send(to, message);
        }
    }

    pub(super) fn persist(
        &mut self,
        mut write: DurableWrite<C, S>,
        action: AfterPersist,
    ) -> PersistId {
        if self.hard_state_dirty {
            self.hard_state_dirty = false;
            write.hard_state = Some(self.durable_hard_state());
        }
        let id = PersistId(self.next_persist);
        self.next_persist += 1;
        if write.hard_state.is_some() {
            self.hard_state_write = id.0;
        }
        self.pending_persists.push_back(PendingPersist {
            id,
            term: write.hard_state.map(|hard_state| hard_state.term),
            action,
        });
        self.output.push(Effect::Persist { id, write });
        id
    }

    /// The term and vote as they are written to disk. With `raft.volatile_vote` the vote is
    /// left out, so a restart forgets it.
    fn durable_hard_state(&self) -> HardState {
        let voted_for = if self.config.has(RaftBug::VolatileVote) {
            None
        } else {
            self.voted_for
        };
        HardState {
            term: self.term,
            voted_for,
        }
    }

    /// Notes that the term or vote changed; it is written with the next durable write.
    pub(super) fn mark_hard_state_dirty(&mut self) {
        self.hard_state_dirty = true;
    }

    /// Writes a pending term/vote change now (with `action` to run once it is durable).
    pub(super) fn flush_hard_state(&mut self, action: AfterPersist) -> Option<PersistId> {
        if !self.hard_state_dirty {
            return None;
        }
        Some(self.persist(DurableWrite::default(), action))
    }

    /// Draws a new randomized election timeout and starts it.
    pub(super) fn reset_election_deadline(&mut self) {
        self.election_timeout = self.jitter.election_timeout(
            self.config.election_timeout_min,
            self.config.election_timeout_max,
        );
        self.restart_election_timer();
    }

    /// Starts the current election timeout again (etcd's `electionElapsed = 0`).
    pub(super) fn restart_election_timer(&mut self) {
        self.election_deadline = self.now + self.election_timeout;
    }

    /// Whether a live leader was heard from within the minimum election timeout (always
    /// false with `raft.no_prevote_no_checkquorum`, which has no leases).
    pub(super) fn in_leader_lease(&self) -> bool {
        if self.config.has(RaftBug::NoPreVoteNoCheckQuorum) {
            return false;
        }
        match &self.role {
            Role::Leader(_) => true,
            _ => match (self.leader, self.last_leader_contact) {
                (Some(_), Some(contact)) => self.now < contact + self.config.election_timeout_min,
                _ => false,
            },
        }
    }

    /// Ends every input: the term and vote reach the disk, and the timer is re-armed.
    pub(super) fn finish_input(&mut self) {
        self.flush_hard_state(AfterPersist::Nothing);
        self.update_timer();
    }

    /// When [`RaftCore::tick`] is next due (the last [`Effect::SetTimer`]).
    pub fn timer_deadline(&self) -> LocalTime {
        match &self.role {
            Role::Leader(leader) => {
                if self.config.has(RaftBug::NoPreVoteNoCheckQuorum) {
                    leader.heartbeat_deadline
                } else {
                    leader.heartbeat_deadline.min(leader.check_quorum_deadline)
                }
            }
            Role::Candidate { retry_at, .. } => self.election_deadline.min(*retry_at),
            _ => self.election_deadline,
        }
    }

    pub(super) fn update_timer(&mut self) {
        let next = self.timer_deadline();
        if self.armed_timer != Some(next) {
            self.armed_timer = Some(next);
            self.output.push(Effect::SetTimer { at: next });
        }
    }

    /// Hands out committed entries in order, then any reads they unblock.
    pub(super) fn apply_committed(&mut self) {
        let upto = self.commit_index.min(self.log.last_index());
        // A restarted server applies its whole log again as it learns the commit index:
        // room for every entry at once, not a doubling (and a copy of every effect) per
        // power of two. And room for what the same input adds after them (a snapshot due,
        // the reads they unblock, a timer, replies): with room for the entries alone, the
        // next push doubled the buffer and copied every entry's effect once more.
        let entries = usize::try_from(upto.saturating_sub(self.applied_index)).unwrap_or(0);
        if entries > 0 {
            self.output
                .reserve(entries + self.ready_reads.len() + EFFECTS_AFTER_APPLIES);
        }
        while self.applied_index < upto {
            self.applied_index += 1;
            let entry = self
                .log
                .get(self.applied_index)
                .expect("entries up to last_index exist")
                .clone();
            self.output.push(Effect::Apply { entry });
        }
        if let Some(threshold) = self.config.snapshot_threshold
            && self.snapshot_due.is_none()
            && self.applied_index >= self.log.snapshot_index() + threshold.max(1)
        {
            self.snapshot_due = Some(self.applied_index);
            self.output.push(Effect::SnapshotDue {
                index: self.applied_index,
            });
        }
        while let Some(&(request, read_index)) = self.ready_reads.front() {
            if read_index > self.applied_index {
                break;
            }
            self.ready_reads.pop_front();
            self.output.push(Effect::ReadReady {
                request,
                read_index,
            });
        }
    }

    /// Becomes a follower of `term` (raising and persisting the term if it is newer).
    pub(super) fn become_follower(&mut self, term: u64, leader: Option<NodeId>) {
        if let Role::Leader(_) = &self.role {
            self.output.push(Effect::Observe(Observation::SteppedDown {
                term: self.term,
            }));
            self.reject_pending_reads();
        }
        self.role = Role::Follower;
        if term > self.term {
            self.term = term;
            self.voted_for = None;
            self.mark_hard_state_dirty();
        }
        self.leader = leader;
        self.reset_election_deadline();
    }
}
