//! The other ZooKeeper recipes (the ZooKeeper paper's primitives, section 2.4): each
//! fault-free, under server faults (partitions, loss, latency, server crashes and pauses;
//! clients are not paused, so sessions of live, connected clients survive), and with
//! clients paused or cut off mid-recipe past their session timeout (`_expiry`): each comes
//! back to a session the store ended, with its ephemeral nodes, and carries on in a new one.
//! The counter also runs with replies lost and no server fault (`zk_counter_replies_lost`):
//! connection losses with a write in flight are what a counter must settle.

use crate::catalogue::{isolated, scenario, swarm};
use crate::{
    scenario::{Scenario, SkippedCheck, Tuning},
    store::Store,
    workload::{DoubleBarrier, FifoQueue, ReadyConfig, Rendezvous, SharedCounter, Workload},
};
use sim::{
    NodeId,
    fault::{Fault, FaultKind, FaultPlan, FaultSource, PartitionShape, ScheduledFault},
};

/// The faults of the `_faults` scenarios.
const SERVER_FAULTS: [FaultKind; 5] = [
    FaultKind::Partition,
    FaultKind::Loss,
    FaultKind::Latency,
    FaultKind::Crash,
    FaultKind::Pause,
];

/// The store's checks (all of which run; [`linearizable_skipped`] takes `zk.linearizable`
/// away, with its reason).
pub(in crate::catalogue) fn store_checks() -> Vec<String> {
    vec!["default".into()]
}

/// `zk.linearizable` skipped, with the reason [`store_checks`] gives.
pub(in crate::catalogue) fn linearizable_skipped() -> Vec<SkippedCheck> {
    vec![SkippedCheck {
        check: "zk.linearizable".into(),
        reason: "a recipe's many clients on many paths exhaust the linearizability search \
                 budget (inconclusive); the `zab` scenarios judge the store's linearizability"
            .into(),
    }]
}

/// A recipe's pair of scenarios: `<name>` without faults and `<name>_faults`.
fn fault_free_and_faulty(
    name: &str,
    what: &str,
    workload: Workload,
    checks: &[&str],
    clients: usize,
) -> [Scenario; 2] {
    let base = Scenario {
        workload,
        checks: store_checks()
            .into_iter()
            .chain(checks.iter().map(|check| check.to_string()))
            .collect(),
        skip_checks: linearizable_skipped(),
        fault_phase_ms: 6_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 30_000,
        ..scenario(name, &format!("{what}, no faults"), Store::Zab, 3, clients)
    };
    let faulty = Scenario {
        name: format!("{name}_faults"),
        description: format!(
            "{what}, under partitions, loss, latency, server crashes and pauses (clients are \
             not paused)"
        ),
        faults: swarm(500, &SERVER_FAULTS),
        ..base.clone()
    };
    [base, faulty]
}

/// Every primitive scenario.
///
/// Long on purpose: a catalogue list, one entry per scenario in the order `coordsim list`
/// shows them.
pub(in crate::catalogue) fn scenarios() -> Vec<Scenario> {
    let mut scenarios = Vec::new();
    scenarios.extend(fault_free_and_faulty(
        "zk_fifo_queue",
        "the ZooKeeper FIFO queue: two producers put numbered items, three consumers take \
         them by delete-and-claim; drained after the heal",
        Workload::FifoQueue(FifoQueue::default()),
        &["recipe.queue_semantics"],
        5,
    ));
    scenarios.push(expiry(
        "zk_fifo_queue_expiry",
        "the ZooKeeper FIFO queue; a producer and a consumer paused for 4.5 s at 1 s, \
         another consumer at 2 s, and the third consumer cut off from everyone for 4.5 s \
         at 1 s, past their 3 s sessions: each carries on in a new session, a consumer \
         first settling a take whose claim's reply it lost; no acknowledged item may be \
         lost or taken twice, and the queue drains",
        Workload::FifoQueue(FifoQueue::default()),
        &["recipe.queue_semantics"],
        5,
        // The third consumer is cut off rather than paused: a paused client gets the
        // replies to what it sent when it resumes, a cut-off one loses them, now and then
        // the reply to a take's claim, which the consumer must settle in its next session.
        vec![
            pause(0, 1_000, 4_500),
            pause(2, 1_000, 4_500),
            pause(3, 2_000, 4_500),
            cut_off(4, 1_000, 4_500),
        ],
    ));
    scenarios.extend(fault_free_and_faulty(
        "zk_counter",
        "the ZooKeeper counter: five clients increment by versioned writes, retrying on \
         BadVersion; read once after the heal",
        Workload::SharedCounter(SharedCounter::default()),
        &["recipe.counter"],
        5,
    ));
    scenarios.push(expiry(
        "zk_counter_expiry",
        "the ZooKeeper counter; two incrementers paused for 4.5 s at 1 s, a third at 2 s, \
         past their 3 s sessions (an increment in flight may or may not have happened): \
         each carries on in a new session; no acknowledged increment may be lost",
        Workload::SharedCounter(SharedCounter::default()),
        &["recipe.counter"],
        5,
        vec![
            pause(0, 1_000, 4_500),
            pause(1, 1_000, 4_500),
            pause(2, 2_000, 4_500),
        ],
    ));
    scenarios.push(counter_replies_lost());
    scenarios.extend(fault_free_and_faulty(
        "zk_double_barrier",
        "the ZooKeeper double barrier: five clients enter together, work, and leave \
         together, twelve rounds",
        Workload::DoubleBarrier(DoubleBarrier::default()),
        &["recipe.barrier"],
        5,
    ));
    scenarios.push(expiry(
        "zk_double_barrier_expiry",
        "the ZooKeeper double barrier, five clients, twelve rounds of 400 ms of work \
         inside; a participant paused for 4.5 s at 1 s, another at 6 s, past their 3 s \
         sessions: its node goes with its session, and it goes on through the barrier in a \
         new session. Nobody may get through the entry early or be left behind; at the exit, \
         the others need not wait for a participant whose node went with its ended session \
         (`recipe.barrier` excuses that, and only that)",
        Workload::DoubleBarrier(DoubleBarrier {
            work_ms: BARRIER_WORK_MS,
            ..DoubleBarrier::default()
        }),
        &["recipe.barrier"],
        5,
        // At 1 s, not 0.5 s: clients back off between attempts as zookeeper-client does,
        // so some first get a session about 0.5 s in, after the first leader is serving.
        vec![pause(1, 1_000, 4_500), pause(3, 6_000, 4_500)],
    ));
    scenarios.extend(fault_free_and_faulty(
        "zk_ready_config",
        "configuration behind a ready znode: one writer publishes four parts version after \
         version, four readers read after sync and restart when ready changed",
        Workload::ReadyConfig(ReadyConfig::default()),
        &["recipe.config_versions", "recipe.config_fresh"],
        5,
    ));
    scenarios.push(cut_off_config_readers());
    scenarios.push(expiry(
        "zk_ready_config_expiry",
        "configuration behind a ready znode; the writer and a reader paused for 4.5 s at \
         1 s, another reader at 2 s, past their 3 s sessions: each carries on in a new \
         session, and reads must still see one version, and a fresh one",
        Workload::ReadyConfig(ReadyConfig::default()),
        &["recipe.config_versions", "recipe.config_fresh"],
        5,
        vec![
            pause(0, 1_000, 4_500),
            pause(1, 1_000, 4_500),
            pause(2, 2_000, 4_500),
        ],
    ));
    scenarios.extend(fault_free_and_faulty(
        "zk_rendezvous",
        "rendezvous (ZooKeeper paper, section 2.4): a client creates an ephemeral node, a \
         master fills in its address at a seeded time, five workers starting at seeded times \
         (before and after) read it with a watch and watch for its deletion",
        Workload::Rendezvous(Rendezvous::default()),
        &["recipe.rendezvous"],
        7,
    ));
    scenarios.push(expiry(
        "zk_rendezvous_expiry",
        "rendezvous; the creator and a worker paused for 5.5 s at 3.5 s, past their 4 s \
         sessions: the node goes with the creator's session, the master and the other \
         workers must notice that end, the creator makes the node anew in a new session, \
         the master publishes again and every worker learns the address again",
        Workload::Rendezvous(Rendezvous::default()),
        &["recipe.rendezvous"],
        7,
        vec![pause(0, 3_500, 5_500), pause(3, 3_500, 5_500)],
    ));
    scenarios
}

/// The counter with no server fault: each client in turn, twice, hears nothing from any
/// server for 2.5 s (its links from the servers clogged, its own requests still delivered), so its
/// conditional write in flight commits and its reply is lost; the client's read timeout (2 s)
/// turns that into a connection loss, with the outcome unknown, and it reconnects when the
/// links clear (its pings kept its session alive). `recipe.counter` judges that no increment
/// moved the counter twice and that the final read counts each acknowledged one once.
fn counter_replies_lost() -> Scenario {
    let servers = 3;
    let clients = 5;
    let mut faults = Vec::new();
    // Twice each, in turn; two clients at a time overlap.
    for turn in 0..2 * clients {
        let (client, at_ms) = (turn % clients, 500 + 700 * turn as u64);
        for server in 0..servers {
            faults.push(
                ScheduledFault::at(
                    at_ms,
                    Fault::Clog {
                        from: NodeId::server(server),
                        to: NodeId::client(client),
                    },
                )
                .lasting(REPLIES_LOST_MS),
            );
        }
    }
    let last_end = faults.iter().map(ScheduledFault::end_ms).max();
    Scenario {
        workload: Workload::SharedCounter(SharedCounter::default()),
        checks: store_checks()
            .into_iter()
            .chain(["recipe.counter".to_string()])
            .collect(),
        faults: FaultSource::Plan(FaultPlan::new(faults)),
        fault_phase_ms: last_end.unwrap_or(0) + 1_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 30_000,
        ..scenario(
            "zk_counter_replies_lost",
            "the ZooKeeper counter, no server faults: each of five clients in turn, twice, \
             hears nothing from the servers for 2.5 s (its requests still arrive), so the reply to \
             the write it has in flight is lost after the write commits; a connection loss \
             must be settled as an unknown outcome, never counted twice",
            Store::Zab,
            servers,
            clients,
        )
    }
}

/// How long a client hears nothing from the servers in `zk_counter_replies_lost`,
/// milliseconds: past its read timeout (two thirds of the 3 s session timeout), so that it
/// declares the connection lost.
const REPLIES_LOST_MS: u64 = 2_500;

/// Work inside the double barrier in its `_expiry` scenario, milliseconds: long, so that a
/// pause mostly finds its participant inside (entered, not yet leaving), where the loss of
/// its node matters most. With the default 50 ms, none of the twelve pauses of the suite's
/// six seeds found its participant inside.
const BARRIER_WORK_MS: u64 = 400;

/// Client `client` (zero-based: 0 is `c1`) paused for `pause_ms` from `at_ms`: a paused
/// process notices nothing, and when it runs again its client hears that its session
/// expired (with the replies to what it had sent, which wait for it).
fn pause(client: usize, at_ms: u64, pause_ms: u64) -> ScheduledFault {
    ScheduledFault::at(
        at_ms,
        Fault::Pause {
            node: NodeId::client(client).into(),
        },
    )
    .lasting(pause_ms)
}

/// Client `client` cut off from everyone for `cut_ms` from `at_ms`: it runs on, its
/// requests and their replies lost, and hears that its session expired when it reaches a
/// server again.
fn cut_off(client: usize, at_ms: u64, cut_ms: u64) -> ScheduledFault {
    isolated(NodeId::client(client), at_ms, cut_ms)
}

/// A primitive's `_expiry` scenario: `faults` pause or cut off fixed clients, each for
/// longer than the workload's session timeout by a margin (the leader expires a session on
/// a session tick after its timeout, so a span just past the timeout could race the
/// expiry); the workload goes on in a new session. The plan is data (fixed clients at fixed
/// times), so a run replays from its seed.
fn expiry(
    name: &str,
    description: &str,
    workload: Workload,
    checks: &[&str],
    clients: usize,
    faults: Vec<ScheduledFault>,
) -> Scenario {
    // The phase outlasts the last fault by a second: the clients work in their new
    // sessions before the heal.
    let last_end = faults.iter().map(ScheduledFault::end_ms).max();
    Scenario {
        workload,
        checks: store_checks()
            .into_iter()
            .chain(checks.iter().map(|check| check.to_string()))
            .collect(),
        skip_checks: linearizable_skipped(),
        faults: FaultSource::Plan(FaultPlan::new(faults)),
        fault_phase_ms: last_end.unwrap_or(0) + 1_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 30_000,
        ..scenario(name, description, Store::Zab, 3, clients)
    }
}

/// The leader cut off with the configuration's readers for 2.5 s, twice: the others elect
/// a new leader and the writer publishes on through it, while the old leader leads on for
/// its sync limit (2 s) and serves its readers what it has. A read that syncs first waits
/// (the cut-off leader cannot get a quorum for the sync); one that does not reads the old
/// version (`recipe.read_without_sync`).
fn cut_off_config_readers() -> Scenario {
    let readers = vec![NodeId::client(1), NodeId::client(2)];
    let strand = |at_ms| {
        ScheduledFault::at(
            at_ms,
            Fault::Partition {
                shape: PartitionShape::Strand {
                    node: "leader".parse().expect("a role"),
                    with: readers.clone(),
                },
            },
        )
        .lasting(2_500)
    };
    Scenario {
        workload: Workload::ReadyConfig(ReadyConfig::default()),
        checks: store_checks()
            .into_iter()
            .chain([
                "recipe.config_versions".into(),
                "recipe.config_fresh".into(),
            ])
            .collect(),
        skip_checks: linearizable_skipped(),
        faults: FaultSource::Plan(FaultPlan::new([1_000, 5_000].map(strand).to_vec())),
        fault_phase_ms: 9_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 30_000,
        tuning: Tuning {
            sync_limit_ticks: Some(20),
            ..Tuning::default()
        },
        ..scenario(
            "zk_ready_config_cut_off_readers",
            "configuration behind a ready znode; the leader is cut off with the two readers \
             for 2.5 s twice and leads on for its 2 s sync limit, while the others elect anew \
             and the writer publishes on: reads must still be fresh",
            Store::Zab,
            3,
            3,
        )
    }
}
