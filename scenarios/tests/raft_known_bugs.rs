//! The known-bug zoo of the Raft store (../shared/BUGS.md): each variant, switched on, is
//! caught by the checker of the property it breaks within a bounded number of seeds, and the
//! correct model passes the same seeds under the same faults.
//!
//! Exact traces of the same bugs, step by step, are in models/tests/raft_scripts.rs.
//!
//! Each test expects the violation *somewhere in its sweep*: with `COORDSIM_SEED` pinned to
//! a seed that does not trigger the bug, the buggy half fails (the report names the seeds
//! that did). The correct half's failures print the usual replay line.

use checks::{
    Violation,
    etcd::{
        acknowledged_write_durability, linearizable as kv_linearizable, read_sees_prior_writes,
    },
    protocol::leader_stability,
};
use models::{
    etcd::{ClientConfig, KnownBug},
    raft::RaftBug,
};
use scenarios::{
    etcd_workload::{Faults, KvRun, KvWorkload, LeaderKiller, OperationMix, Tuning, run},
    sweep::{Sweep, SweepSummary},
};
use sim::{
    NodeId, Seed,
    fault::{Fault, FaultKind, FaultPlan, PartitionShape, ScheduledFault, SwarmConfig},
    time::SimTime,
};
use std::{cell::RefCell, collections::BTreeMap, time::Duration};

const TARGET: &str = "raft_known_bugs";
/// The property of [`kv_linearizable`], which every bug that loses writes or serves stale
/// reads breaks too.
const LINEARIZABILITY: &str = "linearizability";

use checks::boxed;

/// Safety checks of every run: protocol checks, fresh reads, durable acknowledged writes.
fn safety_checks(outcome: &sim::RunOutcome, final_reads_from: SimTime) -> Vec<Box<dyn Violation>> {
    let history = &outcome.history;
    let mut violations = checks::run(
        checks::protocol::CHECKS,
        history,
        &checks::CheckContext::default(),
    );
    violations.extend(boxed(read_sees_prior_writes::check(history)));
    violations.extend(boxed(acknowledged_write_durability::check(
        history,
        final_reads_from,
    )));
    violations.extend(kv_linearizable::check_history(history));
    violations
}

/// Runs `workload` over the sweep's seeds with `bug` on and with it off. The buggy sweep must
/// violate each of `properties` in at least one seed; the correct sweep must violate nothing.
fn caught_and_correct_passes(
    test_name: &str,
    default_seeds: u64,
    bug: KnownBug,
    properties: &[&str],
    workload: KvWorkload,
) -> SweepSummary {
    let sweep = |bugs: Vec<KnownBug>| {
        let final_reads: RefCell<BTreeMap<Seed, SimTime>> = RefCell::new(BTreeMap::new());
        let workload = KvWorkload {
            bugs,
            ..workload.clone()
        };
        Sweep::new("scenarios", TARGET, test_name, default_seeds).run(
            |seed| {
                let KvRun {
                    outcome,
                    final_reads_from,
                    ..
                } = run(seed, &workload);
                final_reads.borrow_mut().insert(seed, final_reads_from);
                outcome
            },
            |outcome| safety_checks(outcome, final_reads.borrow()[&outcome.seed]),
        )
    };
    let buggy = sweep(vec![bug]);
    for property in properties {
        let failure = buggy.first_violation_of(property).unwrap_or_else(|| {
            panic!(
                "{bug} was not caught by `{property}` in {} seeds ({} seeds violated something else)",
                buggy.seeds.len(),
                buggy.failures.len()
            )
        });
        print_caught(&buggy, &bug.to_string(), property, failure);
    }
    let correct = sweep(Vec::new());
    correct.assert_clean();
    buggy
}

/// Shows how often the bug was caught and the first evidence (the full report of a seed can
/// be long: a lost entry breaks agreement at every later index).
fn print_caught(
    summary: &SweepSummary,
    bug: &str,
    property: &str,
    failure: &scenarios::sweep::SeedFailure,
) {
    let caught = summary
        .failures
        .iter()
        .filter(|f| f.violations.iter().any(|v| v.property() == property))
        .count();
    println!(
        "{bug}: `{property}` violated in {caught} of {} seeds; first at seed {}:",
        summary.seeds.len(),
        failure.seed
    );
    for violation in failure
        .violations
        .iter()
        .filter(|v| v.property() == property)
        .take(3)
    {
        println!("  {violation}");
    }
}

fn slow_disks() -> Option<(Duration, Duration)> {
    Some((Duration::from_millis(20), Duration::from_millis(40)))
}

/// etcd-io/etcd#14370: a single voter acknowledges writes before its fsync; crashes lose them.
#[test]
fn ack_before_fsync_loses_acknowledged_writes() {
    caught_and_correct_passes(
        "ack_before_fsync_loses_acknowledged_writes",
        10,
        KnownBug::Raft(RaftBug::AckBeforeFsync),
        &["acknowledged write durability", LINEARIZABILITY],
        KvWorkload {
            servers: 1,
            disk_sync_latency: slow_disks(),
            faults: Faults::Swarm(SwarmConfig {
                fault_phase_ms: 8_000,
                mean_interval_ms: 1_500,
                max_unavailable_servers: Some(1),
                kinds: vec![FaultKind::Crash],
                ..SwarmConfig::default()
            }),
            ..KvWorkload::default()
        },
    );
}

/// Raft §5.4.2 Figure 8, found by seeds: leaders crash again and again (some after being cut
/// off with the clients, so they append entries they cannot commit) on a lossy network; a
/// leader that commits an earlier term's entry by counting replicas sees it overwritten.
#[test]
fn commit_prev_term_by_count_breaks_replica_agreement() {
    caught_and_correct_passes(
        "commit_prev_term_by_count_breaks_replica_agreement",
        100,
        KnownBug::Raft(RaftBug::CommitPrevTermByCount),
        &["replica agreement"],
        KvWorkload {
            servers: 3,
            loss_percent: 30,
            disk_sync_latency: slow_disks(),
            tune: Tuning::with(|config| config.raft.max_entries_per_append = 1),
            faults: Faults::LeaderKiller(LeaderKiller {
                phase: Duration::from_secs(8),
                max_delay: Duration::from_millis(200),
                leader_percent: 20,
                strand_leader_percent: 70,
            }),
            ..KvWorkload::default()
        },
    );
}

/// Students' Guide to Raft: duplicated and reordered AppendEntries make a follower truncate
/// entries it acknowledged; when it later leads, committed entries are overwritten.
#[test]
fn truncate_on_stale_append_loses_committed_entries() {
    caught_and_correct_passes(
        "truncate_on_stale_append_loses_committed_entries",
        10,
        KnownBug::Raft(RaftBug::TruncateOnStaleAppend),
        &["replica agreement", LINEARIZABILITY],
        KvWorkload {
            servers: 3,
            duplication_percent: 30,
            faults: Faults::Swarm(SwarmConfig {
                fault_phase_ms: 8_000,
                mean_interval_ms: 300,
                kinds: vec![FaultKind::Crash, FaultKind::Partition, FaultKind::Latency],
                ..SwarmConfig::default()
            }),
            ..KvWorkload::default()
        },
    );
}

/// Clients with LAN-like timeouts that fail over quickly.
fn impatient_clients() -> ClientConfig {
    ClientConfig {
        connect_timeout: Duration::from_millis(30),
        request_timeout: Duration::from_millis(150),
        retry_backoff: Duration::from_millis(2),
        ..ClientConfig::default()
    }
}

fn read_heavy() -> OperationMix {
    OperationMix {
        put_percent: 30,
        get_percent: 65,
        serializable_get_percent: 0,
        txn_percent: 5,
    }
}

/// etcd-io/etcd#741: the leader, cut off with one client (and its clock running slow), keeps
/// answering that client's reads from its own state while the majority elects a new leader
/// and acknowledges newer writes.
#[test]
fn read_without_readindex_serves_stale_reads() {
    caught_and_correct_passes(
        "read_without_readindex_serves_stale_reads",
        20,
        KnownBug::Raft(RaftBug::ReadWithoutReadIndex),
        &["read sees prior writes", LINEARIZABILITY],
        KvWorkload {
            servers: 3,
            think_time: Duration::from_millis(10),
            mix: read_heavy(),
            client: ClientConfig {
                request_timeout: Duration::from_millis(250),
                retry_backoff: Duration::from_millis(10),
                ..ClientConfig::default()
            },
            faults: Faults::CutOffLeader {
                phase: Duration::from_secs(8),
                interval: Duration::from_millis(600),
                duration: Duration::from_millis(1_200),
                with_clients: 1,
                leader_drift_ppm: -500_000,
            },
            ..KvWorkload::default()
        },
    );
}

/// etcd-io/raft 758ff0163 (etcd#12680): the leader is cut off right after acknowledging
/// writes whose commit its followers have not heard of; the new leader serves reads before
/// committing an entry of its own term, at its stale commit index.
#[test]
fn readindex_before_term_commit_serves_stale_reads() {
    caught_and_correct_passes(
        "readindex_before_term_commit_serves_stale_reads",
        20,
        KnownBug::Raft(RaftBug::ReadIndexBeforeTermCommit),
        &["read sees prior writes", LINEARIZABILITY],
        KvWorkload {
            servers: 3,
            processes_per_client: 3,
            think_time: Duration::from_millis(10),
            mix: read_heavy(),
            client: impatient_clients(),
            disk_sync_latency: slow_disks(),
            faults: Faults::CutOffLeader {
                phase: Duration::from_secs(8),
                interval: Duration::from_millis(500),
                duration: Duration::from_millis(900),
                with_clients: 0,
                leader_drift_ppm: 0,
            },
            ..KvWorkload::default()
        },
    );
}

/// camunda#5356, hazelcast#16643: s1 and s3 cannot hear each other and campaign in the same
/// term through s2; s2 votes for one, crashes and restarts, and — having forgotten its vote
/// — votes for the other, which retries its request: two leaders in one term.
#[test]
fn volatile_vote_elects_two_leaders_in_one_term() {
    let (s1, s2, s3) = (NodeId::server(0), NodeId::server(1), NodeId::server(2));
    let at = |at_ms, fault| ScheduledFault { at_ms, fault };
    let plan = FaultPlan::new(vec![
        at(
            0,
            Fault::Partition {
                shape: PartitionShape::Groups {
                    groups: vec![vec![s1], vec![s3]],
                },
            },
        ),
        at(325, Fault::Crash { node: s2 }),
        at(335, Fault::Restart { node: s2 }),
        at(3_000, Fault::HealAll),
    ]);
    caught_and_correct_passes(
        "volatile_vote_elects_two_leaders_in_one_term",
        20,
        KnownBug::Raft(RaftBug::VolatileVote),
        &["leader uniqueness", LINEARIZABILITY],
        KvWorkload {
            servers: 3,
            tune: Tuning::with(|config| {
                config.raft.election_timeout_min = Duration::from_millis(300);
                config.raft.election_timeout_max = Duration::from_millis(310);
            }),
            faults: Faults::Plan(plan),
            ..KvWorkload::default()
        },
    );
}

/// etcd-io/etcd#8499, #9333: without PreVote and CheckQuorum a follower behind a flapping
/// link raises its term while cut off and deposes the healthy leader each time it returns.
#[test]
fn no_prevote_no_checkquorum_lets_a_flapping_follower_depose_the_leader() {
    let flapping = KvWorkload {
        servers: 5,
        faults: Faults::FlapFollower {
            cut: Duration::from_millis(1_500),
            reconnect: Duration::from_millis(500),
            rounds: 5,
        },
        ..KvWorkload::default()
    };
    // The first election happens before the flapping starts; allow one more (a leader may
    // legitimately change once).
    let churn = |run: &KvRun| -> Vec<Box<dyn Violation>> {
        let history = &run.outcome.history;
        let first = history
            .records()
            .iter()
            .find(|r| {
                matches!(
                    r.event,
                    sim::history::Event::Protocol(sim::history::ProtocolEvent::BecameLeader { .. })
                )
            })
            .map_or(SimTime::ZERO, |r| r.at);
        let after_first = first + Duration::from_millis(1);
        let mut violations = safety_checks(&run.outcome, run.final_reads_from);
        if let Some(churn) = leader_stability::check(history, after_first, run.final_reads_from, 1)
        {
            violations.push(Box::new(churn));
        }
        violations
    };
    let test_name = "no_prevote_no_checkquorum_lets_a_flapping_follower_depose_the_leader";
    let sweep = |bugs: Vec<KnownBug>| {
        let workload = KvWorkload {
            bugs,
            ..flapping.clone()
        };
        let runs: RefCell<BTreeMap<Seed, SimTime>> = RefCell::new(BTreeMap::new());
        Sweep::new("scenarios", TARGET, test_name, 4).run(
            |seed| {
                let run = run(seed, &workload);
                runs.borrow_mut().insert(seed, run.final_reads_from);
                run.outcome
            },
            |outcome| {
                let run = KvRun {
                    outcome: outcome.clone(),
                    final_reads_from: runs.borrow()[&outcome.seed],
                    final_read_succeeded: true,
                    acknowledged: 0,
                };
                churn(&run)
            },
        )
    };
    let buggy = sweep(vec![KnownBug::Raft(RaftBug::NoPreVoteNoCheckQuorum)]);
    let caught = buggy
        .first_violation_of("leader stability")
        .expect("the flapping follower never deposed the leader");
    print_caught(
        &buggy,
        "raft.no_prevote_no_checkquorum",
        "leader stability",
        caught,
    );
    sweep(Vec::new()).assert_clean();
}
