//! The world's shared state: node table, links, network conditions, counters, history.

use crate::{
    clock::Clock,
    config::WorldConfig,
    disk::Disk,
    fault_counts::FaultCounts,
    history::{
        Event, ProtocolEvent, Record,
        beliefs::{BeliefChange, RecipeBelief, belief_change},
    },
    node::{NodeId, NodeKind},
    ratio::Ratio,
    seed::Seed,
    shared::Shared,
    signal::Signal,
    time::SimTime,
};
use madsim::time::{Instant, TimeHandle};
use rand::{
    Rng,
    distributions::{Distribution, Uniform},
};
use rand_chacha::ChaCha8Rng;
use std::{
    any::{Any, TypeId},
    collections::BTreeMap,
    future::Future,
    pin::Pin,
    sync::{Arc, Weak},
    time::Duration,
};

/// A node program: started at boot and again after every restart.
pub(crate) type Program =
    Arc<dyn Fn(super::NodeContext) -> Pin<Box<dyn Future<Output = ()>>> + Send + Sync>;

/// Whether a node is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeStatus {
    Up,
    Paused,
    Crashed,
}

/// Per-node handles that live as long as the world (they survive crashes).
pub(crate) struct NodeSlot {
    pub id: NodeId,
    pub madsim_id: madsim::task::NodeId,
    pub clock: Clock,
    pub disk: Disk,
    pub program: Shared<Option<Program>>,
    pub program_started: Signal,
}

/// Something that holds per-node network state which a crash must wipe.
pub(crate) trait CrashHook: Send + Sync {
    /// Drops everything queued for node `index`; returns how many messages were dropped.
    fn on_crash(&self, index: usize) -> u64;
}

/// A FIFO connection the world may have to break.
pub(crate) trait Breakable: Send + Sync {
    /// Breaks the connection abruptly; returns how many queued messages were discarded, or
    /// `None` if it was already broken or closed.
    fn break_abruptly(&self, reason: crate::net::broken::BreakReason) -> Option<u64>;
}

pub(crate) struct RegisteredConnection {
    pub ends: [usize; 2],
    pub handle: Weak<dyn Breakable>,
}

/// Current network conditions.
#[derive(Clone, Debug)]
pub(crate) struct Conditions {
    /// The latency range, or the one latency if the range is a point.
    latency: Latency,
    pub loss: Ratio,
    pub duplication: Ratio,
}

/// How a message's latency is drawn.
#[derive(Clone, Debug)]
enum Latency {
    Fixed(Duration),
    /// Built once per change of conditions: `gen_range(min..=max)` builds this very sampler
    /// for every draw (rand has no shortcut for durations), so sampling from it draws the
    /// same values from the same stream, without rebuilding it per message.
    Uniform(Uniform<Duration>),
}

impl Conditions {
    pub fn from_config(config: &WorldConfig) -> Self {
        let mut conditions = Self {
            latency: Latency::Fixed(Duration::ZERO),
            loss: config.network.loss,
            duplication: config.network.duplication,
        };
        conditions.set_latency(
            Duration::from_micros(config.network.latency_min_us),
            Duration::from_micros(config.network.latency_max_us),
        );
        conditions
    }

    /// Latencies from now on are drawn from `min..=max` (all `min` if `min >= max`).
    pub fn set_latency(&mut self, min: Duration, max: Duration) {
        self.latency = if min >= max {
            Latency::Fixed(min)
        } else {
            Latency::Uniform(Uniform::new_inclusive(min, max))
        };
    }
}

/// Mutable world state, behind one lock.
///
/// Lock discipline: code holding this lock never takes a mailbox, listener or connection
/// lock, and code holding one of those never takes this one. Hooks that touch them are
/// called after this lock is released.
pub(crate) struct WorldState {
    pub statuses: Vec<NodeStatus>,
    pub incarnations: Vec<u32>,
    node_count: usize,
    /// `partition_cut[from * n + to]`: `to` receives nothing from `from` (partition).
    pub partition_cut: Vec<bool>,
    /// Same, for explicit one-way clogs (kept apart so `Heal` leaves clogs alone).
    pub clogged: Vec<bool>,
    pub conditions: Conditions,
    pub network_rng: ChaCha8Rng,
    pub nemesis_rng: ChaCha8Rng,
    pub counts: FaultCounts,
    /// Coverage marks reached in model code (the rest are read off the history).
    pub marks: crate::coverage::Marks,
    pub history: Vec<Record>,
    pub next_op_id: u64,
    pub next_connection_id: u64,
    pub connections: BTreeMap<u64, RegisteredConnection>,
    live_connections_after_cleanup: usize,
    pub crash_hooks: Vec<Weak<dyn CrashHook>>,
    /// Servers that claim to lead, with their term (from `BecameLeader` / `SteppedDown` as
    /// they are recorded): the nemesis resolves `leader` from this, never by re-reading the
    /// history.
    pub leading: BTreeMap<NodeId, u64>,
    /// Nodes that plan faults named with `as`, for later `$name` targets.
    pub labels: BTreeMap<String, NodeId>,
    /// Client processes that believe they hold a lock or lead an election (node, process,
    /// lock or election), oldest acquisition first (from the recipes' `Lock` and `Election`
    /// records as they are recorded): the nemesis resolves `holder` from this.
    pub holding: Vec<(NodeId, u32, String)>,
    /// Client processes waiting for a lock they asked for or campaigning for an election,
    /// longest-waiting first: the nemesis resolves `waiter` (the first) and `newest_waiter`
    /// (the last) from this.
    pub waiting: Vec<(NodeId, u32, String)>,
}

impl WorldState {
    pub fn is_cut(&self, from: usize, to: usize) -> bool {
        let link = from * self.node_count + to;
        self.partition_cut[link] || self.clogged[link]
    }

    /// Both directions open.
    pub fn reachable(&self, a: usize, b: usize) -> bool {
        !self.is_cut(a, b) && !self.is_cut(b, a)
    }

    pub fn is_crashed(&self, index: usize) -> bool {
        self.statuses[index] == NodeStatus::Crashed
    }

    pub fn sample_latency(&mut self) -> Duration {
        match &self.conditions.latency {
            Latency::Fixed(latency) => *latency,
            Latency::Uniform(range) => range.sample(&mut self.network_rng),
        }
    }

    /// Decides the fate of one datagram: its latency (and a duplicate's), or a drop.
    pub fn route_datagram(
        &mut self,
        from: usize,
        to: usize,
    ) -> Option<(Duration, Option<Duration>)> {
        self.counts.messages_sent += 1;
        if from == to {
            return Some((Duration::ZERO, None));
        }
        if self.is_crashed(to) {
            self.counts.messages_dropped_node_down += 1;
            return None;
        }
        if self.is_cut(from, to) {
            self.counts.messages_dropped_partition += 1;
            return None;
        }
        if self.conditions.loss.sample(&mut self.network_rng) {
            self.counts.messages_dropped_loss += 1;
            return None;
        }
        let latency = self.sample_latency();
        let duplicate = if self.conditions.duplication.sample(&mut self.network_rng) {
            self.counts.messages_duplicated += 1;
            Some(self.sample_latency())
        } else {
            None
        };
        Some((latency, duplicate))
    }

    pub fn allocate_connection_id(&mut self) -> u64 {
        self.next_connection_id += 1;
        self.next_connection_id
    }

    pub fn register_connection(&mut self, id: u64, ends: [usize; 2], handle: Weak<dyn Breakable>) {
        self.connections
            .insert(id, RegisteredConnection { ends, handle });
        // Closed connections are forgotten lazily; sweep when the table has doubled.
        if self.connections.len() > 64
            && self.connections.len() > 2 * self.live_connections_after_cleanup
        {
            self.connections
                .retain(|_, connection| connection.handle.strong_count() > 0);
            self.live_connections_after_cleanup = self.connections.len();
        }
    }

    /// Removes and returns the live connections that `should_break` selects.
    pub fn take_connections(
        &mut self,
        should_break: impl Fn(&WorldState, [usize; 2]) -> bool,
    ) -> Vec<Arc<dyn Breakable>> {
        let selected: Vec<u64> = self
            .connections
            .iter()
            .filter(|(_, connection)| should_break(self, connection.ends))
            .map(|(id, _)| *id)
            .collect();
        selected
            .into_iter()
            .filter_map(|id| self.connections.remove(&id))
            .filter_map(|connection| connection.handle.upgrade())
            .collect()
    }

    pub fn live_crash_hooks(&mut self) -> Vec<Arc<dyn CrashHook>> {
        self.crash_hooks.retain(|hook| hook.strong_count() > 0);
        self.crash_hooks.iter().filter_map(Weak::upgrade).collect()
    }
}

/// Records reserved per node and second of the time limit: the catalogue's runs make 1 to
/// 20 (a run ends well before its limit), the 5-server Raft store under steady load 8.
const HISTORY_RECORDS_PER_NODE_SECOND: usize = 20;
/// At most this many records are reserved up front (7.5 MiB at 120 bytes a record).
const HISTORY_RECORDS_RESERVED_MAX: usize = 1 << 16;
/// At least this many.
const HISTORY_RECORDS_RESERVED_MIN: usize = 1 << 10;

/// How many history records to make room for before the run starts.
///
/// Every node records on the hot path (each applied Raft entry is a record on every
/// server), and a growing vector copies all its records each time it doubles: reserving
/// what the run will likely need avoids those copies. Room reserved but never written is
/// never touched, so an overestimate costs address space rather than memory.
fn history_capacity(config: &WorldConfig) -> usize {
    let nodes = config.servers + config.clients;
    let seconds = usize::try_from(config.time_limit_ms.div_ceil(1_000)).unwrap_or(usize::MAX);
    nodes
        .saturating_mul(seconds)
        .saturating_mul(HISTORY_RECORDS_PER_NODE_SECOND)
        .clamp(HISTORY_RECORDS_RESERVED_MIN, HISTORY_RECORDS_RESERVED_MAX)
}

/// Everything the world shares with node programs, the nemesis and the scenario.
pub(crate) struct WorldShared {
    pub seed: Seed,
    pub config: WorldConfig,
    pub time: TimeHandle,
    /// The instant at which simulated time started. Delivery times are kept as nanoseconds
    /// since then (integers, cheap to compare and sift) and turned back into the very same
    /// `Instant`s for madsim timers: `epoch + elapsed` is exactly madsim's `now_instant()`.
    pub epoch: Instant,
    pub madsim: madsim::runtime::Handle,
    pub nodes: Vec<NodeSlot>,
    pub state: Shared<WorldState>,
    pub fault_phase_ended: Signal,
    /// What the scenario provides to code that finds the world by itself (a store handle for
    /// the drop-in clients, see [`super::Sim::provide`]), by type. A list, not a map: it
    /// holds a handful of entries and is only searched, never iterated into behaviour.
    pub services: Shared<Vec<(TypeId, Arc<dyn Any + Send + Sync>)>>,
}

thread_local! {
    /// How many worlds built on this thread are still in memory (see [`live_worlds`]).
    static LIVE_WORLDS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The world last built on this thread. A world runs on the thread that built it, one at
    /// a time (a sweep's jobs are threads of their own), so code running inside it can find
    /// it here: the drop-in clients' `connect` does, as production code has no `Sim` to pass.
    static CURRENT_WORLD: std::cell::RefCell<Weak<WorldShared>> =
        const { std::cell::RefCell::new(Weak::new()) };
}

/// The world running on this thread, if one is.
pub(crate) fn current_world() -> Option<Arc<WorldShared>> {
    CURRENT_WORLD.with(|current| current.borrow().upgrade())
}

/// How many worlds built on this thread are still in memory. A world lives on the thread
/// that runs it and is freed there once its run is over, so after [`super::World::run`]
/// returns this is back to what it was before; a world kept alive by a task that was never
/// dropped (a reference cycle through madsim's queues) stays counted.
pub(crate) fn live_worlds() -> usize {
    LIVE_WORLDS.with(std::cell::Cell::get)
}

impl Drop for WorldShared {
    fn drop(&mut self) {
        LIVE_WORLDS.with(|live| live.set(live.get().saturating_sub(1)));
    }
}

impl WorldShared {
    /// Builds the world inside a running madsim runtime: one madsim node per world node.
    pub fn create(seed: Seed, config: WorldConfig) -> Arc<Self> {
        let madsim = madsim::runtime::Handle::current();
        let time = TimeHandle::current();
        let node_ids: Vec<NodeId> = config.nodes().collect();
        let node_count = node_ids.len();
        let mut clock_rng = seed.stream("clocks");
        LIVE_WORLDS.with(|live| live.set(live.get() + 1));
        let world = Arc::new_cyclic(|weak: &Weak<WorldShared>| {
            let nodes = node_ids
                .iter()
                .enumerate()
                .map(|(index, &id)| {
                    let max_offset_ns = config.clocks.max_initial_offset_ms * 1_000_000;
                    let offset = Duration::from_nanos(clock_rng.gen_range(0..=max_offset_ns));
                    let max_drift = i32::try_from(config.clocks.max_drift_ppm).unwrap_or(i32::MAX);
                    let drift_ppm = clock_rng.gen_range(-max_drift..=max_drift);
                    let weak = weak.clone();
                    let madsim_node = madsim
                        .create_node()
                        .name(id.to_string())
                        .init(move || {
                            let weak = weak.clone();
                            async move {
                                if let Some(world) = weak.upgrade() {
                                    world.run_program(index).await;
                                }
                            }
                        })
                        .build();
                    NodeSlot {
                        id,
                        madsim_id: madsim_node.id(),
                        clock: Clock::new(offset, drift_ppm),
                        disk: Disk::new(
                            id,
                            Duration::from_micros(config.disk.sync_latency_min_us)
                                ..Duration::from_micros(config.disk.sync_latency_max_us),
                            seed.node_stream("disk", id, 0),
                        ),
                        program: Shared::new(None),
                        program_started: Signal::new(),
                    }
                })
                .collect();
            let state = WorldState {
                statuses: vec![NodeStatus::Up; node_count],
                incarnations: vec![0; node_count],
                node_count,
                partition_cut: vec![false; node_count * node_count],
                clogged: vec![false; node_count * node_count],
                conditions: Conditions::from_config(&config),
                network_rng: seed.stream("network"),
                nemesis_rng: seed.stream("nemesis"),
                counts: FaultCounts::default(),
                marks: Default::default(),
                history: Vec::with_capacity(history_capacity(&config)),
                next_op_id: 0,
                next_connection_id: 0,
                connections: BTreeMap::new(),
                live_connections_after_cleanup: 0,
                crash_hooks: Vec::new(),
                leading: BTreeMap::new(),
                labels: BTreeMap::new(),
                holding: Vec::new(),
                waiting: Vec::new(),
            };
            WorldShared {
                seed,
                config,
                epoch: time.now_instant() - time.elapsed(),
                time,
                madsim,
                nodes,
                state: Shared::new(state),
                fault_phase_ended: Signal::new(),
                services: Shared::new(Vec::new()),
            }
        });
        CURRENT_WORLD.with(|current| *current.borrow_mut() = Arc::downgrade(&world));
        world
    }

    /// The world node whose madsim node runs the current task, if it is one of this world's.
    pub fn node_of_current_task(&self) -> Option<NodeId> {
        let madsim_id = madsim::plugin::node();
        self.nodes
            .iter()
            .find(|slot| slot.madsim_id == madsim_id)
            .map(|slot| slot.id)
    }

    /// The position of `node` in per-node tables.
    ///
    /// # Panics
    /// If the node is not in this world: a scenario bug, not bad input (plans and configs
    /// are validated before the world is built).
    pub fn index(&self, node: NodeId) -> usize {
        assert!(
            self.config.contains(node),
            "node {node} is not in this world ({} servers, {} clients)",
            self.config.servers,
            self.config.clients
        );
        match node.kind() {
            NodeKind::Server => node.ordinal(),
            NodeKind::Client => self.config.servers + node.ordinal(),
            NodeKind::Resource => self.config.servers + self.config.clients + node.ordinal(),
        }
    }

    pub fn now(&self) -> SimTime {
        SimTime::from_nanos(crate::time::duration_nanos(self.time.elapsed()))
    }

    pub fn record(&self, node: Option<NodeId>, event: Event) {
        let at = self.now();
        let mut state = self.state.lock();
        if let (Event::Protocol(protocol), Some(node)) = (&event, node) {
            match protocol {
                ProtocolEvent::BecameLeader { term } => {
                    state.leading.insert(node, *term);
                }
                ProtocolEvent::SteppedDown { term } if state.leading.get(&node) == Some(term) => {
                    state.leading.remove(&node);
                }
                _ => {}
            }
        }
        if let (Event::Recipe(recipe), Some(node)) = (&event, node)
            && let Some(RecipeBelief {
                process,
                name,
                change,
                ..
            }) = belief_change(recipe)
        {
            let same = |held: &(NodeId, u32, String)| {
                held.0 == node && held.1 == process && held.2 == name
            };
            match change {
                BeliefChange::StartedWaiting => {
                    state.waiting.retain(|waiting| !same(waiting));
                    state.waiting.push((node, process, name.to_string()));
                }
                BeliefChange::StoppedWaiting => state.waiting.retain(|waiting| !same(waiting)),
                BeliefChange::Began { .. } => {
                    state.waiting.retain(|waiting| !same(waiting));
                    state.holding.retain(|held| !same(held));
                    state.holding.push((node, process, name.to_string()));
                }
                BeliefChange::LetGo | BeliefChange::Lost(_) => {
                    state.holding.retain(|held| !same(held))
                }
            }
        }
        state.history.push(Record { at, node, event });
    }

    /// Makes a crash of any node wipe `hook`'s state for that node (held weakly).
    pub fn register_crash_hook(&self, hook: &Arc<dyn CrashHook>) {
        self.state.lock().crash_hooks.push(Arc::downgrade(hook));
    }

    /// The body of every node's madsim init task: wait for a program, then run it.
    async fn run_program(self: Arc<Self>, index: usize) {
        let slot = &self.nodes[index];
        slot.program_started.wait().await;
        // The slot is empty again only once the run is over (`forget_programs_and_services`); madsim may
        // still poll this task in its last scheduling round.
        let Some(program) = slot.program.lock().clone() else {
            return std::future::pending().await;
        };
        let incarnation = self.state.lock().incarnations[index];
        let context = super::NodeContext::new(self.clone(), slot.id, incarnation);
        program(context).await;
    }

    /// Forgets node programs and provided services once the run is over: both hold handles
    /// to the world (a reference cycle). A store provided to the drop-in clients
    /// ([`super::Sim::provide`]) holds its networks, and a network holds the world, so
    /// without this every run of a scenario with a store leaked its whole world: history
    /// buffers, logs, disks, connections (about 80 KB a seed of `raft_single_server`).
    pub fn forget_programs_and_services(&self) {
        for slot in &self.nodes {
            slot.program.lock().take();
        }
        // Dropped outside the lock: dropping a service may drop what takes it again.
        let services = std::mem::take(&mut *self.services.lock());
        drop(services);
    }

    /// Kills every node's madsim tasks once the run is over (its history taken), so that
    /// they are freed. madsim 0.2.34 never drops a task that is still pending when its
    /// runtime is dropped: the task sits in a timer or in a waker list, or runnable in the
    /// executor's queue, whose shared state (`utils::mpsc::Inner`, the timer heap) is held
    /// by every `Handle` and `TimeHandle` clone; our tasks hold the world, and the world holds
    /// both handles, so a task pending at the end would keep itself, the world (its network
    /// queues, disks, history buffer) and the runtime alive forever. A killed node's tasks
    /// are woken and dropped by the executor, which drains its whole ready queue before
    /// `block_on` returns. Nothing is recorded any more: the history is already taken.
    pub fn stop_every_node(&self) {
        for slot in &self.nodes {
            self.madsim.kill(slot.madsim_id);
        }
    }
}
