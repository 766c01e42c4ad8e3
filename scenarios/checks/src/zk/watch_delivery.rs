//! Each watch fires exactly once: never twice, and — if a change it watches is
//! acknowledged after it was set and its session lives on — at least once.
//!
//! "Watches are one time triggers; if you get a watch event and you want to get notified of
//! future changes, you must set another watch"; a watch set by a read fires when the data
//! it watches changes (ZooKeeper Programmer's Guide, *ZooKeeper Watches*). Watches survive
//! reconnection to another server (the client re-registers them) but not session expiry.
//! One documented exception: "a watch for the existence of a znode not yet created will be
//! missed if the znode is created and deleted while disconnected", so an exists watch whose
//! client was disconnected after setting it is not required to fire.
//!
//! **Reads:** client operations and the client's watch events (`ZkEvent::WatchRegistered`,
//! `WatchDelivered`, `Disconnected`), all recorded by the client library at the client node
//! when the client sets a watch, receives a notification, or loses its connection. No server
//! event is trusted.

use crate::history::zk::{ZkOp, parent_of, session_ends, zk_operations};
use crate::{Checked, Violation};
use sim::{
    NodeId,
    history::{
        Event, History, OpId,
        zk::{WatchKind, ZkEvent, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::{collections::BTreeMap, fmt, time::Duration};

/// A watch that fired twice, or never fired although a change it watches was acknowledged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchDeliveryViolation {
    /// Delivered more than once.
    FiredTwice {
        /// The registering read.
        registration: OpId,
        /// The client.
        client: NodeId,
        /// When it was delivered.
        deliveries: Vec<SimTime>,
    },
    /// Never delivered.
    NeverFired {
        /// The registering read.
        registration: OpId,
        /// The client.
        client: NodeId,
        /// The watched path and kind.
        path: String,
        /// Kind of watch.
        kind: WatchKind,
        /// An acknowledged change that should have fired it.
        change: OpId,
        /// When that change was acknowledged.
        change_acknowledged_at: SimTime,
    },
}

impl fmt::Display for WatchDeliveryViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchDeliveryViolation::FiredTwice {
                registration,
                client,
                deliveries,
            } => write!(
                f,
                "{client}'s watch set by {registration} fired {} times (at {deliveries:?})",
                deliveries.len()
            ),
            WatchDeliveryViolation::NeverFired {
                registration,
                client,
                path,
                kind,
                change,
                change_acknowledged_at,
            } => write!(
                f,
                "{client}'s {kind:?} watch on {path} set by {registration} never fired, though {change} changed it (acknowledged at {change_acknowledged_at})"
            ),
        }
    }
}

impl Violation for WatchDeliveryViolation {
    fn property(&self) -> &'static str {
        "watch fires exactly once"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Programmer's Guide, ZooKeeper Watches (one-time triggers)"
    }

    fn at(&self) -> Option<SimTime> {
        // The second delivery; unknown for a watch that never fired.
        match self {
            WatchDeliveryViolation::FiredTwice { deliveries, .. } => deliveries.get(1).copied(),
            WatchDeliveryViolation::NeverFired { .. } => None,
        }
    }
}

struct Registration {
    client: NodeId,
    session: u64,
    path: String,
    kind: WatchKind,
    at: SimTime,
}

/// Whether `operation` (which succeeded with `response`) changes what a watch watches.
fn fires(kind: WatchKind, watched: &str, operation: &ZkOperation, response: &ZkResponse) -> bool {
    match (operation, response) {
        (ZkOperation::Multi { ops }, ZkResponse::Multi { results }) => ops
            .iter()
            .zip(results)
            .any(|(op, result)| fires(kind, watched, op, result)),
        (ZkOperation::SetData { path, .. }, _) => kind == WatchKind::Data && path == watched,
        (ZkOperation::Delete { path, .. }, _) => match kind {
            WatchKind::Data => path == watched,
            WatchKind::Children => path == watched || parent_of(path) == watched,
            WatchKind::Exists => false,
        },
        (ZkOperation::Create { .. }, ZkResponse::Created { path }) => match kind {
            WatchKind::Exists => path == watched,
            WatchKind::Children => parent_of(path) == watched,
            WatchKind::Data => false,
        },
        _ => false,
    }
}

/// Every watch delivered twice, and every watch not delivered although a change it watches
/// was acknowledged at least `settle` before the history ends, its session never ended and
/// its client never crashed.
pub fn check(history: &History, settle: Duration) -> Checked<WatchDeliveryViolation> {
    let ops: Vec<ZkOp<'_>> = zk_operations(history);
    let ends = session_ends(history);
    let end = history
        .records()
        .last()
        .map_or(SimTime::ZERO, |record| record.at);
    let mut registrations: BTreeMap<OpId, Registration> = BTreeMap::new();
    let mut deliveries: BTreeMap<OpId, Vec<SimTime>> = BTreeMap::new();
    let mut crashed: BTreeMap<NodeId, SimTime> = BTreeMap::new();
    let mut disconnections: BTreeMap<u64, Vec<SimTime>> = BTreeMap::new();
    for record in history.records() {
        match (&record.event, record.node) {
            (Event::Zk(ZkEvent::Disconnected { session, .. }), _) => {
                disconnections.entry(*session).or_default().push(record.at);
            }
            (
                Event::Zk(ZkEvent::WatchRegistered {
                    session,
                    op_id,
                    path,
                    kind,
                    ..
                }),
                Some(client),
            ) => {
                registrations.insert(
                    *op_id,
                    Registration {
                        client,
                        session: *session,
                        path: path.clone(),
                        kind: *kind,
                        at: record.at,
                    },
                );
            }
            (Event::Zk(ZkEvent::WatchDelivered { op_id, .. }), _) => {
                deliveries.entry(*op_id).or_default().push(record.at);
            }
            (Event::Fault(fault), _) => {
                if let Some(node) = fault.crashed() {
                    crashed.entry(node).or_insert(record.at);
                }
            }
            _ => {}
        }
    }
    let judged = registrations.len() as u64;
    let mut violations = Vec::new();
    for (registration, times) in &deliveries {
        if times.len() > 1 {
            violations.push(WatchDeliveryViolation::FiredTwice {
                registration: *registration,
                client: registrations
                    .get(registration)
                    .map_or(NodeId::client(0), |r| r.client),
                deliveries: times.clone(),
            });
        }
    }
    for (op_id, registration) in &registrations {
        let disconnected_since = disconnections
            .get(&registration.session)
            .is_some_and(|times| times.iter().any(|at| *at > registration.at));
        if deliveries.contains_key(op_id)
            || ends.contains_key(&registration.session)
            || crashed
                .get(&registration.client)
                .is_some_and(|at| *at > registration.at)
            || (registration.kind == WatchKind::Exists && disconnected_since)
        {
            continue;
        }
        let change = ops.iter().find(|op| {
            op.invoked_at > registration.at
                && op.ok_at().is_some_and(|at| at + settle <= end)
                && op.ok().is_some_and(|response| {
                    fires(
                        registration.kind,
                        &registration.path,
                        op.operation,
                        response,
                    )
                })
        });
        if let Some(change) = change {
            violations.push(WatchDeliveryViolation::NeverFired {
                registration: *op_id,
                client: registration.client,
                path: registration.path.clone(),
                kind: registration.kind,
                change: change.op_id,
                change_acknowledged_at: change.ok_at().unwrap_or(SimTime::ZERO),
            });
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::*;

    #[test]
    fn once_passes_twice_fails_and_a_missed_change_fails() {
        let setup = vec![
            registered(10, C1, 1, "/w", WatchKind::Data),
            invoke(20, C2, 2, set_data("/w", "x")),
            ok(
                21,
                C2,
                2,
                ZkResponse::Stat {
                    stat: stat(5, 1, 0),
                },
            ),
        ];
        let settle = Duration::from_millis(5);
        let mut once = setup.clone();
        once.push(delivered(22, C1, 1, "/w", 5));
        once.push(record(
            100,
            C1,
            sim::history::Event::Note { text: "end".into() },
        ));
        assert!(check(&History::from_records(once.clone()), settle).is_empty());
        let mut twice = once.clone();
        twice.insert(4, delivered(23, C1, 1, "/w", 5));
        assert!(matches!(
            check(&History::from_records(twice), settle)[..],
            [WatchDeliveryViolation::FiredTwice { .. }]
        ));
        let mut never = setup;
        never.push(record(
            100,
            C1,
            sim::history::Event::Note { text: "end".into() },
        ));
        assert!(matches!(
            check(&History::from_records(never), settle)[..],
            [WatchDeliveryViolation::NeverFired {
                change: OpId(2),
                ..
            }]
        ));
    }
    #[test]
    fn an_exists_watch_may_miss_a_create_while_disconnected() {
        use sim::history::zk::CreateMode;
        let settle = Duration::from_millis(5);
        let mut history = vec![
            registered(10, C1, 1, "/x", WatchKind::Exists),
            invoke(20, C2, 2, create("/x", CreateMode::Persistent)),
            ok(21, C2, 2, ZkResponse::Created { path: "/x".into() }),
            record(100, C1, Event::Note { text: "end".into() }),
        ];
        assert_eq!(
            check(&History::from_records(history.clone()), settle).len(),
            1
        );
        history.insert(
            1,
            record(
                15,
                C1,
                Event::Zk(ZkEvent::Disconnected {
                    process: 0,
                    session: 7,
                    server: NodeId::server(0),
                }),
            ),
        );
        assert!(check(&History::from_records(history), settle).is_empty());
    }
}
