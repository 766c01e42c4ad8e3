//! The ZAB server core: state, durability barriers, apply, and input dispatch.
//!
//! The role-specific halves live in `election.rs`, `leader.rs` and `follower.rs`; they are
//! `impl` blocks of the same [`ZabCore`]. The roles' state is in `role.rs`, which they all
//! import.

use super::{
    Zxid,
    config::{ConfigError, ZabBug, ZabConfig},
    effect::{Effect, Link, PersistToken, Serving, Write},
    message::{LogEntry, Notification, PeerMessage, PeerState, Vote},
    role::{Election, Role},
    state_machine::StateMachine,
};
use sim::{NodeId, clock::LocalTime, history::ProtocolEvent};
use std::{collections::BTreeMap, collections::VecDeque, fmt};

/// What a server's disk held when it (re)started.
#[derive(Clone, Debug, PartialEq)]
pub struct PersistentState<S: StateMachine> {
    /// The accepted epoch, if ever written.
    pub accepted_epoch: Option<u32>,
    /// The current epoch, if ever written.
    pub current_epoch: Option<u32>,
    /// The snapshot the log continues from, if any.
    pub snapshot: Option<(Zxid, S::Snapshot)>,
    /// The transaction log, ascending.
    pub log: Vec<LogEntry<S::Txn>>,
}

impl<S: StateMachine> Default for PersistentState<S> {
    fn default() -> Self {
        Self {
            accepted_epoch: None,
            current_epoch: None,
            snapshot: None,
            log: Vec::new(),
        }
    }
}

/// Who opened a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkDirection {
    /// This server dialed (a follower connecting to its leader).
    Outbound,
    /// The peer dialed this server (a follower connecting to a leader).
    Inbound,
}

/// The server is not an established leader, so it cannot propose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProposeError {
    /// Not leading, or leading but not yet established.
    NotLeader,
    /// The epoch's counter is exhausted; the leader steps down to start a new epoch.
    EpochExhausted,
}

impl fmt::Display for ProposeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProposeError::NotLeader => write!(f, "not an established leader"),
            ProposeError::EpochExhausted => write!(f, "the epoch's zxid counter is exhausted"),
        }
    }
}

impl std::error::Error for ProposeError {}

/// What to do once a sync completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AfterPersist {
    /// The log is durable through this zxid (the last logged when the sync was asked for).
    LogDurable(Zxid),
    /// Follower: the accepted epoch is durable; send ACKEPOCH.
    AckEpoch,
    /// Follower: the synced history and current epoch are durable; ACK NEWLEADER.
    AckNewLeader(Zxid),
    /// Leader: its new accepted epoch is durable; announce it.
    LeaderAcceptedEpochDurable,
    /// Leader: its new current epoch is durable; it counts towards the NEWLEADER quorum.
    LeaderCurrentEpochDurable,
    /// The current epoch is durable: record it.
    EpochDurable(u32),
}

#[derive(Clone, Copy, Debug)]
struct Waiting {
    token: PersistToken,
    /// Role generation when asked; actions that send are dropped if the role changed.
    generation: u64,
    action: AfterPersist,
}

/// One ZAB server as a pure state machine: inputs in, ordered [`Effect`]s out.
///
/// Inputs: [`start`](Self::start), [`on_notification`](Self::on_notification),
/// [`on_link_up`](Self::on_link_up), [`on_message`](Self::on_message),
/// [`on_link_down`](Self::on_link_down), [`on_connect_failed`](Self::on_connect_failed),
/// [`tick`](Self::tick), [`on_persisted`](Self::on_persisted), [`propose`](Self::propose),
/// [`send_to_leader`](Self::send_to_leader), [`send_to_follower`](Self::send_to_follower).
/// Every input takes the local clock reading `now`; nothing reads a clock or a random
/// number inside. Outputs accumulate until [`take_effects`](Self::take_effects).
pub struct ZabCore<S: StateMachine, A> {
    pub(super) config: ZabConfig,
    pub(super) quorum: usize,
    // Durable state (mirrors the disk once synced).
    pub(super) accepted_epoch: u32,
    pub(super) current_epoch: u32,
    /// The snapshot the in-memory log continues from (the history before it is only in
    /// the snapshot). A snapshot taken later ([`Self::take_snapshot`]) goes to disk only:
    /// the log keeps its history, as ZooKeeper's committed log and txn log do.
    pub(super) snapshot: Option<(Zxid, S::Snapshot)>,
    pub(super) log: Vec<LogEntry<S::Txn>>,
    /// Records on disk before the in-memory log's first entry: those at or below the
    /// snapshot a restart loaded, which the log on disk keeps (a snapshot write leaves it
    /// as it is). A truncation on disk counts them, as ZooKeeper truncates its txn log by
    /// zxid (`FileTxnLog.truncate`).
    pub(super) disk_log_offset: usize,
    // Volatile state.
    pub(super) machine: S,
    pub(super) last_applied: Zxid,
    pub(super) committed: Zxid,
    next_token: u64,
    waiting: VecDeque<Waiting>,
    /// Election round (ZooKeeper's logical clock).
    pub(super) round: u64,
    /// The vote this server last cast or followed.
    pub(super) vote: Vote,
    /// Bumped on every role change.
    pub(super) generation: u64,
    pub(super) role: Role<S>,
    pub(super) serving: bool,
    /// Inbound connections that arrived while this server was not leading (a follower may
    /// finish the election first), with the FollowerInfo they sent, adopted on leading.
    pub(super) parked_links: BTreeMap<Link, (NodeId, Option<u32>)>,
    pub(super) effects: Vec<Effect<S, A>>,
}

impl<S: StateMachine, A> fmt::Debug for ZabCore<S, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZabCore")
            .field("me", &self.config.me)
            .field("accepted_epoch", &self.accepted_epoch)
            .field("current_epoch", &self.current_epoch)
            .field("last_logged", &self.last_logged())
            .field("committed", &self.committed)
            .field("last_applied", &self.last_applied)
            .field("role", &self.role_name())
            .finish()
    }
}

impl<S: StateMachine, A> ZabCore<S, A> {
    /// A server starting from what its disk holds. Call [`start`](Self::start) next.
    ///
    /// As ZooKeeper's `FileTxnSnapLog.restore` (called by `ZKDatabase.loadDataBase`): the
    /// state is the newest snapshot's, and the log after it is what is left to apply. Its
    /// history starts at that snapshot, as ZooKeeper's committed log is refilled only with
    /// the transactions replayed after it (`commitProposalPlaybackListener`). Where
    /// ZooKeeper could still DIFF a follower behind that snapshot from its older txn log
    /// files (`LearnerHandler.syncFollower`, `getProposalsFromTxnLog`), this model sends a
    /// SNAP.
    pub fn restore(config: ZabConfig, disk: PersistentState<S>) -> Result<Self, ConfigError> {
        config.validate()?;
        let PersistentState {
            accepted_epoch,
            current_epoch,
            snapshot,
            mut log,
        } = disk;
        let (machine, base) = match &snapshot {
            Some((zxid, state)) => (S::restore(state), *zxid),
            None => (S::default(), Zxid::ZERO),
        };
        // As ZooKeeper loads its database: the log is read on from the snapshot's zxid, each
        // record after the last one taken. In a log this model wrote, the records at or
        // below that zxid come first (a snapshot taken leaves the log as it is; a SNAP's
        // empties it) and are skipped; one that `zab.snap_zxid_below_log_tail` left behind
        // may hold older records after the snapshot's, and what survives here is what
        // ZooKeeper would replay.
        let disk_log_offset = log.iter().take_while(|entry| entry.zxid <= base).count();
        let mut last = base;
        log.retain(|entry| {
            let next = entry.zxid > last;
            if next {
                last = entry.zxid;
            }
            next
        });
        let last_logged = log.last().map_or(base, |entry| entry.zxid);
        let (accepted_epoch, current_epoch) = if config.bugs.has(ZabBug::EpochNotPersisted) {
            // ZOOKEEPER-335: before acceptedEpoch/currentEpoch files existed, the epoch was
            // whatever the last logged transaction said.
            (last_logged.epoch, last_logged.epoch)
        } else {
            (accepted_epoch.unwrap_or(0), current_epoch.unwrap_or(0))
        };
        let me = config.me;
        Ok(Self {
            quorum: config.quorum(),
            config,
            accepted_epoch,
            current_epoch,
            snapshot,
            log,
            disk_log_offset,
            machine,
            last_applied: base,
            committed: base,
            next_token: 0,
            waiting: VecDeque::new(),
            round: 0,
            vote: Vote {
                epoch: current_epoch,
                zxid: last_logged,
                leader: me,
            },
            generation: 0,
            role: Role::Looking(Election::idle()),
            serving: false,
            parked_links: BTreeMap::new(),
            effects: Vec::new(),
        })
    }

    /// A server with an empty disk.
    pub fn new(config: ZabConfig) -> Result<Self, ConfigError> {
        Self::restore(config, PersistentState::default())
    }

    // ----- Inputs -------------------------------------------------------------------------

    /// Boots the server: records its durable epoch (and, for an observer, that it observes)
    /// and the snapshot it loaded, and starts an election (an observer: looks for the
    /// leader).
    pub fn start(&mut self, now: LocalTime) {
        if self.config.observing() {
            self.record(ProtocolEvent::StartedObserving);
        }
        if let Some((zxid, _)) = &self.snapshot {
            // Its state is the snapshot's, as after a SNAP: recorded the same way, so the
            // checks judge its applies from the snapshot on.
            let zxid = *zxid;
            self.record(ProtocolEvent::SnapshotInstalled {
                index: zxid.as_u64(),
                term: u64::from(zxid.epoch),
            });
        }
        if self.current_epoch > 0 {
            self.record(ProtocolEvent::TermChanged {
                term: u64::from(self.current_epoch),
            });
        }
        self.start_election(now);
    }

    /// An election notification arrived from `from`.
    pub fn on_notification(&mut self, now: LocalTime, from: NodeId, notification: Notification) {
        if from == self.config.me {
            return;
        }
        if self.config.observing() {
            // An observer answers nobody; while looking it learns the leader from voters.
            if self.config.is_voter(from) && matches!(self.role, Role::Looking(_)) {
                self.observer_receive(now, from, notification);
            }
            return;
        }
        if self.config.is_observer(from) {
            // As ZooKeeper's `WorkerReceiver` answers a non-voter: with this server's
            // current vote and state, counting nothing it sent.
            let reply = self.my_notification();
            self.effects.push(Effect::Notify {
                to: from,
                notification: reply,
            });
            return;
        }
        if !self.config.is_voter(from) {
            return;
        }
        match &self.role {
            Role::Looking(_) => self.looking_receive(now, from, notification),
            Role::Following(_) | Role::Leading(_) => {
                if notification.state == PeerState::Looking {
                    // Tell the looking server whom we follow, so it can join.
                    let reply = self.my_notification();
                    self.effects.push(Effect::Notify {
                        to: from,
                        notification: reply,
                    });
                }
            }
        }
    }

    /// A connection to `peer` opened.
    pub fn on_link_up(
        &mut self,
        now: LocalTime,
        link: Link,
        peer: NodeId,
        direction: LinkDirection,
    ) {
        match direction {
            LinkDirection::Outbound => self.follower_link_up(now, link, peer),
            LinkDirection::Inbound => {
                let learner = self.config.is_voter(peer) || self.config.is_observer(peer);
                // An observer never leads, so nobody has reason to dial it.
                if !learner || peer == self.config.me || self.config.observing() {
                    self.effects.push(Effect::Disconnect { link });
                    return;
                }
                match &self.role {
                    Role::Leading(_) => self.leader_link_up(now, link, peer),
                    Role::Looking(_) => {
                        self.parked_links.insert(link, (peer, None));
                    }
                    Role::Following(_) => self.effects.push(Effect::Disconnect { link }),
                }
            }
        }
    }

    /// A connection broke or was closed.
    pub fn on_link_down(&mut self, now: LocalTime, link: Link) {
        self.parked_links.remove(&link);
        match &self.role {
            Role::Following(follower) if follower.link == Some(link) => {
                self.start_election(now);
            }
            Role::Leading(_) => self.leader_link_down(link),
            _ => {}
        }
    }

    /// Connecting to `leader` failed.
    pub fn on_connect_failed(&mut self, now: LocalTime, leader: NodeId) {
        if let Role::Following(follower) = &mut self.role
            && follower.leader == leader
            && follower.link.is_none()
        {
            follower.connect_at = Some(now + self.config.connect_retry);
        }
    }

    /// A message arrived on `link`.
    pub fn on_message(&mut self, now: LocalTime, link: Link, message: PeerMessage<S, A>) {
        match &mut self.role {
            Role::Looking(_) => {
                // A follower that finished the election first: keep its FollowerInfo.
                if let (Some(parked), PeerMessage::FollowerInfo { accepted_epoch }) =
                    (self.parked_links.get_mut(&link), &message)
                {
                    parked.1 = Some(*accepted_epoch);
                }
            }
            Role::Leading(_) => self.leader_receive(now, link, message),
            Role::Following(follower) => {
                if follower.link == Some(link) {
                    self.follower_receive(now, message);
                }
            }
        }
    }

    /// Time passed: election re-sends and decisions, heartbeats, liveness checks.
    pub fn tick(&mut self, now: LocalTime) {
        match &self.role {
            Role::Looking(_) => self.election_tick(now),
            Role::Following(_) => self.follower_tick(now),
            Role::Leading(_) => self.leader_tick(now),
        }
    }

    /// Every write issued before [`Effect::Sync`] with `token` is durable.
    pub fn on_persisted(&mut self, now: LocalTime, token: PersistToken) {
        while let Some(waiting) = self.waiting.front().copied() {
            if waiting.token > token {
                break;
            }
            self.waiting.pop_front();
            let current = waiting.generation == self.generation;
            match waiting.action {
                // Disk facts hold whatever the role; records say what is durable.
                AfterPersist::EpochDurable(epoch) => self.record(ProtocolEvent::TermChanged {
                    term: u64::from(epoch),
                }),
                action if current => self.after_persist(now, action),
                _ => {}
            }
        }
    }

    fn after_persist(&mut self, now: LocalTime, action: AfterPersist) {
        match action {
            AfterPersist::LogDurable(zxid) => match &self.role {
                Role::Leading(_) => self.leader_log_durable(now, zxid),
                Role::Following(_) => self.follower_log_durable(zxid),
                Role::Looking(_) => {}
            },
            AfterPersist::AckEpoch => self.follower_send_ack_epoch(),
            AfterPersist::AckNewLeader(zxid) => self.follower_ack_new_leader(zxid),
            AfterPersist::LeaderAcceptedEpochDurable => self.leader_announce_epoch(now),
            AfterPersist::LeaderCurrentEpochDurable => self.leader_current_epoch_durable(now),
            AfterPersist::EpochDurable(_) => {}
        }
    }

    // ----- Outputs and queries ------------------------------------------------------------

    /// The effects produced since the last call, in order.
    pub fn take_effects(&mut self) -> Vec<Effect<S, A>> {
        std::mem::take(&mut self.effects)
    }

    /// Moves the pending effects into `buffer` (which should be empty), keeping both
    /// allocations for reuse: the hot path of the driver.
    pub fn swap_effects(&mut self, buffer: &mut Vec<Effect<S, A>>) {
        std::mem::swap(&mut self.effects, buffer);
    }

    /// The applied state.
    pub fn machine(&self) -> &S {
        &self.machine
    }

    /// This server.
    pub fn me(&self) -> NodeId {
        self.config.me
    }

    /// The configuration.
    pub fn config(&self) -> &ZabConfig {
        &self.config
    }

    /// The last transaction applied to the state machine.
    pub fn last_applied(&self) -> Zxid {
        self.last_applied
    }

    /// The last transaction known committed.
    pub fn committed(&self) -> Zxid {
        self.committed
    }

    /// The last logged transaction (or the snapshot's, if the log is empty).
    pub fn last_logged(&self) -> Zxid {
        self.log
            .last()
            .map_or_else(|| self.snapshot_zxid(), |entry| entry.zxid)
    }

    /// The accepted epoch.
    pub fn accepted_epoch(&self) -> u32 {
        self.accepted_epoch
    }

    /// The current epoch.
    pub fn current_epoch(&self) -> u32 {
        self.current_epoch
    }

    /// The log, ascending.
    pub fn log(&self) -> &[LogEntry<S::Txn>] {
        &self.log
    }

    /// How this server serves clients right now.
    pub fn serving(&self) -> Serving {
        if !self.serving {
            return Serving::Stopped;
        }
        match &self.role {
            Role::Leading(_) => Serving::AsLeader {
                epoch: self.current_epoch,
            },
            Role::Following(follower) if self.config.observing() => Serving::AsObserver {
                leader: follower.leader,
                epoch: self.current_epoch,
            },
            Role::Following(follower) => Serving::AsFollower {
                leader: follower.leader,
                epoch: self.current_epoch,
            },
            Role::Looking(_) => Serving::Stopped,
        }
    }

    /// `"looking"`, `"following"`, `"observing"` or `"leading"`.
    pub fn role_name(&self) -> &'static str {
        match self.role {
            Role::Looking(_) => "looking",
            Role::Following(_) if self.config.observing() => "observing",
            Role::Following(_) => "following",
            Role::Leading(_) => "leading",
        }
    }

    /// The earliest local time at which [`tick`](Self::tick) has something to do.
    pub fn next_deadline(&self) -> LocalTime {
        match &self.role {
            Role::Looking(election) => election.next_deadline(),
            Role::Following(follower) => follower.next_deadline(),
            Role::Leading(leader) => leader.next_deadline(),
        }
    }

    // ----- Shared helpers -----------------------------------------------------------------

    pub(super) fn snapshot_zxid(&self) -> Zxid {
        self.snapshot.as_ref().map_or(Zxid::ZERO, |(zxid, _)| *zxid)
    }

    pub(super) fn record(&mut self, event: ProtocolEvent) {
        self.effects.push(Effect::Record(event));
    }

    pub(super) fn reach(&mut self, mark: sim::coverage::Mark) {
        self.effects.push(Effect::Reach(mark));
    }

    pub(super) fn persist(&mut self, write: Write<S>) {
        self.effects.push(Effect::Persist(write));
    }

    /// Asks for a durability barrier; `then` runs (in order) once it completes.
    pub(super) fn sync_then(&mut self, then: &[AfterPersist]) {
        self.next_token += 1;
        let token = PersistToken(self.next_token);
        self.effects.push(Effect::Sync { token });
        let generation = self.generation;
        let last_logged = self.last_logged();
        self.waiting.push_back(Waiting {
            token,
            generation,
            action: AfterPersist::LogDurable(last_logged),
        });
        for &action in then {
            self.waiting.push_back(Waiting {
                token,
                generation,
                action,
            });
        }
    }

    /// Appends to the log and the disk (volatile until synced).
    pub(super) fn append(&mut self, entry: LogEntry<S::Txn>) {
        self.persist(Write::Append(entry.clone()));
        self.log.push(entry);
    }

    /// Writes a snapshot of the applied state to disk, leaving the log as it is: ZooKeeper's
    /// `ZooKeeperServer.takeSnapshot` (`FileTxnSnapLog.save` writes a new snapshot file and
    /// touches no txn log file). Volatile until the next sync; the in-memory log keeps its
    /// history (see the `snapshot` field). A restart loads it and applies only what follows.
    pub(super) fn take_snapshot(&mut self) {
        let (zxid, snapshot) = (self.last_applied, self.machine.snapshot());
        self.persist(Write::ReplaceSnapshot { zxid, snapshot });
    }

    /// Applies committed entries that are in the log, in zxid order.
    pub(super) fn apply_committed(&mut self) {
        // Room for a record and an effect per entry at once (a restarted server applies all
        // of its log after its newest snapshot), not a doubling and a copy of every effect
        // per power of two.
        let pending = self
            .log
            .partition_point(|entry| entry.zxid <= self.committed)
            .saturating_sub(
                self.log
                    .partition_point(|entry| entry.zxid <= self.last_applied),
            );
        self.effects.reserve(2 * pending);
        while self.last_applied < self.committed {
            let position = self
                .log
                .partition_point(|entry| entry.zxid <= self.last_applied);
            let Some(entry) = self.log.get(position) else {
                break;
            };
            if entry.zxid > self.committed {
                break;
            }
            let (zxid, txn) = (entry.zxid, entry.txn.clone());
            let output = self.machine.apply(zxid, &txn);
            self.last_applied = zxid;
            self.record(ProtocolEvent::Applied {
                index: zxid.as_u64(),
                term: u64::from(zxid.epoch),
                digest: S::digest(&txn),
                request: S::request(&txn),
            });
            self.effects.push(Effect::Applied { zxid, txn, output });
        }
    }

    /// The last zxid of every epoch in this server's history, ascending.
    pub(super) fn epoch_ends(&self) -> Vec<Zxid> {
        let mut ends: Vec<Zxid> = Vec::new();
        let base = self.snapshot_zxid();
        if base != Zxid::ZERO {
            ends.push(base);
        }
        for entry in &self.log {
            match ends.last_mut() {
                Some(last) if last.epoch == entry.zxid.epoch => *last = entry.zxid,
                _ => ends.push(entry.zxid),
            }
        }
        ends
    }

    /// Leaves whatever role this server had: stops serving, closes connections.
    pub(super) fn leave_role(&mut self) {
        if self.serving {
            self.serving = false;
            self.effects.push(Effect::Serve(Serving::Stopped));
        }
        self.generation += 1;
        let previous = std::mem::replace(&mut self.role, Role::Looking(Election::idle()));
        match previous {
            Role::Looking(_) => {}
            Role::Following(follower) => {
                if let Some(link) = follower.link {
                    self.effects.push(Effect::Disconnect { link });
                }
            }
            Role::Leading(leader) => {
                if leader.is_established() {
                    self.record(ProtocolEvent::SteppedDown {
                        term: u64::from(self.current_epoch),
                    });
                }
                for link in leader.links() {
                    self.effects.push(Effect::Disconnect { link });
                }
            }
        }
    }

    pub(super) fn my_notification(&self) -> Notification {
        let state = match self.role {
            Role::Looking(_) => PeerState::Looking,
            Role::Following(_) => PeerState::Following,
            Role::Leading(_) => PeerState::Leading,
        };
        Notification {
            round: self.round,
            state,
            vote: self.vote,
        }
    }

    pub(super) fn has_bug(&self, bug: ZabBug) -> bool {
        self.config.bugs.has(bug)
    }
}
