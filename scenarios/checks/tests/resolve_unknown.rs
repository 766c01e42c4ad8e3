//! Writes of unknown outcome resolved from the replicas' `Applied` records (`zk.linearizable`
//! on hand-built ZooKeeper histories): applied ones are linearized by when they took effect,
//! never-applied ones are left out, ambiguous ones are searched both ways as before, and a
//! write answered as failed is never resolved.

use checks::linearizability::{
    CheckOptions, Report, Verdict, check,
    resolve::{DID_NOT_TAKE_EFFECT, Resolved},
    zk,
};
use sim::history::{
    Event, History, OpError, OpId, OpResult, Operation, ProtocolEvent, RequestRef, Response,
    zk::{CreateMode, Stat, ZkError, ZkEvent, ZkOperation, ZkResponse},
};

mod common;

use common::{HandBuilt, HandStore};

const SESSION: u64 = 7;

/// ZooKeeper's records: a request is the session's xid; entries are zxids of epoch 1.
struct ZooKeeper;

impl HandStore for ZooKeeper {
    type Op = ZkOperation;
    type Answer = ZkResponse;
    const LOST_ANSWER: &'static str = "connection loss";
    fn operation(op: ZkOperation) -> Operation {
        Operation::Zk(op)
    }
    fn response(answer: ZkResponse) -> Response {
        Response::Zk(answer)
    }
    fn sent(op_id: OpId, xid: u64) -> Event {
        Event::Zk(ZkEvent::RequestSent {
            process: 0,
            session: SESSION,
            op_id,
            xid,
        })
    }
    fn is_sent(event: &Event) -> bool {
        matches!(event, Event::Zk(ZkEvent::RequestSent { .. }))
    }
    fn applied(entry: u64, xid: u64) -> ProtocolEvent {
        let zxid = (1 << 32) | entry;
        ProtocolEvent::Applied {
            index: zxid,
            term: 1,
            digest: zxid,
            request: Some(RequestRef {
                client: SESSION,
                sequence: xid,
            }),
        }
    }
}

type Builder = HandBuilt<ZooKeeper>;

impl Builder {
    /// `/x` created with "a" by op 0 (xid 1), acknowledged.
    fn created(&mut self) -> &mut Self {
        self.invoke(0, 0, 0, create("/x", "a"))
            .sent(0, 0, 1)
            .applied(5, 1)
            .ok(10, 0, ZkResponse::Created { path: "/x".into() })
    }

    /// A sync then a read of `/x` by process 1 (ops `op`, `op + 1`) from `ms`, seeing `data`
    /// at `version`.
    fn synced_read(&mut self, ms: u64, op: u64, data: &str, version: i32) -> &mut Self {
        self.invoke(ms, 1, op, ZkOperation::Sync { path: "/".into() })
            .ok(ms + 1, op, ZkResponse::Synced)
            .invoke(
                ms + 2,
                1,
                op + 1,
                ZkOperation::GetData { path: "/x".into() },
            )
            .ok(
                ms + 3,
                op + 1,
                ZkResponse::Data {
                    data: data.into(),
                    stat: Stat {
                        version,
                        ..Stat::default()
                    },
                },
            )
    }
}

fn create(path: &str, data: &str) -> ZkOperation {
    ZkOperation::Create {
        path: path.into(),
        data: data.into(),
        mode: CreateMode::Persistent,
    }
}

fn set(data: &str) -> ZkOperation {
    ZkOperation::SetData {
        path: "/x".into(),
        data: data.into(),
        version: None,
    }
}

fn report(history: &History) -> Report {
    let (model, operations) = zk::from_history(history);
    check(&model, &operations, &CheckOptions::default())
}

fn is_violation(report: &Report) -> bool {
    matches!(report.verdict, Verdict::Violation(_))
}

/// `/x` created; op 1 sets it to "b" and its reply is lost (sent as xid 2, applied at 25 ms
/// when `applied`); then a synced read at 40 ms sees `seen`.
fn lost_reply_then_read(applied: bool, seen: (&str, i32)) -> Builder {
    let mut builder = Builder::default();
    builder.created().invoke(20, 0, 1, set("b")).sent(20, 1, 2);
    if applied {
        builder.applied(25, 2);
    }
    builder.unknown(30, 1).synced_read(40, 2, seen.0, seen.1);
    builder
}

#[test]
fn an_applied_write_of_unknown_outcome_took_effect_before_it_was_applied() {
    // A read after the apply that still sees "a": the write took effect, so it is stale.
    let report_of = report(&lost_reply_then_read(true, ("a", 0)).history());
    assert!(is_violation(&report_of), "{report_of}");
    // A black-box checker may place the write after the read: linearizable.
    let blind = report(&lost_reply_then_read(true, ("a", 0)).unresolved());
    assert_eq!(blind.verdict, Verdict::Ok, "{blind}");
    // Seeing "b" is linearizable either way.
    let report_of = report(&lost_reply_then_read(true, ("b", 1)).history());
    assert_eq!(report_of.verdict, Verdict::Ok, "{report_of}");
}

#[test]
fn a_write_of_unknown_outcome_no_replica_applied_is_left_out() {
    // Nothing applied "b", yet a read sees it.
    let report_of = report(&lost_reply_then_read(false, ("b", 1)).history());
    assert!(is_violation(&report_of), "{report_of}");
    assert_eq!(report_of.skipped.get(DID_NOT_TAKE_EFFECT), Some(&1));
    let blind = report(&lost_reply_then_read(false, ("b", 1)).unresolved());
    assert_eq!(blind.verdict, Verdict::Ok, "{blind}");
    assert_eq!(blind.skipped.get(DID_NOT_TAKE_EFFECT), None);
    let report_of = report(&lost_reply_then_read(false, ("a", 0)).history());
    assert_eq!(report_of.verdict, Verdict::Ok, "{report_of}");
}

#[test]
fn a_write_answered_as_failed_is_never_resolved_so_applying_it_is_caught() {
    // The model applies op 1 but answers it as failed; a later read sees its value.
    let mut builder = Builder::default();
    builder
        .created()
        .invoke(20, 0, 1, set("b"))
        .sent(20, 1, 2)
        .applied(25, 2)
        .complete(
            30,
            1,
            OpResult::Fail {
                error: OpError::Zk(ZkError::NoAuth),
            },
        )
        .synced_read(40, 2, "b", 1);
    let report_of = report(&builder.history());
    assert!(is_violation(&report_of), "{report_of}");
}

/// Adds what makes op 1's identity ambiguous.
type MakeAmbiguous = fn(&mut Builder);

/// Lost-reply writes whose request identity is ambiguous stay unresolved: the stale read
/// that an applied write would forbid is accepted, as by the black-box search.
#[test]
fn a_write_whose_identity_is_ambiguous_stays_unresolved() {
    let ambiguous: [(&str, MakeAmbiguous); 4] = [
        ("sent twice", |builder| {
            builder.sent(21, 1, 3);
        }),
        ("applied as two entries", |builder| {
            builder.applied(27, 2);
        }),
        ("another operation sent under the same xid", |builder| {
            builder
                .invoke(22, 2, 9, set("c"))
                .sent(22, 9, 2)
                .unknown(31, 9);
        }),
        ("another invocation under the same id", |builder| {
            builder.invoke(22, 2, 1, set("c"));
        }),
    ];
    for (why, make_ambiguous) in ambiguous {
        let mut builder = lost_reply_then_read(true, ("a", 0));
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
        builder.created();
        for write in 0..WRITES {
            let op = 1 + write;
            let xid = 2 + write;
            let ms = 20 + write;
            builder
                .invoke(ms, 0, op, set(&format!("v{write}")))
                .sent(ms, op, xid);
            // Every other one applied (the last one applied last), the rest lost.
            if write % 2 == 1 {
                builder.applied(100 + write, xid);
            }
            builder.unknown(200, op);
        }
        let last = WRITES - 1;
        builder.synced_read(300, 100, &format!("v{last}"), (WRITES / 2) as i32);
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
    assert!(
        resolved.to_string().contains(&format!(
            "{half} as applied (took effect), {half} as not applied (left out), 0 left \
             ambiguous"
        )),
        "{resolved}"
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
