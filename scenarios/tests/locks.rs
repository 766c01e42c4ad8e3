//! The lock recipes on their stores, through the one driver: the ZooKeeper herd lock and
//! queue lock on the ZAB store, etcd's mutex on the Raft store. Expected outcomes, stated:
//! - without faults, and under faults that leave live sessions alone, mutual exclusion holds
//!   as every client believed it and at the fenced resource, every waiter acquires again
//!   after the heal, and the queue lock and the mutex wake one waiter per release while the
//!   herd lock wakes them all;
//! - with holders paused past their session timeout / lease TTL, mutual exclusion *as
//!   believed* breaks (a lease-based lock cannot give it by itself: Kleppmann 2016; Jepsen
//!   etcd 3.4.3), and the fenced resource refuses the stale holders' writes, so it stays
//!   safe; with fencing off it accepts them, and `recipe.fenced_writes` catches that;
//! - with Curator's clients, a waiter that gave its session up with its create's reply
//!   lost finds the node that create made, in a session the servers still hold, and deletes
//!   it instead of holding the lock by it.

mod common;

use checks::{
    history::locks::{holds, resource_writes},
    recipes::herd_effect,
};
use common::{assert_rate, catalogued, sweep, sweep_counting};
use models::recipes::Fencing;
use scenarios::workload::{LOCK_NAME, Workload};
use sim::{
    fault::FaultKind,
    history::{History, ResourceVerdict},
    report::FailureReport,
};

/// What the runs of a sweep exercised, counted from their histories.
#[derive(Debug, Default)]
struct Exercised {
    acquisitions: usize,
    accepted_writes: usize,
    rejected_writes: usize,
    wakeups_per_release: Vec<f64>,
}

impl Exercised {
    /// Adds what the run of `history` exercised.
    fn count(&mut self, history: &History) {
        self.acquisitions += holds(history).len();
        for write in resource_writes(history) {
            match write.verdict {
                ResourceVerdict::Accepted => self.accepted_writes += 1,
                ResourceVerdict::RejectedStaleToken => self.rejected_writes += 1,
            }
        }
        if let Some(report) = herd_effect::report(history).get(LOCK_NAME) {
            self.wakeups_per_release.push(report.wakeups_per_release());
        }
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// Clean, with many acquisitions and writes per run.
fn assert_safe_and_busy(name: &str, test: &str, seeds: u64) -> Exercised {
    let (summary, exercised) = sweep_counting(catalogued(name), test, seeds, Exercised::count);
    summary.assert_clean();
    summary.assert_faults_fired();
    let runs = summary.seeds.len();
    assert!(
        exercised.acquisitions >= 20 * runs && exercised.accepted_writes >= 15 * runs,
        "{name}: too little work over {runs} runs: {exercised:?}"
    );
    exercised
}

#[test]
fn the_queue_lock_is_exclusive_and_wakes_one_waiter_per_release() {
    let exercised = assert_safe_and_busy(
        "zk_queue_lock",
        "the_queue_lock_is_exclusive_and_wakes_one_waiter_per_release",
        5,
    );
    // recipe.herd_effect (one waiter per node's going) ran clean; the mean is about one.
    assert!(mean(&exercised.wakeups_per_release) <= 1.5, "{exercised:?}");
}

#[test]
fn the_etcd_mutex_is_exclusive_and_wakes_one_waiter_per_release() {
    let exercised = assert_safe_and_busy(
        "etcd_mutex",
        "the_etcd_mutex_is_exclusive_and_wakes_one_waiter_per_release",
        5,
    );
    assert!(mean(&exercised.wakeups_per_release) <= 1.5, "{exercised:?}");
}

#[test]
fn the_herd_lock_is_exclusive_but_wakes_the_herd() {
    let exercised = assert_safe_and_busy(
        "zk_herd_lock",
        "the_herd_lock_is_exclusive_but_wakes_the_herd",
        5,
    );
    // Five clients: each release wakes the other waiters, about three or four.
    assert!(mean(&exercised.wakeups_per_release) >= 2.5, "{exercised:?}");
    // And the bound the queue lock meets is broken: the check fires on the herd lock.
    let mut scenario = catalogued("zk_herd_lock");
    scenario = scenario.with_check("recipe.herd_effect");
    let (summary, _) = sweep_counting(
        scenario,
        "the_herd_lock_is_exclusive_but_wakes_the_herd",
        2,
        Exercised::count,
    );
    assert_eq!(summary.failures.len(), summary.seeds.len());
    summary.assert_only_violations_of("recipe.herd_effect");
    // Each failure prints its seed and the command that replays it, which names this
    // suite's own target (`common::TARGET`, taken from the crate being compiled).
    for failure in &summary.failures {
        let printed = failure.to_string();
        let replay = FailureReport::for_test(
            failure.outcome.seed,
            "scenarios",
            "locks",
            "the_herd_lock_is_exclusive_but_wakes_the_herd",
        );
        assert!(printed.starts_with(&replay.to_string()), "{printed}");
    }
}

fn assert_safe_under_server_faults(name: &str, test: &str) {
    let (summary, exercised) = sweep_counting(catalogued(name), test, 10, Exercised::count);
    summary.assert_clean();
    summary.assert_fired(&[
        FaultKind::Partition,
        FaultKind::Loss,
        FaultKind::Latency,
        FaultKind::Crash,
        FaultKind::Pause,
    ]);
    assert!(
        exercised.acquisitions >= 5 * summary.seeds.len(),
        "{name}: too few acquisitions: {exercised:?}"
    );
}

#[test]
fn the_queue_lock_stays_exclusive_under_server_faults() {
    assert_safe_under_server_faults(
        "zk_queue_lock_faults",
        "the_queue_lock_stays_exclusive_under_server_faults",
    );
}

#[test]
fn the_queue_lock_with_creator_all_acl_nodes_stays_exclusive_under_server_faults() {
    // Every node of the lock carries the lock user's digest id only (the models test
    // `a_foreign_client_cannot_delete_a_lock_node_made_with_creator_all_acl` shows a stranger
    // refused); the ACLs go through the log, recovery and SNAP, and the replicas agree.
    let name = "zk_queue_lock_creator_acl";
    let (summary, exercised) = sweep_counting(
        catalogued(name),
        "the_queue_lock_with_creator_all_acl_nodes_stays_exclusive_under_server_faults",
        3,
        Exercised::count,
    );
    summary.assert_clean();
    // Crashes (recovery from the log and snapshots, SNAP syncs) and partitions at least.
    summary.assert_fired(&[FaultKind::Partition, FaultKind::Crash]);
    assert!(
        exercised.acquisitions >= 5 * summary.seeds.len(),
        "{name}: too few acquisitions: {exercised:?}"
    );
}

#[test]
fn the_herd_lock_stays_exclusive_under_server_faults() {
    assert_safe_under_server_faults(
        "zk_herd_lock_faults",
        "the_herd_lock_stays_exclusive_under_server_faults",
    );
}

#[test]
fn the_etcd_mutex_stays_exclusive_under_server_faults() {
    assert_safe_under_server_faults(
        "etcd_mutex_faults",
        "the_etcd_mutex_stays_exclusive_under_server_faults",
    );
}

/// With holders paused past their session: believed exclusion breaks on some seeds, no other
/// check fires, the resource refuses stale writes; with fencing off, `recipe.fenced_writes`
/// fires on the same seeds' kind of run.
fn assert_expiry_breaks_belief_but_not_the_fenced_resource(name: &str, test: &str) {
    const PAUSED_RATE: f64 = 0.97;
    let seeds = 10;
    // The scenario judges safety at the resource only; here believed exclusion is checked
    // too, to show it break.
    let mut believed = catalogued(name);
    believed = believed.with_check("recipe.mutual_exclusion");
    let (summary, exercised) = sweep_counting(believed, test, seeds, Exercised::count);
    summary.assert_fired(&[FaultKind::Pause]);
    // Most runs paused a holder at least once: a pause that finds no holder (the lock
    // between holders when it fires) is skipped, so not every run does (seeds 9100009 of
    // the herd lock and 9100239 of the etcd mutex paused none). Over 1,000 seeds from 0 a
    // holder was paused in 986 runs of the herd lock, 999 of the etcd mutex and 1,000 of
    // the queue lock; the test asserts a rate of 97% as far as the seeds it runs can show it
    // (`common::fewest`: 5 of the 10 default runs, 274 of 300).
    let paused = summary
        .outcomes
        .iter()
        .filter(|outcome| outcome.fault_counts.fired(FaultKind::Pause) >= 1)
        .count();
    println!(
        "{name}: a holder paused in {paused} of {} runs",
        summary.outcomes.len()
    );
    assert_rate(
        "a holder paused",
        paused,
        summary.outcomes.len(),
        PAUSED_RATE,
        "986, 999 and 1,000 of 1,000 for the three locks",
    );
    let broken_belief = summary.assert_only_violations_of("recipe.mutual_exclusion");
    assert!(
        broken_belief >= 1,
        "{name}: no seed of {seeds} showed a paused holder still believing: {exercised:?}"
    );
    assert!(
        exercised.rejected_writes >= 1,
        "{name}: the resource never had to refuse a stale holder: {exercised:?}"
    );
    // As the catalogue has it (the resource judged, not beliefs): clean.
    let (summary, _) = sweep_counting(catalogued(name), test, seeds, Exercised::count);
    summary.assert_clean();
    // The same runs without fencing: the resource takes the stale writes.
    let mut unfenced = catalogued(name);
    if let Workload::Locks(locks) = &mut unfenced.workload {
        locks.fencing = Fencing::Off;
    }
    let (summary, exercised) = sweep_counting(unfenced, test, seeds, Exercised::count);
    let stale_accepted = summary.seeds_where_fired("recipe.fenced_writes");
    assert!(
        stale_accepted >= 1,
        "{name} without fencing: no stale write accepted in {seeds} seeds: {exercised:?}"
    );
}

fn assert_safe_when_cut_off(name: &str, test: &str) {
    let (summary, exercised) = sweep_counting(catalogued(name), test, 10, Exercised::count);
    summary.assert_clean();
    summary.assert_fired(&[FaultKind::Partition]);
    assert!(
        exercised.acquisitions >= 3 * summary.seeds.len(),
        "{name}: too few acquisitions: {exercised:?}"
    );
}

#[test]
fn a_cut_off_zk_queue_lock_holder_stops_believing_in_time() {
    assert_safe_when_cut_off(
        "zk_queue_lock_cut_off_holder",
        "a_cut_off_zk_queue_lock_holder_stops_believing_in_time",
    );
}

#[test]
fn a_cut_off_etcd_mutex_holder_stops_believing_in_time() {
    assert_safe_when_cut_off(
        "etcd_mutex_cut_off_holder",
        "a_cut_off_etcd_mutex_holder_stops_believing_in_time",
    );
}

#[test]
fn a_cut_off_zk_queue_lock_waiter_does_not_take_a_lock_it_lost() {
    assert_safe_when_cut_off(
        "zk_queue_lock_cut_off_waiter",
        "a_cut_off_zk_queue_lock_waiter_does_not_take_a_lock_it_lost",
    );
}

#[test]
fn a_cut_off_etcd_mutex_waiter_does_not_take_a_lock_it_lost() {
    assert_safe_when_cut_off(
        "etcd_mutex_cut_off_waiter",
        "a_cut_off_etcd_mutex_waiter_does_not_take_a_lock_it_lost",
    );
}

#[test]
fn a_paused_zk_queue_lock_holder_breaks_belief_and_fencing_saves_the_resource() {
    assert_expiry_breaks_belief_but_not_the_fenced_resource(
        "zk_queue_lock_expiry",
        "a_paused_zk_queue_lock_holder_breaks_belief_and_fencing_saves_the_resource",
    );
}

#[test]
fn a_paused_zk_herd_lock_holder_breaks_belief_and_fencing_saves_the_resource() {
    assert_expiry_breaks_belief_but_not_the_fenced_resource(
        "zk_herd_lock_expiry",
        "a_paused_zk_herd_lock_holder_breaks_belief_and_fencing_saves_the_resource",
    );
}

#[test]
fn a_paused_etcd_mutex_holder_breaks_belief_and_fencing_saves_the_resource() {
    assert_expiry_breaks_belief_but_not_the_fenced_resource(
        "etcd_mutex_expiry",
        "a_paused_etcd_mutex_holder_breaks_belief_and_fencing_saves_the_resource",
    );
}

/// Nodes that a client process, back in a new session, found by its own `exists` to be
/// owned by another session and then deleted; and the sessions clients gave up.
fn old_session_nodes_deleted(history: &sim::history::History) -> (usize, usize) {
    use sim::history::{
        Event, OpResult, Operation, Response,
        zk::{ZkEvent, ZkOperation, ZkResponse},
    };
    use std::collections::{BTreeMap, BTreeSet};
    let mut sessions = BTreeMap::new();
    let mut asked = BTreeMap::new();
    let mut foreign = BTreeSet::new();
    let (mut deleted, mut abandoned) = (0, 0);
    for record in history.records() {
        match &record.event {
            Event::Zk(ZkEvent::SessionEstablished {
                process, session, ..
            }) => {
                sessions.insert((record.node, *process), *session);
            }
            Event::Zk(ZkEvent::SessionAbandoned { .. }) => abandoned += 1,
            Event::Invoke {
                client,
                process,
                op_id,
                operation,
            } => {
                let key = (Some(*client), *process);
                match operation {
                    Operation::Zk(ZkOperation::Exists { path }) => {
                        if let Some(&session) = sessions.get(&key) {
                            asked.insert(*op_id, (key, path.clone(), session));
                        }
                    }
                    Operation::Zk(ZkOperation::Delete { path, .. })
                        if foreign.contains(&(key, path.clone())) =>
                    {
                        deleted += 1;
                    }
                    _ => {}
                }
            }
            Event::Complete { op_id, result } => {
                if let Some((key, path, session)) = asked.remove(op_id)
                    && let OpResult::Ok {
                        response:
                            Response::Zk(ZkResponse::Exists {
                                stat: Some(stat), ..
                            }),
                    } = result
                    && stat.ephemeral_owner != 0
                    && stat.ephemeral_owner != session
                {
                    foreign.insert((key, path));
                }
            }
            _ => {}
        }
    }
    (deleted, abandoned)
}

#[test]
fn a_curator_queue_lock_client_deletes_the_node_its_given_up_session_made() {
    let name = "zk_queue_lock_curator_joiner_cut_off";
    let mut counts = (0, 0);
    let summary = sweep(
        catalogued(name),
        "a_curator_queue_lock_client_deletes_the_node_its_given_up_session_made",
        10,
        |history| {
            let (deleted, abandoned) = old_session_nodes_deleted(history);
            counts.0 += deleted;
            counts.1 += abandoned;
        },
    );
    summary.assert_clean();
    summary.assert_fired(&[FaultKind::Partition, FaultKind::Crash]);
    let (deleted, abandoned) = counts;
    assert!(
        abandoned >= summary.seeds.len() && deleted >= 1,
        "{name}: {abandoned} sessions given up, {deleted} old-session nodes deleted"
    );
    println!("{name}: {abandoned} sessions given up, {deleted} old-session nodes deleted");
}

/// `exists` replies, in the lock waits of `history`, that found the node asked for gone.
fn predecessors_found_gone(history: &sim::history::History) -> usize {
    use sim::history::{Event, OpResult, Response, zk::ZkResponse};
    history
        .records()
        .iter()
        .filter(|record| {
            matches!(
                &record.event,
                Event::Complete {
                    result: OpResult::Ok {
                        response: Response::Zk(ZkResponse::Exists { stat: None }),
                    },
                    ..
                }
            )
        })
        .count()
}

/// Two clients taking quick turns reach the race of a lost wake-up: a joiner's `exists`
/// finds that its predecessor went after its listing. The correct queue lock lists again,
/// and `recipe.no_lost_wakeup` stays clean; a waiter that sleeps on the creation watch
/// instead (`recipe.no_relist_on_gone_predecessor`) is caught on every seed.
#[test]
fn a_zk_queue_lock_joiner_whose_predecessor_just_went_lists_again() {
    let name = "zk_queue_lock_quick_turns";
    let test = "a_zk_queue_lock_joiner_whose_predecessor_just_went_lists_again";
    let mut races = Vec::new();
    let mut acquisitions = 0;
    let summary = sweep(catalogued(name), test, 5, |history| {
        races.push(predecessors_found_gone(history));
        acquisitions += holds(history).len();
    });
    summary.assert_clean();
    let runs = summary.seeds.len();
    println!("{name}: predecessors found gone per run {races:?}, {acquisitions} acquisitions");
    assert!(
        races.iter().all(|found| *found >= 1) && acquisitions >= 100 * runs,
        "{name}: the race was not reached in every run ({races:?}), or too little work \
         ({acquisitions} acquisitions)"
    );
    let buggy = catalogued(name).with_bugs(["recipe.no_relist_on_gone_predecessor"
        .parse()
        .expect("a known bug")]);
    let (summary, _) = sweep_counting(buggy, test, 3, Exercised::count);
    assert_eq!(summary.failures.len(), summary.seeds.len());
    summary.assert_only_violations_of("recipe.no_lost_wakeup");
}
