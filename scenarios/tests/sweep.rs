//! The sweep harness reports exactly the seeds whose runs broke a property, with replay
//! commands, and totals the faults that fired.

use scenarios::sweep::Sweep;
use sim::{NodeId, Seed, World, fault::SwarmConfig, history::ProtocolEvent};

/// A scenario where, for odd seeds only, two servers claim leadership of the same term.
fn run(seed: Seed) -> sim::RunOutcome {
    World::builder()
        .seed(seed)
        .servers(3)
        .swarm_faults(SwarmConfig {
            fault_phase_ms: 2_000,
            mean_interval_ms: 200,
            ..SwarmConfig::default()
        })
        .build()
        .unwrap()
        .run(move |sim| async move {
            sim.node(NodeId::server(0))
                .history()
                .protocol(ProtocolEvent::BecameLeader { term: 1 });
            if seed.value() % 2 == 1 {
                sim.node(NodeId::server(1))
                    .history()
                    .protocol(ProtocolEvent::BecameLeader { term: 1 });
            }
            sim.fault_phase_ended().await;
        })
}

#[test]
fn a_sweep_reports_exactly_the_failing_seeds() {
    let summary = Sweep::new(
        "scenarios",
        "sweep",
        "a_sweep_reports_exactly_the_failing_seeds",
        6,
    )
    .run(run, |outcome| {
        checks::run(
            checks::protocol::CHECKS,
            &outcome.history,
            &checks::CheckContext::default(),
        )
    });
    let failing: Vec<u64> = summary.failures.iter().map(|f| f.seed.value()).collect();
    let expected: Vec<u64> = summary
        .seeds
        .iter()
        .map(|s| s.value())
        .filter(|s| s % 2 == 1)
        .collect();
    assert_eq!(failing, expected);
    assert!(summary.found("leader uniqueness"));
    let report = summary.failures[0].to_string();
    assert!(
        report.contains("REPRODUCE WITH: COORDSIM_SEED="),
        "{report}"
    );
    assert!(report.contains("violated leader uniqueness"), "{report}");
    assert!(
        summary.fault_totals.faults_applied() > 0,
        "the swarm plans never fired"
    );
    let clean = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| summary.assert_clean()));
    assert!(clean.is_err(), "assert_clean passed a failing sweep");
}
