//! Watch events reach a client in zxid order, and before the client can read the data
//! that changed.
//!
//! "Watches are ordered with respect to other events, other watches, and asynchronous
//! replies. ... A client will see a watch event for a znode it is watching before seeing
//! the new data that corresponds to that znode" (ZooKeeper Programmer's Guide, *ZooKeeper
//! Watches*, guarantees). Checked per client session:
//! 1. delivered events carry non-decreasing zxids;
//! 2. once a read by the same session shows the watched node changed after the watch was
//!    set (newer `mzxid`, `pzxid` for a child watch, or existence for an exists watch),
//!    the watch must already have been delivered. For a persistent watch (`addWatch`), which
//!    fires for every change: each delivered event must come before any read of the same
//!    session that already shows its change (the node's `mzxid`, or `pzxid` for
//!    `NodeChildrenChanged`, at or past the event's zxid).
//!
//! **Reads:** client operations and the client's watch events (`ZkEvent::WatchRegistered`,
//! `WatchDelivered`), recorded by the client library at the client node in the order the client
//! received them. No server event is trusted.

use crate::Checked;
use crate::Violation;
use crate::history::views::HistoryViews;
use sim::{
    NodeId,
    history::{
        Event, History, OpId,
        zk::{Stat, WatchEventType, WatchKind, ZkEvent, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// A watch event out of order, or late.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchOrderViolation {
    /// A later event carried an older zxid.
    OutOfOrder {
        /// The client and session.
        client: NodeId,
        /// Session.
        session: u64,
        /// The earlier event's registration, zxid and time.
        earlier: (OpId, u64, SimTime),
        /// The later event's.
        later: (OpId, u64, SimTime),
    },
    /// The client read the new data before the watch told it about the change.
    NewDataFirst {
        /// The client.
        client: NodeId,
        /// The watch's registration.
        registration: OpId,
        /// The path.
        path: String,
        /// The read that showed the change, and when it completed.
        read: (OpId, SimTime),
        /// When the watch was delivered, if ever.
        delivered_at: Option<SimTime>,
    },
}

impl fmt::Display for WatchOrderViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchOrderViolation::OutOfOrder {
                client,
                session,
                earlier,
                later,
            } => write!(
                f,
                "{client} (session {session:#x}) got the watch of {} for zxid {:#x} at {}, then the watch of {} for older zxid {:#x} at {}",
                earlier.0, earlier.1, earlier.2, later.0, later.1, later.2
            ),
            WatchOrderViolation::NewDataFirst {
                client,
                registration,
                path,
                read,
                delivered_at,
            } => write!(
                f,
                "{client} read changed {path} ({} at {}) before its watch {registration} fired (delivered: {delivered_at:?})",
                read.0, read.1
            ),
        }
    }
}

impl Violation for WatchOrderViolation {
    fn property(&self) -> &'static str {
        "watch order"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Programmer's Guide, ZooKeeper Watches (ordering guarantees)"
    }

    fn at(&self) -> Option<SimTime> {
        // The later event, or the read that showed the change first.
        match self {
            WatchOrderViolation::OutOfOrder { later, .. } => Some(later.2),
            WatchOrderViolation::NewDataFirst { read, .. } => Some(read.1),
        }
    }
}

/// What a read showed of a node: its stat, or that it is missing.
fn observed<'a>(
    operation: &'a ZkOperation,
    response: &ZkResponse,
) -> Option<(&'a str, Option<Stat>)> {
    match (operation, response) {
        (ZkOperation::GetData { path }, ZkResponse::Data { stat, .. })
        | (ZkOperation::GetChildren { path }, ZkResponse::Children { stat, .. }) => {
            Some((path, Some(*stat)))
        }
        (ZkOperation::Exists { path }, ZkResponse::Exists { stat }) => Some((path, *stat)),
        _ => None,
    }
}

/// Each session's operations, by `((client, process), session)`: indices into the
/// operations, in invocation order.
type SessionOps = BTreeMap<((NodeId, u32), Option<u64>), Vec<usize>>;

/// One event a persistent watch delivered.
struct PersistentDelivery {
    client: NodeId,
    /// The session's key among the operations: `((client, process), session)`.
    session: ((NodeId, u32), Option<u64>),
    registration: OpId,
    event: WatchEventType,
    path: String,
    zxid: u64,
    at: SimTime,
}

/// Whether a read's stat of the delivery's node already shows the delivery's change.
fn shows(delivery: &PersistentDelivery, stat: Option<Stat>) -> bool {
    match (delivery.event, stat) {
        (WatchEventType::NodeCreated | WatchEventType::NodeDataChanged, Some(stat)) => {
            stat.mzxid >= delivery.zxid
        }
        (WatchEventType::NodeChildrenChanged, Some(stat)) => stat.pzxid >= delivery.zxid,
        // A missing node may be missing since before it was created: it shows nothing.
        _ => false,
    }
}

/// Persistent watch events that reached the client after a read of its session had
/// already shown their change.
fn late_persistent_events(
    ops: &[crate::history::zk::ZkOp<'_>],
    by_session: &SessionOps,
    registered_at: &BTreeMap<OpId, SimTime>,
    deliveries: &[PersistentDelivery],
    violations: &mut Vec<WatchOrderViolation>,
) {
    for delivery in deliveries {
        let (Some(&from), Some(same_session)) = (
            registered_at.get(&delivery.registration),
            by_session.get(&delivery.session),
        ) else {
            continue;
        };
        let read = same_session.iter().map(|&index| &ops[index]).find(|op| {
            op.invoked_at > from
                && op.ended_at() < delivery.at
                && op
                    .ok()
                    .and_then(|response| observed(op.operation, response))
                    .is_some_and(|(path, stat)| path == delivery.path && shows(delivery, stat))
        });
        if let Some(read) = read {
            violations.push(WatchOrderViolation::NewDataFirst {
                client: delivery.client,
                registration: delivery.registration,
                path: delivery.path.clone(),
                read: (read.op_id, read.ended_at()),
                delivered_at: Some(delivery.at),
            });
        }
    }
}

/// Every out-of-order or late watch event.
pub fn check(history: &History) -> Checked<WatchOrderViolation> {
    check_views(&HistoryViews::new(history))
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> Checked<WatchOrderViolation> {
    let ops = history.zk_operations();
    let by_id: BTreeMap<OpId, usize> = ops
        .iter()
        .enumerate()
        .map(|(index, op)| (op.op_id, index))
        .collect();
    // Each process's operations in one session, in invocation order (as `ops` lists them):
    // a registration looks only at its own session's reads from its registration on.
    let mut by_session: SessionOps = BTreeMap::new();
    for (index, op) in ops.iter().enumerate() {
        by_session
            .entry((op.process_key(), op.session))
            .or_default()
            .push(index);
    }
    let mut violations = Vec::new();
    let mut last: BTreeMap<(NodeId, u32, u64), (OpId, u64, SimTime)> = BTreeMap::new();
    let mut registrations = Vec::new();
    let mut delivered: BTreeMap<OpId, SimTime> = BTreeMap::new();
    let mut registered_at: BTreeMap<OpId, SimTime> = BTreeMap::new();
    let mut persistent_deliveries = Vec::new();
    for record in history.records() {
        let Some(client) = record.node else { continue };
        match &record.event {
            Event::Zk(ZkEvent::WatchDelivered {
                process,
                session,
                op_id,
                zxid,
                kind,
                event,
                path,
            }) => {
                delivered.entry(*op_id).or_insert(record.at);
                if kind.is_persistent() {
                    persistent_deliveries.push(PersistentDelivery {
                        client,
                        session: ((client, *process), Some(*session)),
                        registration: *op_id,
                        event: *event,
                        path: path.clone(),
                        zxid: *zxid,
                        at: record.at,
                    });
                }
                let key = (client, *process, *session);
                if let Some(&earlier) = last.get(&key)
                    && *zxid < earlier.1
                {
                    violations.push(WatchOrderViolation::OutOfOrder {
                        client,
                        session: *session,
                        earlier,
                        later: (*op_id, *zxid, record.at),
                    });
                }
                last.insert(key, (*op_id, *zxid, record.at));
            }
            Event::Zk(ZkEvent::WatchRegistered {
                op_id, path, kind, ..
            }) => {
                registered_at.insert(*op_id, record.at);
                registrations.push((client, *op_id, path.clone(), *kind, record.at));
            }
            _ => {}
        }
    }
    // Each delivery is judged against the session's earlier ones, each registration
    // against the session's later reads.
    let judged = (delivered.len() + registrations.len()) as u64;
    for (client, registration, path, kind, registered_at) in registrations {
        let Some(&index) = by_id.get(&registration) else {
            continue;
        };
        let reader = &ops[index];
        let Some(baseline) = reader
            .ok()
            .and_then(|response| observed(reader.operation, response))
            .map(|(_, stat)| stat)
        else {
            continue;
        };
        let delivered_at = delivered.get(&registration).copied();
        let changed = |stat: Option<Stat>| match (kind, baseline, stat) {
            (WatchKind::Exists, None, Some(_)) => true,
            (WatchKind::Data, Some(before), Some(now)) => now.mzxid > before.mzxid,
            (WatchKind::Data, Some(_), None) => true,
            (WatchKind::Children, Some(before), Some(now)) => now.pzxid > before.pzxid,
            (WatchKind::Children, Some(_), None) => true,
            _ => false,
        };
        let same_session = &by_session[&(reader.process_key(), reader.session)];
        let from = same_session.partition_point(|&index| ops[index].invoked_at < registered_at);
        let late = same_session[from..]
            .iter()
            .map(|&index| &ops[index])
            .find(|op| {
                op.op_id != registration
                    && op.ok().and_then(|r| observed(op.operation, r)).is_some_and(
                        |(read_path, stat)| {
                            read_path == path
                                && changed(stat)
                                && delivered_at.is_none_or(|at| at > op.ended_at())
                        },
                    )
            });
        if let Some(read) = late {
            violations.push(WatchOrderViolation::NewDataFirst {
                client,
                registration,
                path,
                read: (read.op_id, read.ended_at()),
                delivered_at,
            });
        }
    }
    late_persistent_events(
        &ops,
        &by_session,
        &registered_at,
        &persistent_deliveries,
        &mut violations,
    );
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::*;

    #[test]
    fn in_order_passes_and_reordered_or_late_events_fail() {
        let registration = vec![
            established(0, C1, 7),
            invoke(1, C1, 1, get_data("/w")),
            ok(
                2,
                C1,
                1,
                ZkResponse::Data {
                    data: "a".into(),
                    stat: stat(3, 0, 0),
                },
            ),
            registered(2, C1, 1, "/w", WatchKind::Data),
        ];
        let newer_read = [
            invoke(10, C1, 2, get_data("/w")),
            ok(
                12,
                C1,
                2,
                ZkResponse::Data {
                    data: "b".into(),
                    stat: stat(8, 1, 0),
                },
            ),
        ];
        let mut good = registration.clone();
        good.push(delivered(9, C1, 1, "/w", 8));
        good.extend(newer_read.clone());
        assert!(check(&History::from_records(good)).is_empty());
        let mut late = registration.clone();
        late.extend(newer_read);
        late.push(delivered(13, C1, 1, "/w", 8));
        assert!(matches!(
            check(&History::from_records(late))[..],
            [WatchOrderViolation::NewDataFirst { .. }]
        ));
        let reordered = vec![delivered(5, C1, 1, "/a", 9), delivered(6, C1, 2, "/b", 4)];
        assert!(matches!(
            check(&History::from_records(reordered))[..],
            [WatchOrderViolation::OutOfOrder { .. }]
        ));
    }

    #[test]
    fn a_persistent_event_after_a_read_that_showed_its_change_fails() {
        use sim::history::zk::WatchEventType;
        let session = vec![
            established(0, C1, 7),
            invoke(
                1,
                C1,
                1,
                ZkOperation::AddWatch {
                    path: "/w".into(),
                    mode: sim::history::zk::AddWatchMode::Persistent,
                },
            ),
            ok(2, C1, 1, ZkResponse::WatchAdded),
            registered(2, C1, 1, "/w", WatchKind::Persistent),
        ];
        let read_showing_zxid_8 = [
            invoke(10, C1, 2, get_data("/w")),
            ok(
                12,
                C1,
                2,
                ZkResponse::Data {
                    data: "b".into(),
                    stat: stat(8, 1, 0),
                },
            ),
        ];
        let changed = (WatchKind::Persistent, WatchEventType::NodeDataChanged, "/w");
        let mut good = session.clone();
        good.push(delivered_event(5, C1, 1, changed, 6));
        good.push(delivered_event(9, C1, 1, changed, 8));
        good.extend(read_showing_zxid_8.clone());
        // The event of a later change may come after the read.
        good.push(delivered_event(13, C1, 1, changed, 9));
        assert!(check(&History::from_records(good)).is_empty());
        let mut late = session;
        late.push(delivered_event(5, C1, 1, changed, 6));
        late.extend(read_showing_zxid_8);
        late.push(delivered_event(13, C1, 1, changed, 8));
        assert!(matches!(
            check(&History::from_records(late))[..],
            [WatchOrderViolation::NewDataFirst {
                registration: OpId(1),
                delivered_at: Some(_),
                ..
            }]
        ));
    }
}
