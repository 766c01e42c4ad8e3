#![cfg(madsim)]
//! User code's writes through the drop-in name themselves in the log, as the model client's
//! do: each is recorded as sent under its own identity, the replicas record that identity
//! when they apply it, so `etcd.linearizable` can resolve a write whose answer was lost.

mod kv_support;

use etcd_client::{PutOptions, Txn, TxnOp};
use sim::{
    fault::{CutOffLeader, FaultSource},
    history::{
        Event, History, OpId, OpResult, Operation, ProtocolEvent, RequestRef,
        kv::{KvEvent, KvOperation},
    },
    report::for_each_seed,
    this_test,
};
use std::collections::{BTreeMap, BTreeSet};

/// How the writes of unknown outcome came out.
#[derive(Debug, Default)]
struct Unknown {
    applied: usize,
    never_applied: usize,
}

/// Asserts that every write of `history` was sent once under an identity of its own, that
/// every acknowledged one was applied under it, and that every applied identity was sent;
/// counts how the writes whose answer was lost came out.
fn writes_name_themselves(history: &History) -> Unknown {
    let mut sent: BTreeMap<OpId, Vec<RequestRef>> = BTreeMap::new();
    let mut applied: BTreeMap<RequestRef, BTreeSet<(u64, u64)>> = BTreeMap::new();
    for record in history.records() {
        match &record.event {
            Event::Kv(KvEvent::RequestSent { op_id, request, .. }) => {
                sent.entry(*op_id).or_default().push(*request)
            }
            Event::Protocol(ProtocolEvent::Applied {
                index,
                term,
                request: Some(request),
                ..
            }) => {
                applied.entry(*request).or_default().insert((*term, *index));
            }
            _ => {}
        }
    }
    let mut unknown = Unknown::default();
    let mut identities = BTreeSet::new();
    for operation in history.operations() {
        let write = match operation.operation {
            Operation::Kv(KvOperation::Get { .. } | KvOperation::GetWithOptions { .. }) => false,
            Operation::Kv(_) => true,
            _ => continue,
        };
        let request = match sent.get(&operation.op_id).map(Vec::as_slice) {
            None if !write => continue,
            // A write that never left (no server reachable before its deadline) failed.
            None if matches!(operation.completion, Some((_, OpResult::Fail { .. }))) => continue,
            Some([request]) if write => *request,
            other => panic!("{:?} recorded as sent as {other:?}", operation.operation),
        };
        assert!(identities.insert(request), "{request:?} sent twice");
        let entries = applied.get(&request).map_or(0, BTreeSet::len);
        assert!(entries <= 1, "{request:?} applied as {entries} entries");
        match operation.completion {
            Some((_, OpResult::Ok { .. })) => {
                assert_eq!(entries, 1, "acknowledged {request:?} applied")
            }
            Some((_, OpResult::Unknown { .. })) if entries == 1 => unknown.applied += 1,
            Some((_, OpResult::Unknown { .. })) => unknown.never_applied += 1,
            _ => {}
        }
    }
    for request in applied.keys() {
        assert!(
            identities.contains(request),
            "{request:?} applied, never sent"
        );
    }
    unknown
}

#[test]
fn user_code_writes_are_linked_to_the_entries_the_replicas_apply() {
    let mut unknown = Unknown::default();
    for_each_seed(
        [1, 2, 3],
        this_test!("user_code_writes_are_linked_to_the_entries_the_replicas_apply"),
        |seed| {
            let faults = FaultSource::CutOffLeader(CutOffLeader::default());
            let ran = kv_support::run(3, seed.value(), faults, |mut client, node| async move {
                let key = format!("k{}", node.index());
                for round in 0..20 {
                    let _ = client.put(key.as_str(), format!("{round}"), None).await;
                    let _ = client
                        .txn(Txn::new().and_then([TxnOp::put(
                            key.as_str(),
                            "txn",
                            Some(PutOptions::new()),
                        )]))
                        .await;
                    let _ = client.get(key.as_str(), None).await;
                    if round % 5 == 4 {
                        let _ = client.delete(key.as_str(), None).await;
                        let _ = client.lease_grant(10, None).await;
                    }
                    node.context()
                        .sim()
                        .sleep(std::time::Duration::from_millis(50))
                        .await;
                }
            });
            assert!(ran.outcome.is_clean(), "seed {seed}: {:?}", ran.outcome);
            assert!(ran.outcome.fault_counts.partitions > 0, "seed {seed}");
            let history = ran
                .outcome
                .history
                .as_ref()
                .expect("the run kept its history");
            let of_seed = writes_name_themselves(history);
            unknown.applied += of_seed.applied;
            unknown.never_applied += of_seed.never_applied;
        },
    );
    println!("writes of unknown outcome: {unknown:?}");
    assert!(
        unknown.applied + unknown.never_applied > 0,
        "some answers were lost: {unknown:?}"
    );
}
