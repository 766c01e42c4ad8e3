//! The ZooKeeper recipes that order sequential nodes stay safe and live across the wrap of
//! the parent's sequence counter. Each catalogue scenario below runs with the counter
//! narrowed (`tuning.sequence_counter_bits`), so that it wraps to negative names within
//! every run, and must run clean — every check, progress made — with names past the wrap
//! created. The queue lock's own scenario, `zk_queue_lock_seq_wrap`, runs in known_bugs.rs,
//! where the line that compares names as text (`recipe.seq_overflow_compare`) fails on the
//! same seeds.

mod common;

use checks::history::zk::zk_operations;
use scenarios::{Outcome, catalogue, sweep::Sweep};
use sim::history::zk::ZkResponse;

const TARGET: &str = "sequence_wrap";

/// How many sequential creates returned a name past the wrap (a negative sequence: `-` as
/// the first of its last ten characters, or before them).
fn names_past_the_wrap(outcome: &Outcome) -> usize {
    let history = common::history(outcome);
    zk_operations(history)
        .iter()
        .filter(|op| {
            matches!(op.ok().and_then(ZkResponse::created_path), Some(path)
                if path.len() > 11 && path[path.len() - 11..].contains('-'))
        })
        .count()
}

/// `name` from the catalogue with a `bits`-bit sequence counter, over a few seeds: clean,
/// and every run created names past the wrap.
fn clean_across_the_wrap(name: &str, bits: u32, test: &str) {
    let mut scenario = catalogue::get(name)
        .unwrap_or_else(|| panic!("no scenario `{name}`"))
        .with_sequence_counter_bits(bits);
    scenario.name = format!("{name}_with_{bits}_bit_sequences");
    let mut wrapped_runs = 0;
    let summary =
        Sweep::new(scenario, "scenarios", TARGET, test, 2).run_inspecting(|outcome: &Outcome| {
            if names_past_the_wrap(outcome) > 0 {
                wrapped_runs += 1;
            }
        });
    summary.assert_clean();
    assert_eq!(
        wrapped_runs,
        summary.seeds.len(),
        "{name}: not every run crossed the wrap of a {bits}-bit counter"
    );
}

#[test]
fn the_read_write_lock_stays_exclusive_across_the_wrap() {
    clean_across_the_wrap(
        "zk_rw_lock",
        6,
        "the_read_write_lock_stays_exclusive_across_the_wrap",
    );
}

#[test]
fn the_election_keeps_one_leader_across_the_wrap() {
    clean_across_the_wrap(
        "zk_election",
        6,
        "the_election_keeps_one_leader_across_the_wrap",
    );
}

/// 9 bits: the queue's backlog grows to some sixty items, about 130 creates and deletes
/// from its oldest to its newest, more than half of an 8-bit counter's range — past which
/// no order by name can be right (at 8 bits, 3 of 10 seeds took items out of order).
#[test]
fn the_fifo_queue_stays_in_order_across_the_wrap() {
    clean_across_the_wrap(
        "zk_fifo_queue",
        9,
        "the_fifo_queue_stays_in_order_across_the_wrap",
    );
}

#[test]
fn the_queue_lock_stays_exclusive_across_the_wrap_under_server_faults() {
    clean_across_the_wrap(
        "zk_queue_lock_faults",
        6,
        "the_queue_lock_stays_exclusive_across_the_wrap_under_server_faults",
    );
}

#[test]
fn sequential_names_follow_the_counter_round_the_wrap_under_faults() {
    clean_across_the_wrap(
        "zk_sequential_names_under_faults",
        6,
        "sequential_names_follow_the_counter_round_the_wrap_under_faults",
    );
}
