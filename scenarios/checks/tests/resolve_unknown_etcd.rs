//! Writes of unknown outcome resolved from the replicas' `Applied` records, on hand-built
//! etcd histories (`etcd.linearizable`'s reading, `kv::from_history`), as
//! `resolve_unknown.rs` shows for ZooKeeper: applied ones are linearized by when they took
//! effect, never-applied ones are left out, ambiguous ones (a retry applied twice among
//! them) are searched both ways as before, and a write answered as failed is never
//! resolved.

use checks::linearizability::{
    CheckOptions, Report, Verdict, check, jepsen, kv,
    resolve::{DID_NOT_TAKE_EFFECT, Resolved},
};
use sim::history::{
    Event, History, OpError, OpId, OpResult, Operation, ProtocolEvent, RequestRef, Response,
    kv::{KeyValue, KvError, KvEvent, KvOperation, KvResponse, ReadConsistency},
};

mod common;

use common::{HandBuilt, HandStore};

/// The etcd model client's number in the identities it stamps.
const CLIENT: u64 = 3;

/// etcd's records: a request is the client's write number; entries are log indexes.
struct Etcd;

impl HandStore for Etcd {
    type Op = KvOperation;
    type Answer = KvResponse;
    const LOST_ANSWER: &'static str = "no answer within 1000 ms";
    fn operation(op: KvOperation) -> Operation {
        Operation::Kv(op)
    }
    fn response(answer: KvResponse) -> Response {
        Response::Kv(answer)
    }
    fn sent(op_id: OpId, sequence: u64) -> Event {
        Event::Kv(KvEvent::RequestSent {
            process: 0,
            op_id,
            request: RequestRef {
                client: CLIENT,
                sequence,
            },
        })
    }
    fn is_sent(event: &Event) -> bool {
        matches!(event, Event::Kv(KvEvent::RequestSent { .. }))
    }
    fn applied(index: u64, sequence: u64) -> ProtocolEvent {
        ProtocolEvent::Applied {
            index,
            term: 1,
            digest: index,
            request: Some(RequestRef {
                client: CLIENT,
                sequence,
            }),
        }
    }
}

type Builder = HandBuilt<Etcd>;

impl Builder {
    /// `x` put to "a" at revision 2 by op 0 (write 1), acknowledged.
    fn put_a(&mut self) -> &mut Self {
        self.invoke(0, 0, 0, put("a"))
            .sent(0, 0, 1)
            .applied(5, 1)
            .ok(
                10,
                0,
                KvResponse::Put {
                    revision: 2,
                    prev_kv: None,
                },
            )
    }

    /// A linearizable get of `x` by process 1 (op `op`) from `ms`, seeing `value` as
    /// written at `revision` (also the store's revision), its `version`th change.
    fn read(&mut self, ms: u64, op: u64, value: &str, revision: u64, version: u64) -> &mut Self {
        let get = KvOperation::Get {
            key: "x".into(),
            range_end: None,
            revision: None,
            consistency: ReadConsistency::Linearizable,
        };
        let kvs = vec![KeyValue {
            key: "x".into(),
            value: value.into(),
            create_revision: 2,
            mod_revision: revision,
            version,
            lease: None,
        }];
        self.invoke(ms, 1, op, get)
            .ok(ms + 1, op, KvResponse::Get { revision, kvs })
    }
}

fn put(value: &str) -> KvOperation {
    KvOperation::Put {
        prev_kv: false,
        key: "x".into(),
        value: value.into(),
        lease: None,
    }
}

fn report(history: &History) -> Report {
    let (model, operations) = kv::from_history(history);
    check(&model, &operations, &CheckOptions::default())
}

fn is_violation(report: &Report) -> bool {
    matches!(report.verdict, Verdict::Violation(_))
}

/// `x` put to "a"; op 1 puts "b" and its answer is lost (sent as write 2, applied at 25 ms
/// when `applied`); then a read at 40 ms sees `seen` (value, revision, version).
fn lost_reply_then_read(applied: bool, seen: (&str, u64, u64)) -> Builder {
    let mut builder = Builder::default();
    builder.put_a().invoke(20, 0, 1, put("b")).sent(20, 1, 2);
    if applied {
        builder.applied(25, 2);
    }
    builder.unknown(30, 1).read(40, 2, seen.0, seen.1, seen.2);
    builder
}

const STALE: (&str, u64, u64) = ("a", 2, 1);
const NEW: (&str, u64, u64) = ("b", 3, 2);

#[test]
fn an_applied_write_of_unknown_outcome_took_effect_before_it_was_applied() {
    // A read after the apply that still sees "a": the put took effect, so it is stale.
    let report_of = report(&lost_reply_then_read(true, STALE).history());
    assert!(is_violation(&report_of), "{report_of}");
    // A black-box checker may place the put after the read: linearizable.
    let blind = report(&lost_reply_then_read(true, STALE).unresolved());
    assert_eq!(blind.verdict, Verdict::Ok, "{blind}");
    // Seeing "b" is linearizable either way.
    let report_of = report(&lost_reply_then_read(true, NEW).history());
    assert_eq!(report_of.verdict, Verdict::Ok, "{report_of}");
}

#[test]
fn a_write_of_unknown_outcome_no_replica_applied_is_left_out() {
    // Nothing applied "b", yet a read sees it.
    let report_of = report(&lost_reply_then_read(false, NEW).history());
    assert!(is_violation(&report_of), "{report_of}");
    assert_eq!(report_of.skipped.get(DID_NOT_TAKE_EFFECT), Some(&1));
    let blind = report(&lost_reply_then_read(false, NEW).unresolved());
    assert_eq!(blind.verdict, Verdict::Ok, "{blind}");
    assert_eq!(blind.skipped.get(DID_NOT_TAKE_EFFECT), None);
    let report_of = report(&lost_reply_then_read(false, STALE).history());
    assert_eq!(report_of.verdict, Verdict::Ok, "{report_of}");
}

#[test]
fn a_write_answered_as_failed_is_never_resolved_so_applying_it_is_caught() {
    // The store applies op 1 but answers it as failed; a later read sees its value.
    let mut builder = Builder::default();
    builder
        .put_a()
        .invoke(20, 0, 1, put("b"))
        .sent(20, 1, 2)
        .applied(25, 2)
        .complete(
            30,
            1,
            OpResult::Fail {
                error: OpError::Kv(KvError::Other {
                    message: "unavailable".into(),
                }),
            },
        )
        .read(40, 2, NEW.0, NEW.1, NEW.2);
    let report_of = report(&builder.history());
    assert!(is_violation(&report_of), "{report_of}");
}

/// Adds what makes op 1's identity ambiguous.
type MakeAmbiguous = fn(&mut Builder);

/// Lost-answer writes whose fate the history does not show stay unresolved: the stale read
/// that an applied write would forbid is accepted, as by the black-box search.
#[test]
fn a_write_whose_identity_is_ambiguous_stays_unresolved() {
    let ambiguous: [(&str, MakeAmbiguous); 5] = [
        // The model client retries a write under the identity it first sent (after a "not
        // applied" answer): a store that applied both attempts shows two entries.
        (
            "retried under the same identity and applied twice",
            |builder| {
                builder.applied(27, 2);
            },
        ),
        ("sent under two identities", |builder| {
            builder.sent(21, 1, 3);
        }),
        (
            "another operation sent under the same identity",
            |builder| {
                builder
                    .invoke(22, 2, 9, put("c"))
                    .sent(22, 9, 2)
                    .unknown(31, 9);
            },
        ),
        ("another invocation under the same id", |builder| {
            builder.invoke(22, 2, 1, put("c"));
        }),
        ("never recorded as sent", |builder| {
            builder.without(|event| {
                matches!(event, Event::Kv(KvEvent::RequestSent { op_id, .. }) if *op_id == OpId(1))
            });
        }),
    ];
    for (why, make_ambiguous) in ambiguous {
        let mut builder = lost_reply_then_read(true, STALE);
        make_ambiguous(&mut builder);
        let report_of = report(&builder.history());
        assert_eq!(report_of.verdict, Verdict::Ok, "{why}: {report_of}");
    }
}

/// Many concurrent writes of unknown outcome: the plain search tries each both ways, the
/// resolved one knows which took effect and by when. The same verdict, far fewer steps.
#[test]
fn resolving_lost_replies_shrinks_the_search() {
    const WRITES: u64 = 12;
    let build = || {
        let mut builder = Builder::default();
        builder.put_a();
        for write in 0..WRITES {
            let op = 1 + write;
            let sequence = 2 + write;
            let ms = 20 + write;
            builder
                .invoke(ms, 0, op, put(&format!("v{write}")))
                .sent(ms, op, sequence);
            // Every other one applied (the last one applied last), the rest lost.
            if write % 2 == 1 {
                builder.applied(100 + write, sequence);
            }
            builder.unknown(200, op);
        }
        let last = WRITES - 1;
        let applied = WRITES / 2;
        builder.read(300, 100, &format!("v{last}"), 2 + applied, 1 + applied);
        builder
    };
    let resolved = report(&build().history());
    let blind = report(&build().unresolved());
    assert_eq!(resolved.verdict, Verdict::Ok, "{resolved}");
    assert_eq!(blind.verdict, Verdict::Ok, "{blind}");
    assert_eq!(
        resolved.skipped.get(DID_NOT_TAKE_EFFECT),
        Some(&((WRITES / 2) as usize))
    );
    let half = (WRITES / 2) as usize;
    assert_eq!(
        resolved.resolved,
        Some(Resolved {
            took_effect: half,
            did_not: half,
            ambiguous: 0
        })
    );
    assert_eq!(
        blind.resolved.map(|blind| blind.ambiguous),
        Some(WRITES as usize)
    );
    println!(
        "{WRITES} writes of unknown outcome: {} steps unresolved, {} resolved",
        blind.steps, resolved.steps
    );
    assert!(
        resolved.steps * 10 < blind.steps,
        "resolved {} steps, unresolved {}",
        resolved.steps,
        blind.steps
    );
}

/// The report counts each way an unknown outcome came out, on the line `check-history`
/// prints with the report: one write applied, one never applied, one never recorded as
/// sent (ambiguous); a read of unknown outcome is not counted (it constrains nothing).
/// A history read from a Jepsen log is not resolved, and says nothing of it.
#[test]
fn the_report_counts_how_unknown_outcomes_were_resolved() {
    let mut builder = lost_reply_then_read(true, NEW);
    builder
        .invoke(21, 2, 3, put("c"))
        .sent(21, 3, 3)
        .unknown(31, 3)
        .invoke(22, 3, 4, put("d"))
        .unknown(32, 4)
        .invoke(
            23,
            4,
            5,
            KvOperation::Get {
                key: "x".into(),
                range_end: None,
                revision: None,
                consistency: ReadConsistency::Linearizable,
            },
        )
        .unknown(33, 5);
    let report_of = report(&builder.history());
    assert_eq!(report_of.verdict, Verdict::Ok, "{report_of}");
    assert_eq!(
        report_of.resolved,
        Some(Resolved {
            took_effect: 1,
            did_not: 1,
            ambiguous: 1
        })
    );
    let printed = report_of.to_string();
    assert!(
        printed.contains(
            "outcome unknown, resolved from the replicas' applied log: 1 as applied (took \
             effect), 1 as not applied (left out), 1 left ambiguous (searched both ways)"
        ),
        "{printed}"
    );
    let log =
        "INFO  jepsen.util - 0\t:invoke\t:write\t1\nINFO  jepsen.util - 0\t:info\t:write\t1\n";
    let (model, operations) = jepsen::read_etcd_log(log).expect("a Jepsen log");
    let imported = check(&model, &operations, &CheckOptions::default());
    assert_eq!(imported.resolved, None);
    assert!(
        !imported.to_string().contains("outcome unknown"),
        "{imported}"
    );
}
