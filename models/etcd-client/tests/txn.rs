#![cfg(madsim)]
//! etcd-client's `Txn`, `Compare` and `TxnOp` of every kind, `compact`, and every error a
//! KV call can answer, run against the Raft store in a coordsim world.

mod kv_support;

use etcd_client::{
    Client, CompactionOptions, Compare, CompareOp, DeleteOptions, Error, GetOptions, PutOptions,
    Txn, TxnOp, TxnOpResponse,
};
use sim::fault::FaultSource;
use sim::{report::for_each_seed, this_test};
use tonic::Code;

/// Whether `compare` holds, asked through a transaction that answers the result.
async fn holds(client: &mut Client, compare: Compare) -> Result<bool, Error> {
    let answer = client.txn(Txn::new().when([compare])).await?;
    Ok(answer.succeeded())
}

#[test]
fn compares_of_every_kind_and_operator_decide_as_etcd_does() {
    let ran = kv_support::run(1, 7, FaultSource::None, |mut client, _| async move {
        let first = client
            .put("k", "v1", None)
            .await?
            .header()
            .unwrap()
            .revision();
        let second = client
            .put("k", "v2", None)
            .await?
            .header()
            .unwrap()
            .revision();
        client.put("k2", "w", None).await?;
        let mut results = Vec::new();
        for compare in [
            Compare::version("k", CompareOp::Equal, 2),
            Compare::version("k", CompareOp::Greater, 2),
            Compare::version("k", CompareOp::Less, 3),
            Compare::version("k", CompareOp::NotEqual, 2),
            Compare::create_revision("k", CompareOp::Equal, first),
            Compare::create_revision("k", CompareOp::Greater, first),
            Compare::mod_revision("k", CompareOp::Equal, second),
            Compare::mod_revision("k", CompareOp::Less, second),
            Compare::value("k", CompareOp::Equal, "v2"),
            Compare::value("k", CompareOp::NotEqual, "v2"),
            Compare::lease("k", CompareOp::Equal, 0),
            Compare::lease("k", CompareOp::Greater, 0),
            // Over a range: every key of it must satisfy the compare.
            Compare::version("k", CompareOp::Greater, 0).with_prefix(),
            Compare::value("k", CompareOp::Equal, "v2").with_prefix(),
            Compare::value("k", CompareOp::Equal, "w")
                .with_range("k3")
                .with_prefix(),
            Compare::value("k2", CompareOp::Equal, "w").with_range("k3"),
            // A missing key's version is 0.
            Compare::version("missing", CompareOp::Equal, 0),
        ] {
            results.push(holds(&mut client, compare).await?);
        }
        Ok::<_, Error>(results)
    });
    assert!(ran.outcome.is_clean(), "{:?}", ran.outcome);
    let judged = ran.judged("etcd.linearizable");
    assert!(judged > 10, "judged {judged}");
    let results = ran.only().expect("every call succeeded");
    assert_eq!(
        results,
        [
            true, false, true, false, // version
            true, false, // create revision
            true, false, // mod revision
            true, false, // value
            true, false, // lease
            true, false, // over a prefix
            // with_prefix after with_range: the prefix wins (the last one set), "k2" ≠ "w"
            // fails over "k", "k2".
            false, true, // over ranges
            true, // missing key
        ]
    );
}

#[test]
fn txn_ops_of_every_kind_answer_their_responses() {
    let ran = kv_support::run(1, 8, FaultSource::None, |mut client, _| async move {
        client.put("seat", "free", None).await?;
        client.put("old", "x", None).await?;
        let taken = client
            .txn(
                Txn::new()
                    .when([Compare::value("seat", CompareOp::Equal, "free")])
                    .and_then([
                        TxnOp::put("seat", "taken", Some(PutOptions::new().with_prev_key())),
                        TxnOp::get("seat", None),
                        TxnOp::delete("old", Some(DeleteOptions::new().with_prev_key())),
                        TxnOp::txn(
                            Txn::new()
                                .when([Compare::version("nested", CompareOp::Equal, 0)])
                                .and_then([TxnOp::put("nested", "1", None)]),
                        ),
                    ])
                    // A plain get: etcd.linearizable skips a transaction holding a get with
                    // range options, and skipping a write makes later reads look wrong.
                    .or_else([TxnOp::get("seat", None)]),
            )
            .await?;
        let again = client
            .txn(
                Txn::new()
                    .when([Compare::value("seat", CompareOp::Equal, "free")])
                    .and_then([TxnOp::put("seat", "taken", None)])
                    .or_else([TxnOp::get("seat", None)]),
            )
            .await?;
        Ok::<_, Error>((taken, again))
    });
    assert!(ran.outcome.is_clean(), "{:?}", ran.outcome);
    assert!(ran.judged("etcd.linearizable") >= 4);
    let (taken, again) = ran.only().expect("every call succeeded");
    assert!(taken.succeeded());
    let revision = taken.header().unwrap().revision();
    let responses = taken.op_responses();
    assert_eq!(responses.len(), 4);
    let TxnOpResponse::Put(put) = &responses[0] else {
        panic!("a put's response: {responses:?}");
    };
    assert_eq!(put.prev_key().unwrap().value(), b"free");
    let TxnOpResponse::Get(get) = &responses[1] else {
        panic!("a get's response: {responses:?}");
    };
    // The transaction's own put is seen by its later get, at the transaction's revision.
    assert_eq!(get.kvs()[0].value_str().unwrap(), "taken");
    assert_eq!(get.kvs()[0].mod_revision(), revision);
    let TxnOpResponse::Delete(delete) = &responses[2] else {
        panic!("a delete's response: {responses:?}");
    };
    assert_eq!(delete.deleted(), 1);
    assert_eq!(delete.prev_kvs()[0].key(), b"old");
    let TxnOpResponse::Txn(nested) = &responses[3] else {
        panic!("a nested transaction's response: {responses:?}");
    };
    assert!(nested.succeeded());
    assert!(matches!(nested.op_responses()[..], [TxnOpResponse::Put(_)]));
    assert!(!again.succeeded(), "the seat was taken");
    let [TxnOpResponse::Get(seat)] = &again.op_responses()[..] else {
        panic!("the failure branch ran: {again:?}");
    };
    assert_eq!(seat.kvs()[0].value(), b"taken");
}

#[test]
fn a_read_at_a_compacted_revision_is_out_of_range() {
    let ran = kv_support::run(1, 9, FaultSource::None, |mut client, _| async move {
        let first = client
            .put("k", "1", None)
            .await?
            .header()
            .unwrap()
            .revision();
        client.put("k", "2", None).await?;
        let third = client
            .put("k", "3", None)
            .await?
            .header()
            .unwrap()
            .revision();
        let compacted = client
            .compact(third, Some(CompactionOptions::new().with_physical()))
            .await?;
        let old = client
            .get("k", Some(GetOptions::new().with_revision(first)))
            .await;
        let at_compaction = client
            .get("k", Some(GetOptions::new().with_revision(third)))
            .await?;
        let future = client.compact(third + 100, None).await;
        Ok::<_, Error>((
            compacted.header().unwrap().revision(),
            third,
            old,
            at_compaction.kvs()[0].value().to_vec(),
            future,
        ))
    });
    assert!(ran.outcome.is_clean(), "{:?}", ran.outcome);
    let (answered_at, third, old, at_compaction, future) = ran.only().expect("the calls ran");
    assert!(answered_at >= third);
    let (code, message) = kv_support::status(&old.expect_err("compacted"));
    assert_eq!(code, Code::OutOfRange);
    assert_eq!(
        message,
        "etcdserver: mvcc: required revision has been compacted"
    );
    assert_eq!(at_compaction, b"3");
    let (code, message) = kv_support::status(&future.expect_err("a future revision"));
    assert_eq!(code, Code::OutOfRange);
    assert_eq!(
        message,
        "etcdserver: mvcc: required revision is a future revision"
    );
}

/// Each bad input answers etcd's error (from the server) or `InvalidArgs` (refused before
/// sending), never a panic.
#[test]
fn bad_input_answers_etcds_errors() {
    let ran = kv_support::run(1, 10, FaultSource::None, |mut client, _| async move {
        let empty_key = client.put("", "v", None).await.err();
        let missing_lease = client
            .put("k", "v", Some(PutOptions::new().with_lease(12345)))
            .await
            .err();
        let duplicate = client
            .txn(Txn::new().and_then([TxnOp::put("k", "1", None), TxnOp::put("k", "2", None)]))
            .await
            .err();
        let not_utf8_key = client.put(vec![0xff, 0xfe], "v", None).await.err();
        let not_utf8_value = client.put("k", vec![0xc3], None).await.err();
        let not_utf8_range = client
            .get("k", Some(GetOptions::new().with_range(vec![0xff])))
            .await
            .err();
        let not_utf8_in_txn = client
            .txn(Txn::new().and_then([TxnOp::delete(vec![0x80], None)]))
            .await
            .err();
        let negative_compare = client
            .txn(Txn::new().when([Compare::mod_revision("k", CompareOp::Greater, -1)]))
            .await
            .err();
        let misuse = client
            .txn(
                Txn::new()
                    .and_then(Vec::<TxnOp>::new())
                    .when(Vec::<Compare>::new()),
            )
            .await
            .err();
        // A run where nothing is acknowledged fails its liveness check.
        client.put("k", "fine", None).await?;
        Ok::<_, Error>([
            empty_key,
            missing_lease,
            duplicate,
            not_utf8_key,
            not_utf8_value,
            not_utf8_range,
            not_utf8_in_txn,
            negative_compare,
            misuse,
        ])
    });
    assert!(ran.outcome.is_clean(), "{:?}", ran.outcome);
    let [
        empty_key,
        missing_lease,
        duplicate,
        not_utf8_key,
        not_utf8_value,
        not_utf8_range,
        not_utf8_in_txn,
        negative_compare,
        misuse,
    ] = ran
        .only()
        .expect("the calls ran")
        .map(|error| error.expect("an error"));
    let grpc = |error: &Error| kv_support::status(error);
    assert_eq!(
        grpc(&empty_key),
        (
            Code::InvalidArgument,
            "etcdserver: key is not provided".into()
        )
    );
    assert_eq!(
        grpc(&missing_lease),
        (
            Code::NotFound,
            "etcdserver: requested lease not found".into()
        )
    );
    assert_eq!(
        grpc(&duplicate),
        (
            Code::InvalidArgument,
            "etcdserver: duplicate key given in txn request".into()
        )
    );
    for (error, what) in [
        (not_utf8_key, "key"),
        (not_utf8_value, "value"),
        (not_utf8_range, "range end"),
        (not_utf8_in_txn, "key"),
    ] {
        assert!(
            matches!(&error, Error::InvalidArgs(message) if message.starts_with(&format!("{what} is not UTF-8"))),
            "{what}: {error}"
        );
    }
    assert!(
        matches!(&negative_compare, Error::InvalidArgs(m) if m.contains("compared mod revision -1")),
        "{negative_compare}"
    );
    assert!(
        matches!(&misuse, Error::InvalidArgs(m) if m == "cannot call when after and_then"),
        "{misuse}"
    );
}

#[test]
fn transactions_under_partitions_are_judged_linearizable() {
    for_each_seed(
        [11, 12, 13],
        this_test!("transactions_under_partitions_are_judged_linearizable"),
        |seed| {
            let faults = FaultSource::CutOffLeader(sim::fault::CutOffLeader::default());
            let ran = kv_support::run(3, seed.value(), faults, |mut client, node| async move {
                let mut committed = 0;
                for _ in 0..15 {
                    // A compare-and-swap increment: read, then swap if nobody wrote since.
                    let Ok(read) = client.get("counter", None).await else {
                        continue;
                    };
                    let (value, revision) = read.kvs().first().map_or((0, 0), |kv| {
                        (
                            kv.value_str().unwrap().parse::<u64>().unwrap(),
                            kv.mod_revision(),
                        )
                    });
                    let swap = Txn::new()
                        .when([Compare::mod_revision("counter", CompareOp::Equal, revision)])
                        .and_then([TxnOp::put("counter", format!("{}", value + 1), None)])
                        .or_else([TxnOp::get("counter", None)]);
                    if let Ok(answer) = client.txn(swap).await
                        && answer.succeeded()
                    {
                        committed += 1;
                    }
                    node.context()
                        .sim()
                        .sleep(std::time::Duration::from_millis(60))
                        .await;
                }
                committed
            });
            assert!(ran.outcome.is_clean(), "seed {seed}: {:?}", ran.outcome);
            assert!(ran.outcome.fault_counts.partitions > 0, "seed {seed}");
            assert_eq!(ran.results.len(), 3, "seed {seed}: every client finished");
            let committed: usize = ran.results.iter().map(|(_, n)| n).sum();
            assert!(committed >= 10, "seed {seed}: {committed} swaps committed");
            assert!(ran.judged("etcd.linearizable") > 40, "seed {seed}");
        },
    );
}
