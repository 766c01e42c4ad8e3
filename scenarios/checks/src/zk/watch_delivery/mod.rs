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
//! A persistent watch (`addWatch`) is judged by [`persistent`]: it must deliver every change
//! it watches, not once. A removed watch (`ZkEvent::WatchRemoved`, recorded when the client
//! drops it) must deliver nothing after its removal.
//!
//! **Reads:** client operations and the client's watch events (`ZkEvent::WatchRegistered`,
//! `WatchDelivered`, `WatchRemoved`, `Disconnected`), all recorded by the client library at the client node
//! when the client sets a watch, receives a notification, or loses its connection. No server
//! event is trusted.

mod persistent;

use crate::history::views::HistoryViews;
use crate::history::zk::{ZkOp, parent_of, session_ends};
use crate::{Checked, Violation};
use sim::{
    NodeId,
    history::{
        Event, History, OpId,
        zk::{WatchEventType, WatchKind, ZkEvent, ZkOperation, ZkResponse},
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
    /// A persistent watch did not deliver a change it watches (it went quiet after an
    /// earlier event, or missed a node below it).
    MissedChange {
        /// The `addWatch` that set it.
        registration: OpId,
        /// The client.
        client: NodeId,
        /// The watched path.
        path: String,
        /// Kind of watch.
        kind: WatchKind,
        /// The acknowledged change it did not deliver.
        change: OpId,
        /// The event that change owed it.
        event: WatchEventType,
        /// The node that event names.
        node: String,
        /// When that change was acknowledged.
        change_acknowledged_at: SimTime,
    },
    /// A watch delivered an event after the client had removed it.
    DeliveredAfterRemoval {
        /// The operation that set it.
        registration: OpId,
        /// The client.
        client: NodeId,
        /// When it was removed.
        removed_at: SimTime,
        /// When it delivered anyway.
        delivered_at: SimTime,
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
            WatchDeliveryViolation::MissedChange {
                registration,
                client,
                path,
                kind,
                change,
                event,
                node,
                change_acknowledged_at,
            } => write!(
                f,
                "{client}'s {kind:?} watch on {path} set by {registration} did not deliver {event:?} {node} of {change} (acknowledged at {change_acknowledged_at})"
            ),
            WatchDeliveryViolation::DeliveredAfterRemoval {
                registration,
                client,
                removed_at,
                delivered_at,
            } => write!(
                f,
                "{client}'s watch set by {registration} was removed at {removed_at} and delivered at {delivered_at}"
            ),
        }
    }
}

impl Violation for WatchDeliveryViolation {
    fn property(&self) -> &'static str {
        match self {
            WatchDeliveryViolation::FiredTwice { .. }
            | WatchDeliveryViolation::NeverFired { .. } => "watch fires exactly once",
            WatchDeliveryViolation::MissedChange { .. } => {
                "persistent watch delivers every change it watches"
            }
            WatchDeliveryViolation::DeliveredAfterRemoval { .. } => {
                "removed watch delivers nothing"
            }
        }
    }

    fn reference(&self) -> &'static str {
        match self {
            WatchDeliveryViolation::MissedChange { .. } => {
                "ZooKeeper Programmer's Guide, Persistent, Recursive Watches"
            }
            WatchDeliveryViolation::DeliveredAfterRemoval { .. } => {
                "ZooKeeper Programmer's Guide, Remove Watches"
            }
            _ => "ZooKeeper Programmer's Guide, ZooKeeper Watches (one-time triggers)",
        }
    }

    fn at(&self) -> Option<SimTime> {
        // The second delivery; unknown for a watch that never fired.
        match self {
            WatchDeliveryViolation::FiredTwice { deliveries, .. } => deliveries.get(1).copied(),
            WatchDeliveryViolation::NeverFired { .. } => None,
            WatchDeliveryViolation::MissedChange { .. } => None,
            WatchDeliveryViolation::DeliveredAfterRemoval { delivered_at, .. } => {
                Some(*delivered_at)
            }
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

/// One event a watch delivered.
struct Delivery {
    at: SimTime,
    event: WatchEventType,
    /// The node the event names.
    path: String,
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
            WatchKind::Persistent | WatchKind::PersistentRecursive => false,
        },
        (ZkOperation::Create { .. }, response) => match (kind, response.created_path()) {
            (_, None) => false,
            (WatchKind::Exists, Some(path)) => path == watched,
            (WatchKind::Children, Some(path)) => parent_of(path) == watched,
            (WatchKind::Data, _) => false,
            (WatchKind::Persistent | WatchKind::PersistentRecursive, _) => false,
        },
        _ => false,
    }
}

/// What the clients recorded about their watches, by the operation that set each.
#[derive(Default)]
struct Watches {
    registrations: BTreeMap<OpId, Registration>,
    deliveries: BTreeMap<OpId, Vec<Delivery>>,
    removals: BTreeMap<OpId, SimTime>,
    crashed: BTreeMap<NodeId, SimTime>,
    disconnections: BTreeMap<u64, Vec<SimTime>>,
}

impl Watches {
    fn read(history: &History) -> Watches {
        let mut watches = Watches::default();
        for record in history.records() {
            match (&record.event, record.node) {
                (Event::Zk(ZkEvent::Disconnected { session, .. }), _) => {
                    let times = watches.disconnections.entry(*session).or_default();
                    times.push(record.at);
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
                    let registration = Registration {
                        client,
                        session: *session,
                        path: path.clone(),
                        kind: *kind,
                        at: record.at,
                    };
                    watches.registrations.insert(*op_id, registration);
                }
                (
                    Event::Zk(ZkEvent::WatchDelivered {
                        op_id, event, path, ..
                    }),
                    _,
                ) => {
                    watches
                        .deliveries
                        .entry(*op_id)
                        .or_default()
                        .push(Delivery {
                            at: record.at,
                            event: *event,
                            path: path.clone(),
                        });
                }
                (Event::Zk(ZkEvent::WatchRemoved { op_id, .. }), _) => {
                    watches.removals.entry(*op_id).or_insert(record.at);
                }
                (Event::Fault(fault), _) => {
                    if let Some(node) = fault.crashed() {
                        watches.crashed.entry(node).or_insert(record.at);
                    }
                }
                _ => {}
            }
        }
        watches
    }

    fn client_of(&self, registration: &OpId) -> NodeId {
        self.registrations
            .get(registration)
            .map_or(NodeId::client(0), |r| r.client)
    }

    /// One-shot watches delivered twice, and watches that delivered after their removal.
    fn over_delivered(&self, violations: &mut Vec<WatchDeliveryViolation>) {
        for (registration, delivered) in &self.deliveries {
            let persistent = self
                .registrations
                .get(registration)
                .is_some_and(|r| r.kind.is_persistent());
            if delivered.len() > 1 && !persistent {
                violations.push(WatchDeliveryViolation::FiredTwice {
                    registration: *registration,
                    client: self.client_of(registration),
                    deliveries: delivered.iter().map(|delivery| delivery.at).collect(),
                });
            }
            if let Some(&removed_at) = self.removals.get(registration)
                && let Some(late) = delivered.iter().find(|delivery| delivery.at > removed_at)
            {
                violations.push(WatchDeliveryViolation::DeliveredAfterRemoval {
                    registration: *registration,
                    client: self.client_of(registration),
                    removed_at,
                    delivered_at: late.at,
                });
            }
        }
    }
}

/// Every one-shot watch delivered twice, every watch that delivered after its removal, every
/// one-shot watch not delivered although a change it watches was acknowledged at least
/// `settle` before the history ends (or the watch was removed), its session never ended and
/// its client never crashed, and every persistent watch that missed a change so acknowledged
/// before its client first disconnected.
pub fn check(history: &History, settle: Duration) -> Checked<WatchDeliveryViolation> {
    check_views(&HistoryViews::new(history), settle)
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(
    history: &HistoryViews<'_>,
    settle: Duration,
) -> Checked<WatchDeliveryViolation> {
    let ops: &[ZkOp<'_>] = history.zk_operations();
    let ends = session_ends(history);
    let end = history
        .records()
        .last()
        .map_or(SimTime::ZERO, |record| record.at);
    let watches = Watches::read(history);
    let judged = watches.registrations.len() as u64;
    let mut violations = Vec::new();
    watches.over_delivered(&mut violations);
    for (op_id, registration) in &watches.registrations {
        if ends.contains_key(&registration.session)
            || watches
                .crashed
                .get(&registration.client)
                .is_some_and(|at| *at > registration.at)
        {
            continue;
        }
        let first_disconnection = watches
            .disconnections
            .get(&registration.session)
            .and_then(|times| times.iter().find(|at| **at > registration.at).copied());
        // Judged up to the watch's removal (the client stops delivering then).
        let until = watches.removals.get(op_id).copied().unwrap_or(end);
        let none = Vec::new();
        let delivered = watches.deliveries.get(op_id).unwrap_or(&none);
        if registration.kind.is_persistent() {
            let window = persistent::Window {
                registration: *op_id,
                client: registration.client,
                path: &registration.path,
                kind: registration.kind,
                from: registration.at,
                until: first_disconnection.map_or(until, |at| at.min(until)),
            };
            violations.extend(persistent::missed_change(&ops, &window, delivered, settle));
            continue;
        }
        if !delivered.is_empty()
            || (registration.kind == WatchKind::Exists && first_disconnection.is_some())
        {
            continue;
        }
        let change = ops.iter().find(|op| {
            op.invoked_at > registration.at
                && op.ok_at().is_some_and(|at| at + settle <= until)
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
mod tests;
