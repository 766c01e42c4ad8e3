//! A waiter's connection: its session timeouts, and when its connection was disturbed.

use sim::{
    NodeId,
    history::{Event, FaultOutcome, History, zk::ZkEvent},
    time::SimTime,
};
use std::{collections::BTreeMap, time::Duration};

/// What happened to a client's connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Disturbance {
    /// It lost its connection (`Disconnected`).
    Down,
    /// It has a connection again, or knows its session is over (`SessionResumed`,
    /// `SessionEstablished`, `SessionExpired`, `SessionAbandoned`).
    Up,
    /// A fault hit its node (a pause, a partition cutting its links, ...).
    Fault,
}

/// Per client process: its session timeouts (from each `SessionEstablished`), and the
/// times its connection was disturbed.
pub(super) struct Connections {
    timeouts: BTreeMap<(NodeId, u32), Vec<(SimTime, u64)>>,
    disturbed: BTreeMap<NodeId, Vec<(u32, SimTime, Disturbance)>>,
}

/// Any process of the node.
const WHOLE_NODE: u32 = u32::MAX;

impl Connections {
    pub(super) fn read(history: &History) -> Self {
        let mut timeouts: BTreeMap<(NodeId, u32), Vec<(SimTime, u64)>> = BTreeMap::new();
        let mut disturbed: BTreeMap<NodeId, Vec<(u32, SimTime, Disturbance)>> = BTreeMap::new();
        for record in history.records() {
            match (&record.event, record.node) {
                (
                    Event::Zk(ZkEvent::SessionEstablished {
                        process,
                        timeout_ms,
                        ..
                    }),
                    Some(node),
                ) => {
                    timeouts
                        .entry((node, *process))
                        .or_default()
                        .push((record.at, *timeout_ms));
                    disturbed
                        .entry(node)
                        .or_default()
                        .push((*process, record.at, Disturbance::Up));
                }
                (Event::Zk(ZkEvent::Disconnected { process, .. }), Some(node)) => disturbed
                    .entry(node)
                    .or_default()
                    .push((*process, record.at, Disturbance::Down)),
                (
                    Event::Zk(
                        ZkEvent::SessionResumed { process, .. }
                        | ZkEvent::SessionExpired { process, .. }
                        | ZkEvent::SessionAbandoned { process, .. },
                    ),
                    Some(node),
                ) => {
                    disturbed
                        .entry(node)
                        .or_default()
                        .push((*process, record.at, Disturbance::Up))
                }
                (Event::Fault(fault), _) => {
                    let FaultOutcome::Applied { cut_links, .. } = &fault.outcome else {
                        continue;
                    };
                    let mut hit: Vec<NodeId> = fault.target.into_iter().collect();
                    hit.extend(cut_links.iter().flat_map(|(from, to)| [*from, *to]));
                    hit.sort();
                    hit.dedup();
                    for node in hit {
                        disturbed.entry(node).or_default().push((
                            WHOLE_NODE,
                            record.at,
                            Disturbance::Fault,
                        ));
                    }
                }
                _ => {}
            }
        }
        Connections {
            timeouts,
            disturbed,
        }
    }

    /// The waiter's session timeout at `at` (its latest session's).
    pub(super) fn timeout_at(&self, waiter: (NodeId, u32), at: SimTime) -> Option<Duration> {
        self.timeouts
            .get(&waiter)?
            .iter()
            .rev()
            .find(|(since, _)| *since <= at)
            .map(|(_, timeout_ms)| Duration::from_millis(*timeout_ms))
    }

    /// When the bound passes for `waiter` if it starts at `from`: it starts again at each
    /// disturbance of the waiter's connection before it passes, and it does not pass while
    /// the waiter is disconnected (it starts again when the waiter is back). `None`: the
    /// waiter never came back.
    pub(super) fn bound_passes(
        &self,
        waiter: (NodeId, u32),
        from: SimTime,
        bound: Duration,
    ) -> Option<SimTime> {
        let disturbances: Vec<(SimTime, Disturbance)> = self
            .disturbed
            .get(&waiter.0)
            .map(|times| {
                times
                    .iter()
                    .filter(|(process, ..)| *process == waiter.1 || *process == WHOLE_NODE)
                    .map(|(_, at, what)| (*at, *what))
                    .collect()
            })
            .unwrap_or_default();
        let mut start = from;
        loop {
            let passes = start + bound;
            if let Some(later) = disturbances
                .iter()
                .map(|(at, _)| *at)
                .filter(|at| *at > start && *at <= passes)
                .max()
            {
                start = later;
                continue;
            }
            // Still disconnected when it would pass: it starts again once the waiter is back.
            let connection =
                |(at, what): &&(SimTime, Disturbance)| *at <= passes && *what != Disturbance::Fault;
            if disturbances
                .iter()
                .rev()
                .find(connection)
                .map(|(_, what)| *what)
                == Some(Disturbance::Down)
            {
                start = disturbances
                    .iter()
                    .find(|(at, what)| *at > passes && *what == Disturbance::Up)?
                    .0;
                continue;
            }
            return Some(passes);
        }
    }
}
