//! Persistent watches (`addWatch`, ZooKeeper 3.6+): not one-shot. A PERSISTENT watch on a
//! path fires for the node's creation, data change and deletion and for each child created
//! or deleted; a PERSISTENT_RECURSIVE one for the creation, data change and deletion of the
//! node and of every node below it, never with `NodeChildrenChanged` (ZooKeeper
//! Programmer's Guide, *Persistent, Recursive Watches*). It stays set after it fires, so
//! every change it watches must be delivered, each as its own event.
//!
//! The history's changes carry no zxid for creates and deletes, so the judgement counts: for
//! each (event, node) a persistent watch should have seen, it must have delivered at least as
//! many events as there were acknowledged changes. It never asks for more than the changes
//! that happened, so a correct delivery never fails it.

use super::{Delivery, WatchDeliveryViolation};
use crate::history::zk::{ZkOp, parent_of};
use sim::{
    NodeId,
    history::{
        OpId,
        zk::{WatchEventType, WatchKind, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::{collections::BTreeMap, time::Duration};

/// A persistent watch to judge: what it watches, and the window in which every change it
/// watches must reach it.
pub(super) struct Window<'a> {
    pub registration: OpId,
    pub client: NodeId,
    pub path: &'a str,
    pub kind: WatchKind,
    /// Changes invoked after this (the watch was set) are judged...
    pub from: SimTime,
    /// ...if they were acknowledged, and then given `settle` to arrive, by this: the
    /// history's end, the watch's removal or its client's first disconnection (events sent
    /// while the client was away are not caught up, ZOOKEEPER-4698).
    pub until: SimTime,
}

/// Whether `node` is `watched` or below it.
fn in_subtree(node: &str, watched: &str) -> bool {
    node == watched
        || watched == "/"
        || node
            .strip_prefix(watched)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The events a successful `operation` sends a persistent watch of `kind` on `watched`.
fn events(
    kind: WatchKind,
    watched: &str,
    operation: &ZkOperation,
    response: &ZkResponse,
    out: &mut Vec<(WatchEventType, String)>,
) {
    let recursive = kind == WatchKind::PersistentRecursive;
    let node_event = |event: WatchEventType, node: &str, out: &mut Vec<_>| {
        let seen = match recursive {
            true => in_subtree(node, watched),
            false => node == watched,
        };
        if seen {
            out.push((event, node.to_string()));
        }
    };
    // A child created or deleted: NodeChildrenChanged on its parent, for a persistent
    // (not a recursive) watch there.
    let child_event = |node: &str, out: &mut Vec<_>| {
        if !recursive && node != watched && parent_of(node) == watched {
            out.push((WatchEventType::NodeChildrenChanged, watched.to_string()));
        }
    };
    match (operation, response) {
        (ZkOperation::Multi { ops }, ZkResponse::Multi { results }) => {
            for (op, result) in ops.iter().zip(results) {
                events(kind, watched, op, result, out);
            }
        }
        (ZkOperation::SetData { path, .. }, _) => {
            node_event(WatchEventType::NodeDataChanged, path, out)
        }
        (ZkOperation::Delete { path, .. }, _) => {
            node_event(WatchEventType::NodeDeleted, path, out);
            child_event(path, out);
        }
        (ZkOperation::Create { .. }, response) => {
            if let Some(path) = response.created_path() {
                node_event(WatchEventType::NodeCreated, path, out);
                child_event(path, out);
            }
        }
        _ => {}
    }
}

/// The first change the watch should have delivered and did not, if any.
pub(super) fn missed_change(
    ops: &[ZkOp<'_>],
    window: &Window<'_>,
    deliveries: &[Delivery],
    settle: Duration,
) -> Option<WatchDeliveryViolation> {
    let mut delivered: BTreeMap<(WatchEventType, &str), usize> = BTreeMap::new();
    for delivery in deliveries {
        *delivered
            .entry((delivery.event, delivery.path.as_str()))
            .or_default() += 1;
    }
    let mut expected: BTreeMap<(WatchEventType, String), usize> = BTreeMap::new();
    let mut owed = Vec::new();
    for op in ops {
        let (Some(acknowledged_at), Some(response)) = (op.ok_at(), op.ok()) else {
            continue;
        };
        if op.invoked_at <= window.from || acknowledged_at + settle > window.until {
            continue;
        }
        owed.clear();
        events(window.kind, window.path, op.operation, response, &mut owed);
        for (event, node) in owed.drain(..) {
            let count = expected.entry((event, node.clone())).or_default();
            *count += 1;
            let got = delivered.get(&(event, node.as_str())).copied().unwrap_or(0);
            if got < *count {
                return Some(WatchDeliveryViolation::MissedChange {
                    registration: window.registration,
                    client: window.client,
                    path: window.path.to_string(),
                    kind: window.kind,
                    change: op.op_id,
                    event,
                    node,
                    change_acknowledged_at: acknowledged_at,
                });
            }
        }
    }
    None
}
