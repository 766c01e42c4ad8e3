//! Property tests of the linearizability checker.
//!
//! Histories are generated from a correct sequential run: each operation takes effect at
//! its own instant, and its invocation and return are spread randomly around that instant
//! (so operations overlap in real time). Such histories are linearizable by construction.
//! Corrupting one read to a value nobody wrote must be caught; and on small histories the
//! verdict, for any corruption, must equal a brute-force search over every order.

use checks::linearizability::{
    CheckOptions, Model, Operation, OperationHistory, Outcome, Verdict, check, kv,
    register::{RegisterAction, RegisterInput, RegisterModel, RegisterOutput},
};
use proptest::prelude::*;

/// One generated operation: which key, what, how far its interval spreads around its
/// instant, and whether its outcome is lost.
#[derive(Clone, Debug)]
struct Step {
    key: usize,
    kind: u8,
    value: u8,
    lane: u8,
    before: u64,
    after: u64,
    lost: bool,
}

fn steps(max: usize, keys: usize) -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (
            0..keys,
            0u8..3,
            0u8..5,
            0u8..6,
            0u64..60,
            0u64..60,
            prop::bool::weighted(0.1),
        )
            .prop_map(|(key, kind, value, lane, before, after, lost)| Step {
                key,
                kind,
                value,
                lane,
                before,
                after,
                lost,
            }),
        1..max,
    )
}

/// Runs the steps on a sequential register per key: the linearizable history it gives.
fn register_history(
    steps: &[Step],
) -> (
    RegisterModel,
    OperationHistory<RegisterInput, RegisterOutput>,
) {
    let mut model = RegisterModel::default();
    let mut history = OperationHistory::default();
    let mut values: Vec<Option<u32>> = vec![None; 8];
    for (index, step) in steps.iter().enumerate() {
        let key = model.key(&format!("k{}", step.key));
        let value = model.value(&format!("v{}", step.value));
        let current = values[step.key];
        let (action, output) = match step.kind {
            0 => (RegisterAction::Read, RegisterOutput::Read(current)),
            1 => {
                values[step.key] = Some(value);
                (RegisterAction::Write(value), RegisterOutput::Written)
            }
            _ => {
                let expected = model.value(&format!("v{}", (step.value + 1) % 5));
                let swapped = current == Some(expected);
                if swapped {
                    values[step.key] = Some(value);
                }
                (
                    RegisterAction::CompareAndSet {
                        expected,
                        new: value,
                    },
                    if swapped {
                        RegisterOutput::Swapped
                    } else {
                        RegisterOutput::Mismatch
                    },
                )
            }
        };
        let instant = 1_000 + 100 * index as u64;
        let lane = history.lane(&format!("p{}", step.lane));
        history.operations.push(Operation {
            id: index as u64,
            lane,
            input: RegisterInput { key, action },
            invoked_at: instant - step.before,
            outcome: if step.lost {
                Outcome::Unknown
            } else {
                Outcome::Returned {
                    at: instant + step.after,
                    output,
                }
            },
        });
    }
    (model, history)
}

/// The first read with a known result, if any.
fn a_read(history: &OperationHistory<RegisterInput, RegisterOutput>, pick: usize) -> Option<usize> {
    let reads: Vec<usize> = history
        .operations
        .iter()
        .enumerate()
        .filter(|(_, op)| op.input.action == RegisterAction::Read && op.output().is_some())
        .map(|(index, _)| index)
        .collect();
    (!reads.is_empty()).then(|| reads[pick % reads.len()])
}

fn set_read(
    history: &mut OperationHistory<RegisterInput, RegisterOutput>,
    index: usize,
    value: Option<u32>,
) {
    if let Outcome::Returned { output, .. } = &mut history.operations[index].outcome {
        *output = RegisterOutput::Read(value);
    }
}

/// Brute force: is there an order of all operations, respecting real time, that the model
/// accepts? Unknown-outcome operations may also be left out (never happened).
fn brute_force<M: Model>(model: &M, operations: &[Operation<M::Input, M::Output>]) -> bool {
    fn go<M: Model>(
        model: &M,
        operations: &[Operation<M::Input, M::Output>],
        done: &mut Vec<bool>,
        state: M::State,
    ) -> bool {
        let pending: Vec<usize> = (0..operations.len()).filter(|&i| !done[i]).collect();
        // Only known operations must be placed.
        if pending.iter().all(|&i| operations[i].output().is_none()) {
            return true;
        }
        for &candidate in &pending {
            // Nothing pending may have returned before the candidate was invoked.
            let minimal = pending
                .iter()
                .all(|&other| operations[other].returned_at() >= operations[candidate].invoked_at);
            if !minimal {
                continue;
            }
            let op = &operations[candidate];
            if let Some(next) = model.step(&state, &op.input, op.output()) {
                done[candidate] = true;
                if go(model, operations, done, next) {
                    return true;
                }
                done[candidate] = false;
            }
        }
        false
    }
    go(
        model,
        operations,
        &mut vec![false; operations.len()],
        model.init(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn correct_register_histories_are_linearizable(steps in steps(300, 4)) {
        let (model, history) = register_history(&steps);
        let report = check(&model, &history, &CheckOptions::default());
        prop_assert_eq!(&report.verdict, &Verdict::Ok, "{}", report);
    }

    #[test]
    fn a_read_of_a_value_nobody_wrote_is_caught(steps in steps(300, 4), pick in 0usize..1000) {
        let (mut model, mut history) = register_history(&steps);
        let Some(index) = a_read(&history, pick) else { return Ok(()) };
        let forged = model.value("never written");
        set_read(&mut history, index, Some(forged));
        let report = check(&model, &history, &CheckOptions::default());
        let Verdict::Violation(evidence) = &report.verdict else {
            return Err(TestCaseError::fail(format!("not caught:\n{report}")));
        };
        // The evidence is the forged read's key: its operations, less the unknown-outcome
        // reads (which constrain nothing and are left out).
        let key = history.operations[index].input.key;
        let checked = history
            .operations
            .iter()
            .filter(|op| op.input.key == key)
            .filter(|op| op.output().is_some() || op.input.action != RegisterAction::Read)
            .count();
        prop_assert_eq!(evidence.operations.len(), checked);
    }

    /// On small histories, any corruption of a read (to a value some write wrote, so the
    /// corruption may or may not be observable) gets the brute-force verdict.
    #[test]
    fn small_histories_get_the_brute_force_verdict(steps in steps(8, 1), pick in 0usize..100, value in 0u8..6) {
        let (mut model, mut history) = register_history(&steps);
        prop_assert!(brute_force(&model, &history.operations));
        if let Some(index) = a_read(&history, pick) {
            let corrupted = (value < 5).then(|| model.value(&format!("v{value}")));
            set_read(&mut history, index, corrupted);
        }
        let expected = brute_force(&model, &history.operations);
        let report = check(&model, &history, &CheckOptions::default());
        prop_assert_eq!(report.verdict == Verdict::Ok, expected, "{}", report);
        prop_assert!(matches!(report.verdict, Verdict::Ok | Verdict::Violation(_)));
    }

    #[test]
    fn parallel_and_sequential_reports_are_equal(steps in steps(200, 6), pick in 0usize..1000) {
        let (mut model, mut history) = register_history(&steps);
        if let Some(index) = a_read(&history, pick) {
            let forged = model.value("never written");
            set_read(&mut history, index, Some(forged));
        }
        let sequential = check(&model, &history, &CheckOptions::default());
        let parallel = check(&model, &history, &CheckOptions::default().with_jobs(3));
        prop_assert_eq!(sequential, parallel);
    }
}

// ---- the etcd key-value model, from a sequential store with revisions ----

mod kv_store {
    use super::*;
    use models::etcd::{ApplyResult, StoreCommand, StoreStateMachine};
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

    /// Runs one operation on coordsim's etcd state machine (the store the Raft servers
    /// apply their log to): a read is served, a write is applied as the next log entry.
    fn apply(store: &mut StoreStateMachine, index: usize, operation: &KvOperation) -> KvResponse {
        let result = if matches!(operation, KvOperation::Get { .. }) {
            store.read(operation)
        } else {
            let command = StoreCommand::Kv {
                operation: operation.clone(),
            };
            match store.apply(index as u64 + 1, &command).result {
                ApplyResult::Kv(result) => result,
                other => panic!("a key-value command applied as {other:?}"),
            }
        };
        result.expect("the generated operations are valid")
    }

    fn operation(step: &Step, index: usize) -> KvOperation {
        let key = format!("k{}", step.key);
        let value = format!("v{index}");
        match (step.kind, step.value) {
            (0, 0) => KvOperation::Get {
                key: "k".into(),
                range_end: Some("l".into()),
                revision: None,
                consistency: ReadConsistency::Linearizable,
            },
            (0, _) => KvOperation::Get {
                key,
                range_end: None,
                revision: None,
                consistency: ReadConsistency::Linearizable,
            },
            (1, 0) => KvOperation::Delete {
                prev_kv: false,
                key,
                range_end: None,
            },
            (1, _) => KvOperation::Put {
                prev_kv: false,
                key,
                value,
                lease: None,
            },
            _ => KvOperation::Txn {
                compares: vec![Compare {
                    key: key.clone(),
                    target: CompareTarget::Version(u64::from(step.value % 3)),
                    operator: CompareOperator::Greater,
                    range_end: None,
                }],
                success: vec![KvOperation::Put {
                    prev_kv: false,
                    key: key.clone(),
                    value,
                    lease: None,
                }],
                failure: vec![KvOperation::Get {
                    key,
                    range_end: None,
                    revision: None,
                    consistency: ReadConsistency::Linearizable,
                }],
            },
        }
    }

    /// A history of the steps run on a sequential store; the response of the chosen read
    /// (if any) is corrupted to a value nobody wrote.
    fn kv_history(steps: &[Step], corrupt: Option<usize>) -> (History, bool) {
        let mut store = StoreStateMachine::default();
        let mut records = Vec::new();
        let mut corrupted = false;
        let reads: Vec<usize> = steps
            .iter()
            .enumerate()
            .filter(|(index, step)| {
                step.kind == 0
                    && !step.lost
                    && !matches!(
                        operation(step, *index),
                        KvOperation::Get {
                            range_end: Some(_),
                            ..
                        }
                    )
            })
            .map(|(index, _)| index)
            .collect();
        let target =
            corrupt.and_then(|pick| (!reads.is_empty()).then(|| reads[pick % reads.len()]));
        for (index, step) in steps.iter().enumerate() {
            let operation = operation(step, index);
            let mut response = apply(&mut store, index, &operation);
            if Some(index) == target
                && let KvResponse::Get { kvs, .. } = &mut response
            {
                match kvs.first_mut() {
                    Some(kv) => kv.value = "forged".into(),
                    None => kvs.push(KeyValue {
                        key: format!("k{}", step.key),
                        value: "forged".into(),
                        create_revision: 1,
                        mod_revision: 1,
                        version: 1,
                        lease: None,
                    }),
                }
                corrupted = true;
            }
            let instant = 1_000 + 100 * index as u64;
            let client = NodeId::client(step.lane as usize);
            let op_id = OpId(index as u64);
            records.push(Record {
                at: SimTime::from_nanos(instant - step.before),
                node: Some(client),
                event: Event::Invoke {
                    client,
                    process: 0,
                    op_id,
                    operation: HistoryOperation::Kv(operation),
                },
            });
            let result = if step.lost {
                OpResult::Unknown {
                    reason: "timed out".into(),
                }
            } else {
                OpResult::Ok {
                    response: Response::Kv(response),
                }
            };
            records.push(Record {
                at: SimTime::from_nanos(if step.lost {
                    instant + 10_000
                } else {
                    instant + step.after
                }),
                node: Some(client),
                event: Event::Complete { op_id, result },
            });
        }
        records.sort_by_key(|record| record.at);
        (History::from_records(records), corrupted)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 150, .. ProptestConfig::default() })]

        #[test]
        fn correct_kv_histories_are_linearizable(steps in steps(250, 5)) {
            let (history, _) = kv_history(&steps, None);
            let (model, operations) = kv::from_history(&history);
            let report = check(&model, &operations, &CheckOptions::default());
            prop_assert_eq!(&report.verdict, &Verdict::Ok, "{}", report);
        }

        #[test]
        fn a_forged_kv_read_is_caught(steps in steps(250, 5), pick in 0usize..1000) {
            let (history, corrupted) = kv_history(&steps, Some(pick));
            prop_assume!(corrupted);
            let (model, operations) = kv::from_history(&history);
            let report = check(&model, &operations, &CheckOptions::default());
            prop_assert!(matches!(report.verdict, Verdict::Violation(_)), "not caught:\n{}", report);
        }
    }
}
