//! Coverage marks read off the history ([`sim::coverage`]): which of the situations a
//! scenario exists for a run reached. They are not checks (nothing is wrong when a run
//! misses one); a sweep fails when a mark its scenario declares was reached in no seed.
//! The marks that only model code can see (a ZAB TRUNC or SNAP sync, an indeterminate
//! write resolved) are counted there; these are the rest.
//!
//! **Reads:** the recipes' lock records and the fenced resource's verdicts
//! ([`crate::history::locks`]); the ZooKeeper clients' session and watch records; the etcd
//! clients' lease operations and the replicas' committed lease expiries
//! ([`crate::history::leases`]); the servers' `BecameLeader`, `SteppedDown` and
//! `SnapshotInstalled` records and the crash records; client operations' invocations and
//! completions. A model that failed to record a leadership or a snapshot would only make a
//! mark look unreached, never reached: the error is on the side of a failing sweep.

use crate::{
    IndexKind,
    history::{
        leases::leases,
        locks::{HoldEnd, holds, resource_writes},
    },
};
use sim::{
    NodeId,
    coverage::{Mark, Marks},
    history::{
        Event, History, Operation, ProtocolEvent, ResourceVerdict, kv::KvOperation,
        recipe::LockMode, register::RegisterOperation, zk::ZkEvent, zk::ZkOperation,
    },
};
use std::collections::{BTreeMap, BTreeSet};

/// The marks `history` reached, with how often. `index_kind` tells the stores apart: a
/// snapshot installed on a ZAB server is a SNAP sync (counted in the model), on a Raft
/// server an InstallSnapshot.
pub fn reached(history: &History, index_kind: IndexKind) -> Marks {
    let mut marks = Marks::new();
    let mut add = |mark: Mark, count: u64| {
        if count > 0 {
            *marks.entry(mark).or_default() += count;
        }
    };
    add(
        Mark::LockHandedOverWithoutRelease,
        locks_handed_over_without_release(history),
    );
    add(
        Mark::FencedWriteRejected,
        resource_writes(history)
            .iter()
            .filter(|write| write.verdict != ResourceVerdict::Accepted)
            .count() as u64,
    );
    if index_kind == IndexKind::LogIndex {
        add(Mark::RaftInstallSnapshot, snapshots_installed(history));
    }
    add(
        Mark::WatchFiredAcrossFailover,
        watches_fired_across_failover(history),
    );
    add(
        Mark::LeaseExpiredWhileHeld,
        leases_expired_while_held(history),
    );
    add(
        Mark::SessionExpiredWhileInUse,
        history
            .records()
            .iter()
            .filter(|record| matches!(record.event, Event::Zk(ZkEvent::SessionExpired { .. })))
            .count() as u64,
    );
    add(
        Mark::LeaderDeposedWithWritesInFlight,
        leaders_deposed_with_writes_in_flight(history),
    );
    marks
}

/// Holds that began while, or right after, another holder's hold of the same lock ended
/// without a release (lost with its session or lease, or its client crashed, or still
/// believed): the store gave the lock away without being asked. Readers of a read/write
/// lock share it: a reader joining a reader is no hand-over.
fn locks_handed_over_without_release(history: &History) -> u64 {
    let mut by_lock: BTreeMap<String, Vec<_>> = BTreeMap::new();
    for hold in holds(history) {
        by_lock.entry(hold.lock.clone()).or_default().push(hold);
    }
    let mut count = 0;
    for holds in by_lock.values_mut() {
        holds.sort_by_key(|hold| hold.from);
        for pair in holds.windows(2) {
            let (previous, next) = (&pair[0], &pair[1]);
            let unreleased = previous.until.is_none_or(|until| until > next.from)
                || previous.end != HoldEnd::Released;
            let shared = previous.mode == LockMode::Shared && next.mode == LockMode::Shared;
            if previous.holder != next.holder && unreleased && !shared {
                count += 1;
            }
        }
    }
    count
}

/// Snapshots sent to a follower, not the state a restarted server booted from (which a
/// Raft server records the same way).
fn snapshots_installed(history: &History) -> u64 {
    crate::protocol::resumes_held_state::snapshots_sent(history)
}

/// Watches delivered while their session was attached to another server than when they
/// were registered.
fn watches_fired_across_failover(history: &History) -> u64 {
    let mut server_of: BTreeMap<(Option<NodeId>, u64), NodeId> = BTreeMap::new();
    let mut registered_at: BTreeMap<sim::history::OpId, NodeId> = BTreeMap::new();
    let mut count = 0;
    for record in history.records() {
        let Event::Zk(event) = &record.event else {
            continue;
        };
        match event {
            ZkEvent::SessionEstablished {
                session, server, ..
            }
            | ZkEvent::SessionResumed {
                session, server, ..
            } => {
                server_of.insert((record.node, *session), *server);
            }
            ZkEvent::WatchRegistered { session, op_id, .. } => {
                if let Some(&server) = server_of.get(&(record.node, *session)) {
                    registered_at.insert(*op_id, server);
                }
            }
            ZkEvent::WatchDelivered { session, op_id, .. } => {
                let now = server_of.get(&(record.node, *session));
                if let (Some(then), Some(now)) = (registered_at.get(op_id), now)
                    && then != now
                {
                    count += 1;
                }
            }
            _ => {}
        }
    }
    count
}

/// Leases that expired though their owner had renewed them and had not revoked them.
fn leases_expired_while_held(history: &History) -> u64 {
    leases(history)
        .values()
        .filter(|facts| {
            !facts.expired_at.is_empty()
                && facts.revoked_at.is_empty()
                && facts.maybe_revoked_at.is_empty()
                && facts.renewals.len() > 1
        })
        .count() as u64
}

/// Leaderships that ended (a step-down, or the leader's crash) while some client write
/// was invoked and not yet answered.
fn leaders_deposed_with_writes_in_flight(history: &History) -> u64 {
    let mut in_flight: BTreeSet<sim::history::OpId> = BTreeSet::new();
    let mut leading: BTreeSet<NodeId> = BTreeSet::new();
    let mut count = 0;
    for record in history.records() {
        let deposed = match &record.event {
            Event::Invoke {
                op_id, operation, ..
            } => {
                if is_write(operation) {
                    in_flight.insert(*op_id);
                }
                None
            }
            Event::Complete { op_id, .. } => {
                in_flight.remove(op_id);
                None
            }
            Event::Protocol(ProtocolEvent::BecameLeader { .. }) => {
                leading.extend(record.node);
                None
            }
            Event::Protocol(ProtocolEvent::SteppedDown { .. }) => record.node,
            Event::Fault(fault) => fault.crashed(),
            _ => None,
        };
        if let Some(node) = deposed
            && leading.remove(&node)
            && !in_flight.is_empty()
        {
            count += 1;
        }
    }
    count
}

fn is_write(operation: &Operation) -> bool {
    match operation {
        Operation::Kv(operation) => matches!(
            operation,
            KvOperation::Put { .. } | KvOperation::Delete { .. } | KvOperation::Txn { .. }
        ),
        Operation::Zk(operation) => matches!(
            operation,
            ZkOperation::Create { .. }
                | ZkOperation::Delete { .. }
                | ZkOperation::SetData { .. }
                | ZkOperation::Multi { .. }
                | ZkOperation::SetAcl { .. }
        ),
        Operation::Register(operation) => !matches!(operation, RegisterOperation::Read { .. }),
        Operation::Other { .. } => false,
    }
}
