//! Sessions and znodes under faults, through the one driver: a holder cut off (partitioned
//! or paused) past its session timeout is expired and its ephemeral node vanishes; holders
//! that fail over within their timeout keep sessions and ephemerals, across leader changes;
//! a crashed leader's successor expires no live session; sequential names stay unique and
//! increasing, and protected creates make no duplicates; a protected create whose reply is
//! lost finds its node. Each runs a catalogue scenario over seeds: every run is clean (the
//! driver also requires progress), every fault kind of its plan fires, and the interleaving
//! the test is about is read back from the history.

mod common;

use checks::history::{
    faults::{FiredFault, fired_faults},
    leaders::leaderships,
    sessions::{Attach, Attachment, attachments, committed_expiries, told_expired},
    zk::{ZkOp, preceding_syncs, zk_operations},
};
use common::{catalogued, sweep_clean};
use scenarios::workload::{SEQUENCE_PARENT, holder_path};
use sim::{
    NodeId,
    fault::Fault,
    history::{
        History, OpResult,
        zk::{CreateMode, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::collections::BTreeMap;

const C1: NodeId = NodeId::client(0);
const C2: NodeId = NodeId::client(1);

/// The first session `client` established: (when, session, negotiated timeout).
fn first_session(history: &History, client: NodeId) -> (SimTime, u64, u64) {
    attachments(history)
        .into_iter()
        .find_map(|attachment| match attachment.attach {
            Attach::Established { timeout_ms } if attachment.client == client => {
                Some((attachment.at, attachment.session, timeout_ms))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{client} never established a session"))
}

/// When `client`'s create of its ephemeral holder node was acknowledged.
fn holder_created(ops: &[ZkOp<'_>], client: NodeId) -> Option<SimTime> {
    let own = holder_path(client);
    ops.iter()
        .filter(|op| op.client == client)
        .filter(|op| matches!(op.operation, ZkOperation::Create { path, mode: CreateMode::Ephemeral, .. } if *path == own))
        .find_map(ZkOp::ok_at)
}

/// What `observer` saw of `holder`'s node, each time after a sync: (when that sync was
/// sent, the node's owner if it existed). A synced read shows at least what was committed
/// when its sync was sent; no more is promised.
fn sightings(ops: &[ZkOp<'_>], observer: NodeId, holder: NodeId) -> Vec<(SimTime, Option<u64>)> {
    let path = holder_path(holder);
    ops.iter()
        .zip(preceding_syncs(ops))
        .filter(|(op, _)| op.client == observer)
        .filter(|(op, _)| matches!(op.operation, ZkOperation::Exists { path: p } if *p == path))
        .filter_map(|(op, synced)| match (op.ok(), synced) {
            (Some(ZkResponse::Exists { stat }), Some(synced)) => {
                Some((synced, stat.map(|stat| stat.ephemeral_owner)))
            }
            _ => None,
        })
        .collect()
}

/// The fault that cut c1 off (an isolation or a pause) and the one that ended it.
fn cut_off_span<'a>(faults: &'a [FiredFault<'a>]) -> (&'a FiredFault<'a>, &'a FiredFault<'a>) {
    let start = faults
        .iter()
        .find(|fault| fault.target == Some(C1))
        .expect("c1 was cut off");
    let end = faults
        .iter()
        .find(|fault| {
            fault.at > start.at && matches!(fault.fault, Fault::Heal | Fault::Resume { .. })
        })
        .expect("c1's cut-off ended");
    (start, end)
}

/// Holder c1 cut off past its session timeout: its session is the one that expires, while
/// it is cut off; c2 saw c1's node owned by that session before, and gone after; c1 is told.
fn holder_cut_off_past_its_timeout_is_expired(name: &str, test: &str) {
    sweep_clean(catalogued(name), test, 50, |history| {
        let (_, session, timeout_ms) = first_session(history, C1);
        let faults = fired_faults(history);
        let (cut, back) = cut_off_span(&faults);
        let ops = zk_operations(history);
        // The interleaving: the node existed before the cut, which outlasted the timeout.
        let created = holder_created(&ops, C1).expect("c1's node was created");
        assert!(
            created < cut.at,
            "c1's node came after the cut at {}",
            cut.at
        );
        let cut_ms = back.at.saturating_duration_since(cut.at).as_millis();
        assert!(
            cut_ms > u128::from(timeout_ms),
            "cut off {cut_ms} ms, timeout {timeout_ms} ms"
        );
        // Exactly c1's session expired, while it was cut off, and c1 was told.
        let expired = committed_expiries(history);
        assert!(
            matches!(expired.as_slice(), [(at, expired)] if *expired == session && cut.at < *at && *at < back.at),
            "expected only c1's session {session:#x} to expire while cut off: {expired:?}"
        );
        assert!(
            told_expired(history)
                .iter()
                .any(|&(_, client, s)| client == C1 && s == session),
            "c1 was never told its session expired"
        );
        // c2 saw the node as c1's before the cut, and never after the expiry committed.
        let seen = sightings(&ops, C2, C1);
        assert!(
            seen.iter()
                .any(|&(at, owner)| at < cut.at && owner == Some(session)),
            "{seen:?}"
        );
        let expired_at = expired[0].0;
        let after: Vec<_> = seen.iter().filter(|(at, _)| *at > expired_at).collect();
        assert!(!after.is_empty(), "c2 never looked after the expiry");
        assert!(
            after.iter().all(|(_, owner)| owner.is_none()),
            "c1's node outlived its session: {after:?}"
        );
    });
}

#[test]
fn partitioned_client_past_its_timeout_is_expired_and_its_ephemerals_vanish() {
    holder_cut_off_past_its_timeout_is_expired(
        "zk_expiry_partitioned_holder",
        "partitioned_client_past_its_timeout_is_expired_and_its_ephemerals_vanish",
    );
}

#[test]
fn paused_client_past_its_timeout_is_expired_and_its_ephemerals_vanish() {
    holder_cut_off_past_its_timeout_is_expired(
        "zk_expiry_paused_holder",
        "paused_client_past_its_timeout_is_expired_and_its_ephemerals_vanish",
    );
}

/// Where `client` was attached at `at`: the last attachment before it.
fn attached_at(attachments: &[Attachment], client: NodeId, at: SimTime) -> Option<Attachment> {
    attachments
        .iter()
        .rev()
        .find(|attachment| attachment.client == client && attachment.at <= at)
        .copied()
}

/// Each server is cut off in turn, so c1's server is, at least once: c1 resumes the same
/// session elsewhere before that server is back, writes its node in it afterwards, and c2
/// sees the node still c1's. No session expires. Whichever server led first is cut off
/// too, so a new leader takes over on every seed; c1's own server was that leader on 32 of
/// the 50 seeds.
#[test]
fn client_that_reconnects_within_its_timeout_keeps_session_and_ephemerals() {
    let mut seeds_away_from_the_leader = 0;
    let summary = sweep_clean(
        catalogued("zk_failover_keeps_session"),
        "client_that_reconnects_within_its_timeout_keeps_session_and_ephemerals",
        50,
        |history| {
            assert!(committed_expiries(history).is_empty(), "a session expired");
            assert!(
                told_expired(history).is_empty(),
                "a client was told its session expired"
            );
            let (_, session, _) = first_session(history, C1);
            let attachments = attachments(history);
            let ops = zk_operations(history);
            let leaders = leaderships(history);
            let faults = fired_faults(history);
            let mut failovers = 0;
            let mut away_from_a_leader = false;
            let mut leader_changes = 0;
            for (index, isolation) in faults.iter().enumerate() {
                let Fault::Partition { .. } = isolation.fault else {
                    continue;
                };
                let server = isolation.target.expect("an isolation of a named server");
                let heal = faults[index..]
                    .iter()
                    .find(|fault| *fault.fault == Fault::Heal)
                    .expect("every isolation heals")
                    .at;
                let was_leading = leaders
                    .iter()
                    .any(|l| l.node == server && l.covers(isolation.at));
                let replaced = leaders
                    .iter()
                    .any(|l| l.node != server && isolation.at < l.from && l.from < heal);
                leader_changes += usize::from(was_leading && replaced);
                if attached_at(&attachments, C1, isolation.at).map(|a| a.server) != Some(server) {
                    continue;
                }
                let resumed = attachments
                    .iter()
                    .find(|a| a.client == C1 && a.at > isolation.at)
                    .unwrap_or_else(|| panic!("c1 never reattached after {server} went away"));
                assert_eq!(
                    (resumed.attach, resumed.session),
                    (Attach::Resumed, session)
                );
                assert!(resumed.server != server && resumed.at < heal, "{resumed:?}");
                let own = holder_path(C1);
                assert!(
                    ops.iter().any(|op| op.client == C1
                        && op.invoked_at > resumed.at
                        && op.session == Some(session)
                        && matches!(op.operation, ZkOperation::SetData { path, .. } if *path == own)
                        && op.ok().is_some()),
                    "c1 never wrote its node after failing over"
                );
                assert!(
                    sightings(&ops, C2, C1)
                        .iter()
                        .any(|&(at, owner)| at > resumed.at && owner == Some(session)),
                    "c2 never saw c1's node after c1 failed over"
                );
                failovers += 1;
                away_from_a_leader |= was_leading;
            }
            assert!(failovers > 0, "c1's server was never cut off");
            seeds_away_from_the_leader += usize::from(away_from_a_leader);
            assert!(
                leader_changes > 0,
                "the leader was never cut off and replaced"
            );
        },
    );
    println!(
        "c1 failed over away from a cut-off leader on {seeds_away_from_the_leader} of {} seeds",
        summary.seeds.len()
    );
    if summary.sweeping {
        assert!(
            seeds_away_from_the_leader > 0,
            "c1 never failed over away from a cut-off leader"
        );
    }
}

/// The leader crashes with three holders' nodes in place; a new leader is elected while it
/// is down; every holder then writes its node in its first session and sees it its own.
#[test]
fn leader_change_does_not_expire_live_sessions() {
    sweep_clean(
        catalogued("zk_leader_crash_keeps_sessions"),
        "leader_change_does_not_expire_live_sessions",
        50,
        |history| {
            assert!(committed_expiries(history).is_empty(), "a session expired");
            assert!(
                told_expired(history).is_empty(),
                "a client was told its session expired"
            );
            let faults = fired_faults(history);
            let crash = faults
                .iter()
                .find(|fault| matches!(fault.fault, Fault::Crash { .. }))
                .expect("the leader crashed");
            let leader = crash.target.expect("the crash resolved");
            let successor = leaderships(history)
                .into_iter()
                .find(|l| l.node != leader && l.from > crash.at)
                .expect("a new leader took over");
            let ops = zk_operations(history);
            for holder in (0..3).map(NodeId::client) {
                let (_, session, _) = first_session(history, holder);
                let created = holder_created(&ops, holder).expect("every holder made its node");
                assert!(created < crash.at, "{holder}'s node came after the crash");
                assert!(
                    sightings(&ops, holder, holder)
                        .iter()
                        .any(|&(at, owner)| at > successor.from && owner == Some(session)),
                    "{holder} never saw its node its own under the new leader"
                );
                assert!(
                    ops.iter().any(|op| op.client == holder
                        && op.session == Some(session)
                        && op.invoked_at > successor.from
                        && matches!(op.operation, ZkOperation::SetData { .. })
                        && op.ok().is_some()),
                    "{holder} never wrote in its first session under the new leader"
                );
            }
        },
    );
}

/// The GUID marker of a protected name (`_c_<guid>-…`), if it is one.
fn protected_marker(name: &str) -> Option<&str> {
    name.strip_prefix("_c_")?.split('-').next()
}

/// Sequential creates run across the leader's isolation and the next leader's crash: some
/// are in flight when each fault fires (asserted per seed), names stay unique and
/// increasing (the sequential-names check, in every clean run), and no listing of the
/// parent shows one protected create twice. Most creates are acknowledged.
#[test]
fn sequential_names_stay_unique_and_increasing_under_faults() {
    let mut unknown_outcomes = 0;
    let summary = sweep_clean(
        catalogued("zk_sequential_names_under_faults"),
        "sequential_names_stay_unique_and_increasing_under_faults",
        50,
        |history| {
            let ops = zk_operations(history);
            let creates: Vec<&ZkOp> = ops
                .iter()
                .filter(|op| {
                    matches!(
                        op.operation,
                        ZkOperation::Create {
                            mode: CreateMode::PersistentSequential
                                | CreateMode::EphemeralSequential,
                            ..
                        }
                    )
                })
                .collect();
            for fault in fired_faults(history).iter().filter(|fault| {
                matches!(fault.fault, Fault::Partition { .. } | Fault::Crash { .. })
            }) {
                assert!(
                    creates
                        .iter()
                        .any(|op| op.invoked_at <= fault.at && op.ended_at() > fault.at),
                    "no create was in flight when {} fired",
                    fault.fault
                );
            }
            let acknowledged = creates.iter().filter(|op| op.ok().is_some()).count();
            assert!(
                acknowledged >= 30,
                "only {acknowledged} creates acknowledged"
            );
            unknown_outcomes += creates
                .iter()
                .filter(|op| matches!(op.completion, Some((_, OpResult::Unknown { .. }))))
                .count();
            for op in &ops {
                let (
                    ZkOperation::GetChildren { path },
                    Some(ZkResponse::Children { children, .. }),
                ) = (op.operation, op.ok())
                else {
                    continue;
                };
                if path != SEQUENCE_PARENT {
                    continue;
                }
                let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
                for child in children {
                    if let Some(marker) = protected_marker(child)
                        && let Some(other) = seen.insert(marker, child)
                    {
                        panic!("one protected create made two nodes: {other} and {child}");
                    }
                }
            }
        },
    );
    println!(
        "sequential creates whose reply was lost: {unknown_outcomes} over {} seeds",
        summary.seeds.len()
    );
}

/// The protected create is sent to a follower and the client is cut off 15 ms later, before
/// the reply: its outcome is unknown, the node exists, and the client, back, finds it
/// instead of creating another (one create sent, one child). With links of exactly 5 ms,
/// this happens on every seed.
#[test]
fn protected_create_finds_its_node_after_the_reply_is_lost() {
    let mut recovered = 0;
    let summary = sweep_clean(
        catalogued("zk_protected_create_lost_reply"),
        "protected_create_finds_its_node_after_the_reply_is_lost",
        50,
        |history| {
            let cut = fired_faults(history)
                .into_iter()
                .find(|fault| fault.target == Some(C1))
                .expect("c1 was cut off");
            let ops = zk_operations(history);
            let protected: Vec<&ZkOp> = ops
                .iter()
                .filter(|op| matches!(op.operation, ZkOperation::Create { path, .. } if path.starts_with("/locks/_c_")))
                .collect();
            let first = protected.first().expect("the protected create was sent");
            assert!(
                first.invoked_at < cut.at,
                "the create was sent after the cut"
            );
            let final_listing = ops
                .iter()
                .rev()
                .find_map(|op| match (op.operation, op.ok()) {
                    (
                        ZkOperation::GetChildren { path },
                        Some(ZkResponse::Children { children, .. }),
                    ) if path == "/locks" && op.client == C1 && op.process == 0 => {
                        Some(children.clone())
                    }
                    _ => None,
                })
                .expect("c1 listed /locks at the end");
            let reply_lost = matches!(first.completion, Some((_, OpResult::Unknown { .. })));
            if reply_lost && protected.len() == 1 && final_listing.len() == 1 {
                recovered += 1;
            }
            assert_eq!(
                final_listing.len(),
                1,
                "exactly one lock node: {final_listing:?}"
            );
        },
    );
    println!(
        "replies lost and nodes recovered: {recovered} of {} seeds",
        summary.seeds.len()
    );
    assert_eq!(
        recovered,
        summary.seeds.len(),
        "the create's reply was not lost on every seed"
    );
}
