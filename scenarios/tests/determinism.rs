//! Determinism of whole runs through the driver: the same scenario and seed give the same
//! history digest; different seeds give different histories; histories survive JSON.

use scenarios::{catalogue, driver};
use sim::{
    Seed,
    history::{Event, History, PhaseEvent},
};

/// The demo (the replicated ledger under swarm faults, clients included), with its history.
fn demo(seed: Seed) -> (scenarios::Outcome, History) {
    let mut outcome = driver::run(&catalogue::get("ledger").unwrap(), seed);
    let history = outcome
        .history
        .take()
        .expect("a run that did not crash has a history");
    (outcome, history)
}

#[test]
fn the_same_seed_gives_the_same_history_digest() {
    for seed in sim::env::test_seeds(4) {
        let (first, first_history) = demo(seed);
        let (second, second_history) = demo(seed);
        assert!(first.is_clean(), "{first}");
        assert!(
            first.fault_counts.faults_fired() > 0,
            "seed {seed}: no fault fired"
        );
        assert!(
            first_history.operations().len() > 20,
            "seed {seed}: too little workload"
        );
        assert_eq!(first_history, second_history);
        assert_eq!(
            first.history_digest,
            second.history_digest,
            "seed {seed}: the same run gave two histories\n{}",
            sim::report::FailureReport::for_test(
                seed,
                "scenarios",
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
        .map(|seed| digest_without_seed(&demo(Seed::new(seed)).1))
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
    let (outcome, history) = demo(Seed::new(9));
    let text = history.to_json_lines();
    let back = History::from_json(&text).unwrap();
    assert_eq!(Some(back.digest()), outcome.history_digest);
    let broken = text.replacen("\"at\"", "\"at", 1);
    let error = History::from_json(&broken).unwrap_err();
    assert_eq!(error.line, 1);
}
