//! Log replication, commitment and heartbeats (Raft §5.3, §5.4, etcd's Progress tracking).

use super::{
    config::RaftBug,
    core::{AfterPersist, ProposalSlot, RaftCore, ReplicationMode, Role},
    effect::{DurableWrite, Effect},
    message::{AppendOutcome, Message},
    types::{Entry, EntryPayload, Snapshot},
};
use sim::NodeId;

impl<C: Clone, S: Clone> RaftCore<C, S> {
    /// Appends an entry of the current term to the leader's log and persists it. The leader
    /// counts itself toward commitment only once the entry is durable — except with
    /// `raft.ack_before_fsync`, which counts it at once.
    pub(super) fn append_as_leader(&mut self, payload: EntryPayload<C>) -> ProposalSlot {
        let slot = ProposalSlot {
            index: self.log.last_index() + 1,
            term: self.term,
        };
        let entry = Entry {
            index: slot.index,
            term: slot.term,
            payload,
        };
        self.log.push(entry.clone());
        let write = DurableWrite {
            append: vec![entry],
            ..DurableWrite::default()
        };
        if self.config.has(RaftBug::AckBeforeFsync) {
            self.persist(write, AfterPersist::Nothing);
            if let Role::Leader(leader) = &mut self.role {
                leader.self_match = slot.index;
            }
            self.maybe_commit();
        } else {
            self.persist(
                write,
                AfterPersist::LeaderSelfMatch {
                    term: slot.term,
                    index: slot.index,
                },
            );
        }
        slot
    }

    /// Streams new entries to followers that are in sync; probing ones wait for an answer.
    pub(super) fn broadcast_new_entries(&mut self) {
        let Role::Leader(leader) = &self.role else {
            return;
        };
        let mut streaming = std::mem::take(&mut self.scratch_peers);
        streaming.clear();
        streaming.extend(
            leader
                .progress
                .iter()
                .filter(|(_, progress)| progress.mode == ReplicationMode::Replicate)
                .map(|(peer, _)| *peer),
        );
        for &peer in &streaming {
            self.send_append(peer);
        }
        self.scratch_peers = streaming;
    }

    /// Sends `peer` the entries from its `next_index` (possibly none: a probe), or the
    /// latest snapshot if those entries were compacted.
    pub(super) fn send_append(&mut self, peer: NodeId) {
        let last_index = self.log.last_index();
        let term = self.term;
        let leader_commit = self.commit_index;
        let max_entries = self.config.max_entries_per_append;
        let Role::Leader(leader) = &mut self.role else {
            return;
        };
        let Some(progress) = leader.progress.get_mut(&peer) else {
            return;
        };
        progress.next_index = progress.next_index.clamp(1, last_index + 1);
        // A streaming request starts right after the follower's match index, not at
        // nextIndex: it carries every entry not yet acknowledged, so that a request that
        // overtakes an earlier one (datagrams are reordered) still matches and is accepted
        // rather than rejected, which would send the follower back to probing. etcd streams
        // over ordered connections and needs no such thing. Beyond `max_entries`
        // unacknowledged entries it streams from nextIndex.
        let unacknowledged = last_index - progress.match_index.min(last_index);
        let from = if progress.mode == ReplicationMode::Replicate
            && unacknowledged <= max_entries as u64
        {
            progress.match_index + 1
        } else {
            progress.next_index
        };
        let prev_log_index = from - 1;
        let Some(prev_log_term) = self.log.term_at(prev_log_index) else {
            // Compacted: the follower gets the snapshot instead (Raft §7), and is probed
            // from after it. If the snapshot is lost, the probe's rejection or the next
            // heartbeat's answer sends it again.
            progress.next_index = self.log.snapshot_index() + 1;
            progress.mode = ReplicationMode::Probe;
            let snapshot = self
                .snapshot
                .clone()
                .expect("a compacted log has its snapshot");
            self.send(peer, Message::InstallSnapshot { term, snapshot });
            return;
        };
        let entries = self.log.slice(from, max_entries);
        if progress.mode == ReplicationMode::Replicate
            && let Some(last) = entries.last()
        {
            progress.next_index = last.index + 1;
        }
        self.send(
            peer,
            Message::AppendEntries {
                term,
                prev_log_index,
                prev_log_term,
                entries,
                leader_commit,
            },
        );
    }

    pub(super) fn handle_append_entries(
        &mut self,
        from: NodeId,
        prev_log_index: u64,
        prev_log_term: u64,
        entries: Vec<Entry<C>>,
        leader_commit: u64,
    ) {
        if !self.follow(from) {
            return;
        }
        let term = self.term;
        let (prev_log_index, prev_log_term, entries) =
            self.skip_compacted(prev_log_index, prev_log_term, entries);
        let matches_prev = self.log.term_at(prev_log_index) == Some(prev_log_term);
        if !matches_prev {
            let retry_hint = if prev_log_index > self.log.last_index() {
                self.log.last_index()
            } else {
                // Skip back over the whole run of the conflicting term in one round trip.
                self.log
                    .first_index_of_term_run(prev_log_index)
                    .saturating_sub(1)
            };
            // The rejection may follow a term learned from this very request.
            self.send_in_durable_term(
                from,
                Message::AppendEntriesResponse {
                    term,
                    outcome: AppendOutcome::Rejected {
                        rejected_prev_index: prev_log_index,
                        retry_hint,
                    },
                },
            );
            return;
        }
        let match_index = prev_log_index + entries.len() as u64;
        let mut write = DurableWrite::default();
        if self.config.has(RaftBug::TruncateOnStaleAppend) {
            // The bug: drop everything after prev_log_index even when the request is an old
            // one whose entries this log already holds (and more after them).
            if self.log.last_index() > prev_log_index {
                self.log.truncate_after(prev_log_index);
                write.truncate_after = Some(prev_log_index);
            }
            for entry in entries {
                self.log.push(entry.clone());
                write.append.push(entry);
            }
        } else {
            // Raft §5.3: delete an existing entry only if it conflicts (same index, other
            // term), and everything after it; append what is new; keep the rest.
            for entry in entries {
                match self.log.term_at(entry.index) {
                    Some(existing) if existing == entry.term && write.append.is_empty() => {}
                    Some(_) if write.append.is_empty() => {
                        self.log.truncate_after(entry.index - 1);
                        write.truncate_after = Some(entry.index - 1);
                        self.log.push(entry.clone());
                        write.append.push(entry);
                    }
                    _ => {
                        self.log.push(entry.clone());
                        write.append.push(entry);
                    }
                }
            }
        }
        if !write.is_empty() {
            self.persist(write, AfterPersist::Nothing);
        }
        // Commit no further than what this request proved to match the leader's log.
        let new_commit = leader_commit.min(match_index);
        if new_commit > self.commit_index {
            self.commit_index = new_commit;
        }
        self.send_when_durable(
            from,
            Message::AppendEntriesResponse {
                term,
                outcome: AppendOutcome::Accepted { match_index },
            },
        );
        self.apply_committed();
    }

    /// An AppendEntries that starts inside this server's snapshot: the snapshot covers only
    /// committed entries, which every leader holds too, so the entries up to it match; the
    /// request is taken as starting right after the snapshot.
    fn skip_compacted(
        &self,
        prev_log_index: u64,
        prev_log_term: u64,
        mut entries: Vec<Entry<C>>,
    ) -> (u64, u64, Vec<Entry<C>>) {
        let snapshot_index = self.log.snapshot_index();
        if prev_log_index >= snapshot_index {
            return (prev_log_index, prev_log_term, entries);
        }
        let compacted = entries
            .iter()
            .take_while(|entry| entry.index <= snapshot_index)
            .count();
        entries.drain(..compacted);
        let snapshot_term = self.log.term_at(snapshot_index).unwrap_or(0);
        (snapshot_index, snapshot_term, entries)
    }

    /// InstallSnapshot (Raft §7, etcd's `restore`): a snapshot the log already covers is
    /// acknowledged as it stands; a newer one replaces the log through its index (keeping
    /// the entries after it if the log holds the snapshot's own entry) and the state machine,
    /// and is acknowledged only once it is durable.
    pub(super) fn handle_install_snapshot(&mut self, from: NodeId, snapshot: Snapshot<S>) {
        if !self.follow(from) {
            return;
        }
        let term = self.term;
        let index = snapshot.index;
        if index > self.commit_index {
            self.log.compact_through(index, snapshot.term);
            self.snapshot = Some(snapshot.clone());
            self.commit_index = index;
            self.applied_index = index;
            if self.snapshot_due.is_some_and(|due| due <= index) {
                self.snapshot_due = None;
            }
            self.persist(
                DurableWrite {
                    snapshot: Some(snapshot.clone()),
                    ..DurableWrite::default()
                },
                AfterPersist::Nothing,
            );
            self.output.push(Effect::RestoreSnapshot { snapshot });
        }
        // Everything through the commit index (now at least the snapshot's) matches the
        // leader: committed entries are in every leader's log.
        self.send_when_durable(
            from,
            Message::AppendEntriesResponse {
                term,
                outcome: AppendOutcome::Accepted { match_index: index },
            },
        );
        self.apply_committed();
    }

    /// A message from the leader of the current term: follow it, and restart the election
    /// timer. Returns false if this server itself leads the term (impossible unless a
    /// known bug elected two leaders): a leader ignores another leader's messages, as etcd's
    /// `stepLeader` does.
    fn follow(&mut self, leader: NodeId) -> bool {
        if !matches!(self.role, Role::Follower) {
            if let Role::Leader(_) = &self.role {
                return false;
            }
            self.become_follower(self.term, Some(leader));
        }
        self.leader = Some(leader);
        self.last_leader_contact = Some(self.now);
        self.restart_election_timer();
        true
    }

    pub(super) fn handle_heartbeat(&mut self, from: NodeId, commit: u64, read_round: u64) {
        if !self.follow(from) {
            return;
        }
        let new_commit = commit.min(self.log.last_index());
        if new_commit > self.commit_index {
            self.commit_index = new_commit;
        }
        let term = self.term;
        // The answer may follow a term learned from this very heartbeat.
        self.send_in_durable_term(from, Message::HeartbeatResponse { term, read_round });
        self.apply_committed();
    }

    pub(super) fn handle_append_response(&mut self, from: NodeId, outcome: AppendOutcome) {
        let last_index = self.log.last_index();
        let Role::Leader(leader) = &mut self.role else {
            return;
        };
        let Some(progress) = leader.progress.get_mut(&from) else {
            return;
        };
        progress.recently_active = true;
        match outcome {
            AppendOutcome::Accepted { match_index } => {
                // matchIndex comes from the acknowledged request, never from nextIndex.
                progress.match_index = progress.match_index.max(match_index);
                progress.next_index = progress.next_index.max(match_index + 1);
                progress.mode = ReplicationMode::Replicate;
                let more = progress.next_index <= last_index;
                self.maybe_commit();
                if more {
                    self.send_append(from);
                }
            }
            AppendOutcome::Rejected {
                rejected_prev_index,
                retry_hint,
            } => {
                let stale = match progress.mode {
                    ReplicationMode::Replicate => rejected_prev_index <= progress.match_index,
                    ReplicationMode::Probe => rejected_prev_index + 1 != progress.next_index,
                };
                if stale {
                    return;
                }
                let next_index = rejected_prev_index
                    .min(retry_hint + 1)
                    .max(progress.match_index + 1);
                let progressed =
                    progress.mode == ReplicationMode::Replicate || next_index < progress.next_index;
                progress.next_index = next_index;
                progress.mode = ReplicationMode::Probe;
                // Flow control (etcd pauses a probing follower): a rejection that does not
                // move nextIndex back waits for the next heartbeat instead of bouncing the
                // same probe at network speed.
                if progressed {
                    self.send_append(from);
                }
            }
        }
    }

    pub(super) fn handle_heartbeat_response(&mut self, from: NodeId, read_round: u64) {
        let last_index = self.log.last_index();
        let Role::Leader(leader) = &mut self.role else {
            return;
        };
        let Some(progress) = leader.progress.get_mut(&from) else {
            return;
        };
        progress.recently_active = true;
        progress.acked_read_round = progress.acked_read_round.max(read_round);
        // etcd: a follower that lacks entries gets them again on a heartbeat answer (a
        // probing one its next probe). A streaming one is sent every entry it has not
        // acknowledged (see `send_append`), so this also repairs a lost request.
        let lagging = progress.match_index < last_index;
        self.confirm_reads();
        if lagging {
            self.send_append(from);
        }
    }

    /// Advances the commit index to the highest index stored on a majority — only if that
    /// entry is of the current term (Raft §5.4.2); `raft.commit_prev_term_by_count` skips
    /// that check.
    pub(super) fn maybe_commit(&mut self) {
        let Role::Leader(leader) = &self.role else {
            return;
        };
        let mut matches = std::mem::take(&mut self.scratch_matches);
        matches.clear();
        matches.extend(
            leader
                .progress
                .values()
                .map(|progress| progress.match_index),
        );
        matches.push(leader.self_match);
        matches.sort_unstable_by(|a, b| b.cmp(a));
        let majority_match = matches[self.config.quorum() - 1];
        self.scratch_matches = matches;
        if majority_match <= self.commit_index {
            return;
        }
        let of_current_term = self.log.term_at(majority_match) == Some(self.term);
        if !of_current_term && !self.config.has(RaftBug::CommitPrevTermByCount) {
            return;
        }
        let reached_term_start = majority_match >= leader.term_start_index
            && self.commit_index < leader.term_start_index;
        self.commit_index = majority_match;
        self.apply_committed();
        if reached_term_start {
            self.start_reads_waiting_for_term_commit();
        }
    }

    /// Heartbeats, and CheckQuorum: a leader that has not heard from a majority within an
    /// election timeout steps down (etcd `checkQuorum`).
    pub(super) fn leader_tick(&mut self) {
        let now = self.now;
        let heartbeat_interval = self.config.heartbeat_interval;
        let election_timeout_min = self.config.election_timeout_min;
        let check_quorum = !self.config.has(RaftBug::NoPreVoteNoCheckQuorum);
        let quorum = self.config.quorum();
        let Role::Leader(leader) = &mut self.role else {
            return;
        };
        if check_quorum && now >= leader.check_quorum_deadline {
            let mut active = 1;
            for progress in leader.progress.values_mut() {
                active += usize::from(std::mem::take(&mut progress.recently_active));
            }
            leader.check_quorum_deadline = now + election_timeout_min;
            if active < quorum {
                let term = self.term;
                self.become_follower(term, None);
                return;
            }
        }
        if now >= leader.heartbeat_deadline {
            leader.heartbeat_deadline = now + heartbeat_interval;
            self.broadcast_heartbeat();
        }
    }

    /// Sends every follower a heartbeat for the current ReadIndex round.
    pub(super) fn broadcast_heartbeat(&mut self) {
        let term = self.term;
        let commit_index = self.commit_index;
        let Role::Leader(leader) = &self.role else {
            return;
        };
        let read_round = leader.read_round;
        self.output
            .extend(leader.progress.iter().map(|(peer, progress)| Effect::Send {
                to: *peer,
                message: Message::Heartbeat {
                    term,
                    commit: commit_index.min(progress.match_index),
                    read_round,
                },
            }));
    }
}
