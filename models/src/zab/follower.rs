//! The follower: connect to the elected leader, accept its epoch, get synchronized, then log
//! and acknowledge proposals and apply commits.
//!
//! Durability rules (each one is a known bug when broken, see [`super::ZabBug`]):
//! - the new epoch is persisted as accepted before ACKEPOCH (ZOOKEEPER-335);
//! - the synced history and the current epoch are durable before NEWLEADER is ACKed
//!   (ZOOKEEPER-3911; the epoch taken only on UPTODATE is ZOOKEEPER-1282);
//! - a proposal is durable before it is ACKed (ACKs are cumulative).
//!
//! An observer runs the same code up to UPTODATE (it is synced by DIFF, TRUNC or SNAP and
//! ACKs NEWLEADER, which the leader does not count); in broadcast it gets no PROPOSAL or
//! COMMIT but one INFORM per committed transaction, which it logs and applies, and it
//! acknowledges nothing.

use super::{
    Zxid,
    config::ZabBug,
    core::{AfterPersist, ZabCore},
    effect::{Effect, Link, Serving, Write},
    message::{AckKind, LogEntry, PeerMessage, SyncMode},
    role::{FollowerPhase, FollowerState, Role},
    state_machine::StateMachine,
};
use sim::{NodeId, clock::LocalTime, history::ProtocolEvent};

impl<S: StateMachine, A> ZabCore<S, A> {
    fn follower_mut(&mut self) -> &mut FollowerState {
        match &mut self.role {
            Role::Following(follower) => follower,
            _ => unreachable!("only called while following"),
        }
    }

    pub(super) fn become_following(&mut self, now: LocalTime, leader: NodeId) {
        self.leave_role();
        for (link, _) in std::mem::take(&mut self.parked_links) {
            self.effects.push(Effect::Disconnect { link });
        }
        self.role = Role::Following(FollowerState {
            leader,
            link: None,
            phase: FollowerPhase::Connecting,
            deadline: now + self.config.init_limit(),
            connect_at: None,
            new_epoch: 0,
            newleader_acked: false,
            acked: Zxid::ZERO,
        });
        self.effects.push(Effect::Connect { leader });
    }

    pub(super) fn follower_link_up(&mut self, _now: LocalTime, link: Link, peer: NodeId) {
        let accepted_epoch = self.accepted_epoch;
        match &mut self.role {
            Role::Following(follower)
                if follower.leader == peer && follower.phase == FollowerPhase::Connecting =>
            {
                follower.link = Some(link);
                follower.connect_at = None;
                follower.phase = FollowerPhase::AwaitingNewEpoch;
                self.effects.push(Effect::Send {
                    link,
                    message: PeerMessage::FollowerInfo { accepted_epoch },
                });
            }
            // A connection this server no longer wants.
            _ => self.effects.push(Effect::Disconnect { link }),
        }
    }

    pub(super) fn follower_tick(&mut self, now: LocalTime) {
        let follower = self.follower_mut();
        if now >= follower.deadline {
            self.start_election(now);
            return;
        }
        if follower.connect_at.is_some_and(|at| now >= at) {
            follower.connect_at = None;
            let leader = follower.leader;
            self.effects.push(Effect::Connect { leader });
        }
    }

    pub(super) fn follower_receive(&mut self, now: LocalTime, message: PeerMessage<S, A>) {
        let sync_limit = self.config.sync_limit();
        let follower = self.follower_mut();
        let phase = follower.phase;
        if phase == FollowerPhase::Broadcast {
            follower.deadline = now + sync_limit;
        }
        match (phase, message) {
            (FollowerPhase::AwaitingNewEpoch, PeerMessage::NewEpoch { epoch }) => {
                self.on_new_epoch(now, epoch)
            }
            (FollowerPhase::AwaitingSync, PeerMessage::Sync { mode, entries }) => {
                self.on_sync(now, mode, entries)
            }
            (FollowerPhase::AwaitingNewLeader, PeerMessage::NewLeader { epoch, last_zxid }) => {
                self.on_new_leader(now, epoch, last_zxid)
            }
            (FollowerPhase::AwaitingUpToDate, PeerMessage::UpToDate { committed }) => {
                if self.has_bug(ZabBug::SetCurrentEpochOnUpToDate) {
                    // ZOOKEEPER-1282: the current epoch is taken only now, after NEWLEADER
                    // was acknowledged (and proposals of the new epoch perhaps logged).
                    let epoch = self.follower_mut().new_epoch;
                    if self.adopt_current_epoch(epoch) {
                        self.sync_then(&[AfterPersist::EpochDurable(epoch)]);
                    }
                }
                self.committed = self.committed.max(committed);
                self.apply_committed();
                let follower = self.follower_mut();
                follower.phase = FollowerPhase::Broadcast;
                follower.deadline = now + sync_limit;
                let leader = follower.leader;
                self.serving = true;
                let epoch = self.current_epoch;
                self.effects.push(Effect::Serve(if self.config.observing() {
                    Serving::AsObserver { leader, epoch }
                } else {
                    Serving::AsFollower { leader, epoch }
                }));
            }
            (
                FollowerPhase::AwaitingUpToDate | FollowerPhase::Broadcast,
                PeerMessage::Inform(entry),
            ) if self.config.observing() => self.on_inform(now, entry),
            (
                FollowerPhase::AwaitingUpToDate | FollowerPhase::Broadcast,
                PeerMessage::Proposal(entry),
            ) if !self.config.observing() => {
                if entry.zxid <= self.last_logged() {
                    // Out of order: the leader and this follower disagree; start over.
                    self.start_election(now);
                    return;
                }
                self.append(entry);
                self.sync_then(&[]);
            }
            (
                FollowerPhase::AwaitingUpToDate | FollowerPhase::Broadcast,
                PeerMessage::Commit { zxid },
            ) if !self.config.observing() => {
                self.committed = self.committed.max(zxid);
                self.apply_committed();
            }
            (_, PeerMessage::Ping) => {
                if let Some(link) = self.follower_mut().link {
                    self.effects.push(Effect::Send {
                        link,
                        message: PeerMessage::Ping,
                    });
                }
            }
            (_, PeerMessage::App(message)) => {
                let from = self.follower_mut().leader;
                self.effects.push(Effect::App { from, message });
            }
            // Anything else is out of protocol order: start over.
            (_, _) => self.start_election(now),
        }
    }

    fn on_new_epoch(&mut self, now: LocalTime, epoch: u32) {
        if epoch < self.accepted_epoch {
            // A leader behind an epoch this server already accepted: refuse it.
            self.start_election(now);
            return;
        }
        let follower = self.follower_mut();
        follower.new_epoch = epoch;
        follower.phase = FollowerPhase::AwaitingSync;
        if epoch > self.accepted_epoch && !self.has_bug(ZabBug::EpochNotPersisted) {
            self.accepted_epoch = epoch;
            self.persist(Write::AcceptedEpoch(epoch));
            self.sync_then(&[AfterPersist::AckEpoch]);
        } else {
            self.accepted_epoch = epoch;
            self.follower_send_ack_epoch();
        }
    }

    pub(super) fn follower_send_ack_epoch(&mut self) {
        let (current_epoch, last_zxid, epoch_ends) =
            (self.current_epoch, self.last_logged(), self.epoch_ends());
        if let Some(link) = self.follower_mut().link {
            self.effects.push(Effect::Send {
                link,
                message: PeerMessage::AckEpoch {
                    current_epoch,
                    last_zxid,
                    epoch_ends,
                },
            });
        }
    }

    fn on_sync(
        &mut self,
        now: LocalTime,
        mode: SyncMode<S::Snapshot>,
        entries: Vec<LogEntry<S::Txn>>,
    ) {
        match mode {
            SyncMode::Diff => {
                if self.has_bug(ZabBug::LastProcessedZxidOnDiff) {
                    // ZOOKEEPER-2355: the leader's zxid is recorded as processed before the
                    // diff is applied, so the diff's transactions are skipped when applying.
                    if let Some(last) = entries.last() {
                        self.last_applied = self.last_applied.max(last.zxid);
                    }
                }
            }
            SyncMode::Trunc { to } => {
                self.reach(sim::coverage::Mark::ZabTruncSync);
                let base = self.snapshot_zxid();
                if to < base {
                    // Cannot truncate into a snapshot.
                    self.start_election(now);
                    return;
                }
                let keep = self.log.partition_point(|entry| entry.zxid <= to);
                if keep < self.log.len() {
                    self.log.truncate(keep);
                    self.persist(Write::TruncateLog {
                        keep: self.disk_log_offset + keep,
                    });
                }
                if self.last_applied > to {
                    // Applied state past the truncation point: reload from the snapshot.
                    self.machine = match &self.snapshot {
                        Some((_, state)) => S::restore(state),
                        None => S::default(),
                    };
                    self.last_applied = base;
                    self.record(ProtocolEvent::SnapshotInstalled {
                        index: base.as_u64(),
                        term: u64::from(base.epoch),
                    });
                }
                self.committed = self.committed.min(to);
                // `Learner.syncWithLeader`: after a TRUNC (or SNAP) the follower snapshots
                // its database on NEWLEADER (`snapshotNeeded`); after a DIFF it does not.
                // Nothing is applied between here and NEWLEADER, whose sync makes it durable.
                self.take_snapshot();
            }
            SyncMode::Snap { zxid, snapshot } => {
                self.reach(sim::coverage::Mark::ZabSnapSync);
                self.machine = S::restore(&snapshot);
                self.last_applied = zxid;
                self.committed = zxid;
                self.log.clear();
                // ZooKeeper snapshots the received state on NEWLEADER (`snapshotNeeded`,
                // synced: `syncSnapshot`); this write is made durable by NEWLEADER's sync.
                if self.has_bug(ZabBug::SnapZxidBelowLogTail) {
                    // ZOOKEEPER-2832: the snapshot is written, the old log left on disk.
                    self.persist(Write::ReplaceSnapshot {
                        zxid,
                        snapshot: snapshot.clone(),
                    });
                } else {
                    self.persist(Write::InstallSnapshot {
                        zxid,
                        snapshot: snapshot.clone(),
                    });
                    self.disk_log_offset = 0;
                }
                self.snapshot = Some((zxid, snapshot));
                self.record(ProtocolEvent::SnapshotInstalled {
                    index: zxid.as_u64(),
                    term: u64::from(zxid.epoch),
                });
            }
        }
        for entry in entries {
            if entry.zxid <= self.last_logged() {
                self.start_election(now);
                return;
            }
            self.append(entry);
        }
        self.follower_mut().phase = FollowerPhase::AwaitingNewLeader;
    }

    fn on_new_leader(&mut self, now: LocalTime, epoch: u32, last_zxid: Zxid) {
        let follower = self.follower_mut();
        if epoch != follower.new_epoch || last_zxid != self.last_logged() {
            self.start_election(now);
            return;
        }
        let follower = self.follower_mut();
        follower.phase = FollowerPhase::AwaitingUpToDate;
        if self.has_bug(ZabBug::SetCurrentEpochOnUpToDate) {
            // ZOOKEEPER-1282: the synced history is made durable and acknowledged, but the
            // current epoch stays the old one until UPTODATE.
            self.sync_then(&[AfterPersist::AckNewLeader(last_zxid)]);
            return;
        }
        let persist_epoch = self.adopt_current_epoch(epoch);
        if self.has_bug(ZabBug::AckNewLeaderBeforePersist) {
            // ZOOKEEPER-3911: acknowledge first, make durable later.
            self.follower_ack_new_leader(last_zxid);
            if persist_epoch {
                self.sync_then(&[AfterPersist::EpochDurable(epoch)]);
            } else {
                self.sync_then(&[]);
            }
        } else if persist_epoch {
            self.sync_then(&[
                AfterPersist::EpochDurable(epoch),
                AfterPersist::AckNewLeader(last_zxid),
            ]);
        } else {
            self.sync_then(&[AfterPersist::AckNewLeader(last_zxid)]);
        }
    }

    /// Makes `epoch` the current epoch and writes it to disk (unless the epoch is not
    /// persisted at all, `zab.epoch_not_persisted`: then it is only recorded). Returns
    /// whether it was written; the caller asks for the sync.
    fn adopt_current_epoch(&mut self, epoch: u32) -> bool {
        self.current_epoch = epoch;
        let persist_epoch = !self.has_bug(ZabBug::EpochNotPersisted);
        if persist_epoch {
            self.persist(Write::CurrentEpoch(epoch));
        } else {
            self.record(ProtocolEvent::TermChanged {
                term: u64::from(epoch),
            });
        }
        persist_epoch
    }

    pub(super) fn follower_ack_new_leader(&mut self, zxid: Zxid) {
        let follower = self.follower_mut();
        if follower.newleader_acked {
            return;
        }
        follower.newleader_acked = true;
        follower.acked = zxid;
        if let Some(link) = follower.link {
            self.effects.push(Effect::Send {
                link,
                message: PeerMessage::Ack {
                    kind: AckKind::NewLeader,
                    zxid,
                },
            });
        }
    }

    /// Observer: a committed transaction (ZooKeeper's INFORM). One after the synced history
    /// is logged, made durable (acknowledging nothing) and applied; one the sync already
    /// brought (the leader's history was sent whole, committed or not) is only committed.
    fn on_inform(&mut self, now: LocalTime, entry: LogEntry<S::Txn>) {
        let zxid = entry.zxid;
        if zxid > self.last_logged() {
            self.append(entry);
            self.sync_then(&[]);
        } else if self
            .log
            .binary_search_by_key(&zxid, |logged| logged.zxid)
            .is_err()
            && zxid > self.snapshot_zxid()
        {
            // Not in the history the leader synced: the two disagree; start over.
            self.start_election(now);
            return;
        }
        self.committed = self.committed.max(zxid);
        self.apply_committed();
    }

    pub(super) fn follower_log_durable(&mut self, zxid: Zxid) {
        if self.config.observing() {
            // An observer acknowledges no transaction: it counts in no commit.
            return;
        }
        let follower = self.follower_mut();
        if !follower.newleader_acked || zxid <= follower.acked {
            return;
        }
        follower.acked = zxid;
        if let Some(link) = follower.link {
            self.effects.push(Effect::Send {
                link,
                message: PeerMessage::Ack {
                    kind: AckKind::Proposals,
                    zxid,
                },
            });
        }
    }

    /// Sends a message of the layer above to the leader; false if not in broadcast.
    pub fn send_to_leader(&mut self, message: A) -> bool {
        match &self.role {
            Role::Following(follower) if follower.phase == FollowerPhase::Broadcast => {
                let link = follower.link.expect("connected in broadcast");
                self.effects.push(Effect::Send {
                    link,
                    message: PeerMessage::App(message),
                });
                true
            }
            _ => false,
        }
    }
}
