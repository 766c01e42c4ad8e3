//! The linearizability checker on hand-written histories: the classic register examples,
//! timed-out writes that must (and must not) be assumed to have happened, the evidence of a
//! violation, budgets, parallel checking, Jepsen etcd logs, and etcd key-value semantics
//! (revisions, transactions, ranges).

use checks::linearizability::{
    Budget, CheckOptions, Operation, OperationHistory, Outcome, Report, Verdict, check, jepsen, kv,
    register::{RegisterAction, RegisterInput, RegisterModel, RegisterOutput},
};

/// A register history from `(lane, invoked, returned, action, output)` rows; `returned:
/// None` is an unknown outcome. Values are written as strings.
struct Registers {
    model: RegisterModel,
    history: OperationHistory<RegisterInput, RegisterOutput>,
}

#[derive(Clone, Copy)]
enum Call {
    Read(Option<&'static str>),
    Write(&'static str),
    Cas(&'static str, &'static str, bool),
}

impl Registers {
    fn new() -> Self {
        Self {
            model: RegisterModel::default(),
            history: OperationHistory::default(),
        }
    }

    fn op(
        mut self,
        lane: &str,
        key: &str,
        invoked: u64,
        returned: Option<u64>,
        call: Call,
    ) -> Self {
        let key = self.model.key(key);
        let (action, output) = match call {
            Call::Read(value) => (
                RegisterAction::Read,
                RegisterOutput::Read(value.map(|v| self.model.value(v))),
            ),
            Call::Write(value) => (
                RegisterAction::Write(self.model.value(value)),
                RegisterOutput::Written,
            ),
            Call::Cas(expected, new, swapped) => (
                RegisterAction::CompareAndSet {
                    expected: self.model.value(expected),
                    new: self.model.value(new),
                },
                if swapped {
                    RegisterOutput::Swapped
                } else {
                    RegisterOutput::Mismatch
                },
            ),
        };
        let lane = self.history.lane(lane);
        let id = self.history.operations.len() as u64;
        self.history.operations.push(Operation {
            id,
            lane,
            input: RegisterInput { key, action },
            invoked_at: invoked,
            outcome: match returned {
                Some(at) => Outcome::Returned { at, output },
                None => Outcome::Unknown,
            },
        });
        self
    }

    fn check(&self) -> Report {
        check(&self.model, &self.history, &CheckOptions::default())
    }
}

fn evidence(report: &Report) -> &checks::linearizability::Evidence {
    match &report.verdict {
        Verdict::Violation(evidence) => evidence,
        other => panic!("expected a violation, got {other:?}\n{report}"),
    }
}

/// MIT 6.824 (2017) quiz 2, §VII: a write of 100 overlapping two reads, one seeing the new
/// value and a later-starting one the old: linearizable (the second read can go first).
#[test]
fn overlapping_reads_may_see_old_and_new_values() {
    let report = Registers::new()
        .op("a", "x", 0, Some(100), Call::Write("100"))
        .op("b", "x", 25, Some(75), Call::Read(Some("100")))
        .op("c", "x", 30, Some(60), Call::Read(None))
        .check();
    assert_eq!(report.verdict, Verdict::Ok, "{report}");
}

/// The same quiz: a read that starts after another read saw the new value must not see the
/// old one.
#[test]
fn stale_read_after_a_read_of_the_new_value_is_a_violation() {
    let report = Registers::new()
        .op("a", "x", 0, Some(100), Call::Write("200"))
        .op("b", "x", 10, Some(30), Call::Read(Some("200")))
        .op("c", "x", 40, Some(90), Call::Read(None))
        .check();
    let evidence = evidence(&report);
    // The write and the first read linearize; the stale read cannot follow them.
    assert_eq!(evidence.longest_prefix.len(), 2, "{report}");
    let blocked = &evidence.operations[evidence.unplaceable.expect("a blocked operation")];
    assert_eq!(blocked.description, "read(x) -> nil", "{report}");
}

#[test]
fn stale_read_after_a_completed_write_is_a_violation() {
    let report = Registers::new()
        .op("a", "x", 0, Some(10), Call::Write("1"))
        .op("a", "x", 20, Some(30), Call::Write("2"))
        .op("b", "x", 40, Some(50), Call::Read(Some("1")))
        .check();
    let evidence = evidence(&report);
    assert_eq!(evidence.partition, "key x");
    let blocked = &evidence.operations[evidence.unplaceable.expect("a blocked operation")];
    assert_eq!(blocked.description, "read(x) -> 1", "{report}");
    assert_eq!(evidence.state_after_prefix, "2", "{report}");
}

/// Two concurrent writes, read in opposite orders by two readers: one reader sees 1 then 2,
/// the other 2 then 1. Each reader alone is fine; together no single order works.
#[test]
fn concurrent_writes_read_in_opposite_orders_is_a_violation() {
    let registers = Registers::new()
        .op("w1", "x", 0, Some(100), Call::Write("1"))
        .op("w2", "x", 0, Some(100), Call::Write("2"))
        .op("r1", "x", 10, Some(20), Call::Read(Some("1")))
        .op("r1", "x", 30, Some(40), Call::Read(Some("2")))
        .op("r2", "x", 10, Some(20), Call::Read(Some("2")))
        .op("r2", "x", 30, Some(40), Call::Read(Some("1")));
    evidence(&registers.check());
    // Either reader alone is linearizable.
    let one_reader = Registers::new()
        .op("w1", "x", 0, Some(100), Call::Write("1"))
        .op("w2", "x", 0, Some(100), Call::Write("2"))
        .op("r1", "x", 10, Some(20), Call::Read(Some("1")))
        .op("r1", "x", 30, Some(40), Call::Read(Some("2")));
    assert_eq!(one_reader.check().verdict, Verdict::Ok);
}

/// A write timed out; a later read sees its value: the write must be assumed to have
/// happened (the history is linearizable only because of that).
#[test]
fn a_timed_out_write_that_a_read_saw_must_have_happened() {
    let report = Registers::new()
        .op("a", "x", 0, Some(10), Call::Write("1"))
        .op("b", "x", 20, None, Call::Write("2"))
        .op("c", "x", 1_000, Some(1_010), Call::Read(Some("2")))
        .op("c", "x", 1_020, Some(1_030), Call::Read(Some("2")))
        .check();
    assert_eq!(report.verdict, Verdict::Ok, "{report}");
    // Had the write failed definitely (left out), the read of 2 would be impossible.
    let without = Registers::new()
        .op("a", "x", 0, Some(10), Call::Write("1"))
        .op("c", "x", 1_000, Some(1_010), Call::Read(Some("2")));
    evidence(&without.check());
}

/// A read whose outcome is unknown constrains nothing and is left out of the search — and
/// counted with what was left out, never dropped silently.
#[test]
fn unknown_reads_are_left_out_and_counted() {
    let report = Registers::new()
        .op("a", "x", 0, Some(10), Call::Write("1"))
        .op("b", "x", 20, None, Call::Read(Some("2")))
        .op("c", "x", 30, None, Call::Read(None))
        .check();
    assert_eq!(report.verdict, Verdict::Ok, "{report}");
    assert_eq!(report.operations, 3);
    assert_eq!(
        report.skipped.get(checks::linearizability::UNKNOWN_READ),
        Some(&2),
        "{report}"
    );
}

/// A write timed out long ago; later reads still see the old value: the write must be
/// assumed not to have happened (yet) — its return time is open-ended.
#[test]
fn a_timed_out_write_no_read_saw_may_never_have_happened() {
    let report = Registers::new()
        .op("a", "x", 0, Some(10), Call::Write("1"))
        .op("b", "x", 20, None, Call::Write("2"))
        .op("c", "x", 1_000, Some(1_010), Call::Read(Some("1")))
        .op("c", "x", 5_000, Some(5_010), Call::Read(Some("1")))
        .check();
    assert_eq!(report.verdict, Verdict::Ok, "{report}");
    // But once a read saw it, it cannot be undone.
    let undone = Registers::new()
        .op("a", "x", 0, Some(10), Call::Write("1"))
        .op("b", "x", 20, None, Call::Write("2"))
        .op("c", "x", 1_000, Some(1_010), Call::Read(Some("2")))
        .op("c", "x", 5_000, Some(5_010), Call::Read(Some("1")));
    evidence(&undone.check());
}

#[test]
fn a_failed_compare_and_set_is_an_observation() {
    // cas(1 -> 2) failed although 1 was written before it and nothing else wrote.
    let report = Registers::new()
        .op("a", "x", 0, Some(10), Call::Write("1"))
        .op("b", "x", 20, Some(30), Call::Cas("1", "2", false))
        .check();
    evidence(&report);
    let report = Registers::new()
        .op("a", "x", 0, Some(10), Call::Write("1"))
        .op("b", "x", 20, Some(30), Call::Cas("1", "2", true))
        .op("c", "x", 40, Some(50), Call::Read(Some("2")))
        .check();
    assert_eq!(report.verdict, Verdict::Ok, "{report}");
}

/// Operations touching at an instant count as concurrent (a read that returns at the
/// instant a write is invoked may see it), as in Porcupine.
#[test]
fn operations_that_touch_at_an_instant_are_concurrent() {
    let report = Registers::new()
        .op("a", "x", 10, Some(20), Call::Write("1"))
        .op("b", "x", 0, Some(10), Call::Read(Some("1")))
        .check();
    assert_eq!(report.verdict, Verdict::Ok, "{report}");
}

/// The evidence comes from the smallest failing key, and the others are reported as
/// searched only up to it.
#[test]
fn the_evidence_is_the_smallest_failing_partition() {
    let mut registers = Registers::new();
    // Key "big" fails with 6 operations, key "small" with 2; key "fine" passes.
    for round in 0..3 {
        let at = round * 100;
        registers = registers
            .op("a", "big", at, Some(at + 10), Call::Write("1"))
            .op("b", "big", at + 20, Some(at + 30), Call::Read(Some("0")));
    }
    registers = registers
        .op("a", "fine", 0, Some(10), Call::Write("1"))
        .op("b", "fine", 20, Some(30), Call::Read(Some("1")))
        .op("a", "small", 0, Some(10), Call::Write("1"))
        .op("b", "small", 20, Some(30), Call::Read(Some("2")));
    let report = registers.check();
    let evidence = evidence(&report);
    assert_eq!(evidence.partition, "key small", "{report}");
    assert_eq!(evidence.operations.len(), 2);
    assert_eq!(report.partitions, 3);
    // Smallest first, ties in key order: fine (2), small (2, fails); the 6-operation key is
    // not searched after the violation.
    assert_eq!(report.partitions_searched, 2, "{report}");
    let html = checks::linearizability::html::render("register", &report);
    assert!(
        html.contains("<svg") && html.contains("read(small) -&gt; 2"),
        "{html}"
    );
    // The page opens scrolled to the operation that cannot be placed: the read.
    let failing = &html[html.find("<g id=\"unplaceable\">").expect("marked")..];
    assert!(
        failing[..failing.find("</g>").unwrap()].contains("read(small) -&gt; 2"),
        "{html}"
    );
    assert!(html.contains("scrollIntoView"), "{html}");
}

/// Many concurrent writes of distinct values and a read of a value nobody wrote: the search
/// must try every order. With a tiny budget the verdict is Unknown, never a hang.
#[test]
fn an_exhausted_budget_gives_unknown() {
    let mut registers = Registers::new();
    const WRITERS: u64 = 14;
    let values = [
        "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13",
    ];
    for (lane, value) in values.iter().enumerate().take(WRITERS as usize) {
        registers = registers.op(&format!("w{lane}"), "x", 0, Some(1_000), Call::Write(value));
    }
    registers = registers.op("r", "x", 2_000, Some(2_010), Call::Read(Some("nobody")));
    let options = CheckOptions::default().with_max_steps_per_partition(1_000);
    let report = check(&registers.model, &registers.history, &options);
    match &report.verdict {
        Verdict::Unknown(unfinished) => {
            assert_eq!(unfinished.budget, Budget::Steps);
            assert_eq!(unfinished.partition, "key x");
        }
        other => panic!("expected Unknown, got {other:?}"),
    }
    // A time limit that has already passed stops the search at its first clock reading
    // (every 4,096 steps), however large the step budget.
    let options = CheckOptions::default()
        .with_max_steps_per_partition(u64::MAX)
        .with_time_limit(std::time::Duration::ZERO);
    match check(&registers.model, &registers.history, &options).verdict {
        Verdict::Unknown(unfinished) => {
            assert_eq!(unfinished.budget, Budget::Time);
            assert_eq!(unfinished.steps, 4_096);
        }
        other => panic!("expected Unknown, got {other:?}"),
    }
    // Memoization makes the full search small (states are just the last value): the default
    // budget finds the violation.
    let report = registers.check();
    assert!(report.steps > 4_096, "{report}");
    evidence(&report);
}

/// Parallel checking gives exactly the sequential report.
#[test]
fn parallel_checking_gives_the_sequential_report() {
    let mut registers = Registers::new();
    for key in 0..40 {
        let key: &'static str = Box::leak(format!("k{key}").into_boxed_str());
        let stale = key == "k17" || key == "k33";
        registers = registers
            .op("a", key, 0, Some(10), Call::Write("1"))
            .op("b", key, 5, Some(15), Call::Write("2"))
            .op(
                "c",
                key,
                20,
                Some(30),
                Call::Read(Some(if stale { "0" } else { "2" })),
            )
            .op("c", key, 40, Some(50), Call::Read(Some("2")));
    }
    let sequential = check(
        &registers.model,
        &registers.history,
        &CheckOptions::default(),
    );
    for jobs in [2, 4] {
        let parallel = check(
            &registers.model,
            &registers.history,
            &CheckOptions::default().with_jobs(jobs),
        );
        assert_eq!(parallel, sequential, "{jobs} jobs");
    }
    assert_eq!(evidence(&sequential).partition, "key k17");
}

// ---- Jepsen etcd logs ----

fn jepsen_verdict(text: &str) -> Verdict {
    let (model, history) = jepsen::read_etcd_log(text).expect("a valid log");
    check(&model, &history, &CheckOptions::default()).verdict
}

#[test]
fn jepsen_fixtures_agree_with_porcupine_semantics() {
    let linearizable = include_str!("testdata/jepsen/linearizable.log");
    let violation = include_str!("testdata/jepsen/violation.log");
    assert_eq!(jepsen_verdict(linearizable), Verdict::Ok);
    assert!(matches!(jepsen_verdict(violation), Verdict::Violation(_)));
}

/// The logs of Porcupine's `test_data/jepsen/` that Porcupine finds linearizable
/// (`etcd_NNN.log`, by NNN); it finds every other one non-linearizable.
const PORCUPINE_LINEARIZABLE_ETCD_LOGS: [u32; 23] = [
    2, 5, 7, 18, 25, 31, 38, 45, 48, 49, 51, 53, 56, 67, 75, 76, 80, 87, 92, 98, 100, 101, 102,
];

/// Every `etcd_NNN.log` in `COORDSIM_JEPSEN_LOGS` (a copy of Porcupine's
/// `test_data/jepsen/`) gets Porcupine's verdict. Not in the default run: the logs are
/// Porcupine's data, not ours. Run with
/// `COORDSIM_JEPSEN_LOGS=DIR cargo test --release -p checks --test linearizability -- --ignored`.
#[test]
#[ignore = "needs COORDSIM_JEPSEN_LOGS=<a copy of Porcupine's test_data/jepsen>"]
fn verdicts_agree_with_porcupine_on_its_jepsen_etcd_logs() {
    let directory = std::env::var("COORDSIM_JEPSEN_LOGS")
        .expect("COORDSIM_JEPSEN_LOGS must name a copy of Porcupine's test_data/jepsen");
    let mut entries: Vec<_> = std::fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("COORDSIM_JEPSEN_LOGS={directory}: {error}"))
        .map(|entry| entry.expect("a directory entry").path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?;
            let number = name
                .strip_prefix("etcd_")?
                .strip_suffix(".log")?
                .parse()
                .ok()?;
            Some((number, path))
        })
        .collect();
    entries.sort();
    assert!(!entries.is_empty(), "no etcd_NNN.log in {directory}");
    let mut disagreements = Vec::new();
    let mut empty = 0;
    for (number, path) in &entries {
        let text = std::fs::read_to_string(path).expect("a readable log");
        // etcd_095.log holds no operation: an empty history is bad input here (Porcupine
        // calls it linearizable).
        if !text.lines().any(|line| line.contains(":invoke")) {
            empty += 1;
            continue;
        }
        let verdict = jepsen_verdict(&text);
        let expected_linearizable = PORCUPINE_LINEARIZABLE_ETCD_LOGS.contains(number);
        let (agrees, ours) = match verdict {
            Verdict::Ok => (expected_linearizable, "linearizable"),
            Verdict::Violation(_) => (!expected_linearizable, "a violation"),
            Verdict::Unknown(_) => (false, "unknown"),
        };
        if !agrees {
            disagreements.push(format!(
                "etcd_{number:03}.log: Porcupine finds it {}, coordsim finds {ours}",
                if expected_linearizable {
                    "linearizable"
                } else {
                    "not linearizable"
                }
            ));
        }
    }
    println!(
        "{} Porcupine Jepsen logs checked, {empty} without operations left out",
        entries.len() - empty
    );
    assert!(
        entries.len() - empty >= 102,
        "Porcupine publishes 102 logs with operations"
    );
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

#[test]
fn jepsen_logs_with_bad_lines_are_rejected_with_the_line_number() {
    let cases = [
        (
            "INFO  jepsen.util - x\t:invoke\t:read\tnil\n",
            "line 1:",
            "not a number",
        ),
        (
            "INFO  jepsen.util - 1\t:invoke\t:read\tnil\nINFO  jepsen.util - 1\t:invoke\t:read\tnil\n",
            "line 2:",
            "invoked again",
        ),
        (
            "INFO  jepsen.util - 1\t:ok\t:read\t3\n",
            "line 1:",
            "no open operation",
        ),
        (
            "INFO  jepsen.util - 1\t:invoke\t:write\tseven\n",
            "line 1:",
            "a number or nil",
        ),
        (
            "INFO  jepsen.util - 1\t:invoke\t:cas\t[1\n",
            "line 1:",
            "[from to]",
        ),
        (
            "INFO  jepsen.util - 1\t:invoke\t:append\t1\n",
            "line 1:",
            "unknown function",
        ),
        ("hello\n", "line 0:", "no operations"),
    ];
    for (text, line, problem) in cases {
        let error = jepsen::read_etcd_log(text).expect_err(text).to_string();
        assert!(
            error.starts_with(line) && error.contains(problem),
            "{text:?}: {error}"
        );
        assert_eq!(error.lines().count(), 1, "one line: {error}");
    }
}

// ---- etcd key-value semantics ----

mod kv_semantics {
    use super::*;
    use sim::{
        NodeId,
        history::{
            Event, History, OpId, OpResult, Operation as HistoryOperation, Record, Response,
            kv::{
                Compare, CompareOperator, CompareTarget, KeyValue, KvOperation, KvResponse,
                ReadConsistency,
            },
        },
        time::SimTime,
    };

    /// A history of (client, invoked ms, completed ms or None, operation, response).
    type Row = (u32, u64, Option<u64>, KvOperation, Option<KvResponse>);

    fn history(rows: Vec<Row>) -> History {
        let mut records = Vec::new();
        for (index, (client, invoked, completed, operation, response)) in
            rows.into_iter().enumerate()
        {
            let op_id = OpId(index as u64);
            records.push((
                invoked,
                Record {
                    at: SimTime::from_nanos(invoked * 1_000_000),
                    node: Some(NodeId::client(client as usize)),
                    event: Event::Invoke {
                        client: NodeId::client(client as usize),
                        process: 0,
                        op_id,
                        operation: HistoryOperation::Kv(operation),
                    },
                },
            ));
            let result = match (completed, response) {
                (Some(_), Some(response)) => OpResult::Ok {
                    response: Response::Kv(response),
                },
                _ => OpResult::Unknown {
                    reason: "timed out".into(),
                },
            };
            let at = completed.unwrap_or(invoked + 1);
            records.push((
                at,
                Record {
                    at: SimTime::from_nanos(at * 1_000_000),
                    node: Some(NodeId::client(client as usize)),
                    event: Event::Complete { op_id, result },
                },
            ));
        }
        records.sort_by_key(|(at, _)| *at);
        History::from_records(records.into_iter().map(|(_, record)| record).collect())
    }

    fn put(key: &str, value: &str) -> KvOperation {
        KvOperation::Put {
            prev_kv: false,
            key: key.into(),
            value: value.into(),
            lease: None,
        }
    }
    fn get(key: &str) -> KvOperation {
        KvOperation::Get {
            key: key.into(),
            range_end: None,
            revision: None,
            consistency: ReadConsistency::Linearizable,
        }
    }
    fn put_ok(revision: u64) -> Option<KvResponse> {
        Some(KvResponse::Put {
            prev_kv: None,
            revision,
        })
    }
    fn kv(key: &str, value: &str, create: u64, modified: u64, version: u64) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: value.into(),
            create_revision: create,
            mod_revision: modified,
            version,
            lease: None,
        }
    }
    fn got(revision: u64, kvs: Vec<KeyValue>) -> Option<KvResponse> {
        Some(KvResponse::Get { revision, kvs })
    }

    fn verdict(history: &History) -> Report {
        let (model, operations) = kv::from_history(history);
        check(&model, &operations, &CheckOptions::default())
    }

    #[test]
    fn a_correct_history_with_revisions_passes() {
        let history = history(vec![
            (0, 0, Some(10), put("a", "1"), put_ok(2)),
            (1, 5, Some(15), put("b", "1"), put_ok(3)),
            (0, 20, Some(30), put("a", "2"), put_ok(4)),
            (
                1,
                25,
                Some(35),
                get("a"),
                got(4, vec![kv("a", "2", 2, 4, 2)]),
            ),
        ]);
        let report = verdict(&history);
        assert_eq!(report.verdict, Verdict::Ok, "{report}");
        assert_eq!(report.partitions, 2);
    }

    /// A put's or delete's `prev_kv` is what the key was just before the write: the right
    /// one passes; one that the write's place in the order cannot have seen is a violation.
    #[test]
    fn prev_kv_is_checked_as_a_read_just_before_the_write() {
        let put_prev = |key: &str, value: &str| KvOperation::Put {
            key: key.into(),
            value: value.into(),
            lease: None,
            prev_kv: true,
        };
        let put_saw = |revision, prev_kv| {
            Some(KvResponse::Put {
                revision,
                prev_kv: Some(prev_kv),
            })
        };
        let delete_prev = KvOperation::Delete {
            key: "a".into(),
            range_end: None,
            prev_kv: true,
        };
        let deleted = |prev_kvs| {
            Some(KvResponse::Delete {
                revision: 4,
                deleted: 1,
                prev_kvs,
            })
        };
        let right = history(vec![
            (0, 0, Some(10), put("a", "1"), put_ok(2)),
            (
                0,
                20,
                Some(30),
                put_prev("a", "2"),
                put_saw(3, kv("a", "1", 2, 2, 1)),
            ),
            (
                0,
                40,
                Some(50),
                delete_prev.clone(),
                deleted(vec![kv("a", "2", 2, 3, 2)]),
            ),
        ]);
        assert_eq!(verdict(&right).verdict, Verdict::Ok);
        // The put at 3 says the key was absent (or held a value never written) before it.
        for wrong in [
            Some(KvResponse::Put {
                revision: 3,
                prev_kv: None,
            }),
            put_saw(3, kv("a", "9", 2, 2, 1)),
        ] {
            let history = history(vec![
                (0, 0, Some(10), put("a", "1"), put_ok(2)),
                (0, 20, Some(30), put_prev("a", "2"), wrong),
            ]);
            evidence(&verdict(&history));
        }
        // The delete says it deleted the first value, which the put had replaced.
        let stale = history(vec![
            (0, 0, Some(10), put("a", "1"), put_ok(2)),
            (0, 20, Some(30), put("a", "2"), put_ok(3)),
            (
                0,
                40,
                Some(50),
                delete_prev,
                deleted(vec![kv("a", "1", 2, 2, 1)]),
            ),
        ]);
        evidence(&verdict(&stale));
    }

    #[test]
    fn a_read_with_the_wrong_mod_revision_or_version_is_a_violation() {
        for seen in [
            kv("a", "2", 2, 5, 2),
            kv("a", "2", 2, 4, 3),
            kv("a", "2", 3, 4, 2),
        ] {
            let history = history(vec![
                (0, 0, Some(10), put("a", "1"), put_ok(2)),
                (0, 20, Some(30), put("a", "2"), put_ok(4)),
                (1, 40, Some(50), get("a"), got(6, vec![seen.clone()])),
            ]);
            evidence(&verdict(&history));
        }
    }

    /// Two concurrent reads that could be ordered either way by their values, but whose
    /// header revisions contradict the order the values force.
    #[test]
    fn header_revisions_must_not_go_back() {
        let history = history(vec![
            (0, 0, Some(10), put("a", "1"), put_ok(2)),
            (0, 20, Some(100), put("a", "2"), put_ok(7)),
            // Saw the new value at revision 7 ...
            (
                1,
                30,
                Some(40),
                get("a"),
                got(7, vec![kv("a", "2", 2, 7, 2)]),
            ),
            // ... and a later read (after the first returned) reports revision 6: the store's
            // revision went back.
            (
                2,
                50,
                Some(60),
                get("a"),
                got(6, vec![kv("a", "2", 2, 7, 2)]),
            ),
        ]);
        evidence(&verdict(&history));
    }

    /// A read at header revision R must follow every write of a revision ≤ R (on its key),
    /// even one that completed after the read did.
    #[test]
    fn a_read_missing_a_write_below_its_revision_is_a_violation() {
        let history = history(vec![
            (0, 0, Some(10), put("a", "1"), put_ok(2)),
            (0, 20, Some(100), put("a", "2"), put_ok(5)),
            // Overlaps the write, reads the old value, yet claims revision 6 ≥ 5.
            (
                1,
                30,
                Some(40),
                get("a"),
                got(6, vec![kv("a", "1", 2, 2, 1)]),
            ),
        ]);
        evidence(&verdict(&history));
        // At revision 4 it is fine.
        let history = self::history(vec![
            (0, 0, Some(10), put("a", "1"), put_ok(2)),
            (0, 20, Some(100), put("a", "2"), put_ok(5)),
            (
                1,
                30,
                Some(40),
                get("a"),
                got(4, vec![kv("a", "1", 2, 2, 1)]),
            ),
        ]);
        assert_eq!(verdict(&history).verdict, Verdict::Ok);
    }

    /// A range read is checked per key, at its header revision: a snapshot that shows one
    /// key's write but not an earlier write of another key is caught through the revisions.
    #[test]
    fn range_reads_are_checked_per_key_at_their_revision() {
        let range = KvOperation::Get {
            key: "a".into(),
            range_end: Some("c".into()),
            revision: None,
            consistency: ReadConsistency::Linearizable,
        };
        let good = history(vec![
            (0, 0, Some(10), put("a", "1"), put_ok(2)),
            (0, 20, Some(30), put("b", "1"), put_ok(3)),
            (
                1,
                40,
                Some(50),
                range.clone(),
                got(3, vec![kv("a", "1", 2, 2, 1), kv("b", "1", 3, 3, 1)]),
            ),
        ]);
        assert_eq!(verdict(&good).verdict, Verdict::Ok);
        // Shows b (revision 3) but not a (revision 2): a torn snapshot.
        let torn = history(vec![
            (0, 0, Some(10), put("a", "1"), put_ok(2)),
            (1, 5, Some(30), put("b", "1"), put_ok(3)),
            (2, 6, Some(50), range, got(3, vec![kv("b", "1", 3, 3, 1)])),
        ]);
        let report = verdict(&torn);
        assert_eq!(evidence(&report).partition, "key a", "{report}");
    }

    #[test]
    fn transactions_are_checked_against_their_compares() {
        let txn = |version: u64| KvOperation::Txn {
            compares: vec![Compare {
                key: "a".into(),
                target: CompareTarget::Version(version),
                operator: CompareOperator::Greater,
                range_end: None,
            }],
            success: vec![put("a", "t")],
            failure: vec![get("a")],
        };
        let succeeded = |revision| {
            Some(KvResponse::Txn {
                revision,
                succeeded: true,
                responses: vec![KvResponse::Put {
                    prev_kv: None,
                    revision,
                }],
            })
        };
        let failed = |revision, kvs| {
            Some(KvResponse::Txn {
                revision,
                succeeded: false,
                responses: vec![KvResponse::Get { revision, kvs }],
            })
        };
        // Version is 1 after one put: "version > 0" holds, "version > 1" does not.
        let good = history(vec![
            (0, 0, Some(10), put("a", "1"), put_ok(2)),
            (1, 20, Some(30), txn(0), succeeded(3)),
            (
                1,
                40,
                Some(50),
                txn(5),
                failed(3, vec![kv("a", "t", 2, 3, 2)]),
            ),
        ]);
        let report = verdict(&good);
        assert_eq!(report.verdict, Verdict::Ok, "{report}");
        // Claims "version > 1" held after a single put.
        let bad = history(vec![
            (0, 0, Some(10), put("a", "1"), put_ok(2)),
            (1, 20, Some(30), txn(1), succeeded(3)),
        ]);
        evidence(&verdict(&bad));
    }

    /// A put whose outcome is unknown gets its revision from the first read that shows it.
    #[test]
    fn an_unknown_put_is_bound_by_the_read_that_shows_it() {
        let history_with = |second_mod: u64| {
            history(vec![
                (0, 0, Some(10), put("a", "1"), put_ok(2)),
                (0, 20, None, put("a", "2"), None),
                (
                    1,
                    40,
                    Some(50),
                    get("a"),
                    got(9, vec![kv("a", "2", 2, 8, 2)]),
                ),
                (
                    1,
                    60,
                    Some(70),
                    get("a"),
                    got(9, vec![kv("a", "2", 2, second_mod, 2)]),
                ),
            ])
        };
        assert_eq!(verdict(&history_with(8)).verdict, Verdict::Ok);
        // The same write cannot show two mod revisions.
        evidence(&verdict(&history_with(9)));
    }

    /// A transaction left out (a branch holds a serializable read, which the model does not
    /// follow) that writes `a`: a later read of `a` shows its value. Judging `a` without that
    /// write would call the read a violation (found through the drop-in etcd-client, whose
    /// users write such transactions); `a` is left out with it, while `b` is still judged.
    #[test]
    fn keys_written_by_a_left_out_transaction_are_left_out() {
        let left_out_txn = KvOperation::Txn {
            compares: vec![],
            success: vec![
                put("a", "2"),
                KvOperation::Get {
                    key: "z".into(),
                    range_end: None,
                    revision: None,
                    consistency: ReadConsistency::Serializable,
                },
            ],
            failure: vec![],
        };
        let txn_ok = Some(KvResponse::Txn {
            revision: 3,
            succeeded: true,
            responses: vec![
                KvResponse::Put {
                    prev_kv: None,
                    revision: 3,
                },
                KvResponse::Get {
                    revision: 3,
                    kvs: vec![],
                },
            ],
        });
        let history_with = |b_read: KeyValue| {
            history(vec![
                (0, 0, Some(10), put("a", "1"), put_ok(2)),
                (0, 20, Some(30), left_out_txn.clone(), txn_ok.clone()),
                (
                    1,
                    40,
                    Some(50),
                    get("a"),
                    got(3, vec![kv("a", "2", 2, 3, 2)]),
                ),
                (0, 60, Some(70), put("b", "1"), put_ok(4)),
                (1, 80, Some(90), get("b"), got(4, vec![b_read])),
            ])
        };
        let report = verdict(&history_with(kv("b", "1", 4, 4, 1)));
        assert_eq!(report.verdict, Verdict::Ok, "{report}");
        assert_eq!(
            report.operations, 2,
            "only b's put and read are judged: {report}"
        );
        // b is still judged: a read of a value nobody wrote is caught.
        evidence(&verdict(&history_with(kv("b", "0", 4, 4, 1))));
    }

    #[test]
    fn serializable_reads_and_leased_keys_are_reported_as_not_checked() {
        let history = history(vec![
            (0, 0, Some(10), put("a", "1"), put_ok(2)),
            (
                1,
                20,
                Some(30),
                KvOperation::Get {
                    key: "a".into(),
                    range_end: None,
                    revision: None,
                    consistency: ReadConsistency::Serializable,
                },
                got(1, vec![]),
            ),
            (
                0,
                40,
                Some(50),
                KvOperation::Put {
                    prev_kv: false,
                    key: "l".into(),
                    value: "x".into(),
                    lease: Some(7),
                },
                put_ok(3),
            ),
        ]);
        let report = verdict(&history);
        assert_eq!(report.verdict, Verdict::Ok, "{report}");
        assert_eq!(report.operations, 1);
        assert_eq!(
            report
                .skipped
                .get("serializable read (not linearizable by design)"),
            Some(&1)
        );
        assert_eq!(
            report.skipped.get("touches only keys left out (attached to a lease, or written by an operation left out)"),
            Some(&1)
        );
    }
}

// ---- ZooKeeper semantics ----

mod zk_semantics {
    use super::*;
    use checks::linearizability::zk;
    use sim::{
        NodeId,
        history::{
            Event, History, OpError, OpId, OpResult, Operation as HistoryOperation, Record,
            Response,
            zk::{CreateMode, Stat, ZkError, ZkOperation, ZkResponse},
        },
        time::SimTime,
    };

    enum Result_ {
        Ok(ZkResponse),
        Err(ZkError),
    }

    /// A history of (client, invoked ms, completed ms, operation, result).
    fn history(rows: Vec<(usize, u64, u64, ZkOperation, Result_)>) -> History {
        let mut records = Vec::new();
        for (index, (client, invoked, completed, operation, result)) in rows.into_iter().enumerate()
        {
            let op_id = OpId(index as u64);
            let node = NodeId::client(client);
            records.push(Record {
                at: SimTime::from_nanos(invoked * 1_000_000),
                node: Some(node),
                event: Event::Invoke {
                    client: node,
                    process: 0,
                    op_id,
                    operation: HistoryOperation::Zk(operation),
                },
            });
            let result = match result {
                Result_::Ok(response) => OpResult::Ok {
                    response: Response::Zk(response),
                },
                Result_::Err(error) => OpResult::Fail {
                    error: OpError::Zk(error),
                },
            };
            records.push(Record {
                at: SimTime::from_nanos(completed * 1_000_000),
                node: Some(node),
                event: Event::Complete { op_id, result },
            });
        }
        records.sort_by_key(|record| record.at);
        History::from_records(records)
    }

    fn stat(version: i32, czxid: u64, mzxid: u64) -> Stat {
        Stat {
            czxid,
            mzxid,
            pzxid: czxid,
            version,
            ..Stat::default()
        }
    }
    fn create(path: &str, data: &str) -> ZkOperation {
        ZkOperation::Create {
            path: path.into(),
            data: data.into(),
            mode: CreateMode::Persistent,
        }
    }
    fn set(path: &str, data: &str, version: Option<i32>) -> ZkOperation {
        ZkOperation::SetData {
            path: path.into(),
            data: data.into(),
            version,
        }
    }
    fn get(path: &str) -> ZkOperation {
        ZkOperation::GetData { path: path.into() }
    }
    fn sync() -> ZkOperation {
        ZkOperation::Sync { path: "/".into() }
    }

    fn report(history: &History) -> Report {
        let (model, operations) = zk::from_history(history);
        check(&model, &operations, &CheckOptions::default())
    }

    fn writes() -> Vec<(usize, u64, u64, ZkOperation, Result_)> {
        vec![
            (
                0,
                0,
                10,
                create("/x", "a"),
                Result_::Ok(ZkResponse::Created { path: "/x".into() }),
            ),
            (
                0,
                20,
                30,
                set("/x", "b", Some(0)),
                Result_::Ok(ZkResponse::Stat {
                    stat: stat(1, 5, 7),
                }),
            ),
        ]
    }

    #[test]
    fn a_synced_read_of_the_latest_write_passes() {
        let mut rows = writes();
        rows.push((1, 40, 45, sync(), Result_::Ok(ZkResponse::Synced)));
        rows.push((
            1,
            50,
            55,
            get("/x"),
            Result_::Ok(ZkResponse::Data {
                data: "b".into(),
                stat: stat(1, 5, 7),
            }),
        ));
        let report = report(&history(rows));
        assert_eq!(report.verdict, Verdict::Ok, "{report}");
    }

    /// ZooKeeper Programmer's Guide: sync then read sees every write completed before the
    /// sync (ZOOKEEPER-1675 is the bug that breaks it).
    #[test]
    fn a_synced_read_that_misses_an_earlier_write_is_a_violation() {
        let mut rows = writes();
        rows.push((1, 40, 45, sync(), Result_::Ok(ZkResponse::Synced)));
        rows.push((
            1,
            50,
            55,
            get("/x"),
            Result_::Ok(ZkResponse::Data {
                data: "a".into(),
                stat: stat(0, 5, 5),
            }),
        ));
        let report = report(&history(rows));
        assert_eq!(evidence(&report).partition, "path /x", "{report}");
    }

    /// A plain read is served by the connected server and may be stale: not checked.
    #[test]
    fn a_stale_plain_read_is_left_out_and_counted() {
        let mut rows = writes();
        rows.push((
            1,
            50,
            55,
            get("/x"),
            Result_::Ok(ZkResponse::Data {
                data: "a".into(),
                stat: stat(0, 5, 5),
            }),
        ));
        let report = report(&history(rows));
        assert_eq!(report.verdict, Verdict::Ok, "{report}");
        assert_eq!(
            report.skipped.get(
                "plain read (sequentially consistent by design: served by the connected server)"
            ),
            Some(&1)
        );
    }

    /// Failed writes are observations: a BadVersion when the version matched, or a
    /// NodeExists for a node nobody created, cannot be explained.
    #[test]
    fn definite_errors_are_checked_against_the_state() {
        let mut rows = writes();
        rows.push((
            1,
            40,
            50,
            set("/x", "c", Some(1)),
            Result_::Err(ZkError::BadVersion),
        ));
        evidence(&report(&history(rows)));
        let rows = vec![(
            0,
            0,
            10,
            create("/y", "a"),
            Result_::Err(ZkError::NodeExists),
        )];
        evidence(&report(&history(rows)));
        // A BadVersion against the old version is fine.
        let mut rows = writes();
        rows.push((
            1,
            40,
            50,
            set("/x", "c", Some(0)),
            Result_::Err(ZkError::BadVersion),
        ));
        assert_eq!(report(&history(rows)).verdict, Verdict::Ok);
    }

    /// The setData stat must continue the version count.
    #[test]
    fn a_set_data_stat_that_skips_a_version_is_a_violation() {
        let mut rows = writes();
        rows.push((
            1,
            40,
            50,
            set("/x", "c", None),
            Result_::Ok(ZkResponse::Stat {
                stat: stat(3, 5, 9),
            }),
        ));
        evidence(&report(&history(rows)));
    }

    /// The children's Stat as ZooKeeper shows it: two creates and a delete under `/p` leave
    /// one child and cversion 3 (the stat counts creates and deletes, `DataNode.copyStat`);
    /// a synced read showing anything else is a violation.
    #[test]
    fn a_synced_read_checks_the_childrens_stat() {
        let parent_read = |num_children: u32, cversion: i32| {
            let created = |path: &str| ZkResponse::Created { path: path.into() };
            let rows = vec![
                (0, 0, 10, create("/p", "a"), Result_::Ok(created("/p"))),
                (
                    0,
                    11,
                    20,
                    create("/p/c1", ""),
                    Result_::Ok(created("/p/c1")),
                ),
                (
                    0,
                    21,
                    30,
                    create("/p/c2", ""),
                    Result_::Ok(created("/p/c2")),
                ),
                (
                    0,
                    31,
                    40,
                    ZkOperation::Delete {
                        path: "/p/c1".into(),
                        version: None,
                    },
                    Result_::Ok(ZkResponse::Deleted),
                ),
                (1, 41, 45, sync(), Result_::Ok(ZkResponse::Synced)),
                (
                    1,
                    50,
                    55,
                    get("/p"),
                    Result_::Ok(ZkResponse::Data {
                        data: "a".into(),
                        stat: Stat {
                            num_children,
                            cversion,
                            pzxid: 9,
                            ..stat(0, 5, 5)
                        },
                    }),
                ),
            ];
            report(&history(rows))
        };
        let report = parent_read(1, 3);
        assert_eq!(report.verdict, Verdict::Ok, "{report}");
        // The old model's count (creates only), and a child too many.
        assert_eq!(evidence(&parent_read(1, 2)).partition, "path /p");
        assert_eq!(evidence(&parent_read(2, 2)).partition, "path /p");
    }

    /// One history process may have calls in flight together (the zookeeper-client
    /// drop-in's clones share their session's process): each call is judged by its own
    /// invocation and return, never in the order the process invoked them. Two overlapping
    /// setData of one process may take effect in either order; one that returned before
    /// the other was invoked may not go second.
    #[test]
    fn overlapping_calls_of_one_process_are_judged_by_their_intervals() {
        let run = |first_returns_at: u64| {
            let rows = vec![
                (
                    0,
                    0,
                    10,
                    create("/x", "a"),
                    Result_::Ok(ZkResponse::Created { path: "/x".into() }),
                ),
                // Process 0 invokes "b" first; it takes effect second (version 2).
                (
                    0,
                    20,
                    first_returns_at,
                    set("/x", "b", None),
                    Result_::Ok(ZkResponse::Stat {
                        stat: stat(2, 5, 9),
                    }),
                ),
                (
                    0,
                    25,
                    35,
                    set("/x", "c", None),
                    Result_::Ok(ZkResponse::Stat {
                        stat: stat(1, 5, 7),
                    }),
                ),
                (1, 50, 55, sync(), Result_::Ok(ZkResponse::Synced)),
                (
                    1,
                    60,
                    65,
                    get("/x"),
                    Result_::Ok(ZkResponse::Data {
                        data: "b".into(),
                        stat: stat(2, 5, 9),
                    }),
                ),
            ];
            report(&history(rows))
        };
        let overlapping = run(40);
        assert_eq!(overlapping.verdict, Verdict::Ok, "{overlapping}");
        assert_eq!(overlapping.operations, 4, "{overlapping}");
        assert_eq!(evidence(&run(24)).partition, "path /x");
    }

    /// A create inside a multi may answer `create2`'s reply (path and stat): the node it
    /// names is checked, so a synced listing without it is a violation.
    #[test]
    fn a_multi_create_answering_create2_is_checked() {
        let listing = |children: Vec<String>| {
            let rows = vec![
                (
                    0,
                    0,
                    10,
                    ZkOperation::Multi {
                        ops: vec![ZkOperation::Create {
                            path: "/n-".into(),
                            data: "a".into(),
                            mode: CreateMode::PersistentSequential,
                        }],
                    },
                    Result_::Ok(ZkResponse::Multi {
                        results: vec![ZkResponse::CreatedWithStat {
                            path: "/n-0000000000".into(),
                            stat: stat(0, 5, 5),
                        }],
                    }),
                ),
                (1, 20, 25, sync(), Result_::Ok(ZkResponse::Synced)),
                (
                    1,
                    30,
                    35,
                    ZkOperation::GetChildren { path: "/".into() },
                    Result_::Ok(ZkResponse::Children {
                        children,
                        stat: Stat::default(),
                    }),
                ),
            ];
            report(&history(rows))
        };
        let listed = listing(vec!["n-0000000000".into()]);
        assert_eq!(listed.verdict, Verdict::Ok, "{listed}");
        assert_eq!(listed.skipped.values().sum::<usize>(), 0, "{listed}");
        assert_eq!(
            evidence(&listing(Vec::new())).partition,
            "path /n-0000000000"
        );
    }

    /// A synced listing of `/q` is judged for `/q`'s children only: not for a grandchild
    /// (`/q/a/b`), nor for a path that merely starts with `/q` (`/qx`).
    #[test]
    fn a_listing_judges_only_the_children_of_its_path() {
        let listing = |children: &[&str]| {
            let created = |path: &str| ZkResponse::Created { path: path.into() };
            let mut rows: Vec<_> = ["/q", "/q/a", "/q/a/b", "/qx"]
                .into_iter()
                .enumerate()
                .map(|(index, path)| {
                    let at = 10 * index as u64;
                    (0, at, at + 5, create(path, ""), Result_::Ok(created(path)))
                })
                .collect();
            rows.push((1, 41, 45, sync(), Result_::Ok(ZkResponse::Synced)));
            rows.push((
                1,
                50,
                55,
                ZkOperation::MultiRead {
                    ops: vec![ZkOperation::GetChildren { path: "/q".into() }],
                },
                Result_::Ok(ZkResponse::MultiRead {
                    results: vec![Ok(ZkResponse::ChildNames {
                        children: children.iter().map(|c| c.to_string()).collect(),
                    })],
                }),
            ));
            report(&history(rows))
        };
        let listed = listing(&["a"]);
        assert_eq!(listed.verdict, Verdict::Ok, "{listed}");
        assert_eq!(evidence(&listing(&[])).partition, "path /q/a");
    }

    /// A `create2` (the zookeeper-client drop-in's create) shows the new node's stat, which
    /// is checked as a read right after the create: a new node has data version 0.
    #[test]
    fn a_create2_reply_stat_is_checked() {
        let created = |version: i32| {
            let rows = vec![(
                0,
                0,
                10,
                create("/x", "a"),
                Result_::Ok(ZkResponse::CreatedWithStat {
                    path: "/x".into(),
                    stat: stat(version, 5, 5),
                }),
            )];
            report(&history(rows))
        };
        assert_eq!(created(0).verdict, Verdict::Ok);
        assert_eq!(evidence(&created(3)).partition, "path /x");
    }

    /// A multiRead of `/x` and of `/`'s children, after a sync by its process.
    fn synced_multi_read(x: Result<ZkResponse, ZkError>, root_children: &[&str]) -> History {
        let mut rows = writes();
        rows.push((1, 40, 45, sync(), Result_::Ok(ZkResponse::Synced)));
        rows.push((
            1,
            50,
            55,
            ZkOperation::MultiRead {
                ops: vec![get("/x"), ZkOperation::GetChildren { path: "/".into() }],
            },
            Result_::Ok(ZkResponse::MultiRead {
                results: vec![
                    x,
                    Ok(ZkResponse::ChildNames {
                        children: root_children.iter().map(|c| c.to_string()).collect(),
                    }),
                ],
            }),
        ));
        history(rows)
    }

    /// A multiRead is judged read by read, as a synced plain read would be: its reads see
    /// every write completed before the sync.
    #[test]
    fn a_synced_multi_read_is_judged_read_by_read() {
        let latest = Ok(ZkResponse::Data {
            data: "b".into(),
            stat: stat(1, 5, 7),
        });
        let judged = report(&synced_multi_read(latest.clone(), &["x"]));
        assert_eq!(judged.verdict, Verdict::Ok, "{judged}");
        let stale = Ok(ZkResponse::Data {
            data: "a".into(),
            stat: stat(0, 5, 5),
        });
        let judged = report(&synced_multi_read(stale, &["x"]));
        assert_eq!(evidence(&judged).partition, "path /x", "{judged}");
        // A read's own error is judged in its slot: /x exists.
        let judged = report(&synced_multi_read(Err(ZkError::NoNode), &["x"]));
        assert_eq!(evidence(&judged).partition, "path /x", "{judged}");
        // The names alone (no stat) still say whether /x is listed.
        let judged = report(&synced_multi_read(latest, &[]));
        assert_eq!(evidence(&judged).partition, "path /x", "{judged}");
    }

    /// Without a sync before it, a multiRead is a plain read: left out and counted.
    #[test]
    fn a_plain_multi_read_is_left_out_as_a_plain_read() {
        let mut rows = writes();
        rows.push((
            1,
            50,
            55,
            ZkOperation::MultiRead {
                ops: vec![get("/x")],
            },
            Result_::Ok(ZkResponse::MultiRead {
                results: vec![Ok(ZkResponse::Data {
                    data: "a".into(),
                    stat: stat(0, 5, 5),
                })],
            }),
        ));
        let report = report(&history(rows));
        assert_eq!(report.verdict, Verdict::Ok, "{report}");
        assert_eq!(
            report.skipped.get(
                "plain read (sequentially consistent by design: served by the connected server)"
            ),
            Some(&1)
        );
    }

    /// A create needs its parent: a child created under a parent that a synced read shows
    /// missing, with nothing deleting it in between, is a violation.
    #[test]
    fn a_child_needs_its_parent() {
        let rows = vec![
            (
                0,
                0,
                10,
                create("/p", "a"),
                Result_::Ok(ZkResponse::Created { path: "/p".into() }),
            ),
            (
                0,
                20,
                30,
                create("/p/c", "a"),
                Result_::Ok(ZkResponse::Created {
                    path: "/p/c".into(),
                }),
            ),
            (1, 40, 45, sync(), Result_::Ok(ZkResponse::Synced)),
            (
                1,
                50,
                55,
                ZkOperation::Exists { path: "/p".into() },
                Result_::Ok(ZkResponse::Exists { stat: None }),
            ),
        ];
        evidence(&report(&history(rows)));
    }
}
