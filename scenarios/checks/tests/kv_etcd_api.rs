//! The kv linearizability model on the etcd API of issue 24: gets with range options (limit,
//! sort, keys-only, count-only, revision filters), nested transactions and compares over a
//! key range. Each judgement passes a right answer and fires on a hand-built wrong one.

use checks::linearizability::{CheckOptions, Report, Verdict, check, kv};
use sim::{
    NodeId,
    history::{
        Event, History, OpId, OpResult, Operation as HistoryOperation, Record, Response,
        kv::{
            Compare, CompareOperator, CompareTarget, KeyValue, KvOperation, KvResponse,
            RangeOptions, ReadConsistency, SortOrder, SortTarget,
        },
    },
    time::SimTime,
};

/// One client's operations, one after the other (each 10 ms, 10 ms apart), all answered.
fn sequential(rows: Vec<(KvOperation, KvResponse)>) -> History {
    let mut records = Vec::new();
    for (index, (operation, response)) in rows.into_iter().enumerate() {
        let op_id = OpId(index as u64);
        let client = NodeId::client(0);
        let invoked = index as u64 * 20;
        records.push(Record {
            at: SimTime::from_nanos(invoked * 1_000_000),
            node: Some(client),
            event: Event::Invoke {
                client,
                process: 0,
                op_id,
                operation: HistoryOperation::Kv(operation),
            },
        });
        records.push(Record {
            at: SimTime::from_nanos((invoked + 10) * 1_000_000),
            node: Some(client),
            event: Event::Complete {
                op_id,
                result: OpResult::Ok {
                    response: Response::Kv(response),
                },
            },
        });
    }
    History::from_records(records)
}

fn put(key: &str, value: &str, revision: u64) -> (KvOperation, KvResponse) {
    (
        KvOperation::Put {
            prev_kv: false,
            key: key.into(),
            value: value.into(),
            lease: None,
        },
        KvResponse::Put {
            revision,
            prev_kv: None,
        },
    )
}

fn kv(key: &str, value: &str, revision: u64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: value.into(),
        create_revision: revision,
        mod_revision: revision,
        version: 1,
        lease: None,
    }
}

/// A get of `[key, range_end)` (one key if `None`) with `options`, answered at revision 4.
fn get(
    key: &str,
    range_end: Option<&str>,
    options: RangeOptions,
    kvs: Vec<KeyValue>,
    count: u64,
    more: bool,
) -> (KvOperation, KvResponse) {
    (
        KvOperation::GetWithOptions {
            key: key.into(),
            range_end: range_end.map(str::to_string),
            revision: None,
            consistency: ReadConsistency::Linearizable,
            options,
        },
        KvResponse::GetWithOptions {
            revision: 4,
            kvs,
            count,
            more,
        },
    )
}

/// a=1 at 2, b=2 at 3, c=3 at 4, then `read`.
fn after_three_puts(read: (KvOperation, KvResponse)) -> Report {
    let history = sequential(vec![
        put("a", "1", 2),
        put("b", "2", 3),
        put("c", "3", 4),
        read,
    ]);
    let (model, operations) = kv::from_history(&history);
    check(&model, &operations, &CheckOptions::default())
}

fn passes(report: Report) {
    assert_eq!(report.verdict, Verdict::Ok, "{report}");
}

fn fires(report: Report) {
    assert!(
        matches!(report.verdict, Verdict::Violation(_)),
        "expected a violation: {report}"
    );
}

fn limit(limit: u64) -> RangeOptions {
    RangeOptions {
        limit,
        ..RangeOptions::default()
    }
}

/// A limited read sees a prefix of the range in key order: a key before its last key that
/// it leaves out is absent; a key after the cut may be anything.
#[test]
fn a_limited_read_is_a_prefix_of_the_range_in_key_order() {
    let right = vec![kv("a", "1", 2), kv("b", "2", 3)];
    passes(after_three_puts(get(
        "a",
        Some("z"),
        limit(2),
        right,
        3,
        true,
    )));
    // `b` exists but the answer skipped it before `c`.
    let skipped = vec![kv("a", "1", 2), kv("c", "3", 4)];
    fires(after_three_puts(get(
        "a",
        Some("z"),
        limit(2),
        skipped,
        3,
        true,
    )));
    // Descending by key, the prefix is from the top: `b` missing before `a` is wrong.
    let descending = RangeOptions {
        sort_order: SortOrder::Descend,
        ..limit(2)
    };
    let right = vec![kv("c", "3", 4), kv("b", "2", 3)];
    passes(after_three_puts(get(
        "a",
        Some("z"),
        descending.clone(),
        right,
        3,
        true,
    )));
    let skipped = vec![kv("c", "3", 4), kv("a", "1", 2)];
    fires(after_three_puts(get(
        "a",
        Some("z"),
        descending,
        skipped,
        3,
        true,
    )));
    // A read that says nothing was cut (`more` false) shows every key: `c` missing fires.
    let short = vec![kv("a", "1", 2), kv("b", "2", 3)];
    fires(after_three_puts(get(
        "a",
        Some("z"),
        limit(5),
        short,
        3,
        false,
    )));
}

/// Sorted on something else than the key, a cut read says nothing of the keys it left
/// out; the keys it shows are still read.
#[test]
fn a_read_sorted_by_value_says_nothing_of_the_keys_its_limit_cut() {
    let by_value = RangeOptions {
        sort_order: SortOrder::Descend,
        sort_target: SortTarget::Value,
        ..limit(1)
    };
    passes(after_three_puts(get(
        "a",
        Some("z"),
        by_value.clone(),
        vec![kv("c", "3", 4)],
        3,
        true,
    )));
    fires(after_three_puts(get(
        "a",
        Some("z"),
        by_value,
        vec![kv("c", "9", 4)],
        3,
        true,
    )));
}

/// A keys-only read shows no value (etcd sends none): it is not read as the empty value,
/// but its revisions and version are still checked.
#[test]
fn a_keys_only_read_says_nothing_of_values() {
    let keys_only = RangeOptions {
        keys_only: true,
        ..RangeOptions::default()
    };
    let blank = |key, revision| kv(key, "", revision);
    passes(after_three_puts(get(
        "a",
        Some("z"),
        keys_only.clone(),
        vec![blank("a", 2), blank("b", 3), blank("c", 4)],
        3,
        false,
    )));
    // `b`'s mod revision is 3, not 2.
    fires(after_three_puts(get(
        "a",
        Some("z"),
        keys_only,
        vec![blank("a", 2), blank("b", 2), blank("c", 4)],
        3,
        false,
    )));
}

/// A count-only read of one key is a read of whether it exists; a get of one key with
/// options is checked on its count too.
#[test]
fn a_count_of_one_key_is_a_read_of_whether_it_exists() {
    let count_only = RangeOptions {
        count_only: true,
        ..RangeOptions::default()
    };
    passes(after_three_puts(get(
        "b",
        None,
        count_only.clone(),
        vec![],
        1,
        false,
    )));
    fires(after_three_puts(get(
        "b",
        None,
        count_only.clone(),
        vec![],
        0,
        false,
    )));
    fires(after_three_puts(get(
        "x",
        None,
        count_only,
        vec![],
        1,
        false,
    )));
    // A keys-only get of one key that shows it and counts 0 contradicts itself.
    let keys_only = RangeOptions {
        keys_only: true,
        ..RangeOptions::default()
    };
    fires(after_three_puts(get(
        "b",
        None,
        keys_only,
        vec![kv("b", "", 3)],
        0,
        false,
    )));
}

/// With a revision filter, a key left out may be filtered: no judgement of its absence.
#[test]
fn a_filtered_read_says_nothing_of_the_keys_it_leaves_out() {
    let filtered = RangeOptions {
        min_mod_revision: 3,
        ..RangeOptions::default()
    };
    passes(after_three_puts(get(
        "a",
        Some("z"),
        filtered.clone(),
        vec![kv("b", "2", 3), kv("c", "3", 4)],
        3,
        false,
    )));
    // What it shows is still read: `c`'s value is 3.
    fires(after_three_puts(get(
        "a",
        Some("z"),
        filtered,
        vec![kv("b", "2", 3), kv("c", "4", 4)],
        3,
        false,
    )));
}

fn check_history(rows: Vec<(KvOperation, KvResponse)>) -> Report {
    let (model, operations) = kv::from_history(&sequential(rows));
    check(&model, &operations, &CheckOptions::default())
}

fn txn(compares: Vec<Compare>, success: Vec<KvOperation>) -> KvOperation {
    KvOperation::Txn {
        compares,
        success,
        failure: vec![],
    }
}

fn txn_ok(revision: u64, succeeded: bool, responses: Vec<KvResponse>) -> KvResponse {
    KvResponse::Txn {
        revision,
        succeeded,
        responses,
    }
}

fn plain_get(key: &str) -> KvOperation {
    KvOperation::Get {
        key: key.into(),
        range_end: None,
        revision: None,
        consistency: ReadConsistency::Linearizable,
    }
}

fn got(revision: u64, kvs: Vec<KeyValue>) -> KvResponse {
    KvResponse::Get { revision, kvs }
}

/// A nested transaction's put happens at the outer transaction's revision: a later read
/// must see it there; one that still sees the old value fires.
#[test]
fn a_nested_transactions_write_happens_at_the_outer_revision() {
    let nested_put = || {
        let (put_a, put_done) = put("a", "2", 3);
        (
            txn(vec![], vec![txn(vec![], vec![put_a])]),
            txn_ok(3, true, vec![txn_ok(3, true, vec![put_done])]),
        )
    };
    let read = |kvs| (plain_get("a"), got(3, kvs));
    let mut seen = kv("a", "2", 3);
    seen.create_revision = 2;
    seen.version = 2;
    passes(check_history(vec![
        put("a", "1", 2),
        nested_put(),
        read(vec![seen]),
    ]));
    fires(check_history(vec![
        put("a", "1", 2),
        nested_put(),
        read(vec![kv("a", "1", 2)]),
    ]));
}

/// A nested transaction's read sees the store at the outer revision (with the outer
/// branch's earlier writes): a stale value fires.
#[test]
fn a_nested_transactions_read_is_checked() {
    let nested_get = |kvs| {
        (
            txn(vec![], vec![txn(vec![], vec![plain_get("a")])]),
            txn_ok(3, true, vec![txn_ok(3, true, vec![got(3, kvs)])]),
        )
    };
    let mut current = kv("a", "2", 3);
    current.create_revision = 2;
    current.version = 2;
    passes(check_history(vec![
        put("a", "1", 2),
        put("a", "2", 3),
        nested_get(vec![current]),
    ]));
    fires(check_history(vec![
        put("a", "1", 2),
        put("a", "2", 3),
        nested_get(vec![kv("a", "1", 2)]),
    ]));
}

/// A compare over a range failed because of a key in the range (`b` has version 1): the
/// compare on `a`, which holds, must not decide the branch on its own. The same history
/// with the range compare on `b` alone still fires when the transaction claims success.
#[test]
fn a_compare_over_a_range_does_not_let_one_keys_compare_decide() {
    let version = |key: &str, range_end: Option<&str>| {
        let compare = Compare::key(key, CompareTarget::Version(0), CompareOperator::Equal);
        match range_end {
            Some(end) => compare.with_range(end),
            None => compare,
        }
    };
    let a_is_version_1 = Compare::key("a", CompareTarget::Version(1), CompareOperator::Equal);
    let (put_x, _) = put("x", "1", 4);
    passes(check_history(vec![
        put("a", "1", 2),
        put("b", "1", 3),
        (
            txn(
                vec![a_is_version_1.clone(), version("b", Some("c"))],
                vec![put_x.clone()],
            ),
            txn_ok(3, false, vec![]),
        ),
    ]));
    // `version(b) = 0` alone cannot hold: b was put.
    fires(check_history(vec![
        put("a", "1", 2),
        put("b", "1", 3),
        (
            txn(vec![version("b", None)], vec![put_x]),
            txn_ok(
                4,
                true,
                vec![KvResponse::Put {
                    revision: 4,
                    prev_kv: None,
                }],
            ),
        ),
    ]));
}
