//! The leader: discovery (a new epoch from a quorum), synchronization (DIFF / TRUNC / SNAP per
//! follower, NEWLEADER quorum) and broadcast (PROPOSAL / ACK / COMMIT).
//!
//! Establishing epoch *e*, step by step:
//! 1. Followers connect and send FOLLOWERINFO with their accepted epoch. Once a quorum
//!    (counting the leader) has, *e* = the largest accepted epoch + 1; the leader persists
//!    *e* as its accepted epoch, and only then sends NEWEPOCH (ZooKeeper's LEADERINFO).
//! 2. Each follower persists *e* as its accepted epoch, then answers ACKEPOCH with its
//!    current epoch and history summary. A follower more recent than the leader aborts the
//!    attempt (the election should have prevented it).
//! 3. Once a quorum acknowledged *e*, the leader persists *e* as its current epoch and syncs
//!    each acknowledging follower: the entries it lacks (DIFF), after dropping the entries the
//!    leader lacks (TRUNC), or the leader's state (SNAP); then NEWLEADER.
//! 4. Each follower makes the synced history and *e* durable, then ACKs NEWLEADER.
//! 5. Once a quorum (counting the leader, whose current epoch must be durable) ACKed, the
//!    leader's whole history is committed: it is *established*, applies it, sends UPTODATE
//!    and starts proposing `(e, 1)`, `(e, 2)`, ...
//!
//! Followers that connect later go through the same steps, one by one, while the leader
//! broadcasts; every proposal after their sync is forwarded to them in order.
//!
//! Observers (ZooKeeper's `observingLearners`) go through the same steps, but nothing they
//! send counts: their accepted epoch raises the new epoch (as in ZooKeeper's
//! `getEpochToPropose`) without counting towards the quorum, their ACKEPOCH and NEWLEADER
//! ACK count towards no quorum (and an observer ahead of the leader does not make it give
//! up), they get no PROPOSAL or COMMIT but an INFORM of each transaction once committed
//! (`sendObserverPacket`), and losing them never costs the leader its quorum. In an ensemble
//! with observers the leader records whom it counted for each quorum
//! (`ProtocolEvent::QuorumCounted`), so a checker can see that no observer ever was.

use super::{
    Zxid,
    config::ZabBug,
    core::{AfterPersist, ProposeError, ZabCore},
    effect::{Effect, Link, Serving, Write},
    message::{AckKind, LogEntry, PeerMessage, SyncMode},
    role::{LeaderPhase, LeaderState, Learner, LearnerKind, LearnerStage, Role},
    state_machine::StateMachine,
};
use sim::{
    NodeId,
    clock::LocalTime,
    history::{ProtocolEvent, QuorumStage},
};
use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

impl<S: StateMachine, A> ZabCore<S, A> {
    fn leader(&self) -> &LeaderState<S> {
        match &self.role {
            Role::Leading(leader) => leader,
            _ => unreachable!("only called while leading"),
        }
    }

    fn leader_mut(&mut self) -> &mut LeaderState<S> {
        match &mut self.role {
            Role::Leading(leader) => leader,
            _ => unreachable!("only called while leading"),
        }
    }

    pub(super) fn become_leading(&mut self, now: LocalTime) {
        self.leave_role();
        let me = self.config.me;
        let mut proposers = BTreeMap::new();
        proposers.insert(me, self.accepted_epoch);
        let last_logged = self.last_logged();
        self.role = Role::Leading(Box::new(LeaderState {
            phase: LeaderPhase::Discovery,
            init_deadline: now + self.config.init_limit(),
            proposers,
            observers_epoch: 0,
            new_epoch: 0,
            epoch_announced: false,
            epoch_ackers: BTreeSet::new(),
            current_epoch_durable: false,
            newleader_ackers: BTreeSet::new(),
            learners: BTreeMap::new(),
            links: BTreeMap::new(),
            departed: BTreeMap::new(),
            last_proposed: last_logged,
            self_durable: last_logged,
            next_ping_at: now,
            ping_round: 0,
            next_quorum_check_at: now,
            _machine: std::marker::PhantomData,
        }));
        // Followers that decided first may already be connected.
        let parked = std::mem::take(&mut self.parked_links);
        for (link, (peer, info)) in parked {
            self.leader_link_up(now, link, peer);
            if let Some(accepted_epoch) = info {
                self.leader_receive(now, link, PeerMessage::FollowerInfo { accepted_epoch });
            }
        }
        self.maybe_decide_epoch();
    }

    pub(super) fn leader_link_up(&mut self, now: LocalTime, link: Link, peer: NodeId) {
        let kind = if self.config.is_observer(peer) {
            LearnerKind::Observer
        } else {
            LearnerKind::Follower
        };
        let leader = self.leader_mut();
        leader.departed.remove(&peer);
        let old = leader.learners.insert(
            peer,
            Learner {
                kind,
                link,
                stage: LearnerStage::Connected,
                acked: Zxid::ZERO,
                last_heard: now,
                pings_awaiting: std::collections::VecDeque::new(),
                echoed_round: 0,
            },
        );
        leader.links.insert(link, peer);
        if let Some(old) = old {
            // The follower reconnected: the old connection is dead to us.
            leader.links.remove(&old.link);
            self.effects.push(Effect::Disconnect { link: old.link });
        }
    }

    pub(super) fn leader_link_down(&mut self, link: Link) {
        let leader = self.leader_mut();
        if let Some(peer) = leader.links.remove(&link)
            && leader.learners.get(&peer).is_some_and(|l| l.link == link)
            && let Some(learner) = leader.learners.remove(&peer)
            && learner.counts()
        {
            leader.departed.insert(peer, learner.last_heard);
        }
    }

    pub(super) fn leader_receive(
        &mut self,
        now: LocalTime,
        link: Link,
        message: PeerMessage<S, A>,
    ) {
        let Some(&peer) = self.leader().links.get(&link) else {
            return;
        };
        let Some(learner) = self.leader_mut().learners.get_mut(&peer) else {
            return;
        };
        learner.last_heard = now;
        let learner_kind = learner.kind;
        match message {
            PeerMessage::FollowerInfo { accepted_epoch } => {
                if learner.stage != LearnerStage::Connected {
                    return;
                }
                learner.stage = LearnerStage::InfoReceived;
                let leader = self.leader_mut();
                if leader.phase == LeaderPhase::Discovery {
                    match learner_kind {
                        LearnerKind::Follower => {
                            leader.proposers.insert(peer, accepted_epoch);
                        }
                        LearnerKind::Observer => {
                            leader.observers_epoch = leader.observers_epoch.max(accepted_epoch);
                        }
                    }
                    self.maybe_decide_epoch();
                } else if leader.epoch_announced {
                    self.send_new_epoch(peer);
                }
            }
            PeerMessage::AckEpoch {
                current_epoch,
                last_zxid,
                epoch_ends,
            } => {
                if learner.stage != LearnerStage::EpochSent {
                    return;
                }
                // ZooKeeper's waitForEpochAck: a follower more recent than the leader means
                // the election went wrong; give up leading. Not for an observer: it voted
                // in no election, and may hold the history a leader that never established
                // synced to it (TRUNC brings it back); giving up would make it cost the
                // voters their leader, again at every election.
                let (leader_epoch, leader_last) = self.leader_state_summary();
                if learner_kind == LearnerKind::Follower
                    && (current_epoch, last_zxid) > (leader_epoch, leader_last)
                {
                    self.start_election(now);
                    return;
                }
                let learner = self
                    .leader_mut()
                    .learners
                    .get_mut(&peer)
                    .expect("checked above");
                learner.stage = LearnerStage::EpochAcked {
                    last_zxid,
                    epoch_ends,
                };
                let leader = self.leader_mut();
                if leader.phase == LeaderPhase::AwaitingEpochAcks {
                    // An observer is synced with the rest once a quorum of voters acked.
                    if learner_kind == LearnerKind::Follower {
                        leader.epoch_ackers.insert(peer);
                        self.check_epoch_quorum();
                    }
                } else {
                    self.sync_learner(peer);
                }
            }
            PeerMessage::Ack { kind, zxid } => {
                if !learner.forwarding() {
                    return;
                }
                learner.acked = learner.acked.max(zxid);
                if kind == AckKind::NewLeader && learner.stage == LearnerStage::Syncing {
                    learner.stage = LearnerStage::Synced;
                    let leader = self.leader_mut();
                    match (leader.phase, learner_kind) {
                        (LeaderPhase::AwaitingNewLeaderAcks, LearnerKind::Follower) => {
                            leader.newleader_ackers.insert(peer);
                            self.check_establish(now);
                        }
                        // Sent UPTODATE with the voters once the leader is established.
                        (LeaderPhase::AwaitingNewLeaderAcks, LearnerKind::Observer) => {}
                        (LeaderPhase::Established, _) => {
                            self.send_up_to_date(peer);
                            self.advance_commit();
                        }
                        _ => {}
                    }
                } else if learner.counts() {
                    self.advance_commit();
                }
            }
            PeerMessage::Ping => {
                if let Some(round) = learner.pings_awaiting.pop_front() {
                    learner.echoed_round = round;
                }
            }
            PeerMessage::App(message) => self.effects.push(Effect::App {
                from: peer,
                message,
            }),
            // Leader-to-follower messages from a follower: ignore.
            PeerMessage::NewEpoch { .. }
            | PeerMessage::Sync { .. }
            | PeerMessage::NewLeader { .. }
            | PeerMessage::UpToDate { .. }
            | PeerMessage::Proposal(_)
            | PeerMessage::Commit { .. }
            | PeerMessage::Inform(_) => {}
        }
    }

    /// `(current epoch, last logged zxid)`: no follower may be more recent.
    fn leader_state_summary(&self) -> (u32, Zxid) {
        (self.current_epoch, self.last_logged())
    }

    fn maybe_decide_epoch(&mut self) {
        let quorum = self.quorum;
        let leader = self.leader_mut();
        if leader.phase != LeaderPhase::Discovery || leader.proposers.len() < quorum {
            return;
        }
        let highest = leader.proposers.values().copied().max().unwrap_or(0);
        let highest = highest.max(leader.observers_epoch);
        let counted: Vec<NodeId> = leader.proposers.keys().copied().collect();
        let epoch = highest.max(self.accepted_epoch) + 1;
        self.record_quorum(epoch, QuorumStage::NewEpoch, self.last_logged(), counted);
        let leader = self.leader_mut();
        leader.new_epoch = epoch;
        leader.phase = LeaderPhase::AwaitingEpochAcks;
        self.accepted_epoch = epoch;
        if self.has_bug(ZabBug::EpochNotPersisted) {
            self.leader_announce_epoch_now();
        } else {
            self.persist(Write::AcceptedEpoch(epoch));
            self.sync_then(&[AfterPersist::LeaderAcceptedEpochDurable]);
        }
    }

    pub(super) fn leader_announce_epoch(&mut self, _now: LocalTime) {
        self.leader_announce_epoch_now();
    }

    fn leader_announce_epoch_now(&mut self) {
        let leader = self.leader_mut();
        leader.epoch_announced = true;
        let waiting: Vec<NodeId> = leader
            .learners
            .iter()
            .filter(|(_, learner)| learner.stage == LearnerStage::InfoReceived)
            .map(|(peer, _)| *peer)
            .collect();
        for peer in waiting {
            self.send_new_epoch(peer);
        }
        self.check_epoch_quorum();
    }

    fn send_new_epoch(&mut self, peer: NodeId) {
        let leader = self.leader_mut();
        let epoch = leader.new_epoch;
        let learner = leader.learners.get_mut(&peer).expect("known learner");
        learner.stage = LearnerStage::EpochSent;
        let link = learner.link;
        self.effects.push(Effect::Send {
            link,
            message: PeerMessage::NewEpoch { epoch },
        });
    }

    fn check_epoch_quorum(&mut self) {
        let (quorum, me) = (self.quorum, self.config.me);
        let leader = self.leader_mut();
        if leader.phase != LeaderPhase::AwaitingEpochAcks
            || !leader.epoch_announced
            || leader.epoch_ackers.len() + 1 < quorum
        {
            return;
        }
        leader.phase = LeaderPhase::AwaitingNewLeaderAcks;
        let epoch = leader.new_epoch;
        let counted = with_me(me, &leader.epoch_ackers);
        self.record_quorum(epoch, QuorumStage::AckEpoch, self.last_logged(), counted);
        self.current_epoch = epoch;
        if self.has_bug(ZabBug::EpochNotPersisted) {
            self.record(ProtocolEvent::TermChanged {
                term: u64::from(epoch),
            });
            self.leader_mut().current_epoch_durable = true;
        } else {
            self.persist(Write::CurrentEpoch(epoch));
            self.sync_then(&[
                AfterPersist::EpochDurable(epoch),
                AfterPersist::LeaderCurrentEpochDurable,
            ]);
        }
        let acked: Vec<NodeId> = self
            .leader()
            .learners
            .iter()
            .filter(|(_, learner)| matches!(learner.stage, LearnerStage::EpochAcked { .. }))
            .map(|(peer, _)| *peer)
            .collect();
        for peer in acked {
            self.sync_learner(peer);
        }
    }

    pub(super) fn leader_current_epoch_durable(&mut self, now: LocalTime) {
        self.leader_mut().current_epoch_durable = true;
        self.check_establish(now);
    }

    /// Sends the follower what it needs to match the leader's history, then NEWLEADER.
    fn sync_learner(&mut self, peer: NodeId) {
        let learner = &self.leader().learners[&peer];
        let LearnerStage::EpochAcked {
            last_zxid,
            epoch_ends,
        } = &learner.stage
        else {
            return;
        };
        let (peer_last, link) = (*last_zxid, learner.link);
        let (mode, entries) = self.plan_sync(peer_last, epoch_ends);
        let epoch = self.leader().new_epoch;
        let last_zxid = self.last_logged();
        let learner = self
            .leader_mut()
            .learners
            .get_mut(&peer)
            .expect("known learner");
        learner.stage = LearnerStage::Syncing;
        self.effects.push(Effect::Send {
            link,
            message: PeerMessage::Sync { mode, entries },
        });
        self.effects.push(Effect::Send {
            link,
            message: PeerMessage::NewLeader { epoch, last_zxid },
        });
    }

    /// DIFF, TRUNC or SNAP for a follower whose history ends at `peer_last`.
    fn plan_sync(
        &self,
        peer_last: Zxid,
        peer_epoch_ends: &[Zxid],
    ) -> (SyncMode<S::Snapshot>, Vec<LogEntry<S::Txn>>) {
        let leader_last = self.last_logged();
        if peer_last == leader_last {
            return (SyncMode::Diff, Vec::new());
        }
        let common = if self.has_bug(ZabBug::DiffWithoutTrunc) {
            // ZOOKEEPER-1154: trust the follower's last zxid as a point of the leader's
            // history whenever it is not past the leader's end.
            peer_last.min(leader_last)
        } else {
            self.common_point(peer_epoch_ends)
        };
        let base = self.snapshot_zxid();
        let from = self.log.partition_point(|entry| entry.zxid <= common);
        let too_far = self.log.len() - from > self.config.diff_window;
        if common < base || too_far {
            let snapshot = self.machine.snapshot();
            let zxid = self.last_applied;
            let after = self.log.partition_point(|entry| entry.zxid <= zxid);
            return (
                SyncMode::Snap { zxid, snapshot },
                self.log[after..].to_vec(),
            );
        }
        let entries = self.log[from..].to_vec();
        if common < peer_last {
            (SyncMode::Trunc { to: common }, entries)
        } else {
            (SyncMode::Diff, entries)
        }
    }

    /// The last zxid the follower's history (summarised by the last zxid of each of its
    /// epochs) shares with the leader's. Within one epoch both histories are prefixes of
    /// what that epoch's single leader proposed, so they agree up to the shorter one.
    fn common_point(&self, peer_epoch_ends: &[Zxid]) -> Zxid {
        let base = self.snapshot_zxid();
        let mut common = Zxid::ZERO;
        for (position, &end) in peer_epoch_ends.iter().enumerate() {
            // The leader's first entry after the agreed point must be of this epoch too,
            // or the follower skipped an epoch the leader has. Not so for the follower's
            // first end where the leader logged that very zxid: the follower's history
            // starts at a snapshot there (a restart loads its newest), which holds the
            // epochs before it; both hold the one history that zxid ends, as ZooKeeper's
            // `LearnerHandler.syncFollower` trusts a peer's last zxid found in its log.
            let next = self.log.partition_point(|entry| entry.zxid <= common);
            let snapshot_start = position == 0
                && self
                    .log
                    .binary_search_by_key(&end, |entry| entry.zxid)
                    .is_ok();
            if let Some(entry) = self.log.get(next)
                && entry.zxid.epoch != end.epoch
                && common >= base
                && !snapshot_start
            {
                break;
            }
            if end <= base {
                // Inside the leader's snapshot: only the snapshot's own epoch is known to
                // be a prefix of the committed history.
                if end.epoch == base.epoch {
                    common = end;
                    continue;
                }
                break;
            }
            let in_epoch = self
                .log
                .partition_point(|entry| entry.zxid.epoch <= end.epoch);
            let leader_end = match in_epoch.checked_sub(1).map(|i| self.log[i].zxid) {
                Some(zxid) if zxid.epoch == end.epoch => zxid,
                _ if base.epoch == end.epoch => base,
                _ => break,
            };
            if leader_end == end {
                common = end;
            } else {
                common = common.max(leader_end.min(end));
                break;
            }
        }
        common
    }

    fn check_establish(&mut self, now: LocalTime) {
        let quorum = self.quorum;
        let leader = self.leader();
        if leader.phase != LeaderPhase::AwaitingNewLeaderAcks
            || !leader.current_epoch_durable
            || leader.newleader_ackers.len() + 1 < quorum
        {
            return;
        }
        // The leader's whole history is now committed (a quorum holds it durably).
        let last_logged = self.last_logged();
        let counted = with_me(self.config.me, &leader.newleader_ackers);
        self.record_quorum(
            self.current_epoch,
            QuorumStage::NewLeader,
            last_logged,
            counted,
        );
        let tick = self.config.tick;
        let leader = self.leader_mut();
        leader.phase = LeaderPhase::Established;
        leader.last_proposed = last_logged;
        leader.self_durable = last_logged;
        leader.next_ping_at = now + tick;
        leader.next_quorum_check_at = now + tick;
        self.committed = self.committed.max(last_logged);
        self.apply_committed();
        // "Make a clean snapshot": `Leader.lead` calls `ZooKeeperServer.loadData`, which ends
        // with `takeSnapshot`, so every leader snapshots the history it leads with. ZooKeeper
        // takes it before discovery, of a database that already holds the leader's whole log
        // (loaded at start, committed or not); here the state holds only what is committed,
        // so the same snapshot is taken once that history is committed: now. A leader that
        // never establishes takes none (ZooKeeper's may hold transactions a later TRUNC
        // drops from the log but not from that snapshot, which this model does not
        // reproduce).
        self.take_snapshot();
        let synced: Vec<NodeId> = self
            .leader()
            .learners
            .iter()
            .filter(|(_, learner)| learner.stage == LearnerStage::Synced)
            .map(|(peer, _)| *peer)
            .collect();
        for peer in synced {
            self.send_up_to_date(peer);
        }
        self.record(ProtocolEvent::BecameLeader {
            term: u64::from(self.current_epoch),
        });
        self.serving = true;
        self.effects.push(Effect::Serve(Serving::AsLeader {
            epoch: self.current_epoch,
        }));
        self.advance_commit();
    }

    fn send_up_to_date(&mut self, peer: NodeId) {
        let committed = self.committed;
        let learner = self
            .leader_mut()
            .learners
            .get_mut(&peer)
            .expect("known learner");
        learner.stage = LearnerStage::UpToDate;
        let link = learner.link;
        self.effects.push(Effect::Send {
            link,
            message: PeerMessage::UpToDate { committed },
        });
    }

    pub(super) fn leader_log_durable(&mut self, _now: LocalTime, zxid: Zxid) {
        let leader = self.leader_mut();
        leader.self_durable = leader.self_durable.max(zxid);
        if leader.is_established() {
            self.advance_commit();
        }
    }

    /// Commits the largest zxid a quorum (the leader included) has durably logged.
    fn advance_commit(&mut self) {
        let leader = self.leader();
        if !leader.is_established() {
            return;
        }
        let mut acks = [Zxid::ZERO; 16];
        acks[0] = leader.self_durable;
        let mut count = 1;
        for learner in leader.learners.values() {
            if learner.counts() && count < acks.len() {
                acks[count] = learner.acked;
                count += 1;
            }
        }
        if count < self.quorum {
            return;
        }
        let acks = &mut acks[..count];
        acks.sort_unstable_by(|a, b| b.cmp(a));
        let candidate = acks[self.quorum - 1].min(leader.last_proposed);
        // Entries of earlier epochs were committed when the leader was established; by
        // counting, only this epoch's proposals are committed.
        if candidate <= self.committed || candidate.epoch != self.current_epoch {
            return;
        }
        let previous = self.committed;
        self.committed = candidate;
        if !self.config.observers.is_empty() {
            let leader = self.leader();
            let mut counted: Vec<NodeId> = leader
                .learners
                .iter()
                .filter(|(_, learner)| learner.counts() && learner.acked >= candidate)
                .map(|(peer, _)| *peer)
                .collect();
            if leader.self_durable >= candidate {
                counted.push(self.config.me);
            }
            counted.sort_unstable();
            self.record_quorum(self.current_epoch, QuorumStage::Commit, candidate, counted);
        }
        self.send_to_forwarding(LearnerKind::Follower, || PeerMessage::Commit {
            zxid: candidate,
        });
        self.inform_observers(previous, candidate);
        self.apply_committed();
    }

    /// Sends every forwarding observer an INFORM of each transaction in `(after, upto]`,
    /// in zxid order (ZooKeeper's `Leader.inform`, once per committed proposal).
    fn inform_observers(&mut self, after: Zxid, upto: Zxid) {
        let Role::Leading(leader) = &self.role else {
            return;
        };
        if !leader
            .learners
            .values()
            .any(|learner| learner.kind == LearnerKind::Observer && learner.forwarding())
        {
            return;
        }
        let from = self.log.partition_point(|entry| entry.zxid <= after);
        let to = self.log.partition_point(|entry| entry.zxid <= upto);
        for index in from..to {
            let entry = self.log[index].clone();
            self.send_to_forwarding(LearnerKind::Observer, || PeerMessage::Inform(entry.clone()));
        }
    }

    /// Records whom a quorum counted, in an ensemble with observers (see the module's
    /// doc); an ensemble of voters only records nothing, as before observers existed.
    fn record_quorum(&mut self, epoch: u32, stage: QuorumStage, index: Zxid, servers: Vec<NodeId>) {
        if self.config.observers.is_empty() {
            return;
        }
        self.record(ProtocolEvent::QuorumCounted {
            term: u64::from(epoch),
            stage,
            index: index.as_u64(),
            servers,
        });
    }

    /// Sends a message to every learner of `kind` that receives the broadcast, in learner
    /// order.
    fn send_to_forwarding(&mut self, kind: LearnerKind, message: impl Fn() -> PeerMessage<S, A>) {
        let Role::Leading(leader) = &self.role else {
            return;
        };
        for learner in leader.learners.values() {
            if learner.kind == kind && learner.forwarding() {
                self.effects.push(Effect::Send {
                    link: learner.link,
                    message: message(),
                });
            }
        }
    }

    /// Pings every learner of `kind` that receives the broadcast, as the next round.
    fn ping_forwarding(&mut self, kind: LearnerKind) {
        self.send_to_forwarding(kind, || PeerMessage::Ping);
        let Role::Leading(leader) = &mut self.role else {
            return;
        };
        leader.ping_round += 1;
        let round = leader.ping_round;
        for learner in leader.learners.values_mut() {
            if learner.kind == kind && learner.forwarding() {
                learner.pings_awaiting.push_back(round);
            }
        }
    }

    /// Starts confirming that this server still leads (established leader only): pings
    /// every follower now; [`Self::leadership_confirmed`] says when a quorum (the leader
    /// included) has answered. A quorum that answers a ping sent after this call has not
    /// joined a newer epoch by then, so no newer leader had committed anything before the
    /// call: the check a `sync` needs without a proposal (and without its zxid).
    pub fn confirm_leadership(&mut self) -> Option<LeadershipCheck> {
        if self.last_proposed().is_none() {
            return None;
        }
        self.ping_forwarding(LearnerKind::Follower);
        let Role::Leading(leader) = &self.role else {
            return None;
        };
        Some(LeadershipCheck {
            round: leader.ping_round,
        })
    }

    /// Whether a quorum, the leader included, has answered a ping of `check`'s round or a
    /// later one (a follower that reconnected since answers the next regular ping).
    pub fn leadership_confirmed(&self, check: &LeadershipCheck) -> bool {
        let Role::Leading(leader) = &self.role else {
            return false;
        };
        if !leader.is_established() {
            return false;
        }
        let answered = leader
            .learners
            .values()
            .filter(|learner| learner.counts() && learner.echoed_round >= check.round)
            .count();
        1 + answered >= self.quorum
    }

    /// Proposes a transaction (established leader only): logs it, asks for it to be made
    /// durable, and sends it to every synced follower.
    pub fn propose(&mut self, now: LocalTime, txn: S::Txn) -> Result<Zxid, ProposeError> {
        let epoch = self.current_epoch;
        let Role::Leading(leader) = &mut self.role else {
            return Err(ProposeError::NotLeader);
        };
        if !leader.is_established() {
            return Err(ProposeError::NotLeader);
        }
        let counter = if leader.last_proposed.epoch == epoch {
            leader.last_proposed.counter
        } else {
            0
        };
        let Some(counter) = counter.checked_add(1) else {
            // As ZooKeeper does when the counter rolls over: elect again, new epoch.
            self.start_election(now);
            return Err(ProposeError::EpochExhausted);
        };
        let zxid = Zxid::new(epoch, counter);
        leader.last_proposed = zxid;
        let entry = LogEntry {
            zxid,
            txn: Arc::new(txn),
        };
        self.append(entry.clone());
        self.sync_then(&[]);
        self.send_to_forwarding(LearnerKind::Follower, || {
            PeerMessage::Proposal(entry.clone())
        });
        Ok(zxid)
    }

    /// The last zxid proposed, if this server is an established leader.
    pub fn last_proposed(&self) -> Option<Zxid> {
        match &self.role {
            Role::Leading(leader) if leader.is_established() => Some(leader.last_proposed),
            _ => None,
        }
    }

    /// Sends a message of the layer above to a synced follower; false if there is none.
    pub fn send_to_follower(&mut self, peer: NodeId, message: A) -> bool {
        let Role::Leading(leader) = &self.role else {
            return false;
        };
        match leader.learners.get(&peer) {
            Some(learner) if learner.forwarding() => {
                let link = learner.link;
                self.effects.push(Effect::Send {
                    link,
                    message: PeerMessage::App(message),
                });
                true
            }
            _ => false,
        }
    }

    pub(super) fn leader_tick(&mut self, now: LocalTime) {
        let (tick, sync_limit, quorum) = (self.config.tick, self.config.sync_limit(), self.quorum);
        let leader = self.leader_mut();
        if !leader.is_established() {
            if now >= leader.init_deadline {
                self.start_election(now);
            }
            return;
        }
        if now >= leader.next_ping_at {
            leader.next_ping_at = now + tick;
            self.ping_forwarding(LearnerKind::Follower);
            self.ping_forwarding(LearnerKind::Observer);
        }
        let leader = self.leader_mut();
        if now >= leader.next_quorum_check_at {
            leader.next_quorum_check_at = now + tick;
            // ZooKeeper checks on every tick that a quorum is still in sync with it.
            let recent = |heard: LocalTime| now.saturating_duration_since(heard) <= sync_limit;
            leader.departed.retain(|_, heard| recent(*heard));
            let in_touch = 1
                + leader
                    .learners
                    .values()
                    .filter(|l| l.counts() && recent(l.last_heard))
                    .count()
                + leader.departed.len();
            if in_touch < quorum {
                self.start_election(now);
            }
        }
    }
}

/// A leader's check that it still leads ([`ZabCore::confirm_leadership`]): the round of
/// the ping a quorum must answer (or a later one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeadershipCheck {
    round: u64,
}

/// `ackers` and the leader itself, ascending: whom a discovery or NEWLEADER quorum counted.
fn with_me(me: NodeId, ackers: &BTreeSet<NodeId>) -> Vec<NodeId> {
    let mut servers: Vec<NodeId> = ackers.iter().copied().collect();
    servers.push(me);
    servers.sort_unstable();
    servers
}
