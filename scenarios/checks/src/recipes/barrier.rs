//! A double barrier's promise: nobody is through the entry before all N participants have
//! entered, nobody is through the exit before all N have left, and, once the run is over,
//! nobody who began to enter is left behind.
//!
//! Judged two ways. By the participants' own reads, whatever the timing: a participant
//! through the entry must have seen all N participants' nodes in one listing of the
//! barrier, or seen `ready`; `ready` may be created only by a participant that listed all
//! N; a participant through the exit must have seen, in its last listing, no participant
//! but itself (ZooKeeper recipes, "Double Barriers": "if fewer children in L than x, wait
//! for watch event, else create ready"; leave when "p is the only process node in L").
//! And on the global clock: nobody is through a gate before every participant had begun to
//! pass it. At the exit, a participant whose node went with its expired session is not
//! waited for (to the others it has left, and a paused process cannot tell them otherwise):
//! a participant through the exit before such a one began to leave is excused if a session
//! in which the late one had made its node had ended before.
//!
//! The participants of a barrier are every client process that began to enter it (the
//! workloads use one barrier node per round, each with all the clients as participants):
//! N is never more than the recipe's `size`, so the check asks no more than the recipe must.
//!
//! **Reads:** ([`crate::history::barrier`]) the barrier recipe's `RecipeEvent::Barrier`
//! records, written at the client node: `Entering` and `Leaving` before the recipe does
//! anything, `Entered` and `Left` once it believes it is through; the participants' own
//! ZooKeeper operations on the barrier node (listings, `ready`'s `exists` and creates, the
//! creates of their nodes), recorded by the client library; and when sessions ended
//! ([`crate::history::zk::session_ends`]: the leader's committed expiry, the client told it
//! expired, or its close). The clock ordering is judged on the global clock, which a real
//! test lacks.

use crate::Checked;
pub use crate::history::barrier::Gate;
use crate::{
    Violation,
    history::{
        barrier::{self, BarrierRecords, GateAttempt},
        locks::Holder,
        zk::session_ends,
    },
};
use sim::{
    history::{History, recipe::BarrierStep},
    time::SimTime,
};
use std::fmt;

/// A broken barrier promise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BarrierViolation {
    /// Someone was through a gate before a participant had begun to pass it.
    ThroughTooEarly {
        /// The barrier.
        barrier: String,
        /// The gate.
        gate: Gate,
        /// Who was through.
        through: Holder,
        /// When.
        at: SimTime,
        /// The participant who had not begun, and when it did (`None`: never).
        late: (Holder, Option<SimTime>),
    },
    /// Someone was through a gate without having seen that everyone had passed it: at the
    /// entry, no listing of all N participants and no `ready`; at the exit, others still
    /// listed (or no listing at all).
    ThroughUnseen {
        /// The barrier.
        barrier: String,
        /// The gate.
        gate: Gate,
        /// Who was through.
        through: Holder,
        /// When.
        at: SimTime,
        /// At the entry, the most participants it listed; at the exit, the others in its
        /// last listing (`None`: it listed none).
        listed: Option<usize>,
        /// The participants of the barrier.
        participants: usize,
    },
    /// `ready` was created by a participant that had not listed all N participants.
    ReadyTooEarly {
        /// The barrier.
        barrier: String,
        /// Who created it.
        creator: Holder,
        /// When the create was sent.
        at: SimTime,
        /// The most participants it had listed (`None`: it listed none).
        listed: Option<usize>,
        /// The participants of the barrier.
        participants: usize,
    },
    /// A participant began to enter and never left.
    LeftBehind {
        /// The barrier.
        barrier: String,
        /// Who.
        participant: Holder,
        /// Its last step.
        last: BarrierStep,
    },
}

fn gate_name(gate: Gate) -> &'static str {
    match gate {
        Gate::Entry => "entry",
        Gate::Exit => "exit",
    }
}

fn listed_text(listed: Option<usize>) -> String {
    listed.map_or("no listing".to_string(), |listed| listed.to_string())
}

impl fmt::Display for BarrierViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BarrierViolation::ThroughTooEarly {
                barrier,
                gate,
                through,
                at,
                late: (late, began),
            } => {
                let began = began.map_or("never".to_string(), |at| format!("at {at}"));
                write!(
                    f,
                    "{}/{} was through the {} of `{barrier}` at {at}, but {}/{} began to pass \
                     it only {began}",
                    through.0,
                    through.1,
                    gate_name(*gate),
                    late.0,
                    late.1
                )
            }
            BarrierViolation::ThroughUnseen {
                barrier,
                gate: Gate::Entry,
                through,
                at,
                listed,
                participants,
            } => write!(
                f,
                "{}/{} was through the entry of `{barrier}` at {at} having listed at most {} \
                 of its {participants} participants and never seen `ready`",
                through.0,
                through.1,
                listed_text(*listed)
            ),
            BarrierViolation::ThroughUnseen {
                barrier,
                gate: Gate::Exit,
                through,
                at,
                listed,
                ..
            } => write!(
                f,
                "{}/{} was through the exit of `{barrier}` at {at}, its last listing showing \
                 {} other participants",
                through.0,
                through.1,
                listed_text(*listed)
            ),
            BarrierViolation::ReadyTooEarly {
                barrier,
                creator,
                at,
                listed,
                participants,
            } => write!(
                f,
                "{}/{} created `{barrier}/ready` at {at} having listed at most {} of its \
                 {participants} participants",
                creator.0,
                creator.1,
                listed_text(*listed)
            ),
            BarrierViolation::LeftBehind {
                barrier,
                participant,
                last,
            } => write!(
                f,
                "{}/{} never got out of `{barrier}`: its last step was {last:?}",
                participant.0, participant.1
            ),
        }
    }
}

impl Violation for BarrierViolation {
    fn property(&self) -> &'static str {
        "double barrier"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper recipes, Double Barriers; Hunt et al., ZooKeeper (USENIX ATC 2010), section 2.4"
    }

    fn at(&self) -> Option<SimTime> {
        // When the participant went through (or created `ready`) too early; unknown for one
        // left behind.
        match self {
            BarrierViolation::ThroughTooEarly { at, .. }
            | BarrierViolation::ThroughUnseen { at, .. }
            | BarrierViolation::ReadyTooEarly { at, .. } => Some(*at),
            BarrierViolation::LeftBehind { .. } => None,
        }
    }
}

/// Every broken promise of every barrier in `history`.
pub fn check(history: &History) -> Checked<BarrierViolation> {
    // Every gate attempt a participant made, through or not.
    let judged = barrier::read(history).attempts.len() as u64;
    Checked::new(judge(history).0, judged)
}

/// The exits through before a participant had begun to leave that the check excuses,
/// because a session in which that participant had made its node had ended before.
pub fn excused_exits(history: &History) -> Vec<BarrierViolation> {
    judge(history).1
}

/// The violations, and the early exits excused by an ended session.
fn judge(history: &History) -> (Vec<BarrierViolation>, Vec<BarrierViolation>) {
    let records = barrier::read(history);
    let ends = session_ends(history);
    let mut violations = Vec::new();
    let mut excused = Vec::new();
    for violation in through_too_early(&records) {
        let BarrierViolation::ThroughTooEarly {
            barrier,
            gate: Gate::Exit,
            at,
            late: (late, _),
            ..
        } = &violation
        else {
            violations.push(violation);
            continue;
        };
        let node_gone = records
            .node_sessions
            .get(&(barrier.clone(), *late))
            .is_some_and(|sessions| {
                sessions
                    .iter()
                    .any(|session| ends.get(session).is_some_and(|end| end < at))
            });
        if node_gone {
            excused.push(violation);
        } else {
            violations.push(violation);
        }
    }
    violations.extend(unseen(&records));
    violations.extend(left_behind(&records));
    (violations, excused)
}

/// On the global clock: the earliest through each gate, against the latest to begin it.
fn through_too_early(records: &BarrierRecords) -> Vec<BarrierViolation> {
    let first = |steps: &[(BarrierStep, SimTime)], wanted: BarrierStep| {
        steps
            .iter()
            .find(|(step, _)| *step == wanted)
            .map(|(_, at)| *at)
    };
    let mut violations = Vec::new();
    for (barrier, participants) in &records.steps {
        for (gate, begun, through) in [
            (Gate::Entry, BarrierStep::Entering, BarrierStep::Entered),
            (Gate::Exit, BarrierStep::Leaving, BarrierStep::Left),
        ] {
            let earliest = participants
                .iter()
                .filter_map(|(who, steps)| Some((first(steps, through)?, *who)))
                .min();
            let Some((at, who)) = earliest else { continue };
            let latest = participants
                .iter()
                .map(|(late, steps)| (first(steps, begun), *late))
                .filter(|(began, _)| began.is_none_or(|began| began > at))
                .max_by_key(|(began, _)| began.map_or(u64::MAX, |began| began.as_nanos()));
            if let Some((began, late)) = latest {
                violations.push(BarrierViolation::ThroughTooEarly {
                    barrier: barrier.clone(),
                    gate,
                    through: who,
                    at,
                    late: (late, began),
                });
            }
        }
    }
    violations
}

/// By the participants' own reads: each pass and each `ready` on what its maker had seen.
fn unseen(records: &BarrierRecords) -> Vec<BarrierViolation> {
    let mut violations = Vec::new();
    for create in &records.ready_creates {
        let participants = records.participants(&create.barrier);
        if create
            .most_listed
            .is_none_or(|listed| listed < participants)
        {
            violations.push(BarrierViolation::ReadyTooEarly {
                barrier: create.barrier.clone(),
                creator: create.creator,
                at: create.at,
                listed: create.most_listed,
                participants,
            });
        }
    }
    for attempt in &records.attempts {
        let GateAttempt {
            barrier,
            participant,
            gate,
            through_at: Some(at),
            ..
        } = attempt
        else {
            continue;
        };
        let participants = records.participants(barrier);
        let (seen, listed) = match gate {
            Gate::Entry => (
                attempt.saw_ready
                    || attempt
                        .most_listed
                        .is_some_and(|listed| listed >= participants),
                attempt.most_listed,
            ),
            Gate::Exit => (
                attempt.others_in_last_listing == Some(0),
                attempt.others_in_last_listing,
            ),
        };
        if !seen {
            violations.push(BarrierViolation::ThroughUnseen {
                barrier: barrier.clone(),
                gate: *gate,
                through: *participant,
                at: *at,
                listed,
                participants,
            });
        }
    }
    violations
}

/// Everyone who began to enter and whose last step is not `Left`.
fn left_behind(records: &BarrierRecords) -> Vec<BarrierViolation> {
    let mut violations = Vec::new();
    for (barrier, participants) in &records.steps {
        for (participant, steps) in participants {
            let last = steps.last().map(|(step, _)| *step);
            if let Some(last) = last.filter(|last| *last != BarrierStep::Left) {
                violations.push(BarrierViolation::LeftBehind {
                    barrier: barrier.clone(),
                    participant: *participant,
                    last,
                });
            }
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, invoke, ok, record, zk_session, zk_session_ended};
    use sim::{
        NodeId,
        history::{
            Event, RecipeEvent, Record,
            zk::{CreateMode, Stat, ZkOperation, ZkResponse},
        },
    };

    const C3: NodeId = NodeId::client(2);

    fn step(ms: u64, node: NodeId, step: BarrierStep) -> Record {
        record(
            ms,
            node,
            Event::Recipe(RecipeEvent::Barrier {
                process: 0,
                barrier: "/b".into(),
                step,
            }),
        )
    }

    /// `node`'s listing of the barrier (op `op`), answered with `children`.
    fn listing(ms: u64, node: NodeId, op: u64, children: &[&str]) -> [Record; 2] {
        [
            invoke(ms, node, op, ZkOperation::GetChildren { path: "/b".into() }),
            ok(
                ms + 1,
                node,
                op,
                ZkResponse::Children {
                    children: children.iter().map(|name| name.to_string()).collect(),
                    stat: Stat::default(),
                },
            ),
        ]
    }

    /// `node` creates `/b/<name>` (op `op`), answered `Ok`.
    fn create(ms: u64, node: NodeId, op: u64, name: &str) -> [Record; 2] {
        let path = format!("/b/{name}");
        [
            invoke(
                ms,
                node,
                op,
                ZkOperation::Create {
                    path: path.clone(),
                    data: String::new(),
                    mode: CreateMode::Ephemeral,
                },
            ),
            ok(ms + 1, node, op, ZkResponse::Created { path }),
        ]
    }

    /// `node` finds `/b/ready` (op `op`).
    fn sees_ready(ms: u64, node: NodeId, op: u64) -> [Record; 2] {
        [
            invoke(
                ms,
                node,
                op,
                ZkOperation::Exists {
                    path: "/b/ready".into(),
                },
            ),
            ok(
                ms + 1,
                node,
                op,
                ZkResponse::Exists {
                    stat: Some(Stat::default()),
                },
            ),
        ]
    }

    /// Two participants entering and leaving as the recipe does, from `ms` on; `c2` makes
    /// `ready`.
    fn two_through_together() -> Vec<Record> {
        [
            vec![step(10, C1, BarrierStep::Entering)],
            create(11, C1, 1, "c1").to_vec(),
            vec![step(20, C2, BarrierStep::Entering)],
            create(21, C2, 2, "c2").to_vec(),
            listing(23, C2, 3, &["c1", "c2"]).to_vec(),
            create(25, C2, 4, "ready").to_vec(),
            vec![step(30, C2, BarrierStep::Entered)],
            sees_ready(31, C1, 5).to_vec(),
            vec![step(33, C1, BarrierStep::Entered)],
            vec![step(40, C1, BarrierStep::Leaving)],
            // c1, the lowest, waits for the highest to go.
            listing(41, C1, 6, &["c1", "c2", "ready"]).to_vec(),
            vec![step(50, C2, BarrierStep::Leaving)],
            // c2 deletes its node and waits for the lowest to go.
            listing(51, C2, 7, &["c1", "c2", "ready"]).to_vec(),
            listing(55, C1, 8, &["c1", "ready"]).to_vec(),
            vec![step(57, C1, BarrierStep::Left)],
            listing(58, C2, 9, &["ready"]).to_vec(),
            vec![step(60, C2, BarrierStep::Left)],
        ]
        .concat()
    }

    #[test]
    fn entering_and_leaving_together_passes() {
        assert_eq!(
            check(&History::from_records(two_through_together())),
            vec![]
        );
    }

    #[test]
    fn through_the_entry_before_the_last_arrived_is_reported() {
        let history = History::from_records(vec![
            step(10, C1, BarrierStep::Entering),
            step(15, C1, BarrierStep::Entered),
            step(20, C2, BarrierStep::Entering),
            step(30, C2, BarrierStep::Entered),
        ]);
        let violations = check(&history);
        assert!(
            violations.iter().any(|violation| matches!(violation,
                BarrierViolation::ThroughTooEarly { gate: Gate::Entry, late, .. }
                if late.0 == (C2, 0))),
            "{violations:?}"
        );
    }

    /// Everyone began to enter before anyone was through, so the clock sees nothing: c1 went
    /// through on a wake-up, having listed only itself and never seen `ready`.
    #[test]
    fn through_the_entry_without_seeing_everyone_is_reported_whatever_the_timing() {
        let history = History::from_records(
            [
                vec![
                    step(10, C1, BarrierStep::Entering),
                    step(11, C2, BarrierStep::Entering),
                    step(12, C3, BarrierStep::Entering),
                ],
                create(13, C1, 1, "c1").to_vec(),
                listing(15, C1, 2, &["c1"]).to_vec(),
                create(16, C2, 3, "c2").to_vec(),
                vec![step(18, C1, BarrierStep::Entered)],
                create(20, C3, 4, "c3").to_vec(),
                listing(22, C3, 5, &["c1", "c2", "c3"]).to_vec(),
                create(24, C3, 6, "ready").to_vec(),
                vec![step(26, C3, BarrierStep::Entered)],
                sees_ready(27, C2, 7).to_vec(),
                vec![step(29, C2, BarrierStep::Entered)],
            ]
            .concat(),
        );
        let violations: Vec<_> = check(&history)
            .into_iter()
            .filter(|violation| !matches!(violation, BarrierViolation::LeftBehind { .. }))
            .collect();
        assert_eq!(
            violations,
            vec![BarrierViolation::ThroughUnseen {
                barrier: "/b".into(),
                gate: Gate::Entry,
                through: (C1, 0),
                at: SimTime::from_millis(18),
                listed: Some(1),
                participants: 3,
            }]
        );
        assert!(violations[0].to_string().contains("at most 1 of its 3"));
    }

    #[test]
    fn ready_made_on_a_short_listing_is_reported() {
        let history = History::from_records(
            [
                vec![
                    step(10, C1, BarrierStep::Entering),
                    step(11, C2, BarrierStep::Entering),
                    step(12, C3, BarrierStep::Entering),
                ],
                create(13, C1, 1, "c1").to_vec(),
                create(14, C2, 2, "c2").to_vec(),
                listing(16, C2, 3, &["c1", "c2"]).to_vec(),
                create(18, C2, 4, "ready").to_vec(),
                vec![step(20, C2, BarrierStep::Entered)],
            ]
            .concat(),
        );
        let violations = check(&history);
        assert!(
            violations.contains(&BarrierViolation::ReadyTooEarly {
                barrier: "/b".into(),
                creator: (C2, 0),
                at: SimTime::from_millis(18),
                listed: Some(2),
                participants: 3,
            }),
            "{violations:?}"
        );
    }

    #[test]
    fn out_while_another_is_listed_and_left_behind_are_reported() {
        let mut records = two_through_together();
        // c1 goes out on a listing that still shows c2, and c2 never gets out.
        records.truncate(records.len() - 7);
        records.extend(listing(55, C1, 8, &["c1", "c2", "ready"]));
        records.push(step(57, C1, BarrierStep::Left));
        let violations = check(&History::from_records(records));
        assert!(
            matches!(
                &violations[..],
                [
                    BarrierViolation::ThroughUnseen {
                        gate: Gate::Exit,
                        listed: Some(1),
                        ..
                    },
                    BarrierViolation::LeftBehind {
                        last: BarrierStep::Leaving,
                        ..
                    },
                ]
            ),
            "{violations:?}"
        );
    }

    /// c2's session ends while it works inside; its node goes with it, and c1 leaves before
    /// c2 begins to: excused, not a violation.
    #[test]
    fn out_before_one_whose_session_ended_inside_is_excused() {
        let records = [
            vec![zk_session(5, C1, 0, 1), zk_session(5, C2, 0, 2)],
            vec![step(10, C1, BarrierStep::Entering)],
            create(11, C1, 1, "c1").to_vec(),
            vec![step(20, C2, BarrierStep::Entering)],
            create(21, C2, 2, "c2").to_vec(),
            listing(23, C2, 3, &["c1", "c2"]).to_vec(),
            create(25, C2, 4, "ready").to_vec(),
            vec![step(30, C2, BarrierStep::Entered)],
            sees_ready(31, C1, 5).to_vec(),
            vec![step(33, C1, BarrierStep::Entered)],
            vec![zk_session_ended(35, C2, 0, 2)],
            vec![step(40, C1, BarrierStep::Leaving)],
            listing(41, C1, 6, &["c1", "ready"]).to_vec(),
            vec![step(45, C1, BarrierStep::Left)],
            vec![zk_session(48, C2, 0, 3), step(50, C2, BarrierStep::Leaving)],
            listing(51, C2, 7, &["ready"]).to_vec(),
            vec![step(53, C2, BarrierStep::Left)],
        ]
        .concat();
        let history = History::from_records(records);
        assert_eq!(check(&history), vec![]);
        assert!(
            matches!(&excused_exits(&history)[..], [BarrierViolation::ThroughTooEarly {
                gate: Gate::Exit, late, .. }] if late.0 == (C2, 0)),
            "{:?}",
            excused_exits(&history)
        );
    }
}
