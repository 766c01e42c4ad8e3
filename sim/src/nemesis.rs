//! The nemesis: applies faults to the world, records them, and counts what fired.

use crate::{
    fault::{Fault, FaultPlan, PartitionShape, Target},
    history::{Event, FaultOutcome, FaultRecord, PhaseEvent},
    net::BreakReason,
    node::NodeId,
    ratio::Ratio,
    time,
    world::state::{Breakable, Conditions, NodeStatus, WorldShared, WorldState},
};
use rand::seq::SliceRandom;
use std::{collections::BTreeMap, fmt, sync::Arc, time::Duration};

/// Injects faults into the running world. Every verb has its inverse, and every call is
/// recorded in the history (with what it did) and counted in [`FaultCounts`](crate::FaultCounts).
///
/// Verbs panic if given a node that is not in the world (a scenario bug); fault plans are
/// validated before the run instead.
#[derive(Clone)]
pub struct Nemesis {
    world: Arc<WorldShared>,
}

impl fmt::Debug for Nemesis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nemesis").finish_non_exhaustive()
    }
}

/// Something to do once the world lock is released.
enum Deferred {
    Break(Vec<Arc<dyn Breakable>>, BreakReason),
    CrashHooks(usize),
}

impl Nemesis {
    pub(crate) fn new(world: Arc<WorldShared>) -> Self {
        Self { world }
    }

    /// Cuts the network into `shape`, replacing any earlier partition.
    pub fn partition(&self, shape: PartitionShape) -> FaultOutcome {
        self.apply(&Fault::Partition { shape })
    }

    /// Cuts `node` off from every other node.
    pub fn isolate(&self, node: NodeId) -> FaultOutcome {
        self.partition(PartitionShape::IsolateNode { node: node.into() })
    }

    /// Repairs the partition.
    pub fn heal(&self) -> FaultOutcome {
        self.apply(&Fault::Heal)
    }

    /// Drops everything sent from `from` to `to`.
    pub fn clog(&self, from: NodeId, to: NodeId) -> FaultOutcome {
        self.apply(&Fault::Clog { from, to })
    }

    /// Undoes [`Nemesis::clog`].
    pub fn unclog(&self, from: NodeId, to: NodeId) -> FaultOutcome {
        self.apply(&Fault::Unclog { from, to })
    }

    /// Kills `node`: tasks stop, unsynced writes are lost, connections break.
    pub fn crash(&self, node: NodeId) -> FaultOutcome {
        self.apply(&Fault::Crash { node: node.into() })
    }

    /// Starts a crashed `node` again.
    pub fn restart(&self, node: NodeId) -> FaultOutcome {
        self.apply(&Fault::Restart { node: node.into() })
    }

    /// Freezes `node`'s tasks and timers while the world goes on.
    pub fn pause(&self, node: NodeId) -> FaultOutcome {
        self.apply(&Fault::Pause { node: node.into() })
    }

    /// Lets a paused `node` run again.
    pub fn resume(&self, node: NodeId) -> FaultOutcome {
        self.apply(&Fault::Resume { node: node.into() })
    }

    /// Moves `node`'s clock by `delta_ms` (negative: backwards).
    pub fn step_clock(&self, node: NodeId, delta_ms: i64) -> FaultOutcome {
        self.apply(&Fault::ClockStep {
            node: node.into(),
            delta_ms,
        })
    }

    /// Sets `node`'s clock drift.
    pub fn set_drift(&self, node: NodeId, drift_ppm: i32) -> FaultOutcome {
        self.apply(&Fault::ClockDrift {
            node: node.into(),
            drift_ppm,
        })
    }

    /// Sets the datagram loss probability.
    pub fn set_loss(&self, rate: Ratio) -> FaultOutcome {
        self.apply(&Fault::Loss { rate })
    }

    /// Sets the datagram duplication probability.
    pub fn set_duplication(&self, rate: Ratio) -> FaultOutcome {
        self.apply(&Fault::Duplication { rate })
    }

    /// Sets the one-way latency range.
    pub fn set_latency(&self, min: Duration, max: Duration) -> FaultOutcome {
        self.apply(&Fault::Latency {
            min_us: u64::try_from(min.as_micros()).unwrap_or(u64::MAX),
            max_us: u64::try_from(max.as_micros()).unwrap_or(u64::MAX),
        })
    }

    /// Heals everything: partition, clogs, network conditions, crashed and paused nodes,
    /// clock drift.
    pub fn heal_all(&self) -> FaultOutcome {
        self.apply(&Fault::HealAll)
    }

    /// The world's own heal at the end of the fault phase: what [`Nemesis::heal_all`] does,
    /// counted in `heal_alls` and recorded as a phase, not as a fault.
    fn heal_everything(&self) {
        let mut deferred = Vec::new();
        let outcome = {
            let mut state = self.world.state.lock();
            self.apply_locked(&mut state, &Fault::HealAll, None, &mut deferred)
        };
        self.run_deferred(outcome, deferred);
    }

    /// Applies `fault`, records it and counts it.
    ///
    /// # Panics
    /// If the fault is invalid for this world (unknown node, ratio above one, …).
    pub fn apply(&self, fault: &Fault) -> FaultOutcome {
        self.apply_resolving(fault, None).1
    }

    /// Resolves `fault`'s subject (a role or `$name`), applies it, records it with what the
    /// subject resolved to, and counts it; names the resolved node `label` if given.
    /// Returns the resolved subject with the outcome.
    pub(crate) fn apply_resolving(
        &self,
        fault: &Fault,
        label: Option<&str>,
    ) -> (Option<NodeId>, FaultOutcome) {
        if let Err(error) = fault.validate("fault", &self.world.config) {
            panic!("nemesis given an invalid fault {fault}: {error}");
        }
        let mut deferred = Vec::new();
        let (target, outcome) = {
            let mut state = self.world.state.lock();
            let resolved = match fault.subject() {
                None => Ok(None),
                Some(subject) => self.resolve(&mut state, subject).map(Some),
            };
            let (target, outcome) = match resolved {
                Ok(target) => (
                    target,
                    self.apply_locked(&mut state, fault, target, &mut deferred),
                ),
                Err(reason) => (
                    None,
                    FaultOutcome::Skipped {
                        reason: reason.to_string(),
                    },
                ),
            };
            if matches!(outcome, FaultOutcome::Skipped { .. }) {
                state.counts.skipped += 1;
            }
            if let (Some(label), Some(node)) = (label, target) {
                state.labels.insert(label.to_string(), node);
            }
            (target, outcome)
        };
        let outcome = self.run_deferred(outcome, deferred);
        self.world.record(
            None,
            Event::Fault(FaultRecord {
                fault: fault.clone(),
                target,
                outcome: outcome.clone(),
            }),
        );
        (target, outcome)
    }

    /// The node `target` names now: roles resolve against the servers' leadership events
    /// and the nemesis stream (so the same run resolves them the same way).
    fn resolve(&self, state: &mut WorldState, target: &Target) -> Result<NodeId, String> {
        match target {
            Target::Node(node) => Ok(*node),
            Target::Leader => {
                current_leader(state, &self.world).ok_or_else(|| "no leader is known".into())
            }
            Target::Follower => {
                let leader = current_leader(state, &self.world);
                let followers: Vec<NodeId> = (0..self.world.config.servers)
                    .map(NodeId::server)
                    .filter(|node| {
                        Some(*node) != leader && !state.is_crashed(self.world.index(*node))
                    })
                    .collect();
                followers
                    .choose(&mut state.nemesis_rng)
                    .copied()
                    .ok_or_else(|| "no running follower".into())
            }
            Target::Holder => state
                .holding
                .iter()
                .rev()
                .map(|(node, _, _)| *node)
                .find(|node| !state.is_crashed(self.world.index(*node)))
                .ok_or_else(|| "no client holds a lock or leads an election".into()),
            Target::Waiter => state
                .waiting
                .iter()
                .map(|(node, _, _)| *node)
                .find(|node| !state.is_crashed(self.world.index(*node)))
                .ok_or_else(|| "no client waits for a lock or campaigns".into()),
            Target::NewestWaiter => state
                .waiting
                .iter()
                .rev()
                .map(|(node, _, _)| *node)
                .find(|node| !state.is_crashed(self.world.index(*node)))
                .ok_or_else(|| "no client waits for a lock or campaigns".into()),
            Target::Label(name) => state
                .labels
                .get(name)
                .copied()
                .ok_or_else(|| format!("`${name}` was never resolved (its fault was skipped)")),
        }
    }

    fn run_deferred(&self, mut outcome: FaultOutcome, deferred: Vec<Deferred>) -> FaultOutcome {
        let mut broken = 0;
        let mut discarded = 0;
        let mut dropped_for_crashed = 0;
        for action in deferred {
            match action {
                Deferred::Break(connections, reason) => {
                    for connection in connections {
                        if let Some(messages) = connection.break_abruptly(reason) {
                            broken += 1;
                            discarded += messages;
                        }
                    }
                }
                Deferred::CrashHooks(index) => {
                    let hooks = self.world.state.lock().live_crash_hooks();
                    for hook in hooks {
                        dropped_for_crashed += hook.on_crash(index);
                    }
                }
            }
        }
        {
            let mut state = self.world.state.lock();
            state.counts.connections_broken += broken;
            state.counts.messages_dropped_broken_connection += discarded;
            state.counts.messages_dropped_node_down += dropped_for_crashed;
        }
        if let FaultOutcome::Applied {
            broken_connections, ..
        } = &mut outcome
        {
            *broken_connections = broken;
        }
        outcome
    }

    /// Applies `fault` with its subject resolved to `target`: to the network, to one node,
    /// or, for `HealAll`, to everything.
    fn apply_locked(
        &self,
        state: &mut WorldState,
        fault: &Fault,
        target: Option<NodeId>,
        deferred: &mut Vec<Deferred>,
    ) -> FaultOutcome {
        match fault {
            Fault::Partition { .. }
            | Fault::Heal
            | Fault::Clog { .. }
            | Fault::Unclog { .. }
            | Fault::Loss { .. }
            | Fault::Duplication { .. }
            | Fault::Latency { .. } => self.apply_to_network_locked(state, fault, target, deferred),
            Fault::Crash { .. }
            | Fault::Restart { .. }
            | Fault::Pause { .. }
            | Fault::Resume { .. }
            | Fault::ClockStep { .. }
            | Fault::ClockDrift { .. } => {
                // Validated and resolved: every fault with a subject has its node here.
                let subject = target.expect("a resolved subject");
                self.apply_to_node_locked(state, fault, subject, deferred)
            }
            Fault::HealAll => {
                self.heal_all_locked(state);
                applied()
            }
        }
    }

    /// Applies a fault of the network (partitions, clogs, loss, duplication, latency);
    /// `target` is a partition's subject, if its shape has one.
    fn apply_to_network_locked(
        &self,
        state: &mut WorldState,
        fault: &Fault,
        target: Option<NodeId>,
        deferred: &mut Vec<Deferred>,
    ) -> FaultOutcome {
        let world = &self.world;
        let n = world.nodes.len();
        match fault {
            Fault::Partition { shape } => {
                let servers: Vec<NodeId> = (0..world.config.servers).map(NodeId::server).collect();
                let all: Vec<NodeId> = world.config.nodes().collect();
                let leader = shape
                    .needs_leader()
                    .then(|| current_leader(state, world))
                    .flatten();
                let links =
                    match shape.resolve(&servers, &all, target, leader, &mut state.nemesis_rng) {
                        Ok(links) => links,
                        Err(reason) => return skipped(reason),
                    };
                state.partition_cut.iter_mut().for_each(|cut| *cut = false);
                for &(from, to) in &links {
                    state.partition_cut[world.index(from) * n + world.index(to)] = true;
                }
                state.counts.partitions += 1;
                let broken = state.take_connections(|state, [a, b]| !state.reachable(a, b));
                deferred.push(Deferred::Break(broken, BreakReason::Partitioned));
                FaultOutcome::Applied {
                    cut_links: links,
                    broken_connections: 0,
                    lost_writes: 0,
                }
            }
            Fault::Heal => {
                if !state.partition_cut.iter().any(|cut| *cut) {
                    return skipped("no partition to heal");
                }
                state.partition_cut.iter_mut().for_each(|cut| *cut = false);
                state.counts.heals += 1;
                applied()
            }
            Fault::Clog { from, to } => {
                let link = world.index(*from) * n + world.index(*to);
                if state.clogged[link] {
                    return skipped("link already clogged");
                }
                state.clogged[link] = true;
                state.counts.clogs += 1;
                let broken = state.take_connections(|state, [a, b]| !state.reachable(a, b));
                deferred.push(Deferred::Break(broken, BreakReason::Partitioned));
                applied()
            }
            Fault::Unclog { from, to } => {
                let link = world.index(*from) * n + world.index(*to);
                if !state.clogged[link] {
                    return skipped("link not clogged");
                }
                state.clogged[link] = false;
                state.counts.unclogs += 1;
                applied()
            }
            Fault::Loss { rate } => {
                state.conditions.loss = *rate;
                if *rate == world.config.network.loss {
                    state.counts.network_restores += 1;
                } else {
                    state.counts.loss_changes += 1;
                }
                applied()
            }
            Fault::Duplication { rate } => {
                state.conditions.duplication = *rate;
                if *rate == world.config.network.duplication {
                    state.counts.network_restores += 1;
                } else {
                    state.counts.duplication_changes += 1;
                }
                applied()
            }
            Fault::Latency { min_us, max_us } => {
                state.conditions.set_latency(
                    Duration::from_micros(*min_us),
                    Duration::from_micros(*max_us),
                );
                let network = &world.config.network;
                if (*min_us, *max_us) == (network.latency_min_us, network.latency_max_us) {
                    state.counts.network_restores += 1;
                } else {
                    state.counts.latency_changes += 1;
                }
                applied()
            }
            _ => unreachable!("not a fault of the network: {fault:?}"),
        }
    }

    /// Applies a fault of the node `subject` (crash, restart, pause, resume, clock step or
    /// drift).
    fn apply_to_node_locked(
        &self,
        state: &mut WorldState,
        fault: &Fault,
        subject: NodeId,
        deferred: &mut Vec<Deferred>,
    ) -> FaultOutcome {
        let world = &self.world;
        let index = world.index(subject);
        match fault {
            Fault::Crash { .. } => {
                if state.statuses[index] == NodeStatus::Crashed {
                    return skipped("node already crashed");
                }
                self.crash_locked(state, index, deferred)
            }
            Fault::Restart { .. } => {
                if state.statuses[index] != NodeStatus::Crashed {
                    return skipped("node is not crashed");
                }
                self.restart_locked(state, index);
                applied()
            }
            Fault::Pause { .. } => {
                match state.statuses[index] {
                    NodeStatus::Crashed => return skipped("node is crashed"),
                    NodeStatus::Paused => return skipped("node already paused"),
                    NodeStatus::Up => {}
                }
                world.madsim.pause(world.nodes[index].madsim_id);
                state.statuses[index] = NodeStatus::Paused;
                state.counts.pauses += 1;
                applied()
            }
            Fault::Resume { .. } => {
                if state.statuses[index] != NodeStatus::Paused {
                    return skipped("node is not paused");
                }
                self.resume_locked(state, index);
                applied()
            }
            Fault::ClockStep { delta_ms, .. } => {
                world.nodes[index]
                    .clock
                    .step(delta_ms.saturating_mul(1_000_000));
                state.counts.clock_steps += 1;
                applied()
            }
            Fault::ClockDrift { drift_ppm, .. } => {
                world.nodes[index].clock.set_drift(*drift_ppm);
                if *drift_ppm == 0 {
                    state.counts.clock_drift_stops += 1;
                } else {
                    state.counts.clock_drifts += 1;
                }
                applied()
            }
            _ => unreachable!("not a fault of one node: {fault:?}"),
        }
    }

    /// Heals everything: partitions, clogs, network conditions, crashed and paused nodes,
    /// clock drift.
    fn heal_all_locked(&self, state: &mut WorldState) {
        let world = &self.world;
        let n = world.nodes.len();
        state.partition_cut.iter_mut().for_each(|cut| *cut = false);
        state.clogged.iter_mut().for_each(|cut| *cut = false);
        state.conditions = Conditions::from_config(&world.config);
        for index in 0..n {
            match state.statuses[index] {
                NodeStatus::Crashed => self.restart_locked(state, index),
                NodeStatus::Paused => self.resume_locked(state, index),
                NodeStatus::Up => {}
            }
            if world.nodes[index].clock.drift_ppm() != 0 {
                world.nodes[index].clock.set_drift(0);
            }
        }
        state.counts.heal_alls += 1;
    }

    fn crash_locked(
        &self,
        state: &mut WorldState,
        index: usize,
        deferred: &mut Vec<Deferred>,
    ) -> FaultOutcome {
        let world = &self.world;
        // Stop the node's tasks first, so nothing it does can observe the aftermath.
        world.madsim.kill(world.nodes[index].madsim_id);
        state.statuses[index] = NodeStatus::Crashed;
        // A crash ends its leadership: restarted, it comes back a follower, whatever it
        // claimed before (it records no `SteppedDown` for the leadership it lost).
        let node = world.nodes[index].id;
        state.leading.remove(&node);
        state.holding.retain(|(holder, _, _)| *holder != node);
        state.waiting.retain(|(waiter, _, _)| *waiter != node);
        let loss = world.nodes[index].disk.crash();
        state.counts.crashes += 1;
        state.counts.unsynced_writes_lost += loss.writes;
        let broken = state.take_connections(|_, ends| ends.contains(&index));
        deferred.push(Deferred::Break(broken, BreakReason::Crashed { node }));
        deferred.push(Deferred::CrashHooks(index));
        FaultOutcome::Applied {
            cut_links: Vec::new(),
            broken_connections: 0,
            lost_writes: loss.writes,
        }
    }

    fn restart_locked(&self, state: &mut WorldState, index: usize) {
        let world = &self.world;
        state.statuses[index] = NodeStatus::Up;
        state.incarnations[index] += 1;
        state.counts.restarts += 1;
        // madsim re-runs the node's init task, which starts its program afresh.
        world.madsim.restart(world.nodes[index].madsim_id);
    }

    fn resume_locked(&self, state: &mut WorldState, index: usize) {
        let world = &self.world;
        world.madsim.resume(world.nodes[index].madsim_id);
        state.statuses[index] = NodeStatus::Up;
        state.counts.resumes += 1;
    }
}

/// The server that most recently became leader and has neither stepped down nor crashed,
/// according to the servers' `BecameLeader` / `SteppedDown` events (kept up to date as they
/// are recorded, so any protocol that records them works; ties go to the lower node).
pub(crate) fn current_leader(state: &WorldState, world: &WorldShared) -> Option<NodeId> {
    state
        .leading
        .iter()
        .filter(|(node, _)| node.is_server() && !state.is_crashed(world.index(**node)))
        .max_by_key(|(node, term)| (**term, std::cmp::Reverse(**node)))
        .map(|(node, _)| *node)
}

/// What the plan runner does next.
enum Step {
    /// Fire the plan's fault at this position.
    Fire(usize),
    /// Fire the inverse of a spanned fault.
    Undo(Fault),
}

/// Runs a fault plan on the supervisor node: each fault at its time (and the inverse of a
/// spanned one at the end of its span, on the node it resolved to), then, at the end of the
/// fault phase, heals everything and signals the liveness phase.
///
/// At one instant the plan's own faults fire before the inverses of spans ending then, so a
/// plan can crash a node as the partition that stranded it heals.
pub(crate) async fn run_plan(world: Arc<WorldShared>, plan: FaultPlan, phase_end_ms: u64) {
    let nemesis = Nemesis::new(world.clone());
    let mut queue: BTreeMap<(u64, usize), Step> = plan
        .faults
        .iter()
        .enumerate()
        .map(|(index, scheduled)| ((scheduled.at_ms, index), Step::Fire(index)))
        .collect();
    let mut next_undo = plan.faults.len();
    while let Some(((at_ms, _), step)) = queue.pop_first() {
        let at = Duration::from_millis(at_ms);
        let now = Duration::from_nanos(world.now().as_nanos());
        if at > now {
            time::sleep(at - now).await;
        }
        match step {
            Step::Fire(index) => {
                let scheduled = &plan.faults[index];
                let (target, outcome) =
                    nemesis.apply_resolving(&scheduled.fault, scheduled.label.as_deref());
                if let (Some(for_ms), FaultOutcome::Applied { .. }) = (scheduled.for_ms, &outcome)
                    && let Some(inverse) = scheduled.fault.inverse(target, &world.config)
                {
                    queue.insert((at_ms + for_ms, next_undo), Step::Undo(inverse));
                    next_undo += 1;
                }
            }
            Step::Undo(inverse) => {
                nemesis.apply(&inverse);
            }
        }
    }
    let phase_end = Duration::from_millis(phase_end_ms);
    let now = Duration::from_nanos(world.now().as_nanos());
    if phase_end > now {
        time::sleep(phase_end - now).await;
    }
    if !plan.faults.is_empty() {
        world.record(None, Event::Phase(PhaseEvent::FaultPhaseEnded));
        nemesis.heal_everything();
        world.record(None, Event::Phase(PhaseEvent::Healed));
    }
    world.fault_phase_ended.set();
}

/// A fault applied, with nothing cut, broken or lost (yet: the caller counts broken
/// connections after the lock is released).
fn applied() -> FaultOutcome {
    FaultOutcome::Applied {
        cut_links: Vec::new(),
        broken_connections: 0,
        lost_writes: 0,
    }
}

/// A fault skipped, and why.
fn skipped(reason: &str) -> FaultOutcome {
    FaultOutcome::Skipped {
        reason: reason.to_string(),
    }
}
