//! The ZooKeeper read/write lock ("Shared Locks") through the one driver. Expected outcomes,
//! stated:
//! - without faults, and under faults that leave live sessions alone, a writer holds alone
//!   as every client believed it (`recipe.rw_exclusion`) and at the fenced resource, readers
//!   are woken only by writers' nodes (`recipe.rw_reader_waits_only_for_writers`), every
//!   client process takes the lock again after the heal, and readers really do hold
//!   together (else the lock could be secretly exclusive and every check above would pass);
//! - with holders paused past their session timeout, exclusion *as believed* breaks, and the
//!   fenced resource refuses the stale writers' writes.

mod common;

use checks::{
    history::locks::{Hold, holds, resource_writes},
    recipes::rw_reader_waits,
};
use common::{catalogued, sweep_counting};
use sim::{
    fault::FaultKind,
    history::{History, ResourceVerdict, recipe::LockMode},
};

/// What the runs of a sweep exercised, counted from their histories.
#[derive(Debug, Default)]
struct Exercised {
    reads: usize,
    writes: usize,
    accepted_writes: usize,
    rejected_writes: usize,
    /// Runs in which two readers held the lock at the same instant.
    runs_with_overlapping_readers: usize,
    /// Readers woken by a watch (they waited for a writer): what
    /// `recipe.rw_reader_waits_only_for_writers` judged.
    readers_woken: usize,
    /// Runs in which that check judged nothing (no reader waited).
    runs_without_waiting_readers: usize,
    /// Readers woken by a node that is not a writer's (what the check reports; counted
    /// here too so the test states it directly).
    readers_woken_by_non_writers: usize,
}

fn readers_overlapped(holds: &[Hold]) -> bool {
    let readers: Vec<&Hold> = holds
        .iter()
        .filter(|hold| hold.mode == LockMode::Shared)
        .collect();
    readers.iter().enumerate().any(|(index, later)| {
        readers[..index]
            .iter()
            .any(|earlier| earlier.holder != later.holder && earlier.overlaps(later))
    })
}

impl Exercised {
    /// Adds what the run of `history` exercised.
    fn count(&mut self, history: &History) {
        let holds = holds(history);
        for hold in &holds {
            match hold.mode {
                LockMode::Shared => self.reads += 1,
                LockMode::Exclusive => self.writes += 1,
            }
        }
        if readers_overlapped(&holds) {
            self.runs_with_overlapping_readers += 1;
        }
        for write in resource_writes(history) {
            match write.verdict {
                ResourceVerdict::Accepted => self.accepted_writes += 1,
                ResourceVerdict::RejectedStaleToken => self.rejected_writes += 1,
            }
        }
        let woken = rw_reader_waits::readers_woken(history);
        self.readers_woken += woken;
        if woken == 0 {
            self.runs_without_waiting_readers += 1;
        }
        self.readers_woken_by_non_writers += rw_reader_waits::check(history).len();
    }
}

#[test]
fn readers_share_the_rw_lock_and_writers_hold_it_alone() {
    let test = "readers_share_the_rw_lock_and_writers_hold_it_alone";
    let (summary, exercised) = sweep_counting(catalogued("zk_rw_lock"), test, 5, Exercised::count);
    summary.assert_clean();
    summary.assert_faults_fired();
    let runs = summary.seeds.len();
    assert!(
        exercised.reads >= 20 * runs && exercised.writes >= 5 * runs,
        "too little work over {runs} runs: {exercised:?}"
    );
    // Every writer's hold wrote (no faults): the resource saw them all, refused none.
    assert!(
        exercised.accepted_writes >= 5 * runs && exercised.rejected_writes == 0,
        "{exercised:?}"
    );
    // The lock is not secretly exclusive: in every run two readers held it together.
    assert_eq!(
        exercised.runs_with_overlapping_readers, runs,
        "{exercised:?}"
    );
    // Readers did wait (for writers), and never behind a reader: in every run the check
    // judged at least one reader's wake-up (it passes vacuously in a run where no reader
    // waited).
    assert_eq!(exercised.runs_without_waiting_readers, 0, "{exercised:?}");
    assert!(exercised.readers_woken >= runs, "{exercised:?}");
    assert_eq!(exercised.readers_woken_by_non_writers, 0, "{exercised:?}");
}

#[test]
fn the_rw_lock_stays_exclusive_for_writers_under_server_faults() {
    let (summary, exercised) = sweep_counting(
        catalogued("zk_rw_lock_faults"),
        "the_rw_lock_stays_exclusive_for_writers_under_server_faults",
        10,
        Exercised::count,
    );
    summary.assert_clean();
    summary.assert_fired(&[
        FaultKind::Partition,
        FaultKind::Loss,
        FaultKind::Latency,
        FaultKind::Crash,
        FaultKind::Pause,
    ]);
    let runs = summary.seeds.len();
    assert!(
        exercised.reads >= 5 * runs && exercised.writes >= 2 * runs,
        "too few acquisitions: {exercised:?}"
    );
    assert!(
        exercised.runs_with_overlapping_readers >= 1,
        "{exercised:?}"
    );
    // Readers waited for writers under faults too: the check judged something in most
    // runs (a run's faults may keep the store away long enough that no reader waits).
    assert!(
        exercised.runs_without_waiting_readers * 2 <= runs,
        "{exercised:?}"
    );
}

#[test]
fn a_paused_rw_lock_holder_breaks_belief_and_fencing_saves_the_resource() {
    let test = "a_paused_rw_lock_holder_breaks_belief_and_fencing_saves_the_resource";
    let seeds = 10;
    // The scenario judges writers' safety at the resource only; here believed exclusion is
    // checked too, to show it break.
    let mut believed = catalogued("zk_rw_lock_expiry");
    believed = believed.with_check("recipe.rw_exclusion");
    let (summary, exercised) = sweep_counting(believed, test, seeds, Exercised::count);
    summary.assert_fired(&[FaultKind::Pause]);
    let broken_belief = summary.assert_only_violations_of("recipe.rw_exclusion");
    assert!(
        broken_belief >= 1,
        "no seed of {seeds} showed a paused holder still believing: {exercised:?}"
    );
    assert!(
        exercised.rejected_writes >= 1,
        "the resource never had to refuse a stale writer: {exercised:?}"
    );
}
