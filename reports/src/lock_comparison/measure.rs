//! What one run's history says about its lock, read with the checks crate's readers (never
//! from a model's internals): acquisition latencies (`history::lock_waits`: request →
//! acquired), hand-off latencies (a release, `history::locks::holds`, → the next
//! acquisition of the lock by anyone, counted only when someone was waiting at the
//! release), watch notifications per release (`recipes::herd_effect::report`, the
//! herd-effect check's own count), and the messages the world carried
//! (`FaultCounts::messages_sent`).

use checks::{
    history::{
        final_reads_from,
        lock_waits::{LockWait, WaitEnd, lock_waits},
        locks::{Hold, HoldEnd, holds},
    },
    recipes::herd_effect,
};
use sim::{history::History, time::SimTime};
use std::collections::BTreeMap;

/// One clean run's figures, for every lock of the run together (the lock workload has one).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct RunFigures {
    /// Request → acquired, per acquisition, milliseconds.
    pub(super) acquire_latencies_ms: Vec<f64>,
    /// Release → the next acquisition, per release with someone waiting, milliseconds.
    pub(super) handoff_latencies_ms: Vec<f64>,
    /// Releases (and losses) after which waiters woke, as the herd-effect check counts them.
    pub(super) releases_that_woke: u64,
    /// Watch notifications that reached waiters after those releases.
    pub(super) notifications: u64,
    /// Acquisitions in the whole run (the final turns after the heal included).
    pub(super) acquisitions: u64,
    /// Waits that gave up (after the workload's patience, or with their session) instead
    /// of acquiring: not in the acquisition latencies.
    pub(super) waits_given_up: u64,
    /// Messages the world put on the wire in the whole run: clients' and servers', so
    /// heartbeats and replication count too.
    pub(super) messages_sent: u64,
    /// Acquisitions before the final reads began (the workload phase: the fault phase and
    /// the recovery under load).
    pub(super) workload_acquisitions: u64,
    /// How long the workload phase lasted, milliseconds of simulated time.
    pub(super) workload_ms: f64,
}

impl RunFigures {
    /// The figures of a run's `history`, which put `messages_sent` messages on the wire.
    pub(super) fn of(history: &History, messages_sent: u64) -> Self {
        let waits = lock_waits(history);
        let acquired_at: Vec<SimTime> = waits
            .iter()
            .filter_map(|wait| match wait.end {
                WaitEnd::Acquired { at, .. } => Some(at),
                WaitEnd::GaveUp { .. } | WaitEnd::Unfinished => None,
            })
            .collect();
        let workload_end = final_reads_from(history)
            .or_else(|| history.records().last().map(|record| record.at))
            .unwrap_or(SimTime::ZERO);
        let herd = herd_effect::report(history);
        RunFigures {
            acquire_latencies_ms: acquire_latencies_ms(&waits),
            handoff_latencies_ms: handoff_latencies_ms(&holds(history), &waits),
            releases_that_woke: herd.values().map(|report| report.releases).sum(),
            notifications: herd.values().map(|report| report.wakeups).sum(),
            acquisitions: acquired_at.len() as u64,
            waits_given_up: waits
                .iter()
                .filter(|wait| matches!(wait.end, WaitEnd::GaveUp { .. }))
                .count() as u64,
            messages_sent,
            workload_acquisitions: acquired_at.iter().filter(|at| **at < workload_end).count()
                as u64,
            workload_ms: millis(SimTime::ZERO, workload_end),
        }
    }

    /// Watch notifications per release that woke anyone (`None`: no release did).
    pub(super) fn notifications_per_release(&self) -> Option<f64> {
        ratio(self.notifications, self.releases_that_woke)
    }

    /// Messages on the wire per acquisition (`None`: nothing was acquired).
    pub(super) fn messages_per_acquisition(&self) -> Option<f64> {
        ratio(self.messages_sent, self.acquisitions)
    }

    /// Acquisitions per simulated second of the workload phase.
    pub(super) fn acquisitions_per_s(&self) -> Option<f64> {
        (self.workload_ms > 0.0)
            .then(|| self.workload_acquisitions as f64 * 1_000.0 / self.workload_ms)
    }
}

/// `numerator / denominator`, if the denominator is not 0.
pub(super) fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| numerator as f64 / denominator as f64)
}

fn millis(from: SimTime, to: SimTime) -> f64 {
    to.saturating_duration_since(from).as_nanos() as f64 / 1e6
}

/// Request → acquired, for every wait that acquired, milliseconds.
fn acquire_latencies_ms(waits: &[LockWait]) -> Vec<f64> {
    waits
        .iter()
        .filter_map(|wait| match wait.end {
            WaitEnd::Acquired { at, .. } => Some(millis(wait.requested_at, at)),
            WaitEnd::GaveUp { .. } | WaitEnd::Unfinished => None,
        })
        .collect()
}

/// For each release (a hold that ended by its holder letting go) at which some other
/// process was waiting for the lock: the time to the lock's next acquisition, by anyone,
/// milliseconds. A release nobody waited for measures the workload's think time, not the
/// recipe, and is left out. A process waits from its request to its acquisition or its
/// giving up, both ends included; a wait whose end the history does not show is left out.
fn handoff_latencies_ms(holds: &[Hold], waits: &[LockWait]) -> Vec<f64> {
    #[derive(Default)]
    struct Lock {
        acquired: Vec<SimTime>,
        wait_starts: Vec<SimTime>,
        wait_ends: Vec<SimTime>,
    }
    let mut locks: BTreeMap<&str, Lock> = BTreeMap::new();
    for hold in holds {
        locks
            .entry(&hold.lock)
            .or_default()
            .acquired
            .push(hold.from);
    }
    for wait in waits {
        let end = match wait.end {
            WaitEnd::Acquired { at, .. } | WaitEnd::GaveUp { at } => at,
            WaitEnd::Unfinished => continue,
        };
        let lock = locks.entry(&wait.lock).or_default();
        lock.wait_starts.push(wait.requested_at);
        lock.wait_ends.push(end);
    }
    for lock in locks.values_mut() {
        lock.acquired.sort();
        lock.wait_starts.sort();
        lock.wait_ends.sort();
    }
    let mut latencies = Vec::new();
    for hold in holds {
        let (HoldEnd::Released, Some(released_at)) = (hold.end, hold.until) else {
            continue;
        };
        let lock = &locks[hold.lock.as_str()];
        // Waits begun by the release and not ended before it: [start, end] holds it. (The
        // releaser's own wait ended when it acquired, before it released.)
        let waiting = lock
            .wait_starts
            .partition_point(|start| *start <= released_at)
            - lock.wait_ends.partition_point(|end| *end < released_at);
        if waiting == 0 {
            continue;
        }
        let next = lock.acquired.partition_point(|at| *at < released_at);
        if let Some(&acquired_at) = lock.acquired.get(next) {
            latencies.push(millis(released_at, acquired_at));
        }
    }
    latencies
}

/// The `percent`-th percentile of `values` by nearest rank (the smallest value at least
/// `percent` % of the values are at or below), `None` for no values.
pub(super) fn percentile(values: &[f64], percent: u32) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (percent as usize * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::{
        NodeId,
        history::{
            Event, PhaseEvent, RecipeEvent, Record,
            recipe::{LockMode, LockStep},
        },
    };

    const LOCK: &str = "/locks/shared";

    fn step(ms: u64, client: usize, step: LockStep) -> Record {
        Record {
            at: SimTime::from_millis(ms),
            node: Some(NodeId::client(client)),
            event: Event::Recipe(RecipeEvent::Lock {
                process: 0,
                lock: LOCK.into(),
                step,
            }),
        }
    }

    fn requested(ms: u64, client: usize) -> Record {
        step(
            ms,
            client,
            LockStep::Requested {
                mode: LockMode::Exclusive,
            },
        )
    }

    fn acquired(ms: u64, client: usize, token: u64) -> Record {
        step(
            ms,
            client,
            LockStep::Acquired {
                token,
                mode: LockMode::Exclusive,
            },
        )
    }

    fn released(ms: u64, client: usize, token: u64) -> Record {
        step(ms, client, LockStep::Released { token })
    }

    fn woken(ms: u64, client: usize) -> Record {
        step(
            ms,
            client,
            LockStep::Woken {
                watched: LOCK.into(),
            },
        )
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentile(&values, 50), Some(50.0));
        assert_eq!(percentile(&values, 99), Some(99.0));
        assert_eq!(percentile(&values, 100), Some(100.0));
        assert_eq!(percentile(&[7.0, 3.0], 50), Some(3.0));
        assert_eq!(percentile(&[7.0, 3.0], 99), Some(7.0));
        assert_eq!(percentile(&[4.5], 99), Some(4.5));
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn latencies_hand_offs_and_wake_ups_come_from_the_steps() {
        // c1 takes the lock at once; c2 and c3 wait. c1's release wakes both (a herd); c2
        // takes it 7 ms later. c2's release wakes c3, who takes it 5 ms later. c3's
        // release finds nobody waiting (c1 asks again 20 ms later): no hand-off.
        let history = History::from_records(vec![
            requested(0, 0),
            acquired(4, 0, 1),
            requested(10, 1),
            requested(12, 2),
            released(50, 0, 1),
            woken(53, 1),
            woken(54, 2),
            acquired(57, 1, 2),
            released(100, 1, 2),
            woken(102, 2),
            acquired(105, 2, 3),
            released(150, 2, 3),
            Record {
                at: SimTime::from_millis(160),
                node: None,
                event: Event::Phase(PhaseEvent::FinalReads),
            },
            requested(170, 0),
            acquired(175, 0, 4),
        ]);
        let figures = RunFigures::of(&history, 90);
        assert_eq!(figures.acquire_latencies_ms, vec![4.0, 47.0, 93.0, 5.0]);
        assert_eq!(figures.handoff_latencies_ms, vec![7.0, 5.0]);
        assert_eq!(figures.acquisitions, 4);
        assert_eq!(figures.waits_given_up, 0);
        assert_eq!(figures.messages_per_acquisition(), Some(22.5));
        // Two releases woke waiters: three notifications.
        assert_eq!(figures.notifications_per_release(), Some(1.5));
        // The workload phase ends when the final reads begin, at 160 ms.
        assert_eq!(figures.workload_acquisitions, 3);
        assert_eq!(figures.acquisitions_per_s(), Some(3.0 * 1_000.0 / 160.0));
        assert_eq!(percentile(&figures.handoff_latencies_ms, 50), Some(5.0));
    }

    #[test]
    fn a_release_whose_only_waiter_gave_up_before_it_is_no_hand_off() {
        let history = History::from_records(vec![
            requested(0, 0),
            acquired(1, 0, 1),
            requested(2, 1),
            step(
                30,
                1,
                LockStep::GaveUp {
                    why: "timed out".into(),
                },
            ),
            released(40, 0, 1),
            requested(60, 1),
            acquired(61, 1, 2),
            released(70, 1, 2),
        ]);
        let figures = RunFigures::of(&history, 0);
        assert!(figures.handoff_latencies_ms.is_empty());
        assert_eq!(figures.waits_given_up, 1);
        assert_eq!(figures.acquire_latencies_ms, vec![1.0, 1.0]);
        assert_eq!(figures.notifications_per_release(), None);
    }
}
