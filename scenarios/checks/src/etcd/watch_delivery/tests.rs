//! Known-good and known-bad watch histories: every fault the checker reports is shown to fire.

use super::*;
use crate::etcd::read_sees_prior_writes::tests::{complete, invoke, put};
use sim::history::{
    Record,
    kv::{KeyValue, KvResponse, WatchedChange},
};

fn watch_record(at_ms: u64, step: WatchStep) -> Record {
    Record {
        at: SimTime::from_millis(at_ms),
        node: Some(NodeId::client(0)),
        event: Event::Recipe(
            WatchRecord {
                process: 0,
                watch: 1,
                step,
            }
            .to_recipe_event(),
        ),
    }
}

fn delivered(at_ms: u64, changes: &[(u64, &str, &str)]) -> Record {
    watch_record(
        at_ms,
        WatchStep::Delivered {
            server: NodeId::server(0),
            changes: changes
                .iter()
                .map(|(revision, key, value)| WatchedChange {
                    kind: WatchedChangeKind::Put,
                    key: key.to_string(),
                    value: value.to_string(),
                    mod_revision: *revision,
                    create_revision: *revision,
                    version: 1,
                    prev_kv: None,
                })
                .collect(),
        },
    )
}

fn writes() -> Vec<Record> {
    vec![
        invoke(1, 1, put("k/a", "1")),
        complete(
            2,
            1,
            KvResponse::Put {
                prev_kv: None,
                revision: 2,
            },
        ),
        invoke(3, 2, put("k/b", "2")),
        complete(
            4,
            2,
            KvResponse::Put {
                prev_kv: None,
                revision: 3,
            },
        ),
        invoke(5, 3, put("k/a", "3")),
        complete(
            6,
            3,
            KvResponse::Put {
                prev_kv: None,
                revision: 4,
            },
        ),
    ]
}

fn created() -> Record {
    watch_record(
        0,
        WatchStep::Created {
            key: "k/".into(),
            range_end: Some("k0".into()),
            start_revision: 2,
            left_out: Vec::new(),
        },
    )
}

fn opened(at_ms: u64, from_revision: u64) -> Record {
    watch_record(
        at_ms,
        WatchStep::Opened {
            server: NodeId::server(0),
            from_revision,
        },
    )
}

#[test]
fn a_complete_resumed_watch_passes() {
    let mut records = vec![created(), opened(0, 2)];
    records.extend(writes());
    records.push(delivered(7, &[(2, "k/a", "1"), (3, "k/b", "2")]));
    records.push(opened(8, 4));
    records.push(delivered(9, &[(4, "k/a", "3")]));
    assert_eq!(check(&History::from_records(records)), vec![]);
}

#[test]
fn gaps_duplicates_disorder_and_bad_resumes_are_caught() {
    let mut gap = vec![created(), opened(0, 2)];
    gap.extend(writes());
    gap.push(delivered(7, &[(2, "k/a", "1"), (4, "k/a", "3")]));
    let faults: Vec<_> = check(&History::from_records(gap))
        .into_iter()
        .map(|v| v.fault)
        .collect();
    assert!(matches!(
        &faults[..],
        [WatchFault::Missed { revision: 3, .. }]
    ));

    let mut duplicate = vec![created(), opened(0, 2)];
    duplicate.extend(writes());
    duplicate.push(delivered(7, &[(2, "k/a", "1"), (3, "k/b", "2")]));
    duplicate.push(opened(8, 3));
    duplicate.push(delivered(9, &[(3, "k/b", "2"), (4, "k/a", "3")]));
    let faults: Vec<_> = check(&History::from_records(duplicate))
        .into_iter()
        .map(|v| v.fault)
        .collect();
    assert!(faults.contains(&WatchFault::ResumedAt {
        last_delivered: 3,
        resumed_from: 3
    }));
    assert!(faults.contains(&WatchFault::Duplicate {
        revision: 3,
        key: "k/b".into()
    }));

    let mut disorder = vec![created(), opened(0, 2)];
    disorder.extend(writes());
    disorder.push(delivered(
        7,
        &[(3, "k/b", "2"), (2, "k/a", "1"), (4, "k/a", "3")],
    ));
    assert!(
        check(&History::from_records(disorder))
            .iter()
            .any(|v| matches!(v.fault, WatchFault::OutOfOrder { .. }))
    );
}

/// The last write of [`writes`] (k/a=3 at revision 4), delivered with `prev` as its previous
/// value.
fn with_prev(prev: KeyValue) -> Vec<Record> {
    let mut records = vec![created(), opened(0, 4)];
    records.extend(writes());
    let Record {
        event: Event::Recipe(event),
        ..
    } = delivered(7, &[(4, "k/a", "3")])
    else {
        unreachable!("a watch record")
    };
    let mut record = WatchRecord::from_recipe_event(&event).expect("a watch record");
    if let WatchStep::Delivered { changes, .. } = &mut record.step {
        changes[0].prev_kv = Some(prev);
    }
    records.push(Record {
        at: SimTime::from_millis(7),
        node: Some(NodeId::client(0)),
        event: Event::Recipe(record.to_recipe_event()),
    });
    records
}

fn prev(key: &str, value: &str, mod_revision: u64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: value.into(),
        create_revision: 2,
        mod_revision,
        version: 1,
        lease: None,
    }
}

fn wrong_prevs(records: Vec<Record>) -> usize {
    check(&History::from_records(records))
        .iter()
        .filter(|v| matches!(v.fault, WatchFault::WrongPrev { .. }))
        .count()
}

#[test]
fn the_previous_value_is_the_key_just_before_the_change() {
    assert_eq!(wrong_prevs(with_prev(prev("k/a", "1", 2))), 0);
}

#[test]
fn a_wrong_previous_value_fires() {
    // Another value than the acknowledged put at its revision wrote.
    assert_eq!(wrong_prevs(with_prev(prev("k/a", "x", 2))), 1);
    // Older than the acknowledged put at 2, which came before the change at 4.
    assert_eq!(wrong_prevs(with_prev(prev("k/a", "0", 1))), 1);
    // Not older than the change, or of another key.
    assert_eq!(wrong_prevs(with_prev(prev("k/a", "3", 4))), 1);
    assert_eq!(wrong_prevs(with_prev(prev("k/b", "2", 3))), 1);
}

/// [`writes`] watched with `left_out` filtered, delivered as `changes` (all puts).
fn filtered(left_out: Vec<WatchedChangeKind>, changes: &[(u64, &str, &str)]) -> Vec<WatchFault> {
    let mut records = vec![
        watch_record(
            0,
            WatchStep::Created {
                key: "k/".into(),
                range_end: Some("k0".into()),
                start_revision: 2,
                left_out,
            },
        ),
        opened(0, 2),
    ];
    records.extend(writes());
    records.push(delivered(7, changes));
    check(&History::from_records(records))
        .into_iter()
        .map(|v| v.fault)
        .collect()
}

#[test]
fn a_filtered_watch_expects_only_the_kinds_it_keeps() {
    let all = [(2, "k/a", "1"), (3, "k/b", "2"), (4, "k/a", "3")];
    // No deletes were written: a NODELETE watch gets every put.
    assert_eq!(filtered(vec![WatchedChangeKind::Delete], &all), vec![]);
    // A missing put still fires on a NODELETE watch.
    let gap = [(2, "k/a", "1"), (4, "k/a", "3")];
    assert!(matches!(
        &filtered(vec![WatchedChangeKind::Delete], &gap)[..],
        [WatchFault::Missed { revision: 3, .. }]
    ));
    // A NOPUT watch must not deliver a put.
    let faults = filtered(vec![WatchedChangeKind::Put], &all[..1]);
    assert!(matches!(
        &faults[..],
        [WatchFault::LeftOut {
            revision: 2,
            kind: WatchedChangeKind::Put,
            ..
        }]
    ));
}

fn progress(at_ms: u64, revision: u64) -> Record {
    watch_record(
        at_ms,
        WatchStep::Progress {
            server: NodeId::server(0),
            revision,
        },
    )
}

fn faults(records: Vec<Record>) -> Vec<WatchFault> {
    check(&History::from_records(records))
        .into_iter()
        .map(|v| v.fault)
        .collect()
}

#[test]
fn a_progress_response_promises_every_change_up_to_its_revision() {
    // Every change up to 4 delivered, then progress at 4: fine.
    let mut good = vec![created(), opened(0, 2)];
    good.extend(writes());
    good.push(delivered(
        7,
        &[(2, "k/a", "1"), (3, "k/b", "2"), (4, "k/a", "3")],
    ));
    good.push(progress(8, 4));
    assert_eq!(faults(good), vec![]);

    // Progress at 4 before the change at 4: that change came after the promise.
    let mut late = vec![created(), opened(0, 2)];
    late.extend(writes());
    late.push(delivered(7, &[(2, "k/a", "1"), (3, "k/b", "2")]));
    late.push(progress(8, 4));
    late.push(delivered(9, &[(4, "k/a", "3")]));
    assert_eq!(
        faults(late),
        vec![WatchFault::AfterProgress {
            revision: 4,
            key: "k/a".into(),
            progress: 4
        }]
    );

    // Progress at 4 with the change at 4 never delivered: a missed write.
    let mut missed = vec![created(), opened(0, 2)];
    missed.extend(writes());
    missed.push(delivered(7, &[(2, "k/a", "1"), (3, "k/b", "2")]));
    missed.push(progress(8, 4));
    assert!(matches!(
        &faults(missed)[..],
        [WatchFault::Missed { revision: 4, .. }]
    ));
}

#[test]
fn nothing_may_come_after_a_cancel_is_answered() {
    let mut good = vec![created(), opened(0, 2)];
    good.extend(writes());
    good.push(delivered(7, &[(2, "k/a", "1"), (3, "k/b", "2")]));
    good.push(watch_record(8, WatchStep::Canceled));
    assert_eq!(faults(good), vec![]);

    let mut late = vec![created(), opened(0, 2)];
    late.extend(writes());
    late.push(delivered(7, &[(2, "k/a", "1"), (3, "k/b", "2")]));
    late.push(watch_record(8, WatchStep::Canceled));
    late.push(delivered(9, &[(4, "k/a", "3")]));
    assert_eq!(
        faults(late),
        vec![WatchFault::AfterCancel {
            revision: 4,
            key: "k/a".into()
        }]
    );
}
