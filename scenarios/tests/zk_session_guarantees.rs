//! ZooKeeper's session guarantee for plain reads (`zk.session_consistency`), shown to fire
//! on a model with the guarantee switched off: the catalogue's scripted plan
//! `zab_trace_reconnect_ignores_last_zxid`, run through the one driver. The zoo's test of
//! `zab.reconnect_ignores_last_zxid` is its row in the known-bug table (`known_bugs.rs`),
//! by seeds in `zab_cut_off_leader_readers_join`.
//!
//! The trace: c1 writes in epoch 2 after the old leader s3 was cut off; then s1 and s2,
//! which have the write, crash as the partition heals, and the only server c1 can reach is
//! s3, which leads epoch 1 until `sync_limit` passes without its followers. The correct s3
//! refuses c1, which has seen a later zxid; c1 waits for s1 and s2 and reads its write. With
//! the bug s3 takes c1 back, and c1 reads back in time.

use checks::history::{
    faults::fired_faults,
    sessions::{Attach, attachments},
    zk::{ZkOp, zk_operations},
};
use scenarios::{KnownBug, Outcome, catalogue, sweep::Sweep};
use sim::{
    NodeId,
    fault::{Fault, Target},
    history::{
        History,
        zk::{ZkOperation, ZkResponse},
    },
    time::SimTime,
};

const TARGET: &str = "zk_session_guarantees";
const S3: NodeId = NodeId::server(2);
const C1: NodeId = NodeId::client(0);
const CHECK: &str = "zk.session_consistency";

/// What one run of the trace showed.
#[derive(Debug)]
struct Run {
    /// c1 could reach only the deposed s3 after its write in epoch 2 was acknowledged.
    alone_with_the_deposed_leader: bool,
    /// c1 resumed its session on s3 while s1 and s2 were down.
    resumed_on_the_deposed_leader: bool,
    /// What c1's read after the crash showed.
    read: Option<String>,
}

fn run_of(history: &History) -> Run {
    let faults = fired_faults(history);
    let isolated = faults
        .iter()
        .find(|fault| matches!(fault.fault, Fault::Partition { .. }));
    let crashes: Vec<SimTime> = faults
        .iter()
        .filter(|fault| matches!(fault.fault, Fault::Crash { .. }))
        .map(|fault| fault.at)
        .collect();
    let restarted = faults
        .iter()
        .find(|fault| matches!(fault.fault, Fault::Restart { .. }))
        .map(|fault| fault.at);
    let ops = zk_operations(history);
    let written = ops
        .iter()
        .filter(|op| op.client == C1)
        .filter(|op| matches!(op.operation, ZkOperation::SetData { data, .. } if data == "new"))
        .find_map(ZkOp::ok_at);
    let (Some(isolated), [crashed, _], Some(restarted), Some(written)) =
        (isolated, crashes.as_slice(), restarted, written)
    else {
        return Run {
            alone_with_the_deposed_leader: false,
            resumed_on_the_deposed_leader: false,
            read: None,
        };
    };
    let alone = isolated.fault
        == &(Fault::Partition {
            shape: sim::fault::PartitionShape::IsolateNode {
                node: Target::Leader,
            },
        })
        && isolated.target == Some(S3)
        && written < *crashed;
    let resumed = attachments(history).iter().any(|attachment| {
        attachment.client == C1
            && attachment.attach == Attach::Resumed
            && attachment.server == S3
            && *crashed <= attachment.at
            && attachment.at < restarted
    });
    // The trace's read: c1's first answered read of /x after the crash.
    let read = ops
        .iter()
        .filter(|op| op.client == C1 && op.invoked_at >= *crashed)
        .filter(|op| matches!(op.operation, ZkOperation::GetData { path } if path == "/x"))
        .find_map(|op| match op.ok() {
            Some(ZkResponse::Data { data, .. }) => Some(data.clone()),
            _ => None,
        });
    Run {
        alone_with_the_deposed_leader: alone,
        resumed_on_the_deposed_leader: resumed,
        read,
    }
}

fn history(outcome: &Outcome) -> &History {
    outcome
        .history
        .as_ref()
        .expect("an inspected run's history")
}

#[test]
fn a_reconnect_to_a_server_behind_the_session_is_refused_and_caught_when_it_is_not() {
    let test = "a_reconnect_to_a_server_behind_the_session_is_refused_and_caught_when_it_is_not";
    let scenario = catalogue::get("zab_trace_reconnect_ignores_last_zxid").unwrap();
    let correct =
        Sweep::new(scenario.clone(), "scenarios", TARGET, test, 50).run_inspecting(|outcome| {
            let run = run_of(history(outcome));
            assert!(
                run.alone_with_the_deposed_leader,
                "seed {}: {run:?}",
                outcome.seed
            );
            assert!(
                !run.resumed_on_the_deposed_leader,
                "seed {}: the correct s3 took back a client ahead of it",
                outcome.seed
            );
            assert_eq!(run.read.as_deref(), Some("new"), "seed {}", outcome.seed);
        });
    correct.assert_clean();
    correct.assert_faults_fired();

    let bug: KnownBug = "zab.reconnect_ignores_last_zxid".parse().unwrap();
    let buggy = Sweep::new(scenario.with_bugs([bug]), "scenarios", TARGET, test, 50)
        .run_inspecting(|outcome| {
            let run = run_of(history(outcome));
            assert!(
                run.alone_with_the_deposed_leader,
                "seed {}: {run:?}",
                outcome.seed
            );
            assert!(
                run.resumed_on_the_deposed_leader,
                "seed {}: {run:?}",
                outcome.seed
            );
            assert_eq!(run.read.as_deref(), Some("old"), "seed {}", outcome.seed);
            // Caught as the reconnect itself: the read came right after it.
            let caught = outcome
                .violations
                .iter()
                .find(|v| v.check == CHECK)
                .unwrap_or_else(|| {
                    panic!("seed {}: {CHECK} did not fire:\n{outcome}", outcome.seed)
                });
            assert!(
                caught
                    .evidence
                    .starts_with("reconnect not behind the session")
                    && caught.evidence.contains("reconnected to s3"),
                "seed {}: {}",
                outcome.seed,
                caught.evidence
            );
        });
    assert_eq!(
        buggy.failures.len(),
        buggy.seeds.len(),
        "every bug-on run fails"
    );
    println!(
        "{bug} caught by `{CHECK}` on all {} seeds:\n  {}",
        buggy.seeds.len(),
        buggy.failures[0]
            .outcome
            .violations
            .iter()
            .find(|v| v.check == CHECK)
            .map(|v| v.evidence.as_str())
            .unwrap_or_default()
    );
}
