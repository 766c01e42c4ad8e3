//! The election recipes on their stores, through the one driver: ZooKeeper leader election
//! on the ZAB store, etcd's `concurrency.Election` on the Raft store. Expected outcomes,
//! stated:
//! - without faults, and under faults that leave live sessions alone, at most one client
//!   believes it leads at any instant, no deposed leader's write is accepted after its
//!   successor's, the lead moves from client to client, and after the heal a leader is
//!   elected and every client's observer reports it (read back from the histories);
//! - a leader cut off past its session stops believing before another is elected, and a
//!   candidate cut off past its session while first in line does not take the lead its key
//!   lost (etcd: the post-wait check; without it, `etcd_election.no_postwait_check` in
//!   known_bugs.rs);
//! - with leaders paused past their session timeout / lease TTL, leader uniqueness *as
//!   believed* breaks (a session-based election cannot give it by itself, as a lock cannot),
//!   and the fenced resource refuses the deposed leaders' writes, so it stays safe; with
//!   fencing off it accepts them, and `recipe.fenced_writes` catches that;
//! - a leader that trusts its local state (`recipe.trust_local_state_after_expiry`) and is
//!   cut off past its session still leads when the next one is elected:
//!   `recipe.leader_uniqueness` catches it.

mod common;

use checks::{
    history::{
        elections::{leaderships, observations},
        final_reads_from,
        locks::{HoldEnd, resource_writes},
    },
    recipes::herd_effect,
};
use common::catalogued;
use models::recipes::{Fencing, RecipeBug};
use scenarios::{KnownBug, Scenario, sweep::SweepSummary, workload::Workload};
use sim::{
    fault::FaultKind,
    history::{Event, History, RecipeEvent, ResourceVerdict, recipe::ElectionStep},
};
use std::collections::BTreeSet;

/// What the runs of a sweep exercised, counted from their histories.
#[derive(Debug, Default)]
struct Exercised {
    leaderships: usize,
    /// Leaderships that ended because the leader learned it lost (not by resigning).
    losses: usize,
    /// Distinct leaders (client processes) over all runs, before the finishing step.
    leaders: BTreeSet<String>,
    /// Campaigns that ended without leading because the session or lease ended.
    campaigns_ended_by_session: usize,
    observations: usize,
    accepted_writes: usize,
    rejected_writes: usize,
    /// Nodes' goings that woke a candidate (what `recipe.herd_effect` judged).
    departures_judged: usize,
    /// Runs whose finishing step elected no leader, or in which some client node's observer
    /// never reported that leader (read from the history, not from the workload's word).
    finishes_without_agreement: usize,
}

impl Exercised {
    /// Adds what the run of `history`, with `clients` clients, exercised.
    fn count(&mut self, history: &History, clients: usize) {
        let finishing = final_reads_from(history);
        for leadership in leaderships(history) {
            self.leaderships += 1;
            if let HoldEnd::Lost(_) = leadership.end {
                self.losses += 1;
            }
            if finishing.is_none_or(|finishing| leadership.from < finishing) {
                let (node, process) = leadership.leader;
                self.leaders.insert(format!("{node}/{process}"));
            }
        }
        self.observations += observations(history).len();
        self.departures_judged += herd_effect::departures(history).len();
        self.campaigns_ended_by_session += history
            .records()
            .iter()
            .filter(|record| {
                matches!(
                    &record.event,
                    Event::Recipe(RecipeEvent::Election {
                        step: ElectionStep::GaveUp { why },
                        ..
                    }) if why.contains("session")
                )
            })
            .count();
        if !everyone_observed_the_final_leader(history, clients) {
            self.finishes_without_agreement += 1;
        }
        for write in resource_writes(history) {
            match write.verdict {
                ResourceVerdict::Accepted => self.accepted_writes += 1,
                ResourceVerdict::RejectedStaleToken => self.rejected_writes += 1,
            }
        }
    }
}

/// [`common::sweep_counting`] with this suite's tally, which needs the scenario's number of
/// clients (to tell whether every client observed the final leader).
fn sweep(scenario: Scenario, test: &str, seeds: u64) -> (SweepSummary, Exercised) {
    let clients = scenario.clients;
    common::sweep_counting(
        scenario,
        test,
        seeds,
        |exercised: &mut Exercised, history| exercised.count(history, clients),
    )
}

/// Whether, after the final reads began, a leader was elected and an observer on every
/// client node reported it.
fn everyone_observed_the_final_leader(history: &sim::history::History, clients: usize) -> bool {
    let Some(finishing) = final_reads_from(history) else {
        return false;
    };
    let Some(leader) = leaderships(history)
        .into_iter()
        .find(|leadership| leadership.from >= finishing)
    else {
        return false;
    };
    let identity = format!("{}/{}", leader.leader.0, leader.leader.1);
    let observing: BTreeSet<sim::NodeId> = observations(history)
        .into_iter()
        .filter(|seen| seen.at >= finishing && seen.leader.as_deref() == Some(identity.as_str()))
        .map(|seen| seen.observer.0)
        .collect();
    observing.len() == clients
}

/// Clean, with the lead moving around and everyone observing, run after run.
fn assert_unique_and_busy(name: &str, test: &str) {
    let (summary, exercised) = sweep(catalogued(name), test, 5);
    summary.assert_clean();
    summary.assert_faults_fired();
    let runs = summary.seeds.len();
    // Five clients, terms of three 50 ms rounds, 9 s of running: dozens of terms a run.
    assert!(
        exercised.leaderships >= 15 * runs && exercised.accepted_writes >= 40 * runs,
        "{name}: too little leading over {runs} runs: {exercised:?}"
    );
    assert!(
        exercised.leaders.len() >= 5,
        "{name}: the lead did not move around: {exercised:?}"
    );
    // Five observers report the new leaders (all but a few short ones) as the lead moves.
    assert!(
        exercised.observations >= 3 * exercised.leaderships,
        "{name}: observers saw too few leaders: {exercised:?}"
    );
    assert_eq!(
        exercised.rejected_writes, 0,
        "{name}: no leader is deposed without faults"
    );
    // Candidates record their wake-ups: `recipe.herd_effect` judged a leader's going (or a
    // candidate's) in every run, most of the terms.
    assert!(
        exercised.departures_judged >= 10 * runs,
        "{name}: the herd check judged too few wake-ups: {exercised:?}"
    );
    assert_eq!(
        exercised.finishes_without_agreement, 0,
        "{name}: {exercised:?}"
    );
}

#[test]
fn zk_election_elects_one_leader_at_a_time_and_everyone_sees_it() {
    assert_unique_and_busy(
        "zk_election",
        "zk_election_elects_one_leader_at_a_time_and_everyone_sees_it",
    );
}

#[test]
fn etcd_election_elects_one_leader_at_a_time_and_everyone_sees_it() {
    assert_unique_and_busy(
        "etcd_election",
        "etcd_election_elects_one_leader_at_a_time_and_everyone_sees_it",
    );
}

fn assert_unique_under_server_faults(name: &str, test: &str) {
    let (summary, exercised) = sweep(catalogued(name), test, 10);
    summary.assert_clean();
    summary.assert_fired(&[
        FaultKind::Partition,
        FaultKind::Loss,
        FaultKind::Latency,
        FaultKind::Crash,
        FaultKind::Pause,
    ]);
    assert!(
        exercised.leaderships >= 5 * summary.seeds.len(),
        "{name}: too few leaderships: {exercised:?}"
    );
    assert_eq!(
        exercised.finishes_without_agreement, 0,
        "{name}: {exercised:?}"
    );
}

#[test]
fn zk_election_stays_unique_under_server_faults() {
    assert_unique_under_server_faults(
        "zk_election_faults",
        "zk_election_stays_unique_under_server_faults",
    );
}

#[test]
fn etcd_election_stays_unique_under_server_faults() {
    assert_unique_under_server_faults(
        "etcd_election_faults",
        "etcd_election_stays_unique_under_server_faults",
    );
}

/// Clean, the partitions fired, and they did what they were aimed at: a leader learned it
/// lost (`holder`), or a candidate's campaign ended with its session (`waiter`).
fn assert_safe_when_cut_off(name: &str, test: &str) -> Exercised {
    let (summary, exercised) = sweep(catalogued(name), test, 10);
    summary.assert_clean();
    summary.assert_fired(&[FaultKind::Partition]);
    assert!(
        exercised.leaderships >= 3 * summary.seeds.len(),
        "{name}: too few leaderships: {exercised:?}"
    );
    assert_eq!(
        exercised.finishes_without_agreement, 0,
        "{name}: {exercised:?}"
    );
    exercised
}

#[test]
fn a_cut_off_zk_leader_stops_believing_in_time() {
    let exercised = assert_safe_when_cut_off(
        "zk_election_cut_off_leader",
        "a_cut_off_zk_leader_stops_believing_in_time",
    );
    assert!(
        exercised.losses >= 1,
        "no leader lost its lead: {exercised:?}"
    );
}

#[test]
fn a_cut_off_etcd_leader_stops_believing_in_time() {
    let exercised = assert_safe_when_cut_off(
        "etcd_election_cut_off_leader",
        "a_cut_off_etcd_leader_stops_believing_in_time",
    );
    assert!(
        exercised.losses >= 1,
        "no leader lost its lead: {exercised:?}"
    );
}

#[test]
fn a_cut_off_zk_candidate_does_not_take_a_lead_it_lost() {
    let exercised = assert_safe_when_cut_off(
        "zk_election_cut_off_candidate",
        "a_cut_off_zk_candidate_does_not_take_a_lead_it_lost",
    );
    assert!(
        exercised.campaigns_ended_by_session >= 1,
        "no campaign ended with its session: {exercised:?}"
    );
}

#[test]
fn a_cut_off_etcd_candidate_does_not_take_a_lead_it_lost() {
    let exercised = assert_safe_when_cut_off(
        "etcd_election_cut_off_candidate",
        "a_cut_off_etcd_candidate_does_not_take_a_lead_it_lost",
    );
    assert!(
        exercised.campaigns_ended_by_session >= 1,
        "no campaign ended with its session (the post-wait check never had to act): \
         {exercised:?}"
    );
}

/// With leaders paused past their session: believed uniqueness breaks on some seeds, no
/// other check fires, the resource refuses deposed leaders' writes; with fencing off,
/// `recipe.fenced_writes` fires.
fn assert_expiry_breaks_belief_but_not_the_fenced_resource(name: &str, test: &str) {
    let seeds = 10;
    // The scenario judges safety at the resource only; here believed uniqueness is checked
    // too, to show it break.
    let believed = catalogued(name);
    let believed = believed.with_check("recipe.leader_uniqueness");
    let (summary, exercised) = sweep(believed, test, seeds);
    summary.assert_fired(&[FaultKind::Pause]);
    let broken_belief = summary.assert_only_violations_of("recipe.leader_uniqueness");
    println!("{name}: believed uniqueness broke in {broken_belief} of {seeds} seeds");
    assert!(
        broken_belief >= 1,
        "{name}: no seed of {seeds} showed a paused leader still believing: {exercised:?}"
    );
    assert!(
        exercised.rejected_writes >= 1,
        "{name}: the resource never had to refuse a deposed leader: {exercised:?}"
    );
    // As the catalogue has it (the resource judged, not beliefs): clean.
    let (summary, _) = sweep(catalogued(name), test, seeds);
    summary.assert_clean();
    // The same runs without fencing: the resource takes the deposed leaders' writes.
    let mut unfenced = catalogued(name);
    if let Workload::Elections(elections) = &mut unfenced.workload {
        elections.fencing = Fencing::Off;
    }
    let (summary, exercised) = sweep(unfenced, test, seeds);
    let stale_accepted = summary.seeds_where_fired("recipe.fenced_writes");
    println!(
        "{name} without fencing: a deposed leader's write accepted in {stale_accepted} of {seeds} seeds"
    );
    assert!(
        stale_accepted >= 1,
        "{name} without fencing: no deposed leader's write accepted in {seeds} seeds: \
         {exercised:?}"
    );
}

#[test]
fn a_paused_zk_leader_breaks_belief_and_fencing_saves_the_resource() {
    assert_expiry_breaks_belief_but_not_the_fenced_resource(
        "zk_election_expiry",
        "a_paused_zk_leader_breaks_belief_and_fencing_saves_the_resource",
    );
}

#[test]
fn a_paused_etcd_leader_breaks_belief_and_fencing_saves_the_resource() {
    assert_expiry_breaks_belief_but_not_the_fenced_resource(
        "etcd_election_expiry",
        "a_paused_etcd_leader_breaks_belief_and_fencing_saves_the_resource",
    );
}

/// `recipe.trust_local_state_after_expiry` has its row of the known-bug table on the lock
/// scenarios; here the same bug, in the election recipes' leaders, is caught by
/// `recipe.leader_uniqueness` when the leader is cut off past its session.
fn assert_leader_trusting_local_state_is_caught(name: &str, test: &str) {
    let scenario =
        catalogued(name).with_bugs([KnownBug::Recipe(RecipeBug::TrustLocalStateAfterExpiry)]);
    let (summary, _) = sweep(scenario, test, 10);
    let caught = summary.seeds_where_fired("recipe.leader_uniqueness");
    println!(
        "{name} with recipe.trust_local_state_after_expiry: recipe.leader_uniqueness fired in \
         {caught} of {} seeds",
        summary.seeds.len()
    );
    assert!(
        caught >= 1,
        "{name}: a leader trusting its local state was never caught in {} seeds",
        summary.seeds.len()
    );
}

#[test]
fn a_zk_leader_trusting_its_local_state_is_caught() {
    assert_leader_trusting_local_state_is_caught(
        "zk_election_cut_off_leader",
        "a_zk_leader_trusting_its_local_state_is_caught",
    );
}

#[test]
fn an_etcd_leader_trusting_its_local_state_is_caught() {
    assert_leader_trusting_local_state_is_caught(
        "etcd_election_cut_off_leader",
        "an_etcd_leader_trusting_its_local_state_is_caught",
    );
}

/// Two candidates taking quick turns reach the race of a lost wake-up in the election's
/// line: a candidate's `exists` finds that its predecessor went after its listing. The
/// correct election lists again, and `recipe.no_lost_wakeup` judges its campaigns and stays
/// clean; a candidate that sleeps on the creation watch instead
/// (`recipe.no_relist_on_gone_predecessor`, in the line the election shares with the
/// queue lock) is caught on every seed, by that check alone.
#[test]
fn a_zk_candidate_whose_predecessor_just_went_lists_again() {
    let name = "zk_election_quick_turns";
    let test = "a_zk_candidate_whose_predecessor_just_went_lists_again";
    let (summary, exercised) = sweep(catalogued(name), test, 5);
    summary.assert_clean();
    let judged = summary
        .evidence()
        .checks
        .iter()
        .find(|check| check.check == "recipe.no_lost_wakeup")
        .map_or(0, |check| check.judged as usize);
    assert!(
        judged >= 100 * summary.seeds.len() && exercised.leaderships >= 100 * summary.seeds.len(),
        "{name}: too few campaigns judged ({judged}) or leaderships ({})",
        exercised.leaderships
    );
    let buggy =
        catalogued(name).with_bugs([KnownBug::Recipe(RecipeBug::NoRelistOnGonePredecessor)]);
    let (summary, _) = sweep(buggy, test, 3);
    assert_eq!(summary.failures.len(), summary.seeds.len());
    summary.assert_only_violations_of("recipe.no_lost_wakeup");
}

/// A fenced resource that refuses a token equal to the highest it accepted
/// (`resource.rejects_equal_token`, planted) refuses each leader's second write of its term:
/// `recipe.holder_not_refused` fires on every seed, and nothing else does.
#[test]
fn a_resource_refusing_a_leaders_own_token_is_caught() {
    let test = "a_resource_refusing_a_leaders_own_token_is_caught";
    let buggy =
        catalogued("zk_election").with_bugs([KnownBug::Recipe(RecipeBug::RejectsEqualToken)]);
    let (summary, exercised) = sweep(buggy, test, 3);
    assert!(exercised.rejected_writes >= 1, "{exercised:?}");
    assert_eq!(summary.failures.len(), summary.seeds.len());
    summary.assert_only_violations_of("recipe.holder_not_refused");
}

/// The same scenario and seed give the same history, bit for bit, on both stores (the
/// election workload's observers, finishing step and fault targets included).
#[test]
fn election_runs_replay_to_the_same_history() {
    for name in ["zk_election_faults", "etcd_election_cut_off_candidate"] {
        let scenario = catalogued(name);
        let seed = sim::Seed::new(3);
        let first = scenarios::driver::run(&scenario, seed);
        let second = scenarios::driver::run(&scenario, seed);
        assert!(
            first.history_digest.is_some(),
            "{name}: {:?}",
            first.failure
        );
        assert_eq!(first.history_digest, second.history_digest, "{name}");
        let other = scenarios::driver::run(&scenario, sim::Seed::new(4));
        assert_ne!(first.history_digest, other.history_digest, "{name}");
    }
}
