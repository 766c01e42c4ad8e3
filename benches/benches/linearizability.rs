//! The linearizability checker on large histories: 1,000 / 10,000 / 100,000 operations
//! over 10 and 100 keys, for the register model (Jepsen's etcd tests) and the etcd
//! key-value model (coordsim's Raft store histories).
//!
//! Histories come from correct runs with high concurrency: 64 client processes issue
//! operations back to back; each operation lasts a random 1–400 ticks and takes effect at a
//! random instant inside its interval; the outputs are those of a sequential store applying
//! the operations in the order of those instants (so every history is linearizable and the
//! search must prove it). 2% of operations lose their outcome (the process then retires, as
//! in Jepsen), so unknown operations are in the mix. The stream is a fixed ChaCha seed.
//! Target: 10,000 operations over 100 keys in well under a second.

use checks::linearizability::{
    CheckOptions, Operation, OperationHistory, Outcome, Verdict, check, kv,
    register::{RegisterAction, RegisterInput, RegisterModel, RegisterOutput},
};
use criterion::{BenchmarkId, Criterion, Throughput};
use models::etcd::{ApplyResult, StoreCommand, StoreStateMachine};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sim::{
    NodeId,
    history::{
        Event, History, OpId, OpResult, Operation as HistoryOperation, Record, Response,
        kv::{KvOperation, ReadConsistency},
    },
    time::SimTime,
};
use std::time::Instant;

const PROCESSES: u32 = 64;

/// One planned operation: who, when, and the instant it takes effect.
struct Planned {
    process: u32,
    invoked_at: u64,
    returned_at: u64,
    effect_at: u64,
    key: usize,
    roll: u32,
    lost: bool,
}

/// Operations of `PROCESSES` processes back to back, in effect order.
fn plan(operations: usize, keys: usize, seed: u64) -> Vec<Planned> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut next_free = vec![0u64; PROCESSES as usize];
    let mut process_ids: Vec<u32> = (0..PROCESSES).collect();
    let mut next_process = PROCESSES;
    let mut planned = Vec::with_capacity(operations);
    for _ in 0..operations {
        // The process that is free first goes next.
        let slot = (0..PROCESSES as usize)
            .min_by_key(|&slot| next_free[slot])
            .unwrap();
        let invoked_at = next_free[slot] + rng.gen_range(0..5);
        let returned_at = invoked_at + rng.gen_range(1..=400);
        let lost = rng.gen_ratio(1, 50);
        planned.push(Planned {
            process: process_ids[slot],
            invoked_at,
            returned_at,
            effect_at: rng.gen_range(invoked_at..=returned_at),
            key: rng.gen_range(0..keys),
            roll: rng.gen_range(0..100),
            lost,
        });
        next_free[slot] = returned_at;
        if lost {
            process_ids[slot] = next_process;
            next_process += 1;
        }
    }
    planned.sort_by_key(|op| (op.effect_at, op.invoked_at));
    planned
}

fn register_history(
    operations: usize,
    keys: usize,
) -> (
    RegisterModel,
    OperationHistory<RegisterInput, RegisterOutput>,
) {
    let mut model = RegisterModel::default();
    let mut history = OperationHistory::default();
    let key_ids: Vec<u32> = (0..keys).map(|key| model.key(&format!("k{key}"))).collect();
    let mut values = vec![None; keys];
    for (index, op) in plan(operations, keys, 7).into_iter().enumerate() {
        let current = values[op.key];
        let (action, output) = match op.roll {
            0..50 => (RegisterAction::Read, RegisterOutput::Read(current)),
            50..90 => {
                let value = model.value(&index.to_string());
                values[op.key] = Some(value);
                (RegisterAction::Write(value), RegisterOutput::Written)
            }
            _ => {
                let expected = current.unwrap_or(0);
                let new = model.value(&index.to_string());
                let swapped = current == Some(expected);
                if swapped {
                    values[op.key] = Some(new);
                }
                (
                    RegisterAction::CompareAndSet { expected, new },
                    if swapped {
                        RegisterOutput::Swapped
                    } else {
                        RegisterOutput::Mismatch
                    },
                )
            }
        };
        let lane = history.lane(&format!("p{}", op.process));
        history.operations.push(Operation {
            id: index as u64,
            lane,
            input: RegisterInput {
                key: key_ids[op.key],
                action,
            },
            invoked_at: op.invoked_at,
            outcome: if op.lost {
                Outcome::Unknown
            } else {
                Outcome::Returned {
                    at: op.returned_at,
                    output,
                }
            },
        });
    }
    (model, history)
}

/// A coordsim history of puts (45%), gets (45%) and deletes (10%), answered by coordsim's
/// etcd state machine applying them in effect order.
fn kv_history(operations: usize, keys: usize) -> History {
    let mut store = StoreStateMachine::default();
    let mut records = Vec::new();
    for (index, op) in plan(operations, keys, 11).into_iter().enumerate() {
        let key = format!("key/{}", op.key);
        let operation = match op.roll {
            0..45 => KvOperation::Put {
                key,
                value: format!("v{index}"),
                lease: None,
                prev_kv: false,
            },
            45..90 => KvOperation::Get {
                key,
                range_end: None,
                revision: None,
                consistency: ReadConsistency::Linearizable,
            },
            _ => KvOperation::Delete {
                key,
                range_end: None,
                prev_kv: false,
            },
        };
        let response = if matches!(operation, KvOperation::Get { .. }) {
            store.read(&operation)
        } else {
            let command = StoreCommand::Kv {
                operation: operation.clone(),
            };
            match store.apply(index as u64 + 1, &command).result {
                ApplyResult::Kv(result) => result,
                other => panic!("a key-value command applied as {other:?}"),
            }
        }
        .expect("valid operations");
        let client = NodeId::client((op.process % PROCESSES) as usize);
        let op_id = OpId(index as u64);
        records.push(Record {
            at: SimTime::from_nanos(op.invoked_at),
            node: Some(client),
            event: Event::Invoke {
                client,
                process: op.process,
                op_id,
                operation: HistoryOperation::Kv(operation),
            },
        });
        if !op.lost {
            records.push(Record {
                at: SimTime::from_nanos(op.returned_at),
                node: Some(client),
                event: Event::Complete {
                    op_id,
                    result: OpResult::Ok {
                        response: Response::Kv(response),
                    },
                },
            });
        }
    }
    records.sort_by_key(|record| record.at);
    History::from_records(records)
}

fn main() {
    let mut criterion = Criterion::default().sample_size(10).configure_from_args();
    let sizes = [1_000usize, 10_000, 100_000];
    let key_counts = [10usize, 100];
    let mut summary = Vec::new();

    let mut group = criterion.benchmark_group("linearizability/register");
    for &operations in &sizes {
        for &keys in &key_counts {
            let (model, history) = register_history(operations, keys);
            let report = check(&model, &history, &CheckOptions::default());
            assert_eq!(report.verdict, Verdict::Ok, "{report}");
            let started = Instant::now();
            check(&model, &history, &CheckOptions::default());
            summary.push((
                "register",
                operations,
                keys,
                report.steps,
                started.elapsed(),
            ));
            group.throughput(Throughput::Elements(operations as u64));
            group.bench_with_input(
                BenchmarkId::new(format!("{keys}_keys"), operations),
                &history,
                |b, history| b.iter(|| check(&model, history, &CheckOptions::default())),
            );
        }
    }
    group.finish();

    let mut group = criterion.benchmark_group("linearizability/kv");
    for &operations in &sizes {
        for &keys in &key_counts {
            let history = kv_history(operations, keys);
            let (model, converted) = kv::from_history(&history);
            let report = check(&model, &converted, &CheckOptions::default());
            assert_eq!(report.verdict, Verdict::Ok, "{report}");
            let started = Instant::now();
            check(&model, &converted, &CheckOptions::default());
            summary.push(("kv", operations, keys, report.steps, started.elapsed()));
            group.throughput(Throughput::Elements(operations as u64));
            group.bench_with_input(
                BenchmarkId::new(format!("{keys}_keys"), operations),
                &converted,
                |b, converted| b.iter(|| check(&model, converted, &CheckOptions::default())),
            );
        }
    }
    group.finish();

    println!("\nlinearizability check, one run each (search only; reading the history excluded):");
    println!(
        "{:<9} {:>10} {:>6} {:>12} {:>12}",
        "model", "operations", "keys", "steps", "wall_ms"
    );
    for (model, operations, keys, steps, elapsed) in summary {
        println!(
            "{model:<9} {operations:>10} {keys:>6} {steps:>12} {:>12.1}",
            elapsed.as_secs_f64() * 1e3
        );
    }
    criterion.final_summary();
}
