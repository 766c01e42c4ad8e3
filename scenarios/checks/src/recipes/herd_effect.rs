//! The herd effect: how many waiting clients each lock release wakes.
//!
//! When every waiter watches the one lock node, each release notifies all of them and they
//! all race to take the lock, though only one can: N−1 wasted wake-ups and reads per release
//! (ZooKeeper recipes, "Locks": "the herd effect"; the queue lock watches only the
//! predecessor and wakes one). etcd's mutex waits on the key just before its own, and wakes
//! one. The check counts, per release of a lock, the wake-ups recorded until the lock is
//! acquired again, and the operations the woken clients issued meanwhile. It fires when one
//! *departure* woke more waiters than the bound (`CheckContext::herd_bound_per_release`):
//! the waiters woken by the same watched node between a release and the next acquisition.
//! Counting per watched node rather than per window matters under faults: while the store is
//! unreachable, waiters give up and sessions expire, and each departure from a queue lock's
//! line wakes its one successor; a window with many departures has many wake-ups and still
//! no herd. A herd is many waiters woken by one node's going. A woken waiter that gives up
//! before the lock is taken again is not counted against the departure: under faults a
//! waiter whose own session or lease ended without its knowing keeps watching, so several
//! such waiters may end up watching one node, and their wake-ups say nothing about how the
//! recipe chooses what to watch (the herd lock's waiters, alive, still count N−1). That is
//! judged by the waiter's next step on the lock after the wake-up, however late it comes.
//!
//! **Reads:** the lock recipes' `RecipeEvent::Lock` records (`Woken` when a watch
//! notification reaches a waiter, `Acquired`, `Released`, `Lost`), written at the client node,
//! and the woken clients' `Invoke` events.

use crate::Violation;
use sim::{
    NodeId,
    history::{Event, History, RecipeEvent, recipe::LockStep},
    time::SimTime,
};
use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

/// Wake-ups per release of one lock in a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HerdReport {
    /// Releases (and losses) followed by waiters waking.
    pub releases: u64,
    /// Wake-ups in all.
    pub wakeups: u64,
    /// Operations woken clients invoked before the lock was taken again.
    pub follow_up_operations: u64,
    /// The most waiters one departure (one watched node's going) woke, and the release
    /// that opened the window it happened in.
    pub worst: Option<(u64, SimTime)>,
}

impl HerdReport {
    /// Mean wake-ups per release.
    pub fn wakeups_per_release(&self) -> f64 {
        if self.releases == 0 {
            0.0
        } else {
            self.wakeups as f64 / self.releases as f64
        }
    }
}

/// Per lock: what each release woke.
pub fn report(history: &History) -> BTreeMap<String, HerdReport> {
    struct Window {
        released_at: SimTime,
        woken: u64,
        woken_processes: Vec<(NodeId, u32)>,
        /// Per watched node, the distinct waiters it woke.
        woken_by_watched: BTreeMap<String, Vec<(NodeId, u32)>>,
        follow_ups: u64,
    }
    let mut reports: BTreeMap<String, HerdReport> = BTreeMap::new();
    let mut windows: BTreeMap<String, Window> = BTreeMap::new();
    let close = |reports: &mut BTreeMap<String, HerdReport>, lock: &str, window: Window| {
        if window.woken == 0 {
            return;
        }
        let report = reports.entry(lock.to_string()).or_default();
        report.releases += 1;
        report.wakeups += window.woken;
        report.follow_up_operations += window.follow_ups;
        let most_by_one = window
            .woken_by_watched
            .values()
            .map(|woken| woken.len() as u64)
            .max()
            .unwrap_or(0);
        if report.worst.is_none_or(|(worst, _)| most_by_one > worst) {
            report.worst = Some((most_by_one, window.released_at));
        }
    };
    let gave_up_after_waking = gave_up_after_waking(history);
    for (index, record) in history.records().iter().enumerate() {
        match (&record.event, record.node) {
            (
                Event::Recipe(RecipeEvent::Lock {
                    process,
                    lock,
                    step,
                }),
                Some(node),
            ) => match step {
                LockStep::Released { .. } | LockStep::Lost { .. } => {
                    if let Some(window) = windows.remove(lock) {
                        close(&mut reports, lock, window);
                    }
                    windows.insert(
                        lock.clone(),
                        Window {
                            released_at: record.at,
                            woken: 0,
                            woken_processes: Vec::new(),
                            woken_by_watched: BTreeMap::new(),
                            follow_ups: 0,
                        },
                    );
                }
                LockStep::Woken { watched } => {
                    if let Some(window) = windows.get_mut(lock) {
                        window.woken += 1;
                        if !window.woken_processes.contains(&(node, *process)) {
                            window.woken_processes.push((node, *process));
                        }
                        if !gave_up_after_waking.contains(&index) {
                            let by_node =
                                window.woken_by_watched.entry(watched.clone()).or_default();
                            if !by_node.contains(&(node, *process)) {
                                by_node.push((node, *process));
                            }
                        }
                    }
                }
                LockStep::Acquired { .. } => {
                    if let Some(window) = windows.remove(lock) {
                        close(&mut reports, lock, window);
                    }
                }
                LockStep::Requested { .. } | LockStep::GaveUp { .. } => {}
            },
            (
                Event::Invoke {
                    client, process, ..
                },
                _,
            ) => {
                for window in windows.values_mut() {
                    if window.woken_processes.contains(&(*client, *process)) {
                        window.follow_ups += 1;
                    }
                }
            }
            _ => {}
        }
    }
    for (lock, window) in windows {
        close(&mut reports, &lock, window);
    }
    reports
}

/// The positions of the `Woken` records after which the waiter's next step on that lock,
/// other wake-ups aside, is `GaveUp`: it woke (perhaps several times) to find its own place
/// in line gone.
fn gave_up_after_waking(history: &History) -> BTreeSet<usize> {
    let mut pending: BTreeMap<(NodeId, u32, &str), Vec<usize>> = BTreeMap::new();
    let mut gave_up = BTreeSet::new();
    for (index, record) in history.records().iter().enumerate() {
        let (
            Event::Recipe(RecipeEvent::Lock {
                process,
                lock,
                step,
            }),
            Some(node),
        ) = (&record.event, record.node)
        else {
            continue;
        };
        let waiter = (node, *process, lock.as_str());
        match step {
            LockStep::Woken { .. } => pending.entry(waiter).or_default().push(index),
            LockStep::GaveUp { .. } => gave_up.extend(pending.remove(&waiter).unwrap_or_default()),
            _ => {
                pending.remove(&waiter);
            }
        }
    }
    gave_up
}

/// A departure that woke more waiters than the bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HerdExceeded {
    /// The lock.
    pub lock: String,
    /// The most waiters one departure woke.
    pub woken: u64,
    /// When the release that opened its window happened.
    pub released_at: SimTime,
    /// The bound.
    pub bound: u64,
    /// The whole run's figures for the lock.
    pub report: HerdReport,
}

impl fmt::Display for HerdExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "after a release of `{}` at {}, one departure woke {} waiters (bound {}); over the \
             run {} releases woke {} ({:.2} per release) and the woken issued {} operations",
            self.lock,
            self.released_at,
            self.woken,
            self.bound,
            self.report.releases,
            self.report.wakeups,
            self.report.wakeups_per_release(),
            self.report.follow_up_operations
        )
    }
}

impl Violation for HerdExceeded {
    fn property(&self) -> &'static str {
        "no herd effect"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper recipes, Locks: watch only the predecessor to avoid the herd effect"
    }

    fn at(&self) -> Option<SimTime> {
        // The release that woke the herd.
        Some(self.released_at)
    }
}

/// Every lock one of whose departures woke more than `bound` waiters.
pub fn check(history: &History, bound: u64) -> Vec<HerdExceeded> {
    report(history)
        .into_iter()
        .filter_map(|(lock, report)| {
            let (woken, released_at) = report.worst?;
            (woken > bound).then_some(HerdExceeded {
                lock,
                woken,
                released_at,
                bound,
                report,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, exclusive, lock_step};
    use sim::{NodeId, history::History};

    const C3: NodeId = NodeId::client(2);

    fn woken(ms: u64, client: NodeId) -> sim::history::Record {
        lock_step(
            ms,
            client,
            LockStep::Woken {
                watched: "/lock".into(),
            },
        )
    }

    #[test]
    fn a_release_that_wakes_everyone_is_a_herd_and_one_that_wakes_one_is_not() {
        let herd = History::from_records(vec![
            lock_step(100, C1, exclusive(1)),
            lock_step(200, C1, LockStep::Released { token: 1 }),
            woken(210, C2),
            woken(211, C3),
            lock_step(230, C2, exclusive(2)),
        ]);
        let violations = check(&herd, 1);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].woken, 2);
        assert_eq!(report(&herd)["/lock"].wakeups_per_release(), 2.0);
        let queue = History::from_records(vec![
            lock_step(100, C1, exclusive(1)),
            lock_step(200, C1, LockStep::Released { token: 1 }),
            woken(210, C2),
            lock_step(230, C2, exclusive(2)),
        ]);
        assert_eq!(check(&queue, 1), vec![]);
    }

    #[test]
    fn many_departures_each_waking_one_successor_are_no_herd() {
        let woken_by = |ms, client, watched: &str| {
            lock_step(
                ms,
                client,
                LockStep::Woken {
                    watched: watched.into(),
                },
            )
        };
        // While the lock is free, two waiters leave the line; each wakes its successor.
        let line = History::from_records(vec![
            lock_step(100, C1, exclusive(1)),
            lock_step(200, C1, LockStep::Released { token: 1 }),
            woken_by(210, C2, "/lock/n1"),
            woken_by(300, C3, "/lock/n2"),
            lock_step(400, C3, exclusive(3)),
        ]);
        assert_eq!(check(&line, 1), vec![]);
        assert_eq!(report(&line)["/lock"].wakeups_per_release(), 2.0);
    }

    #[test]
    fn waiters_that_give_up_after_waking_do_not_count_but_live_ones_do() {
        let woken_by = |ms, client, watched: &str| {
            lock_step(
                ms,
                client,
                LockStep::Woken {
                    watched: watched.into(),
                },
            )
        };
        let gave_up = |ms, client| {
            lock_step(
                ms,
                client,
                LockStep::GaveUp {
                    why: "the session ended".into(),
                },
            )
        };
        // C2 and C3 both watched n1; C2's own node was gone, and it gives up on waking.
        let zombie = History::from_records(vec![
            lock_step(100, C1, exclusive(1)),
            lock_step(200, C1, LockStep::Released { token: 1 }),
            woken_by(210, C2, "/lock/n1"),
            woken_by(211, C3, "/lock/n1"),
            lock_step(230, C3, exclusive(3)),
            lock_step(300, C3, LockStep::Released { token: 3 }),
            woken_by(310, C2, "/lock/n0"),
            gave_up(320, C2),
        ]);
        assert_eq!(check(&zombie, 1), vec![]);
        // Both alive: one node's going woke two.
        let herd = History::from_records(vec![
            lock_step(100, C1, exclusive(1)),
            lock_step(200, C1, LockStep::Released { token: 1 }),
            woken_by(210, C2, "/lock/n1"),
            woken_by(211, C3, "/lock/n1"),
            lock_step(230, C3, exclusive(3)),
        ]);
        assert_eq!(check(&herd, 1).len(), 1);
    }
}
