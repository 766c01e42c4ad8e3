//! A restarted etcd server records the state it resumed from (its backend's consistent
//! index, as `SnapshotInstalled`), and `protocol.resumes_held_state` judges it: on real runs
//! every restart resumes from an entry the server applied, and the same histories with each
//! restart moved one index too far (a backend that claims an entry it never applied) fail.

use checks::{IndexKind, protocol::resumes_held_state};
use scenarios::{catalogue, driver};
use sim::{
    NodeId, Seed,
    history::{Event, History, ProtocolEvent, Record},
    report::for_each_seed,
    this_test,
};
use std::collections::BTreeMap;

/// The history of a leader-killer run (leaders crash and restart all through it).
fn leader_killer_history(seed: Seed) -> History {
    let scenario = catalogue::get("raft_leader_killer").expect("a catalogue scenario");
    let outcome = driver::run(&scenario, seed);
    assert!(outcome.is_clean(), "{outcome}");
    outcome.history.expect("a run keeps its history")
}

/// Positions of the records that are a restart's resume, and whether each resumed at the
/// last index the server had applied (its backend held everything).
fn restarts(records: &[Record]) -> Vec<(usize, bool)> {
    let mut last_applied: BTreeMap<NodeId, u64> = BTreeMap::new();
    let mut crashed: Vec<NodeId> = Vec::new();
    let mut found = Vec::new();
    for (position, record) in records.iter().enumerate() {
        if let Event::Fault(fault) = &record.event {
            crashed.extend(fault.crashed());
        }
        let (Event::Protocol(event), Some(node)) = (&record.event, record.node) else {
            continue;
        };
        // A server's first protocol record after its crash says how it booted.
        let booting = crashed.contains(&node);
        crashed.retain(|other| *other != node);
        match event {
            ProtocolEvent::Applied { index, .. } => {
                last_applied.insert(node, *index);
            }
            ProtocolEvent::SnapshotInstalled { index, .. } if booting => {
                found.push((position, last_applied.get(&node) == Some(index)));
            }
            _ => {}
        }
    }
    found
}

#[test]
fn restarted_etcd_servers_resume_from_what_they_applied_and_one_too_far_is_caught() {
    let test = this_test!(
        "restarted_etcd_servers_resume_from_what_they_applied_and_one_too_far_is_caught"
    );
    for_each_seed([1, 2], test, |seed| {
        let history = leader_killer_history(seed);
        let checked = resumes_held_state::check(&history, IndexKind::LogIndex);
        assert!(checked.is_empty(), "{:?}", checked.violations);
        let records = history.records().to_vec();
        let restarts = restarts(&records);
        assert_eq!(checked.judged, restarts.len() as u64);
        let whole = restarts.iter().filter(|(_, whole)| *whole).count();
        assert!(
            whole > 0,
            "no restart found its backend whole: {restarts:?}"
        );
        // Each restart moved one index too far, as by a backend that claims one entry more
        // than it holds: a restart at an index the server never applied is caught. Not caught:
        // one at an index the server had applied before, or had already claimed at an earlier
        // (equally moved) restart with no apply since; the history shows indexes and terms,
        // not what the state held.
        let mut moved = records.clone();
        for (position, _) in &restarts {
            if let Event::Protocol(ProtocolEvent::SnapshotInstalled { index, .. }) =
                &mut moved[*position].event
            {
                *index += 1;
            }
        }
        let moved = History::from_records(moved);
        let caught = resumes_held_state::check(&moved, IndexKind::LogIndex);
        assert!(!caught.is_empty(), "{restarts:?}");
        for violation in caught.iter() {
            assert_eq!(violation.held_term, None, "{violation}");
            assert!(
                violation.resumed.0 > violation.highest_held.0,
                "{violation}"
            );
        }
        println!(
            "seed {seed}: {} restarts, {whole} with the backend whole, {} caught moved one too far",
            restarts.len(),
            caught.len()
        );
    });
}
