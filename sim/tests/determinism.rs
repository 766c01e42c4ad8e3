//! The same scenario and seed give the same history digest; different seeds differ.

use sim::{
    Seed, World,
    demo::{DemoWorkload, ledger_scenario},
    fault::{ClientFaults, SwarmConfig},
    history::{Event, History, PhaseEvent},
};

fn demo(seed: Seed) -> sim::RunOutcome {
    World::builder()
        .seed(seed)
        .servers(3)
        .clients(3)
        .swarm_faults(SwarmConfig {
            fault_phase_ms: 6_000,
            mean_interval_ms: 400,
            client_faults: ClientFaults::Included,
            ..SwarmConfig::default()
        })
        .build()
        .unwrap()
        .run(|sim| {
            ledger_scenario(
                sim,
                DemoWorkload {
                    appends_per_client: 40,
                },
            )
        })
}

#[test]
fn the_same_seed_gives_the_same_history_digest() {
    for seed in sim::env::test_seeds(4) {
        let first = demo(seed);
        let second = demo(seed);
        assert!(
            first.fault_counts.faults_applied() > 0,
            "seed {seed}: no fault fired"
        );
        assert!(
            first.history.operations().len() > 20,
            "seed {seed}: too little workload"
        );
        assert_eq!(
            first.history_digest(),
            second.history_digest(),
            "seed {seed}: the same run gave two histories\n{}",
            sim::report::FailureReport::for_test(
                seed,
                "sim",
                "determinism",
                "the_same_seed_gives_the_same_history_digest"
            )
        );
        assert_eq!(first.fault_counts, second.fault_counts);
    }
}

#[test]
fn different_seeds_give_different_histories() {
    let digests: std::collections::BTreeSet<_> = (100..106)
        .map(|seed| digest_without_seed(&demo(Seed::new(seed)).history))
        .collect();
    assert_eq!(digests.len(), 6);
}

/// The digest of everything but the `Started` record, which names the seed and would make
/// different seeds differ trivially.
fn digest_without_seed(history: &History) -> sim::digest::Digest {
    let records = history
        .records()
        .iter()
        .filter(|r| !matches!(r.event, Event::Phase(PhaseEvent::Started { .. })))
        .cloned()
        .collect();
    History::from_records(records).digest()
}

#[test]
fn histories_round_trip_through_json_with_the_same_digest() {
    let outcome = demo(Seed::new(9));
    let text = outcome.history.to_json_lines();
    let back = History::from_json(&text).unwrap();
    assert_eq!(back.digest(), outcome.history_digest());
    let broken = text.replacen("\"at\"", "\"at", 1);
    let error = History::from_json(&broken).unwrap_err();
    assert_eq!(error.line, 1);
}
