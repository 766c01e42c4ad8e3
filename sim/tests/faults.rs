//! Fault plans fire as scheduled; counts and history match what was injected; bad worlds
//! are rejected with the field named.

use sim::{
    NodeId, Ratio, Seed, World,
    fault::{ClientFaults, Fault, FaultPlan, PartitionShape, ScheduledFault, SwarmConfig},
    history::{Event, FaultOutcome, ProtocolEvent},
    report::for_each_seed,
    this_test,
};
use std::time::Duration;

const S1: NodeId = NodeId::server(0);
const S2: NodeId = NodeId::server(1);
const S3: NodeId = NodeId::server(2);

fn at(at_ms: u64, fault: Fault) -> ScheduledFault {
    ScheduledFault::at(at_ms, fault)
}

#[test]
fn fault_counts_match_what_the_plan_injected() {
    let plan = FaultPlan::new(vec![
        at(100, Fault::Crash { node: S1.into() }),
        at(150, Fault::Crash { node: S1.into() }), // already crashed: skipped
        at(200, Fault::Restart { node: S1.into() }),
        at(250, Fault::Restart { node: S3.into() }), // not crashed: skipped
        at(300, Fault::Pause { node: S2.into() }),
        at(400, Fault::Resume { node: S2.into() }),
        at(
            500,
            Fault::Partition {
                shape: PartitionShape::Halves,
            },
        ),
        at(600, Fault::Heal),
        at(650, Fault::Heal), // nothing to heal: skipped
        at(700, Fault::Clog { from: S1, to: S2 }),
        at(800, Fault::Unclog { from: S1, to: S2 }),
        at(
            900,
            Fault::ClockStep {
                node: S3.into(),
                delta_ms: -250,
            },
        ),
        at(
            1_000,
            Fault::ClockDrift {
                node: S3.into(),
                drift_ppm: 5_000,
            },
        ),
        at(
            1_100,
            Fault::Loss {
                rate: Ratio::new(1, 10),
            },
        ),
        at(1_200, Fault::Crash { node: S2.into() }),
        at(1_300, Fault::HealAll),
    ]);
    let outcome = World::builder()
        .seed(Seed::new(5))
        .servers(3)
        .fault_plan(plan.clone())
        .build()
        .unwrap()
        .run(|sim| async move {
            sim.fault_phase_ended().await;
            assert!(!sim.is_crashed(S2), "heal-all restarts crashed nodes");
            assert_eq!(sim.clock(S3).drift_ppm(), 0, "heal-all stops drift");
        });
    let counts = &outcome.fault_counts;
    assert_eq!((counts.crashes, counts.restarts), (2, 2), "{counts:?}");
    assert_eq!((counts.pauses, counts.resumes), (1, 1));
    assert_eq!((counts.partitions, counts.heals), (1, 1));
    assert_eq!((counts.clogs, counts.unclogs), (1, 1));
    assert_eq!((counts.clock_steps, counts.clock_drifts), (1, 1));
    // The plan's heal-all and the world's own at the end of the fault phase: neither is
    // a fault.
    assert_eq!(
        (counts.loss_changes, counts.heal_alls, counts.skipped),
        (1, 2, 3)
    );
    assert_eq!(
        counts.faults_fired(),
        2 + 1 + 1 + 1 + 1 + 1 + 1,
        "{counts:?}"
    );

    let recorded: Vec<(u64, &Fault, &FaultOutcome)> = outcome
        .history
        .records()
        .iter()
        .filter_map(|record| match &record.event {
            Event::Fault(fault) => Some((record.at.as_millis(), &fault.fault, &fault.outcome)),
            _ => None,
        })
        .collect();
    assert_eq!(
        recorded.len(),
        plan.faults.len(),
        "every scheduled fault is recorded"
    );
    for ((at_ms, fault, outcome), scheduled) in recorded.iter().zip(&plan.faults) {
        assert_eq!(
            (*at_ms, *fault),
            (scheduled.at_ms, &scheduled.fault),
            "fired on time"
        );
        if let (Fault::Partition { .. }, FaultOutcome::Applied { cut_links, .. }) = (fault, outcome)
        {
            assert_eq!(
                cut_links.len(),
                4,
                "halves of three servers cut 1×2 links both ways"
            );
        }
    }
    let skipped = recorded
        .iter()
        .filter(|(_, _, outcome)| matches!(outcome, FaultOutcome::Skipped { .. }))
        .count();
    assert_eq!(skipped, 3);
}

#[test]
fn isolate_leader_uses_the_leader_recorded_in_the_history() {
    World::builder()
        .seed(Seed::new(1))
        .servers(3)
        .build()
        .unwrap()
        .run(|sim| async move {
            let outcome = sim.nemesis().partition(PartitionShape::IsolateLeader);
            assert!(
                matches!(outcome, FaultOutcome::Skipped { .. }),
                "no leader yet: {outcome:?}"
            );
            sim.node(S1)
                .history()
                .protocol(ProtocolEvent::BecameLeader { term: 1 });
            sim.node(S2)
                .history()
                .protocol(ProtocolEvent::BecameLeader { term: 2 });
            sim.node(S1)
                .history()
                .protocol(ProtocolEvent::SteppedDown { term: 1 });
            let FaultOutcome::Applied { cut_links, .. } =
                sim.nemesis().partition(PartitionShape::IsolateLeader)
            else {
                panic!("isolating a known leader was skipped");
            };
            assert_eq!(cut_links, vec![(S1, S2), (S2, S1), (S2, S3), (S3, S2)]);
        });
}

#[test]
fn swarm_plans_fire_their_faults_and_the_run_records_the_plan() {
    let swarm = SwarmConfig {
        mean_interval_ms: 500,
        client_faults: ClientFaults::Included,
        ..SwarmConfig::default()
    };
    for_each_seed(
        0..8,
        this_test!("swarm_plans_fire_their_faults_and_the_run_records_the_plan"),
        |seed| {
            let outcome = World::builder()
                .seed(seed)
                .servers(5)
                .clients(2)
                .swarm_faults(swarm.clone())
                .fault_phase(Duration::from_secs(10))
                .build()
                .unwrap()
                .run(|sim| async move { sim.fault_phase_ended().await });
            let plan = &outcome.fault_plan;
            assert!(plan.faults.len() > 1, "seed {seed}: an empty plan");
            let fired = outcome
                .history
                .records()
                .iter()
                .filter(|r| matches!(r.event, Event::Fault(_)))
                .count();
            let spans = plan.faults.iter().filter(|f| f.for_ms.is_some()).count();
            assert!(
                fired >= plan.faults.len() && fired <= plan.faults.len() + spans,
                "seed {seed}: {fired} fault records for {} planned faults with {spans} spans",
                plan.faults.len()
            );
            assert_eq!(outcome.fault_counts.heal_alls, 1, "the world's heal only");
            assert!(outcome.fault_counts.faults_fired() > 1, "seed {seed}");
        },
    );
}

#[test]
fn impossible_worlds_are_rejected_with_the_field_named() {
    let field = |builder: sim::WorldBuilder| builder.build().unwrap_err().field;
    assert_eq!(field(World::builder().servers(0)), "servers");
    assert_eq!(field(World::builder().servers(1_000)), "servers");
    assert!(
        field(World::builder().latency(Duration::from_millis(9)..=Duration::from_millis(1)))
            .contains("latency")
    );
    assert_eq!(
        field(World::builder().packet_loss(Ratio::new(2, 1))),
        "network.loss"
    );
    assert_eq!(
        field(World::builder().duplication(Ratio::new(1, 0))),
        "network.duplication"
    );
    let plan = FaultPlan::new(vec![at(
        10,
        Fault::Pause {
            node: NodeId::client(4).into(),
        },
    )]);
    let error = World::builder()
        .clients(2)
        .fault_plan(plan)
        .build()
        .unwrap_err();
    assert_eq!(error.field, "faults.plan[0]");
    assert!(error.to_string().contains("unknown node c5"), "{error}");
    let drift = FaultPlan::new(vec![at(
        10,
        Fault::ClockDrift {
            node: S1.into(),
            drift_ppm: 900_000,
        },
    )]);
    assert_eq!(field(World::builder().fault_plan(drift)), "faults.plan[0]");
}

#[test]
fn the_run_stops_at_the_time_limit() {
    let outcome = World::builder()
        .time_limit(Duration::from_secs(3))
        .build()
        .unwrap()
        .run(|_| std::future::pending::<()>());
    assert_eq!(
        outcome.end,
        sim::RunEnd::TimeLimit {
            at: outcome.ended_at()
        }
    );
    assert_eq!(outcome.ended_at().as_millis(), 3_000);
}

/// Roles resolve when the fault fires and are recorded with what they resolved to; a span
/// fires the inverse on that same node; `$name` reaches the node an earlier fault resolved.
#[test]
fn roles_resolve_when_they_fire_and_spans_undo_on_the_same_node() {
    use sim::fault::Target;
    let plan = FaultPlan::new(vec![
        at(
            100,
            Fault::Partition {
                shape: PartitionShape::Strand {
                    node: Target::Leader,
                    with: vec![NodeId::client(0)],
                },
            },
        )
        .lasting(200)
        .named("old"),
        // Crashed as the partition heals: plan faults fire before inverses at one instant.
        at(
            300,
            Fault::Crash {
                node: Target::Label("old".into()),
            },
        )
        .lasting(400),
        at(
            400,
            Fault::Pause {
                node: Target::Follower,
            },
        )
        .lasting(100),
    ]);
    let outcome = World::builder()
        .seed(Seed::new(3))
        .servers(3)
        .clients(1)
        .fault_plan(plan)
        .build()
        .unwrap()
        .run(|sim| async move {
            // s2 claims leadership; the nemesis takes servers at their word for targeting.
            sim.node(S2)
                .history()
                .protocol(ProtocolEvent::BecameLeader { term: 1 });
            assert_eq!(sim.current_leader(), Some(S2));
            sim.fault_phase_ended().await;
        });
    let fired: Vec<(u64, String, Option<NodeId>)> = outcome
        .history
        .records()
        .iter()
        .filter_map(|record| match &record.event {
            Event::Fault(fault) => {
                Some((record.at.as_millis(), fault.fault.to_string(), fault.target))
            }
            _ => None,
        })
        .collect();
    let follower = fired[3].2.expect("the follower resolved");
    assert!(follower != S2 && follower.is_server(), "{fired:?}");
    assert_eq!(
        fired,
        vec![
            (
                100,
                "partition strand leader with [c1]".to_string(),
                Some(S2)
            ),
            (300, "crash $old".to_string(), Some(S2)),
            (300, "heal".to_string(), None),
            (400, "pause follower".to_string(), Some(follower)),
            (500, format!("resume {follower}"), Some(follower)),
            (700, "restart s2".to_string(), Some(S2)),
        ]
    );
    let counts = &outcome.fault_counts;
    assert_eq!(
        (
            counts.partitions,
            counts.crashes,
            counts.pauses,
            counts.faults_fired()
        ),
        (1, 1, 1, 3)
    );
}

/// A crash ends a leadership for role resolution: once the old leader restarts, `leader`
/// does not resolve to it (it comes back a follower) until some server claims it again.
#[test]
fn a_restarted_former_leader_is_not_the_leader() {
    use sim::fault::Target;
    let plan = FaultPlan::new(vec![
        at(
            100,
            Fault::Crash {
                node: Target::Leader,
            },
        )
        .lasting(100),
        at(
            300,
            Fault::Pause {
                node: Target::Leader,
            },
        )
        .lasting(100),
    ]);
    let outcome = World::builder()
        .seed(Seed::new(4))
        .servers(3)
        .fault_plan(plan)
        .build()
        .unwrap()
        .run(|sim| async move {
            sim.node(S1)
                .history()
                .protocol(ProtocolEvent::BecameLeader { term: 1 });
            sim.fault_phase_ended().await;
        });
    let outcomes: Vec<(Option<NodeId>, bool)> = outcome
        .history
        .records()
        .iter()
        .filter_map(|record| match &record.event {
            Event::Fault(fault) => Some((
                fault.target,
                matches!(fault.outcome, FaultOutcome::Skipped { .. }),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        outcomes,
        vec![(Some(S1), false), (Some(S1), false), (None, true)],
        "crash s1, restart s1, then no leader to pause"
    );
}
