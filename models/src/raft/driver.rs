//! The async driver: one [`RaftCore`] on a simulated node, wired to `sim`'s datagram
//! network, the node's disk and its local clock.
//!
//! - `Send` goes on the wire at once; `Persist` is written to the disk files at once
//!   (volatile) and made durable by disk syncs that the driver runs one at a time, each
//!   covering every write issued before it (group commit); `SendAfterPersist` waits in the
//!   driver until its write is durable.
//! - One local-clock timer follows the core's [`RaftCore::timer_deadline`] (re-armed only
//!   when that moves earlier); when the deadline is reached the core is ticked.
//! - Protocol observations and applied entries are recorded in the history:
//!   `BecameLeader`, `SteppedDown`, `TermChanged` (when the term is durable), `Applied`.
//! - `Apply`, `ReadReady` and `ReadRejected` are handed to the application above.
//!
//! - Snapshots: `SnapshotDue` goes to the application, which answers with
//!   [`RaftDriver::compact`]; a snapshot write replaces the snapshot file and rewrites the
//!   log file without the entries it covers, in the same sync (a crash keeps both or
//!   neither). `RestoreSnapshot` (an InstallSnapshot) is recorded as `SnapshotInstalled`
//!   and handed to the application; a snapshot taken is recorded as `SnapshotTaken`.
//!
//! After a restart the node reads its durable hard state, snapshot and log and starts as a
//! follower; the application first gets the snapshot ([`AppEvent::RestoreSnapshot`]), then
//! its state machine is rebuilt by applying the log after it as the commit index is learned.
//! An application whose own state is durable ([`RaftDriver::boot_resuming`], etcd's backend
//! with its consistent index) resumes from it instead: the entries it holds are neither
//! handed to it again nor recorded as applied again. Either way the state it starts from
//! (the snapshot's or the durable state's index and term) is recorded as `SnapshotInstalled`
//! as it boots, as a restarted ZAB server records the snapshot it loads.

use super::{
    DurableWrite, Effect, Entry, EntryPayload, HardState, Message, Observation, PersistId,
    ProposalSlot, ProposeError, RaftConfig, RaftCore, ReadRequestId, Snapshot,
    timer::{Signalled, Wakeups},
};
use sim::{
    HistoryRecorder, NodeContext, NodeId,
    clock::{LocalSleep, LocalTime},
    disk::{CellFile, Disk, DiskSync, LogFile},
    history::{ProtocolEvent, RequestRef},
    net::{Datagram, DatagramEndpoint, DatagramNetwork},
};
use std::{
    collections::VecDeque,
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

/// A command a driven core can carry: cheap to clone, with a stable digest for the
/// history's `Applied` events.
pub trait RaftCommand: Clone + Send + Sync + 'static {
    /// A stable digest of the command.
    fn digest(&self) -> u64;

    /// The client request the command was proposed for, recorded with each replica's
    /// `Applied` event (the linearizability checker reads whether an operation whose reply
    /// was lost took effect from it); `None` for a command no client request asked for.
    /// Part of the command, so it must be part of its digest: replicas that agree on the
    /// digest then agree on it. The default names none.
    fn request(&self) -> Option<RequestRef> {
        None
    }
}

/// The digest recorded for an entry (no-ops digest to 0).
pub fn entry_digest<C: RaftCommand>(payload: &EntryPayload<C>) -> u64 {
    match payload {
        EntryPayload::Noop => 0,
        EntryPayload::Command(command) => command.digest(),
    }
}

/// The request an entry names (a no-op names none).
fn entry_request<C: RaftCommand>(payload: &EntryPayload<C>) -> Option<RequestRef> {
    match payload {
        EntryPayload::Noop => None,
        EntryPayload::Command(command) => command.request(),
    }
}

/// What the driver hands to the application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppEvent<C, S = ()> {
    /// Apply this committed entry (in index order).
    Apply(Entry<C>),
    /// Replace the state machine with this snapshot (at boot, the durable one; later, one a
    /// leader installed); the next `Apply` follows its index.
    RestoreSnapshot(Snapshot<S>),
    /// Take a snapshot of the state machine, which has applied exactly up to `index`, and
    /// hand it to [`RaftDriver::compact`].
    SnapshotDue {
        /// The applied index.
        index: u64,
    },
    /// The read may be served now.
    ReadReady(ReadRequestId),
    /// The read cannot be served here.
    ReadRejected {
        /// The read.
        request: ReadRequestId,
        /// The leader, if known.
        leader_hint: Option<NodeId>,
    },
    /// This server became leader of `term`.
    BecameLeader {
        /// The term.
        term: u64,
    },
    /// This server stopped leading.
    SteppedDown,
}

/// One input for the driver, from the network, the timer or the disk.
pub enum RaftInput<C, S = ()> {
    /// A Raft message arrived.
    Message(Datagram<Message<C, S>>),
    /// The timer fired.
    Timer,
    /// Writes up to this id are durable.
    Synced(PersistId),
}

/// Makes writes durable, one sync at a time (group commit); each sync covers every write
/// issued before it started. The sync runs inside the driver's task: its timer wakes that
/// task directly.
struct Syncer {
    disk: Disk,
    /// Held in place (a `DiskSync` is a named future): no allocation per sync.
    in_flight: Signalled<DiskSync>,
    /// The persist id the sync in flight covers.
    target: u64,
    /// Highest persist id whose write has been issued.
    requested: u64,
    /// Highest persist id known durable.
    completed: u64,
    /// Highest id reported to the core.
    reported: u64,
}

impl Syncer {
    /// Finishes the sync in flight if it is done, and starts the next one if writes wait.
    #[inline]
    fn poll(&mut self, woken: bool, wakeups: &Wakeups) {
        loop {
            if self.in_flight.poll(woken, wakeups).is_ready() {
                self.completed = self.completed.max(self.target);
            }
            if self.in_flight.get().is_some() || self.requested <= self.completed {
                return;
            }
            self.target = self.requested;
            self.in_flight.set(self.disk.sync());
        }
    }
}

/// A Raft server on a simulated node; `S` is its state machine's snapshot.
pub struct RaftDriver<C: RaftCommand, S: Clone + Send + Sync + 'static = ()> {
    core: RaftCore<C, S>,
    context: NodeContext,
    history: HistoryRecorder,
    endpoint: DatagramEndpoint<Message<C, S>>,
    /// The entries after the snapshot, in index order (the first one's index is the
    /// snapshot's + 1, or 1).
    log_file: LogFile<Entry<C>>,
    hard_state_file: CellFile<HardState>,
    snapshot_file: CellFile<Snapshot<S>>,
    sync: Syncer,
    held: VecDeque<(PersistId, NodeId, Message<C, S>)>,
    /// The one local-clock timer. It is re-armed only when the core's deadline moves
    /// earlier; a follower's election deadline moves later with every message from the
    /// leader, and a new sleep each time would leave a madsim timer behind per message (each
    /// waking the task in vain). When it fires before the core's deadline, it is re-armed at
    /// that deadline instead of ticking the core.
    timer: Signalled<LocalSleep>,
    /// The timer reached the core's deadline; the tick is handed out next.
    timer_due: bool,
    /// The wake-ups of the timer and the disk sync.
    wakeups: Wakeups,
    effects: Vec<Effect<C, S>>,
    app_events: VecDeque<AppEvent<C, S>>,
    /// The application's durable state already holds the entries through this index (see
    /// [`RaftDriver::boot_resuming`]): the core's applies up to it are dropped.
    resume_after: u64,
    /// The core asked for a snapshot at an index the application's state has passed; it is
    /// asked at the first apply at or after `resume_after` instead.
    snapshot_deferred: bool,
}

/// The disk files a Raft server keeps.
const HARD_STATE_FILE: &str = "raft-hard-state";
const LOG_FILE: &str = "raft-log";
const SNAPSHOT_FILE: &str = "raft-snapshot";

impl<C: RaftCommand, S: Clone + Send + Sync + 'static> RaftDriver<C, S> {
    /// Boots (or reboots) the server on `context`'s node from its durable state.
    pub fn boot(
        context: &NodeContext,
        config: RaftConfig,
        network: &DatagramNetwork<Message<C, S>>,
    ) -> Self {
        Self::boot_resuming(context, config, network, 0)
    }

    /// Boots as [`RaftDriver::boot`], for an application whose durable state already holds
    /// the committed entries through `applied_index` (etcd's backend and its consistent
    /// index). Unless the durable snapshot is newer, that state is kept: no
    /// [`AppEvent::RestoreSnapshot`], and the entries through `applied_index` are neither
    /// handed out nor recorded as `Applied` again (etcd skips entries at or below its
    /// consistent index, `shouldApplyV3`).
    pub fn boot_resuming(
        context: &NodeContext,
        config: RaftConfig,
        network: &DatagramNetwork<Message<C, S>>,
        applied_index: u64,
    ) -> Self {
        let disk = context.disk().clone();
        let log_file = disk
            .open_log::<Entry<C>>(LOG_FILE)
            .expect("the Raft log file has one type");
        let hard_state_file = disk
            .open_cell::<HardState>(HARD_STATE_FILE)
            .expect("the hard state file has one type");
        let snapshot_file = disk
            .open_cell::<Snapshot<S>>(SNAPSHOT_FILE)
            .expect("the snapshot file has one type");
        let hard_state = hard_state_file.get().unwrap_or_default();
        let snapshot = snapshot_file.get();
        let log = log_file.read_all();
        let jitter = Box::new(context.rng("raft-election-jitter"));
        let now = context.clock().now();
        let mut app_events = VecDeque::new();
        let mut resume_after = applied_index;
        if let Some(snapshot) = snapshot.as_ref().filter(|s| s.index > applied_index) {
            app_events.push_back(AppEvent::RestoreSnapshot(snapshot.clone()));
            resume_after = 0;
        }
        let core = RaftCore::restore(config, jitter, now, hard_state, snapshot, log);
        // The state the application starts from, recorded as a ZAB server records the
        // snapshot it loads: the checks judge the first apply from it, and that the server
        // held it before it crashed (`protocol.resumes_held_state`). A backend's consistent
        // index is in the durable log or is the snapshot's (the log is synced with every
        // backend write after it); a term of 0 would say it is not, and the check reports it.
        let resumed = match app_events.front() {
            Some(AppEvent::RestoreSnapshot(snapshot)) => Some((snapshot.index, snapshot.term)),
            _ if applied_index > 0 => Some((
                applied_index,
                core.log().term_at(applied_index).unwrap_or(0),
            )),
            _ => None,
        };
        if let Some((index, term)) = resumed {
            context
                .history()
                .protocol(ProtocolEvent::SnapshotInstalled { index, term });
        }
        let sync = Syncer {
            disk,
            in_flight: Signalled::new(),
            target: 0,
            requested: 0,
            completed: 0,
            reported: 0,
        };
        let mut driver = Self {
            core,
            context: context.clone(),
            history: context.history(),
            endpoint: network.endpoint(context.id()),
            log_file,
            hard_state_file,
            snapshot_file,
            sync,
            held: VecDeque::new(),
            timer: Signalled::new(),
            timer_due: false,
            wakeups: Wakeups::new(),
            effects: Vec::new(),
            app_events,
            resume_after,
            snapshot_deferred: false,
        };
        driver.run_effects();
        driver
    }

    /// The core (read-only).
    pub fn core(&self) -> &RaftCore<C, S> {
        &self.core
    }

    /// The node's local time.
    pub fn now(&self) -> LocalTime {
        self.context.clock().now()
    }

    /// Waits for the next network, timer or disk input.
    pub fn poll_input(&mut self, cx: &mut Context<'_>) -> Poll<RaftInput<C, S>> {
        let woken = self.wakeups.take(cx);
        self.sync.poll(woken, &self.wakeups);
        while self.timer.poll(woken, &self.wakeups).is_ready() {
            let deadline = self.core.timer_deadline();
            if self.now() >= deadline {
                self.timer_due = true;
                break;
            }
            // The deadline moved later since the timer was armed.
            self.timer.set(self.context.clock().sleep_until(deadline));
        }
        if self.sync.completed > self.sync.reported {
            self.sync.reported = self.sync.completed;
            return Poll::Ready(RaftInput::Synced(PersistId(self.sync.completed)));
        }
        if self.timer_due {
            self.timer_due = false;
            return Poll::Ready(RaftInput::Timer);
        }
        let mut receive = self.endpoint.recv();
        if let Poll::Ready(datagram) = Pin::new(&mut receive).poll(cx) {
            return Poll::Ready(RaftInput::Message(datagram));
        }
        Poll::Pending
    }

    /// Feeds an input to the core and carries out what it asks.
    pub fn handle(&mut self, input: RaftInput<C, S>) {
        let now = self.now();
        match input {
            RaftInput::Message(Datagram { from, message }) => self.core.step(now, from, message),
            RaftInput::Timer => self.core.tick(now),
            RaftInput::Synced(id) => {
                while let Some((after, _, _)) = self.held.front() {
                    if *after > id {
                        break;
                    }
                    let (_, to, message) = self.held.pop_front().expect("front exists");
                    self.endpoint.send(to, message);
                }
                self.core.on_persisted(now, id);
            }
        }
        self.run_effects();
    }

    /// Proposes `command` (see [`RaftCore::propose`]).
    pub fn propose(&mut self, command: C) -> Result<ProposalSlot, ProposeError> {
        let now = self.now();
        let slot = self.core.propose(now, command);
        self.run_effects();
        slot
    }

    /// Asks for a linearizable read (see [`RaftCore::read_index`]).
    pub fn read_index(&mut self, request: ReadRequestId) {
        let now = self.now();
        self.core.read_index(now, request);
        self.run_effects();
    }

    /// The state machine's snapshot at applied index `index` (see [`RaftCore::compact`]).
    pub fn compact(&mut self, index: u64, data: S) {
        let now = self.now();
        self.core.compact(now, index, data);
        self.run_effects();
    }

    /// The next event for the application, if any.
    pub fn next_app_event(&mut self) -> Option<AppEvent<C, S>> {
        self.app_events.pop_front()
    }

    fn run_effects(&mut self) {
        self.core.drain_effects(&mut self.effects);
        let mut effects = std::mem::take(&mut self.effects);
        for effect in effects.drain(..) {
            match effect {
                Effect::Send { to, message } => self.endpoint.send(to, message),
                Effect::Persist { id, write } => self.write(id, write),
                Effect::SendAfterPersist { after, to, message } => {
                    if after.0 <= self.sync.reported {
                        self.endpoint.send(to, message);
                    } else {
                        self.held.push_back((after, to, message));
                    }
                }
                Effect::Apply { entry } => self.apply(entry),
                Effect::SnapshotDue { index } => {
                    if index < self.resume_after {
                        self.snapshot_deferred = true;
                    } else {
                        self.app_events.push_back(AppEvent::SnapshotDue { index });
                    }
                }
                Effect::RestoreSnapshot { snapshot } => {
                    // The state is replaced: what follows the snapshot is applied again.
                    self.resume_after = 0;
                    self.history.protocol(ProtocolEvent::SnapshotInstalled {
                        index: snapshot.index,
                        term: snapshot.term,
                    });
                    self.app_events
                        .push_back(AppEvent::RestoreSnapshot(snapshot));
                }
                Effect::ReadReady { request, .. } => {
                    self.app_events.push_back(AppEvent::ReadReady(request))
                }
                Effect::ReadRejected {
                    request,
                    leader_hint,
                } => self.app_events.push_back(AppEvent::ReadRejected {
                    request,
                    leader_hint,
                }),
                // The timer follows `timer_deadline()` below, whatever the effects said.
                Effect::SetTimer { .. } => {}
                Effect::Observe(observation) => match observation {
                    Observation::BecameLeader { term } => {
                        self.history.protocol(ProtocolEvent::BecameLeader { term });
                        self.app_events.push_back(AppEvent::BecameLeader { term });
                    }
                    Observation::SteppedDown { term } => {
                        self.history.protocol(ProtocolEvent::SteppedDown { term });
                        self.app_events.push_back(AppEvent::SteppedDown);
                    }
                    Observation::TermPersisted { term } => {
                        self.history.protocol(ProtocolEvent::TermChanged { term });
                    }
                    Observation::SnapshotTaken { index, term } => {
                        self.history
                            .protocol(ProtocolEvent::SnapshotTaken { index, term });
                    }
                },
            }
        }
        self.effects = effects;
        let deadline = self.core.timer_deadline();
        if !self.timer_due && self.timer.deadline().is_none_or(|armed| deadline < armed) {
            self.timer.set(self.context.clock().sleep_until(deadline));
        }
    }

    /// Records and hands out an applied entry, unless the application's durable state
    /// already holds it; asks for a deferred snapshot once the state is at the entry.
    fn apply(&mut self, entry: Entry<C>) {
        let index = entry.index;
        if index > self.resume_after {
            self.history.protocol(ProtocolEvent::Applied {
                index,
                term: entry.term,
                digest: entry_digest(&entry.payload),
                request: entry_request(&entry.payload),
            });
            self.app_events.push_back(AppEvent::Apply(entry));
        }
        if self.snapshot_deferred && index >= self.resume_after {
            self.snapshot_deferred = false;
            self.app_events.push_back(AppEvent::SnapshotDue { index });
        }
    }

    /// Issues a write to the disk files (volatile) and asks the syncer to make it durable.
    fn write(&mut self, id: PersistId, write: DurableWrite<C, S>) {
        if let Some(hard_state) = write.hard_state {
            self.hard_state_file.set(hard_state);
        }
        if let Some(snapshot) = write.snapshot {
            // The log file is rewritten as `RaftLog::compact_through` leaves the log.
            let records = self.log_file.read_all();
            let holds_it = records
                .iter()
                .any(|entry| entry.index == snapshot.index && entry.term == snapshot.term);
            let kept: Vec<Entry<C>> = if holds_it {
                records
                    .into_iter()
                    .filter(|entry| entry.index > snapshot.index)
                    .collect()
            } else {
                Vec::new()
            };
            self.log_file.truncate(0);
            self.log_file.append(kept);
            self.snapshot_file.set(snapshot);
        }
        if let Some(index) = write.truncate_after {
            // Records are numbered from the snapshot's index + 1, not from 1.
            if let Some(first) = self.log_file.get(0) {
                let keep = (index + 1).saturating_sub(first.index);
                self.log_file
                    .truncate(usize::try_from(keep).unwrap_or(usize::MAX));
            }
        }
        if !write.append.is_empty() {
            self.log_file.append(write.append);
        }
        // The next poll of the driver starts a sync for it (or the one after the sync in
        // flight does).
        self.sync.requested = self.sync.requested.max(id.0);
    }
}
