//! Handles given to scenarios ([`Sim`]) and node programs ([`NodeContext`]).

use super::state::{NodeStatus, WorldShared};
use crate::{
    clock::Clock,
    config::WorldConfig,
    disk::Disk,
    fault_counts::FaultCounts,
    history::{Event, History, OpId, OpResult, Operation, ProtocolEvent, RecipeEvent},
    nemesis::Nemesis,
    net::{DatagramNetwork, StreamNetwork},
    node::NodeId,
    seed::Seed,
    time::SimTime,
};
use rand_chacha::ChaCha8Rng;
use std::{
    any::{Any, TypeId},
    fmt,
    future::Future,
    sync::Arc,
    time::Duration,
};

/// The scenario's handle on a running world. Cheap to clone.
#[derive(Clone)]
pub struct Sim {
    pub(crate) world: Arc<WorldShared>,
}

impl Sim {
    /// The world running on this thread, from inside its run: for code that cannot be handed
    /// a `Sim` because it is written for production (a drop-in client's `connect`). `None`
    /// outside a run.
    pub fn current() -> Option<Sim> {
        super::state::current_world().map(|world| Sim { world })
    }

    /// The context of the node that runs the current task (its current incarnation), from
    /// inside a run: `None` outside one, and for the scenario's own task, which runs on no
    /// world node.
    pub fn current_node() -> Option<NodeContext> {
        let sim = Sim::current()?;
        let node = sim.world.node_of_current_task()?;
        Some(sim.node(node))
    }

    /// Makes `service` available to code that finds the world by itself ([`Sim::current`]):
    /// the scenario provides the store it started, and a drop-in client's `connect` finds it.
    /// One value per type; providing another replaces it.
    pub fn provide<T: Any + Send + Sync>(&self, service: T) {
        let mut services = self.world.services.lock();
        services.retain(|(type_id, _)| *type_id != TypeId::of::<T>());
        services.push((TypeId::of::<T>(), Arc::new(service)));
    }

    /// The service of type `T` the scenario provided, if it did.
    pub fn service<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let services = self.world.services.lock();
        let (_, service) = services
            .iter()
            .find(|(type_id, _)| *type_id == TypeId::of::<T>())?;
        service.clone().downcast::<T>().ok()
    }

    /// The run's seed.
    pub fn seed(&self) -> Seed {
        self.world.seed
    }

    /// The world's configuration.
    pub fn config(&self) -> &WorldConfig {
        &self.world.config
    }

    /// Server nodes, `s1..sN`.
    pub fn servers(&self) -> Vec<NodeId> {
        (0..self.world.config.servers).map(NodeId::server).collect()
    }

    /// Client nodes, `c1..cM`.
    pub fn clients(&self) -> Vec<NodeId> {
        (0..self.world.config.clients).map(NodeId::client).collect()
    }

    /// Resource nodes, `r1..rK`.
    pub fn resources(&self) -> Vec<NodeId> {
        (0..self.world.config.resources)
            .map(NodeId::resource)
            .collect()
    }

    /// Starts `program` on `node`. It runs now and again from scratch after every restart
    /// (its disk keeps what was synced). The program's future need not be `Send`.
    ///
    /// # Panics
    /// If `node` already has a program, or is not in the world.
    pub fn start<P, F>(&self, node: NodeId, program: P)
    where
        P: Fn(NodeContext) -> F + Send + Sync + 'static,
        F: Future<Output = ()> + 'static,
    {
        let slot = &self.world.nodes[self.world.index(node)];
        {
            let mut current = slot.program.lock();
            assert!(current.is_none(), "node {node} already has a program");
            *current = Some(Arc::new(move |context| Box::pin(program(context))));
        }
        slot.program_started.set();
    }

    /// Spawns a one-off task on `node`; it dies if the node crashes (the handle then yields
    /// an error) and is not restarted.
    pub fn spawn<F>(&self, node: NodeId, future: F) -> crate::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let madsim_id = self.world.nodes[self.world.index(node)].madsim_id;
        self.world
            .madsim
            .get_node(madsim_id)
            .expect("every world node has a madsim node")
            .spawn(future)
    }

    /// The context of `node`'s current incarnation (for tasks started with [`Sim::spawn`]).
    pub fn node(&self, node: NodeId) -> NodeContext {
        let index = self.world.index(node);
        let incarnation = self.world.state.lock().incarnations[index];
        NodeContext::new(self.world.clone(), node, incarnation)
    }

    /// A new datagram network carrying messages of type `M`.
    pub fn datagram_network<M: Clone + Send + 'static>(&self) -> DatagramNetwork<M> {
        DatagramNetwork::new(self.world.clone())
    }

    /// A new network of FIFO connections carrying messages of type `M`.
    pub fn stream_network<M: Send + 'static>(&self) -> StreamNetwork<M> {
        StreamNetwork::new(self.world.clone())
    }

    /// The fault injector.
    pub fn nemesis(&self) -> Nemesis {
        Nemesis::new(self.world.clone())
    }

    /// A recorder for events that belong to no node (the scenario's own).
    pub fn history(&self) -> HistoryRecorder {
        HistoryRecorder {
            world: self.world.clone(),
            node: None,
        }
    }

    /// A copy of the history so far.
    pub fn history_snapshot(&self) -> History {
        History::from_records(self.world.state.lock().history.clone())
    }

    /// The server that most recently became leader and has neither stepped down nor
    /// crashed, from the servers' own leadership events (for scenario code that aims at the
    /// leader; checkers must not rely on it).
    pub fn current_leader(&self) -> Option<NodeId> {
        let state = self.world.state.lock();
        crate::nemesis::current_leader(&state, &self.world)
    }

    /// Faults that fired so far.
    pub fn fault_counts(&self) -> FaultCounts {
        self.world.state.lock().counts.clone()
    }

    /// Global simulated time.
    pub fn now(&self) -> SimTime {
        self.world.now()
    }

    /// Sleeps for `duration` of global simulated time.
    pub async fn sleep(&self, duration: Duration) {
        crate::time::sleep(duration).await;
    }

    /// Completes at the end of the fault phase, once the world has healed everything (at
    /// once if there are no faults): the liveness phase begins.
    pub async fn fault_phase_ended(&self) {
        self.world.fault_phase_ended.wait().await;
    }

    /// Whether `node` is running (up or paused, not crashed).
    pub fn is_crashed(&self, node: NodeId) -> bool {
        self.world.state.lock().is_crashed(self.world.index(node))
    }

    /// Whether `node` is paused.
    pub fn is_paused(&self, node: NodeId) -> bool {
        self.world.state.lock().statuses[self.world.index(node)] == NodeStatus::Paused
    }

    /// `node`'s local clock.
    pub fn clock(&self, node: NodeId) -> Clock {
        self.world.nodes[self.world.index(node)].clock.clone()
    }

    /// `node`'s disk.
    pub fn disk(&self, node: NodeId) -> Disk {
        self.world.nodes[self.world.index(node)].disk.clone()
    }
}

impl fmt::Debug for Sim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sim")
            .field("seed", &self.world.seed)
            .field("now", &self.now())
            .finish()
    }
}

/// What a node program gets: its identity, clock, disk, randomness and history recorder.
#[derive(Clone)]
pub struct NodeContext {
    sim: Sim,
    node: NodeId,
    /// `node`'s position in the world's tables, found once: drivers read the clock on
    /// every message.
    index: usize,
    incarnation: u32,
}

impl NodeContext {
    pub(crate) fn new(world: Arc<WorldShared>, node: NodeId, incarnation: u32) -> Self {
        let index = world.index(node);
        Self {
            sim: Sim { world },
            node,
            index,
            incarnation,
        }
    }

    /// This node.
    pub fn id(&self) -> NodeId {
        self.node
    }

    /// How many times this node has been restarted.
    pub fn incarnation(&self) -> u32 {
        self.incarnation
    }

    /// The node's local clock.
    pub fn clock(&self) -> &Clock {
        &self.sim.world.nodes[self.index].clock
    }

    /// The node's disk.
    pub fn disk(&self) -> &Disk {
        &self.sim.world.nodes[self.index].disk
    }

    /// A random stream private to this node and incarnation, e.g. `"election-jitter"`.
    pub fn rng(&self, stream: &str) -> ChaCha8Rng {
        self.sim
            .world
            .seed
            .node_stream(stream, self.node, self.incarnation)
    }

    /// A recorder that stamps events with this node.
    pub fn history(&self) -> HistoryRecorder {
        HistoryRecorder {
            world: self.sim.world.clone(),
            node: Some(self.node),
        }
    }

    /// The world.
    pub fn sim(&self) -> &Sim {
        &self.sim
    }
}

impl fmt::Debug for NodeContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeContext")
            .field("node", &self.node)
            .field("incarnation", &self.incarnation)
            .finish()
    }
}

/// Appends events to the run's history, stamped with global time and a node.
#[derive(Clone)]
pub struct HistoryRecorder {
    world: Arc<WorldShared>,
    node: Option<NodeId>,
}

impl HistoryRecorder {
    /// Records any event.
    pub fn record(&self, event: Event) {
        self.world.record(self.node, event);
    }

    /// Records that `process` on this node invoked `operation`; returns its id.
    ///
    /// # Panics
    /// On a recorder that belongs to no node.
    pub fn invoke(&self, process: u32, operation: Operation) -> OpId {
        let client = self.node.expect("operations are invoked by a node");
        let at = self.world.now();
        let mut state = self.world.state.lock();
        state.next_op_id += 1;
        let op_id = OpId(state.next_op_id);
        state.history.push(crate::history::Record {
            at,
            node: self.node,
            event: Event::Invoke {
                client,
                process,
                op_id,
                operation,
            },
        });
        op_id
    }

    /// Records how operation `op_id` ended.
    pub fn complete(&self, op_id: OpId, result: OpResult) {
        self.record(Event::Complete { op_id, result });
    }

    /// Counts that this run reached `mark` (a coverage mark: not in the history, so the
    /// history digest does not depend on it).
    pub fn reach(&self, mark: crate::coverage::Mark) {
        *self.world.state.lock().marks.entry(mark).or_default() += 1;
    }

    /// Records a protocol event.
    pub fn protocol(&self, event: ProtocolEvent) {
        self.record(Event::Protocol(event));
    }

    /// Records a recipe event.
    pub fn recipe(&self, event: RecipeEvent) {
        self.record(Event::Recipe(event));
    }

    /// Records a ZooKeeper client-session event.
    pub fn zk(&self, event: crate::history::zk::ZkEvent) {
        self.record(Event::Zk(event));
    }

    /// Records an etcd-style key-value client event.
    pub fn kv(&self, event: crate::history::kv::KvEvent) {
        self.record(Event::Kv(event));
    }

    /// Records a note.
    pub fn note(&self, text: impl Into<String>) {
        self.record(Event::Note { text: text.into() });
    }
}
