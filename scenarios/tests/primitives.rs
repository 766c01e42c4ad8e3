//! The other ZooKeeper recipes through the one driver: the FIFO queue, the counter, the
//! double barrier, the configuration behind `ready`, and rendezvous (the read/write lock has
//! its own suite, `rw_locks`). Expected outcomes, stated: without faults and under server faults, each recipe's
//! check runs clean, the runs made progress (counted from their histories), and every
//! fault kind of the swarm fired.

use scenarios::{
    Outcome, Scenario, catalogue,
    sweep::{Sweep, SweepSummary},
};
use sim::{
    NodeId,
    fault::FaultKind,
    history::{
        Event, History, RecipeEvent,
        recipe::{BarrierStep, ConfigStep, CounterStep, QueueStep, RendezvousStep},
    },
};

use std::collections::BTreeSet;

const TARGET: &str = "primitives";

const SERVER_FAULTS: [FaultKind; 5] = [
    FaultKind::Partition,
    FaultKind::Loss,
    FaultKind::Latency,
    FaultKind::Crash,
    FaultKind::Pause,
];

fn get(name: &str) -> Scenario {
    catalogue::get(name).unwrap_or_else(|| panic!("no catalogue scenario `{name}`"))
}

/// Sweeps `name` over `seeds`, counting with `count` in each run's history; the summary and
/// the fewest counted in any run.
fn sweep(
    name: &str,
    test: &str,
    seeds: u64,
    count: impl Fn(&History) -> usize,
) -> (SweepSummary, usize) {
    let mut fewest = usize::MAX;
    let summary = Sweep::new(get(name), "scenarios", TARGET, test, seeds).run_inspecting(
        |outcome: &Outcome| {
            let history = outcome
                .history
                .as_ref()
                .expect("the driver keeps the history");
            fewest = fewest.min(count(history));
        },
    );
    (summary, fewest)
}

/// Clean, every run counted at least `least`, and (with faults) every kind fired.
fn assert_clean_and_busy(
    name: &str,
    test: &str,
    seeds: u64,
    least: usize,
    count: impl Fn(&History) -> usize,
) {
    let (summary, fewest) = sweep(name, test, seeds, count);
    summary.assert_clean();
    if name.ends_with("_faults") {
        summary.assert_fired(&SERVER_FAULTS);
    }
    assert!(
        fewest >= least,
        "{name}: a run made too little progress: {fewest} < {least}"
    );
}

fn queue_takes(history: &History) -> usize {
    history
        .records()
        .iter()
        .filter(|record| {
            matches!(
                &record.event,
                Event::Recipe(RecipeEvent::Queue {
                    step: QueueStep::Consumed { .. },
                    ..
                })
            )
        })
        .count()
}

#[test]
fn the_fifo_queue_delivers_every_item_once_in_order() {
    assert_clean_and_busy(
        "zk_fifo_queue",
        "the_fifo_queue_delivers_every_item_once_in_order",
        3,
        50,
        queue_takes,
    );
}

#[test]
fn the_fifo_queue_delivers_every_item_once_under_server_faults() {
    assert_clean_and_busy(
        "zk_fifo_queue_faults",
        "the_fifo_queue_delivers_every_item_once_under_server_faults",
        6,
        20,
        queue_takes,
    );
}

/// Acknowledged increments, if the run read the counter at the end (else 0: the check's
/// lower bound would have judged nothing).
fn increments(history: &History) -> usize {
    let steps = || {
        history
            .records()
            .iter()
            .filter_map(|record| match &record.event {
                Event::Recipe(RecipeEvent::Counter { step, .. }) => Some(step),
                _ => None,
            })
    };
    if !matches!(steps().next_back(), Some(CounterStep::Read { .. })) {
        return 0;
    }
    steps()
        .filter(|step| matches!(step, CounterStep::Incremented { .. }))
        .count()
}

#[test]
fn the_counter_counts_every_acknowledged_increment_once() {
    assert_clean_and_busy(
        "zk_counter",
        "the_counter_counts_every_acknowledged_increment_once",
        3,
        50,
        increments,
    );
}

#[test]
fn the_counter_counts_every_acknowledged_increment_once_under_server_faults() {
    assert_clean_and_busy(
        "zk_counter_faults",
        "the_counter_counts_every_acknowledged_increment_once_under_server_faults",
        6,
        20,
        increments,
    );
}

fn passes(history: &History) -> usize {
    history
        .records()
        .iter()
        .filter(|record| {
            matches!(
                &record.event,
                Event::Recipe(RecipeEvent::Barrier {
                    step: BarrierStep::Left,
                    ..
                })
            )
        })
        .count()
}

#[test]
fn the_double_barrier_lets_everyone_through_together() {
    // Twelve rounds of five clients, every one out of every round.
    assert_clean_and_busy(
        "zk_double_barrier",
        "the_double_barrier_lets_everyone_through_together",
        3,
        60,
        passes,
    );
}

#[test]
fn the_double_barrier_lets_everyone_through_together_under_server_faults() {
    assert_clean_and_busy(
        "zk_double_barrier_faults",
        "the_double_barrier_lets_everyone_through_together_under_server_faults",
        6,
        60,
        passes,
    );
}

fn config_reads(history: &History) -> usize {
    history
        .records()
        .iter()
        .filter(|record| {
            matches!(
                &record.event,
                Event::Recipe(RecipeEvent::Config {
                    step: ConfigStep::Read { .. },
                    ..
                })
            )
        })
        .count()
}

#[test]
fn configuration_reads_behind_ready_see_one_version() {
    assert_clean_and_busy(
        "zk_ready_config",
        "configuration_reads_behind_ready_see_one_version",
        3,
        50,
        config_reads,
    );
}

#[test]
fn configuration_reads_behind_ready_see_one_version_under_server_faults() {
    assert_clean_and_busy(
        "zk_ready_config_faults",
        "configuration_reads_behind_ready_see_one_version_under_server_faults",
        6,
        // Outages stall the readers, and every publish restarts the reads under way.
        10,
        config_reads,
    );
}

/// What one rendezvous run showed, from its history.
#[derive(Debug, Default)]
struct RendezvousRun {
    /// Workers that learned the address (distinct client processes).
    learned: BTreeSet<(NodeId, u32)>,
    /// Workers that started waiting before the master began to publish: they learned by the
    /// watch's notification.
    waited_for_the_master: BTreeSet<(NodeId, u32)>,
    /// Workers that started after the master's write was acknowledged: the data was there.
    found_it_there: BTreeSet<(NodeId, u32)>,
    /// Masters and workers that noticed the end.
    noticed_end: BTreeSet<(NodeId, u32)>,
}

fn rendezvous_run(history: &History) -> RendezvousRun {
    let mut run = RendezvousRun::default();
    let (mut publishing, mut published) = (None, None);
    for record in history.records() {
        let (Event::Recipe(RecipeEvent::Rendezvous { process, step, .. }), Some(node)) =
            (&record.event, record.node)
        else {
            continue;
        };
        let who = (node, *process);
        match step {
            RendezvousStep::Publishing { .. } => {
                publishing.get_or_insert(record.at);
            }
            RendezvousStep::Published { .. } => {
                published.get_or_insert(record.at);
            }
            RendezvousStep::Awaiting if publishing.is_none() => {
                run.waited_for_the_master.insert(who);
            }
            RendezvousStep::Awaiting if published.is_some() => {
                run.found_it_there.insert(who);
            }
            RendezvousStep::Learned { .. } => {
                run.learned.insert(who);
            }
            RendezvousStep::NoticedEnd => {
                run.noticed_end.insert(who);
            }
            _ => {}
        }
    }
    run
}

/// Clean over `seeds` runs, in each every worker (`clients - 2`) learned the address and
/// every worker and the master noticed the end; over the sweep, workers both waited for the
/// master and found the address already there. The counts of workers of each kind.
fn assert_rendezvous(name: &str, test: &str, seeds: u64) -> (usize, usize) {
    let scenario = get(name);
    let workers = scenario.clients - 2;
    let (mut waited, mut found) = (0, 0);
    let summary = Sweep::new(scenario, "scenarios", TARGET, test, seeds).run_inspecting(
        |outcome: &Outcome| {
            let history = outcome
                .history
                .as_ref()
                .expect("the driver keeps the history");
            let run = rendezvous_run(history);
            assert_eq!(run.learned.len(), workers, "seed {}: {run:?}", outcome.seed);
            assert_eq!(
                run.noticed_end.len(),
                workers + 1,
                "seed {}: {run:?}",
                outcome.seed
            );
            waited += run.waited_for_the_master.intersection(&run.learned).count();
            found += run.found_it_there.intersection(&run.learned).count();
        },
    );
    summary.assert_clean();
    if name.ends_with("_faults") {
        summary.assert_fired(&SERVER_FAULTS);
    }
    println!("{name}: {waited} workers waited for the master, {found} found the address there");
    assert!(waited >= 1 && found >= 1, "waited {waited}, found {found}");
    (waited, found)
}

#[test]
fn rendezvous_workers_learn_the_masters_address_whenever_they_start() {
    assert_rendezvous(
        "zk_rendezvous",
        "rendezvous_workers_learn_the_masters_address_whenever_they_start",
        5,
    );
}

#[test]
fn rendezvous_workers_learn_the_masters_address_under_server_faults() {
    assert_rendezvous(
        "zk_rendezvous_faults",
        "rendezvous_workers_learn_the_masters_address_under_server_faults",
        10,
    );
}
