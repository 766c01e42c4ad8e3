//! The ZAB store under seeded faults (partitions, clogs, loss, latency, crashes, pauses,
//! clock steps and drift, leader crashes), through the one driver: every protocol and
//! ZooKeeper property holds on every seed, each fault kind a sweep turns on fires (by its
//! own counter), and after the heal every client opens a session, syncs, reads everything
//! and writes within the liveness bound.

mod common;

use checks::history::{
    leaders::leaderships,
    sessions::attachments,
    zk::{preceding_syncs, zk_operations},
};
use common::{catalogued, sweep_clean, sweep_counting};
use scenarios::sweep::SweepSummary;
use sim::history::{
    Event, History, ProtocolEvent,
    zk::{ZkOperation, ZkResponse},
};
use std::collections::BTreeMap;

/// What a sweep exercised, so a green sweep cannot be a vacuous one.
#[derive(Debug, Default)]
struct Exercised {
    synced_reads: usize,
    stale_reads: usize,
    snapshot_installs: usize,
    leaders: usize,
    expiries: usize,
    acknowledged_writes: usize,
    /// Sub-operations (per path) the linearizability check searched.
    linearizability_checked: usize,
    /// Plain reads it left out (sequentially consistent by design).
    linearizability_plain_reads: usize,
}

impl Exercised {
    /// Adds what another run (or sweep) exercised.
    fn merge(&mut self, other: Exercised) {
        self.synced_reads += other.synced_reads;
        self.stale_reads += other.stale_reads;
        self.snapshot_installs += other.snapshot_installs;
        self.leaders += other.leaders;
        self.expiries += other.expiries;
        self.acknowledged_writes += other.acknowledged_writes;
        self.linearizability_checked += other.linearizability_checked;
        self.linearizability_plain_reads += other.linearizability_plain_reads;
    }

    /// Adds what the run of `history` exercised.
    fn add_history(&mut self, history: &History) {
        // What the linearizability check (in `zk_store_checks`) gets to search: reading the
        // history again is cheap, the search is not repeated.
        let (_, checked) = checks::linearizability::zk::from_history(history);
        self.linearizability_checked += checked.operations.len();
        self.linearizability_plain_reads += checked
            .skipped
            .iter()
            .filter(|skipped| skipped.reason.starts_with("plain read"))
            .count();
        let ops = zk_operations(history);
        let syncs = preceding_syncs(&ops);
        // Latest acknowledged setData per path, in acknowledgement order.
        let mut acked: BTreeMap<&str, Vec<(sim::time::SimTime, u64)>> = BTreeMap::new();
        for op in &ops {
            if let (ZkOperation::SetData { path, .. }, Some(ZkResponse::Stat { stat })) =
                (op.operation, op.ok())
            {
                acked
                    .entry(path.as_str())
                    .or_default()
                    .push((op.ok_at().unwrap(), stat.mzxid));
                self.acknowledged_writes += 1;
            }
        }
        for (op, sync) in ops.iter().zip(&syncs) {
            let (ZkOperation::GetData { path }, Some(ZkResponse::Data { stat, .. })) =
                (op.operation, op.ok())
            else {
                continue;
            };
            if sync.is_some() {
                self.synced_reads += 1;
            }
            // Sequential consistency allows a read older than a write acknowledged before
            // it began (the sync-then-read checker judges the reads where it does not).
            let newest = acked
                .get(path.as_str())
                .into_iter()
                .flatten()
                .filter(|(at, _)| *at < op.invoked_at)
                .map(|(_, mzxid)| *mzxid)
                .max();
            if newest.is_some_and(|mzxid| stat.mzxid < mzxid) {
                self.stale_reads += 1;
            }
        }
        for record in history.records() {
            match record.event {
                Event::Protocol(ProtocolEvent::SnapshotInstalled { .. }) => {
                    self.snapshot_installs += 1
                }
                Event::Protocol(ProtocolEvent::BecameLeader { .. }) => self.leaders += 1,
                Event::Protocol(ProtocolEvent::SessionExpired { .. }) => self.expiries += 1,
                _ => {}
            }
        }
    }
}

/// Sweeps the catalogue scenario `name`; returns what it exercised, after asserting every
/// run clean.
fn sweep(name: &str, test_name: &str, seeds: u64) -> (SweepSummary, Exercised) {
    sweep_each_run(name, test_name, seeds, |_, _| {})
}

/// [`sweep`], showing `each_run` each run's history and what that run alone exercised
/// (the tests that judge runs one by one need the run's own tally, not the sweep's).
fn sweep_each_run(
    name: &str,
    test_name: &str,
    seeds: u64,
    mut each_run: impl FnMut(&History, &Exercised),
) -> (SweepSummary, Exercised) {
    let (summary, exercised) = sweep_counting(
        catalogued(name),
        test_name,
        seeds,
        |exercised: &mut Exercised, history| {
            let mut run = Exercised::default();
            run.add_history(history);
            each_run(history, &run);
            exercised.merge(run);
        },
    );
    summary.assert_clean();
    (summary, exercised)
}

#[test]
fn three_servers_stay_safe_under_swarm_faults() {
    let (summary, exercised) = sweep(
        "zab_swarm_3",
        "three_servers_stay_safe_under_swarm_faults",
        50,
    );
    assert!(exercised.synced_reads > 0 && exercised.acknowledged_writes > 0);
    // Linearizability had writes and synced reads to check, and left plain reads out.
    assert!(
        exercised.linearizability_checked > 20 * summary.seeds.len()
            && exercised.linearizability_plain_reads > 0,
        "{exercised:?}"
    );
    summary.assert_faults_fired();
    if summary.sweeping {
        assert!(
            exercised.leaders > summary.seeds.len(),
            "faults never caused a leader change: {exercised:?}"
        );
    }
}

#[test]
fn five_servers_stay_safe_under_swarm_faults() {
    let (summary, _) = sweep(
        "zab_swarm_5",
        "five_servers_stay_safe_under_swarm_faults",
        50,
    );
    summary.assert_faults_fired();
}

#[test]
fn seven_servers_stay_safe_under_swarm_faults() {
    let (summary, _) = sweep(
        "zab_swarm_7",
        "seven_servers_stay_safe_under_swarm_faults",
        50,
    );
    summary.assert_faults_fired();
}

/// Even ensembles: 2 voters (a quorum is both; this swarm may crash or pause one of them),
/// 4 (three) and 6 (four, so two may fail), over fewer seeds than the odd sizes
/// (`COORDSIM_SEEDS` raises them).
#[test]
fn two_servers_stay_safe_under_swarm_faults() {
    let (summary, exercised) = sweep(
        "zab_swarm_2",
        "two_servers_stay_safe_under_swarm_faults",
        20,
    );
    assert!(exercised.acknowledged_writes > 0, "{exercised:?}");
    summary.assert_faults_fired();
}

#[test]
fn four_servers_stay_safe_under_swarm_faults() {
    let (summary, exercised) = sweep(
        "zab_swarm_4",
        "four_servers_stay_safe_under_swarm_faults",
        20,
    );
    assert!(exercised.acknowledged_writes > 0, "{exercised:?}");
    summary.assert_faults_fired();
}

/// Six voters need four: the swarm's crashes and pauses take up to two of them away at once
/// (a minority, which the quorum of four survives), and the runs stay safe and recover.
#[test]
fn six_servers_stay_safe_under_swarm_faults() {
    let (summary, exercised) = sweep(
        "zab_swarm_6",
        "six_servers_stay_safe_under_swarm_faults",
        15,
    );
    assert!(exercised.acknowledged_writes > 0, "{exercised:?}");
    summary.assert_faults_fired();
}

/// What a run with observers (`s4`, `s5`) shows of them.
#[derive(Debug, Default)]
struct ObserverRun {
    /// Records of a leader counting a quorum (`QuorumCounted`): there is something for
    /// `protocol.observers_never_count` to judge.
    quorums_counted: usize,
    /// Transactions the observers applied.
    observer_applies: usize,
    /// Client sessions attached (new or resumed) through an observer.
    observer_attachments: usize,
}

fn is_observer(node: sim::NodeId) -> bool {
    node.is_server() && node.ordinal() >= 3
}

impl ObserverRun {
    fn of(history: &sim::history::History) -> Self {
        let mut run = ObserverRun::default();
        for record in history.records() {
            match (&record.event, record.node) {
                (Event::Protocol(ProtocolEvent::QuorumCounted { .. }), _) => {
                    run.quorums_counted += 1
                }
                (Event::Protocol(ProtocolEvent::Applied { .. }), Some(node))
                    if is_observer(node) =>
                {
                    run.observer_applies += 1
                }
                _ => {}
            }
        }
        run.observer_attachments = attachments(history)
            .iter()
            .filter(|attachment| is_observer(attachment.server))
            .count();
        run
    }
}

/// Three voters and two observers under every fault kind: every check holds (the observer
/// check among them: no observer leads or is counted in a quorum), and the observers did
/// their part: clients attached through them, they applied what was committed, and the
/// leaders recorded the quorums they counted.
#[test]
fn observers_stay_safe_under_swarm_faults() {
    let mut total = ObserverRun::default();
    let (summary, _) = sweep_each_run(
        "zab_observers",
        "observers_stay_safe_under_swarm_faults",
        20,
        |history, _| {
            let run = ObserverRun::of(history);
            assert!(
                run.quorums_counted > 0 && run.observer_applies > 0,
                "{run:?}"
            );
            total.quorums_counted += run.quorums_counted;
            total.observer_applies += run.observer_applies;
            total.observer_attachments += run.observer_attachments;
        },
    );
    println!("observers over the sweep: {total:?}");
    assert!(total.observer_attachments > 0, "{total:?}");
    summary.assert_faults_fired();
}

/// Both observers cut off from the voters from 1.5 s to 5.5 s: the voters keep their
/// leader (nobody becomes leader while the observers are away) and commit writes; after the
/// heal the observers rejoin and apply everything the voters applied.
#[test]
fn voters_keep_committing_with_every_observer_cut_off() {
    use sim::time::SimTime;
    let (from, until) = (SimTime::from_millis(1_500), SimTime::from_millis(5_500));
    let (summary, _) = sweep_each_run(
        "zab_observers_cut_off",
        "voters_keep_committing_with_every_observer_cut_off",
        5,
        |history, _| {
            let elected_while_away: Vec<_> = history
                .records()
                .iter()
                .filter(|r| {
                    matches!(r.event, Event::Protocol(ProtocolEvent::BecameLeader { .. }))
                        && r.at >= from
                        && r.at <= until
                })
                .collect();
            assert!(elected_while_away.is_empty(), "{elected_while_away:?}");
            let committed_while_away = zk_operations(history)
                .iter()
                .filter(|op| {
                    matches!(
                        op.operation,
                        ZkOperation::Create { .. }
                            | ZkOperation::SetData { .. }
                            | ZkOperation::Delete { .. }
                    ) && op.ok_at().is_some_and(|at| {
                        at > from + std::time::Duration::from_millis(500) && at < until
                    })
                })
                .count();
            assert!(
                committed_while_away > 0,
                "no write committed while the observers were away"
            );
            let mut last_applied: BTreeMap<sim::NodeId, u64> = BTreeMap::new();
            for record in history.records() {
                if let (Event::Protocol(ProtocolEvent::Applied { index, .. }), Some(node)) =
                    (&record.event, record.node)
                {
                    last_applied.insert(node, *index);
                }
            }
            let voters_last = (0..3)
                .filter_map(|i| last_applied.get(&sim::NodeId::server(i)))
                .max()
                .copied();
            for observer in [sim::NodeId::server(3), sim::NodeId::server(4)] {
                assert_eq!(
                    last_applied.get(&observer).copied(),
                    voters_last,
                    "{observer} did not catch up"
                );
            }
        },
    );
    summary.assert_faults_fired();
}

#[test]
fn a_single_server_serves_and_stays_safe() {
    let (summary, _) = sweep(
        "zab_single_server",
        "a_single_server_serves_and_stays_safe",
        50,
    );
    summary.assert_faults_fired();
}

/// Leaders crash again and again (some stranded with the clients first), so recoveries
/// with a lagging quorum, TRUNC and SNAP syncs happen often.
#[test]
fn three_servers_stay_safe_when_leaders_keep_crashing() {
    let (summary, exercised) = sweep(
        "zab_leader_killer",
        "three_servers_stay_safe_when_leaders_keep_crashing",
        50,
    );
    summary.assert_faults_fired();
    if summary.sweeping {
        assert!(
            exercised.leaders > 2 * summary.seeds.len(),
            "the leader killer rarely changed the leader: {exercised:?}"
        );
    }
}

/// Clients paused past their session timeout: their sessions expire (the clients are told
/// so when they wake) and every check still holds; the clients start new sessions and the
/// audit after the heal succeeds.
#[test]
fn clients_paused_past_their_session_timeout_lose_their_sessions_safely() {
    let mut told_expired = 0;
    let summary = sweep_clean(
        catalogued("zab_paused_clients"),
        "clients_paused_past_their_session_timeout_lose_their_sessions_safely",
        50,
        |history| {
            told_expired += history
                .records()
                .iter()
                .filter(|r| {
                    matches!(
                        r.event,
                        Event::Zk(sim::history::zk::ZkEvent::SessionExpired { .. })
                    )
                })
                .count();
        },
    );
    assert!(
        told_expired > summary.seeds.len(),
        "paused clients were rarely told their session expired: {told_expired} over {} seeds",
        summary.seeds.len()
    );
}

#[test]
fn same_seed_same_history() {
    let scenario = catalogued("zab_swarm_3");
    let seed = sim::Seed::new(7);
    let first = scenarios::driver::run(&scenario, seed);
    let second = scenarios::driver::run(&scenario, seed);
    assert!(first.history_digest.is_some());
    assert_eq!(first.history_digest, second.history_digest);
    assert!(first.metrics.records > 100);
}

/// A follower's reads may be stale (sequential consistency); `sync` then read never is:
/// `zab_follower_reads`, a writer on the leader telling a reader on a follower, out of band,
/// of each acknowledged write, with links taking 1 to 40 ms and no faults. The runs are
/// clean (the sync-then-read check judges every synced read); on every seed the reader was
/// attached to a follower, and over the sweep its plain reads did miss writes it had been
/// told of (on 49 of the first 50 seeds).
#[test]
fn follower_reads_may_be_stale_but_sync_then_read_is_not() {
    let (reader, follower) = (sim::NodeId::client(1), sim::NodeId::server(0));
    let mut stale_seeds = 0;
    let (summary, exercised) = sweep_each_run(
        "zab_follower_reads",
        "follower_reads_may_be_stale_but_sync_then_read_is_not",
        50,
        |history, exercised| {
            let attached = attachments(history)
                .into_iter()
                .find(|attachment| attachment.client == reader)
                .expect("the reader had a session");
            let leading = leaderships(history)
                .iter()
                .any(|l| l.node == attached.server && l.covers(attached.at));
            assert!(
                attached.server == follower && !leading,
                "the reader was attached to {} (leading: {leading}), not the follower {follower}",
                attached.server
            );
            stale_seeds += usize::from(exercised.stale_reads > 0);
        },
    );
    println!(
        "stale plain reads: {} on {stale_seeds} of {} seeds; synced reads, all fresh: {}",
        exercised.stale_reads,
        summary.seeds.len(),
        exercised.synced_reads
    );
    assert!(
        stale_seeds > 0,
        "the follower never lagged: the reads were not really local"
    );
    assert!(exercised.synced_reads > 0);
}

/// Seeds that once broke the model, kept as regressions (the runs go through the driver,
/// which re-generates the same plans from the seeds):
/// - 118, five servers: a deposed leader (paused, its clock far ahead on resume) expired a
///   session in its stale tracker and told the reconnecting client "session expired" while
///   the session and its ephemeral nodes lived on (caught by the ephemeral checker); now
///   only a committed close is reported as an expiry.
/// - 169, three servers with client faults: the client abandoned a gracefully closed
///   connection on a failed ping and lost a watch event still in flight (caught by the
///   watch-order checker); now it reads everything sent before the close.
/// - 0x18884, three servers with client faults: a follower paused with a client's create
///   still in its receive buffer forwarded it after the client had failed over, and the
///   leader applied it after the client's own later delete (caught by sync-then-read); now
///   the leader refuses requests from a server the session moved away from, as ZooKeeper
///   does (`models/tests/zk_session_moved.rs` pins the mechanism).
///
/// (The fault plans are generated differently since the run model changed, so these seeds
/// no longer replay the exact schedules that broke the model; the scripted regression
/// tests in models/tests pin the mechanisms.)
#[test]
fn regression_seeds_stay_clean() {
    for (scenario, seed) in [
        ("zab_swarm_5", 118),
        ("zab_swarm_3", 169),
        ("zab_swarm_3", 0x18884),
    ] {
        let scenario = catalogued(scenario);
        let seed = sim::Seed::new(seed);
        let outcome = scenarios::driver::run(&scenario, seed);
        assert!(
            outcome.is_clean(),
            "{outcome}\nREPRODUCE WITH: {}",
            scenarios::driver::replay_command(&scenario, seed)
        );
    }
}
