//! The election scenarios: each election recipe on its store, fault-free, under faults that
//! leave sessions alive, with the leader or the first candidate in line cut off past its
//! session, and with leaders paused past their session timeout or lease TTL.

use super::locks::SERVER_FAULTS;
use crate::catalogue::{isolated, scenario, swarm, target};
use crate::{
    scenario::{Scenario, SkippedCheck},
    store::Store,
    workload::{ElectionRecipe, Elections, LeaderTerm, Workload},
};
use sim::fault::{FaultPlan, FaultSource, PauseClients, PausedClient};

/// Whether clients can believe they lead together in a scenario's runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Leaders {
    /// No: a correct recipe notices every loss in time, so `recipe.leader_uniqueness` runs.
    Unique,
    /// Yes, by design: leaders are paused past their session, and a paused process notices
    /// nothing. Safety is judged at the fenced resource only.
    PausedLeadersOverlap,
}

/// The checks of the election workload an election scenario does not run, and why.
fn election_skips(leaders: Leaders) -> Vec<SkippedCheck> {
    match leaders {
        Leaders::Unique => Vec::new(),
        Leaders::PausedLeadersOverlap => vec![SkippedCheck {
            check: "recipe.leader_uniqueness".into(),
            reason: "leaders are paused past their session: a paused leader still believes it \
                     leads when another was elected; safety is judged at the fenced resource \
                     (recipe.fenced_writes)"
                .into(),
        }],
    }
}

/// Every election scenario.
pub(in crate::catalogue) fn scenarios() -> Vec<Scenario> {
    let recipes = [
        (
            ElectionRecipe::ZkElection,
            "zk_election",
            Store::Zab,
            "ZooKeeper leader election (each candidate watches its predecessor)",
        ),
        (
            ElectionRecipe::EtcdElection,
            "etcd_election",
            Store::Raft,
            "etcd's concurrency.Election",
        ),
    ];
    let mut scenarios = Vec::new();
    for (recipe, name, store, what) in recipes {
        let base = |suffix: &str, description: String| Scenario {
            workload: Workload::Elections(Elections {
                recipe,
                ..Elections::default()
            }),
            skip_checks: election_skips(Leaders::Unique),
            fault_phase_ms: 8_000,
            recovery_ms: 1_000,
            liveness_bound_ms: 30_000,
            ..scenario(&format!("{name}{suffix}"), &description, store, 3, 5)
        };
        scenarios.push(base(
            "",
            format!(
                "{what}: five clients campaign; each leader writes three times to a fenced \
                 resource and resigns; an observer per client follows the leader; no faults"
            ),
        ));
        scenarios.push(Scenario {
            faults: swarm(500, &SERVER_FAULTS),
            ..base(
                "_faults",
                format!(
                    "{what} under partitions, loss, latency, server crashes and pauses \
                     (clients are not paused)"
                ),
            )
        });
        scenarios.push(Scenario {
            workload: Workload::Elections(Elections {
                recipe,
                term: LeaderTerm::UntilLost,
                ..Elections::default()
            }),
            skip_checks: election_skips(Leaders::PausedLeadersOverlap),
            faults: FaultSource::PauseClients(PauseClients {
                interval_ms: 500,
                pause_ms: 3_000,
                whom: PausedClient::Holder,
            }),
            ..base(
                "_expiry",
                format!(
                    "{what}, each leader leading until it loses, paused (twice a run) past \
                     its session timeout / lease TTL (2 s): it still believes it leads when \
                     it resumes, and writes; the fenced resource must refuse it"
                ),
            )
        });
        scenarios.extend(cut_off(recipe, name, store));
    }
    scenarios.push(zk_election_quick_turns());
    scenarios
}

/// Two candidates taking quick turns (one 5 ms term of one write, 5 ms before campaigning
/// again), no faults: a candidate's predecessor often goes between its listing and its
/// `exists` — the race in which it must list the children again instead of waiting on a
/// watch for the node's creation (`recipe.no_relist_on_gone_predecessor`, judged in the
/// election's line by `recipe.no_lost_wakeup`, as in `zk_queue_lock_quick_turns`).
fn zk_election_quick_turns() -> Scenario {
    Scenario {
        workload: Workload::Elections(Elections {
            recipe: ElectionRecipe::ZkElection,
            writes_per_term: 1,
            work_ms: 5,
            think_ms: 5,
            ..Elections::default()
        }),
        fault_phase_ms: 8_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 30_000,
        ..scenario(
            "zk_election_quick_turns",
            "ZooKeeper leader election, two candidates taking quick turns (one 5 ms term, \
             5 ms between): a candidate's predecessor often goes between its listing and its \
             exists",
            Store::Zab,
            3,
            2,
        )
    }
}

/// Long terms (four one-second rounds of work), and the leader (or the first candidate in
/// line) cut off from everyone for longer than its session timeout: a correct recipe stops
/// believing before the store elects another (ZooKeeper: no server heard for 2/3 of the
/// timeout; etcd: no renewal acknowledged for a TTL), or, campaigning, checks that its key
/// survived the wait.
fn cut_off(recipe: ElectionRecipe, name: &str, store: Store) -> Vec<Scenario> {
    let isolate = |role: &str, at_ms: u64| isolated(target(role), at_ms, 3_000);
    let long_terms = |suffix: &str, role: &str, description: &str| Scenario {
        workload: Workload::Elections(Elections {
            recipe,
            term: LeaderTerm::ResignAfterWrites,
            writes_per_term: 4,
            work_ms: 1_000,
            ..Elections::default()
        }),
        skip_checks: election_skips(Leaders::Unique),
        faults: FaultSource::Plan(FaultPlan::new(vec![
            isolate(role, 2_000),
            isolate(role, 8_000),
        ])),
        fault_phase_ms: 12_000,
        recovery_ms: 1_000,
        liveness_bound_ms: 40_000,
        ..scenario(&format!("{name}{suffix}"), description, store, 3, 3)
    };
    vec![
        long_terms(
            "_cut_off_leader",
            "holder",
            "four-second terms; the leader cut off from everyone for 3 s (past its 2 s \
             session) twice: it must stop believing before another is elected",
        ),
        long_terms(
            "_cut_off_candidate",
            "waiter",
            "four-second terms; the candidate first in line cut off from everyone for 3 s \
             (past its 2 s session) twice: its key goes with its session, and when its turn \
             seems to come it must find that out",
        ),
    ]
}
