//! The herd effect: how many waiting clients one node's going wakes, in a lock or an
//! election.
//!
//! When every waiter watches the one lock node (or every candidate the leader's node), each
//! release notifies all of them and they all race to look at the line, though only one can
//! come first: N−1 wasted wake-ups and reads per release (ZooKeeper recipes, "Locks": "the
//! herd effect"; "Leader Election": "it is sufficient to watch for the next znode down on
//! the sequence of znodes"). The queue lock and the election watch only the predecessor, and
//! etcd's mutex and election the key just before their own: a node's going wakes its one
//! successor.
//!
//! **The bound.** A node's going may wake at most one waiter that goes on waiting
//! ([`WOKEN_PER_DEPARTURE`]), whatever the number of waiters: a herd is N−1 of N woken, so
//! with three waiters in line two woken is a herd, and the violation names how many of how
//! many were in line. Wake-ups are attributed to the line's last departure before them
//! (release, loss, resignation, giving up) and grouped by the node whose watch fired, so a
//! window with many departures (under faults, waiters give up and sessions expire, and each
//! departure wakes its successor) has many wake-ups and still no herd; a wake-up anywhere
//! in the run is judged, not only those between a release and the next acquisition.
//! Legitimately woken beyond the one: a waiter whose own node went with its session (or
//! lease) without its knowing keeps watching its old predecessor beside the successor that
//! moved up behind it; it wakes, finds its place gone, and gives up. A wake-up whose
//! waiter's next step on the line, other wake-ups aside, is `GaveUp` is therefore not
//! counted, however late that step comes. (A crash or pause of the waiter's server wakes no
//! one: the client moves to another server, and its watch fires only if the node went.)
//!
//! [`report`] measures locks for `coordsim compare-locks`: wake-ups per release, counted
//! from each release (or loss) to the next acquisition.
//!
//! **Reads:** the lock and election recipes' records (`RecipeEvent::Lock`: `Requested`,
//! `Woken`, `Acquired`, `Released`, `Lost`, `GaveUp`; `RecipeEvent::Election`:
//! `Campaigned`, `Woken`, `Gained`, `Resigned`, `Lost`, `GaveUp`), written at the client
//! node when the client's watch notification reached it, and, for [`report`], the woken
//! clients' `Invoke` events.

use crate::Checked;
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
    let gave_up_after_waking = gave_up_after_waking_any(history);
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

/// Whether a line is a lock's or an election's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LineKind {
    /// A lock's waiters.
    Lock,
    /// An election's candidates.
    Election,
}

impl fmt::Display for LineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LineKind::Lock => "lock",
            LineKind::Election => "election",
        })
    }
}

/// A step of a lock's waiter or an election's candidate, read alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineStep<'a> {
    /// It joined the line (`Requested`, `Campaigned`).
    Joined,
    /// A watch on `watched` woke it.
    Woken(&'a str),
    /// It holds or leads.
    Holds,
    /// It left the line: it let go or lost what it held, or gave up waiting.
    Departed,
    /// It gave up waiting (also a departure).
    GaveUp,
}

/// The line, the process and the step of a lock or election record.
fn line_step(event: &RecipeEvent) -> Option<((LineKind, &str), u32, LineStep<'_>)> {
    use sim::history::recipe::ElectionStep;
    match event {
        RecipeEvent::Lock {
            process,
            lock,
            step,
        } => {
            let step = match step {
                LockStep::Requested { .. } => LineStep::Joined,
                LockStep::Woken { watched } => LineStep::Woken(watched),
                LockStep::Acquired { .. } => LineStep::Holds,
                LockStep::Released { .. } | LockStep::Lost { .. } => LineStep::Departed,
                LockStep::GaveUp { .. } => LineStep::GaveUp,
            };
            Some(((LineKind::Lock, lock.as_str()), *process, step))
        }
        RecipeEvent::Election {
            process,
            election,
            step,
        } => {
            let step = match step {
                ElectionStep::Campaigned => LineStep::Joined,
                ElectionStep::Woken { watched } => LineStep::Woken(watched),
                ElectionStep::Gained { .. } => LineStep::Holds,
                ElectionStep::Resigned { .. } | ElectionStep::Lost { .. } => LineStep::Departed,
                ElectionStep::GaveUp { .. } => LineStep::GaveUp,
                ElectionStep::Observed { .. } => return None,
            };
            Some(((LineKind::Election, election.as_str()), *process, step))
        }
        _ => None,
    }
}

/// One node's going, as far as the wake-ups show it: the waiters a watch on `watched` woke
/// after the line's departure at `departed_at` (before its next one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Departure {
    /// The lock or election.
    pub line: (LineKind, String),
    /// The node or key whose watch fired.
    pub watched: String,
    /// The departure the wake-ups are attributed to: the line's last one before them
    /// (`None`: before any).
    pub departed_at: Option<SimTime>,
    /// When the first of them woke.
    pub first_woken_at: SimTime,
    /// The waiters it woke that went on waiting (distinct).
    pub woken: Vec<(NodeId, u32)>,
    /// The waiters in line when the first of them woke (those woken among them).
    pub waiting: usize,
}

/// Every node's going that woke a waiter that went on waiting, for locks and elections.
///
/// Each wake-up is attributed to the line's last departure before it (a `Released`,
/// `Lost`, `Resigned` or `GaveUp` by anyone), and grouped with the others of that departure
/// that the same watched node woke: a node's going wakes its watchers at about the same
/// time, and a name reused (etcd's key per lease, the herd lock's one node) is deleted once
/// per departure, as its holder records its release before it deletes. A wake-up whose
/// waiter's next step on the line, other wake-ups aside, is `GaveUp` is left out: that
/// waiter's own place was gone (its session or lease ended without its knowing), it was
/// legitimately woken by the expiry that took its node, and it races for nothing.
pub fn departures(history: &History) -> Vec<Departure> {
    type Key<'a> = ((LineKind, &'a str), &'a str, Option<usize>);
    let gave_up = gave_up_after_waking_any(history);
    let mut last_departure: BTreeMap<(LineKind, &str), (usize, SimTime)> = BTreeMap::new();
    let mut waiting: BTreeMap<(LineKind, &str), BTreeSet<(NodeId, u32)>> = BTreeMap::new();
    let mut groups: BTreeMap<Key<'_>, Departure> = BTreeMap::new();
    for (index, record) in history.records().iter().enumerate() {
        let (Event::Recipe(event), Some(node)) = (&record.event, record.node) else {
            continue;
        };
        let Some((line, process, step)) = line_step(event) else {
            continue;
        };
        let waiter = (node, process);
        match step {
            LineStep::Joined => {
                waiting.entry(line).or_default().insert(waiter);
            }
            LineStep::Holds => {
                waiting.entry(line).or_default().remove(&waiter);
            }
            LineStep::Departed | LineStep::GaveUp => {
                waiting.entry(line).or_default().remove(&waiter);
                last_departure.insert(line, (index, record.at));
            }
            LineStep::Woken(watched) => {
                if gave_up.contains(&index) {
                    continue;
                }
                let departure = last_departure.get(&line).copied();
                let in_line = waiting.get(&line).map_or(0, BTreeSet::len);
                let group = groups
                    .entry((line, watched, departure.map(|(at, _)| at)))
                    .or_insert_with(|| Departure {
                        line: (line.0, line.1.to_string()),
                        watched: watched.to_string(),
                        departed_at: departure.map(|(_, at)| at),
                        first_woken_at: record.at,
                        woken: Vec::new(),
                        waiting: in_line,
                    });
                if !group.woken.contains(&waiter) {
                    group.woken.push(waiter);
                }
            }
        }
    }
    let mut departures: Vec<Departure> = groups.into_values().collect();
    departures.sort_by_key(|departure| departure.first_woken_at);
    departures
}

/// The positions of the `Woken` records (of locks and elections) after which the waiter's
/// next step on that line, other wake-ups aside, is `GaveUp`.
fn gave_up_after_waking_any(history: &History) -> BTreeSet<usize> {
    type WaiterInLine<'a> = (NodeId, u32, (LineKind, &'a str));
    let mut pending: BTreeMap<WaiterInLine<'_>, Vec<usize>> = BTreeMap::new();
    let mut gave_up = BTreeSet::new();
    for (index, record) in history.records().iter().enumerate() {
        let (Event::Recipe(event), Some(node)) = (&record.event, record.node) else {
            continue;
        };
        let Some((line, process, step)) = line_step(event) else {
            continue;
        };
        let waiter = (node, process, line);
        match step {
            LineStep::Woken(_) => pending.entry(waiter).or_default().push(index),
            LineStep::GaveUp => gave_up.extend(pending.remove(&waiter).unwrap_or_default()),
            _ => {
                pending.remove(&waiter);
            }
        }
    }
    gave_up
}

/// The most live waiters one node's going may wake: its one successor in line.
pub const WOKEN_PER_DEPARTURE: usize = 1;

/// A node's going that woke more than one waiter that went on waiting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HerdExceeded {
    /// What it woke.
    pub departure: Departure,
}

impl fmt::Display for HerdExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let departure = &self.departure;
        let woken: Vec<String> = departure
            .woken
            .iter()
            .map(|(node, process)| format!("{node}/{process}"))
            .collect();
        write!(
            f,
            "the going of {} in {} `{}` woke {} of the {} waiters in line ({}), from {}; \
             at most {} may wake (its successor)",
            departure.watched,
            departure.line.0,
            departure.line.1,
            departure.woken.len(),
            departure.waiting,
            woken.join(", "),
            departure.first_woken_at,
            WOKEN_PER_DEPARTURE
        )?;
        if let Some(at) = departure.departed_at {
            write!(f, " (the line's last departure before: {at})")?;
        }
        Ok(())
    }
}

impl Violation for HerdExceeded {
    fn property(&self) -> &'static str {
        "no herd effect"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper recipes, Locks and Leader Election: watch only the predecessor to avoid \
         the herd effect"
    }

    fn at(&self) -> Option<SimTime> {
        // When the herd began to wake.
        Some(self.departure.first_woken_at)
    }
}

/// Every node's going (in a lock or an election) that woke more than
/// [`WOKEN_PER_DEPARTURE`] waiters that went on waiting.
pub fn check(history: &History) -> Checked<HerdExceeded> {
    let departures = departures(history);
    let judged = departures.len() as u64;
    let violations = departures
        .into_iter()
        .filter(|departure| departure.woken.len() > WOKEN_PER_DEPARTURE)
        .map(|departure| HerdExceeded { departure })
        .collect();
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, election_step, exclusive, lock_step, requested};
    use sim::history::recipe::ElectionStep;
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
        let violations = check(&herd);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].departure.woken.len(), 2);
        assert_eq!(report(&herd)["/lock"].wakeups_per_release(), 2.0);
        let queue = History::from_records(vec![
            lock_step(100, C1, exclusive(1)),
            lock_step(200, C1, LockStep::Released { token: 1 }),
            woken(210, C2),
            lock_step(230, C2, exclusive(2)),
        ]);
        assert_eq!(check(&queue), vec![]);
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
        assert_eq!(check(&line), vec![]);
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
        assert_eq!(check(&zombie), vec![]);
        // Both alive: one node's going woke two.
        let herd = History::from_records(vec![
            lock_step(100, C1, exclusive(1)),
            lock_step(200, C1, LockStep::Released { token: 1 }),
            woken_by(210, C2, "/lock/n1"),
            woken_by(211, C3, "/lock/n1"),
            lock_step(230, C3, exclusive(3)),
        ]);
        assert_eq!(check(&herd).len(), 1);
    }

    #[test]
    fn a_full_herd_among_three_waiters_fires_and_wake_ups_after_the_next_acquisition_count() {
        const C4: NodeId = NodeId::client(3);
        // C1 holds; C2, C3, C4 wait; C1's release wakes all three. C3 and C4 wake only after
        // C2 has acquired: outside the release-to-acquisition window, still the release's.
        let herd = History::from_records(vec![
            lock_step(100, C1, exclusive(1)),
            lock_step(110, C2, requested()),
            lock_step(111, C3, requested()),
            lock_step(112, C4, requested()),
            lock_step(200, C1, LockStep::Released { token: 1 }),
            woken(210, C2),
            lock_step(220, C2, exclusive(2)),
            woken(230, C3),
            woken(231, C4),
        ]);
        let violations = check(&herd);
        assert_eq!(violations.len(), 1, "{violations:?}");
        let departure = &violations[0].departure;
        assert_eq!(departure.woken, vec![(C2, 0), (C3, 0), (C4, 0)]);
        assert_eq!(departure.waiting, 3);
        assert!(
            violations[0]
                .to_string()
                .contains("woke 3 of the 3 waiters")
        );
    }

    #[test]
    fn an_election_whose_candidates_watch_the_leader_is_a_herd() {
        let wake = |ms, client, watched: &str| {
            election_step(
                ms,
                client,
                ElectionStep::Woken {
                    watched: watched.into(),
                },
            )
        };
        let herd = History::from_records(vec![
            election_step(100, C1, ElectionStep::Gained { token: 1 }),
            election_step(110, C2, ElectionStep::Campaigned),
            election_step(111, C3, ElectionStep::Campaigned),
            election_step(200, C1, ElectionStep::Resigned { token: 1 }),
            wake(210, C2, "/election/n1"),
            wake(211, C3, "/election/n1"),
            election_step(220, C2, ElectionStep::Gained { token: 2 }),
        ]);
        let violations = check(&herd);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].departure.line.0, LineKind::Election);
        let chain = History::from_records(vec![
            election_step(100, C1, ElectionStep::Gained { token: 1 }),
            election_step(110, C2, ElectionStep::Campaigned),
            election_step(111, C3, ElectionStep::Campaigned),
            election_step(200, C1, ElectionStep::Resigned { token: 1 }),
            wake(210, C2, "/election/n1"),
            election_step(220, C2, ElectionStep::Gained { token: 2 }),
            election_step(300, C2, ElectionStep::Resigned { token: 2 }),
            wake(310, C3, "/election/n2"),
        ]);
        assert_eq!(check(&chain), vec![]);
        assert_eq!(departures(&chain).len(), 2);
    }

    #[test]
    fn a_key_reused_by_its_session_is_one_departure_per_release() {
        // etcd's key per lease: C1 holds by /lock/k twice; each release wakes one waiter.
        let woken_by = |ms, client| {
            lock_step(
                ms,
                client,
                LockStep::Woken {
                    watched: "/lock/k".into(),
                },
            )
        };
        let reused = History::from_records(vec![
            lock_step(100, C1, exclusive(1)),
            lock_step(200, C1, LockStep::Released { token: 1 }),
            woken_by(210, C2),
            lock_step(220, C2, exclusive(2)),
            lock_step(300, C2, LockStep::Released { token: 2 }),
            lock_step(310, C1, exclusive(3)),
            lock_step(400, C1, LockStep::Released { token: 3 }),
            woken_by(410, C3),
        ]);
        assert_eq!(check(&reused), vec![]);
    }
}
