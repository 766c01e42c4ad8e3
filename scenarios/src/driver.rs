//! The one run driver: (scenario, seed) → [`Outcome`], for every scenario.
//!
//! A run goes through the same phases whatever its store and workload:
//! 1. **fault phase**: the store starts, the workload's workers run, the fault plan fires;
//! 2. **heal**: at the end of the phase the world heals everything (partitions, clogs,
//!    network conditions, crashed and paused nodes, clock drift);
//! 3. **liveness phase**: after `recovery_ms` more under load, the workers stop, the final
//!    reads begin (recorded as
//!    `PhaseEvent::FinalReads`), and the workload's finishing step (final reads, audits)
//!    must complete within the scenario's liveness bound;
//! 4. **final audit**: every check of the scenario reads the history.
//!
//! The outcome is clean only if the run completed before its time limit, the liveness
//! phase finished in time, the run made progress (operations acknowledged, a leader
//! elected), and no check found a violation. A panic anywhere in the run is caught and
//! reported as a `Crash` with the seed; a sweep goes on.

use crate::{
    ReplayCommand,
    known_bug::KnownBug,
    outcome::{CheckTally, Failure, Metrics, Outcome, ViolationRecord},
    scenario::Scenario,
    store::Store,
    workload::{Pending, RunningStore},
};
use models::{
    etcd::{EtcdCluster, EtcdConfig},
    ledger::Ledger,
    recipes::RecipeBugs,
    zab::KnownBugs,
    zk::{ZkEnsemble, ZkEnsembleConfig},
};
use sim::{
    NodeId, RunEnd, Seed, Sim, World,
    history::{Event, PhaseEvent},
};
use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// How long the run goes on after the finishing step, so that notifications in flight
/// (watch events) arrive before the end (the watch checkers allow half of this).
const SETTLE: Duration = Duration::from_secs(2);

/// Runs `scenario` with `seed` and judges it. `scenario` must be valid
/// ([`Scenario::validate`]; the catalogue's and loaded files are). If a model panics, the
/// world's failure report names the scenario and [`replay_command`] replays it.
pub fn run(scenario: &Scenario, seed: Seed) -> Outcome {
    run_replayed_by(scenario, seed, &replay_command(scenario, seed).to_string())
}

/// The command that replays `scenario` with `seed`, as far as the scenario itself can
/// say: the catalogue scenario of its name with its known-bug variants on (a scenario from
/// a file or built in code is replayed by the command that ran it, which
/// [`run_replayed_by`] is given).
pub fn replay_command(scenario: &Scenario, seed: Seed) -> ReplayCommand {
    let mut command = ReplayCommand::run(&scenario.name);
    for bug in &scenario.bugs {
        command = command.option("--bug", bug);
    }
    command.seed(seed)
}

/// [`run`], with `replay` the command a model panic's failure report names (a test's
/// command, in a sweep).
pub fn run_replayed_by(scenario: &Scenario, seed: Seed, replay: &str) -> Outcome {
    run_judged_by(scenario, seed, replay, &scenario.check_set())
}

/// [`run_replayed_by`], judged by `checks` alone instead of the scenario's whole
/// [`Scenario::check_set`]. The run, its history and its digest are the same (checks only
/// read the history); only the verdict and what it costs differ: the shrinker asks whether
/// one check still fires, where the linearizability search of the full set can cost seconds
/// on a run of milliseconds.
pub fn run_judged_by(
    scenario: &Scenario,
    seed: Seed,
    replay: &str,
    checks: &[&'static checks::Check],
) -> Outcome {
    let world = World::new(seed, scenario.world_config())
        .unwrap_or_else(|error| panic!("scenario `{}` is invalid: {error}", scenario.name))
        .described_as(scenario.name.clone(), replay);
    let fault_plan = world.fault_plan().clone();
    let liveness: Arc<Mutex<Option<Result<(), String>>>> = Arc::new(Mutex::new(None));
    let run = {
        let (scenario, liveness) = (scenario.clone(), liveness.clone());
        std::panic::AssertUnwindSafe(move || {
            world.run(move |sim| async move {
                let verdict = phases(&sim, &scenario).await;
                *liveness.lock().expect("not poisoned") = Some(verdict);
            })
        })
    };
    let mut outcome = Outcome {
        scenario: scenario.name.clone(),
        scenario_digest: scenario.digest(),
        seed,
        history_digest: None,
        fault_plan,
        fault_counts: Default::default(),
        metrics: Metrics::default(),
        violations: Vec::new(),
        checks: Vec::new(),
        marks: Default::default(),
        skipped_checks: scenario.skip_checks.clone(),
        failure: None,
        history: None,
        scenario_as_run: Some(Box::new(scenario.clone())),
    };
    let world_outcome = match std::panic::catch_unwind(run) {
        Ok(world_outcome) => world_outcome,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(ToString::to_string))
                .unwrap_or_else(|| "a panic without a message".into());
            outcome.failure = Some(Failure::Crash { message });
            return outcome;
        }
    };
    let ended_at_ms = world_outcome.ended_at().as_millis();
    let history = world_outcome.history;
    outcome.history_digest = Some(history.digest());
    outcome.fault_counts = world_outcome.fault_counts;
    outcome.marks = world_outcome.marks;
    outcome.metrics = Metrics::of(&history, ended_at_ms);
    // The final audit: every check reads the history, even of a run that failed otherwise.
    let context = checks::CheckContext {
        index_kind: match scenario.store {
            Store::Zab => checks::IndexKind::Zxid,
            Store::Raft | Store::Ledger => checks::IndexKind::LogIndex,
        },
        sequence_counter_bits: scenario.sequence_width().bits(),
        lease_timing: {
            let servers: Vec<NodeId> = (0..scenario.servers).map(NodeId::server).collect();
            let config = etcd_config(&servers, scenario);
            checks::etcd::lease_expires_in_bound::LeaseTiming {
                promotion_extension: config.raft.election_timeout_max,
                checkpoint_interval: config.lease_checkpoint_interval,
            }
        },
        ..checks::CheckContext::default()
    };
    for (mark, count) in checks::coverage::reached(&history, context.index_kind) {
        *outcome.marks.entry(mark).or_default() += count;
    }
    let relied_on = scenario.relied_on();
    let views = checks::history::views::HistoryViews::new(&history);
    for check in checks {
        let verdict = (check.run)(&views, &context);
        outcome.checks.push(CheckTally {
            check: check.name.to_string(),
            judged: verdict.judged,
            judges: check.judges.to_string(),
            relied_on: relied_on.contains(&check.name),
            violations: verdict.violations.len() as u64,
            resolved: verdict.resolved,
        });
        for violation in verdict.violations {
            outcome.violations.push(ViolationRecord {
                check: check.name.to_string(),
                property: violation.property().to_string(),
                reference: violation.reference().to_string(),
                evidence: violation.to_string(),
                at_ms: violation.at().map(|at| at.as_millis()),
            });
        }
    }
    let liveness = liveness.lock().expect("not poisoned").take();
    outcome.failure = match (world_outcome.end, liveness) {
        (RunEnd::TimeLimit { at }, _) => Some(Failure::TimeLimit {
            at_ms: at.as_millis(),
        }),
        _ if !outcome.violations.is_empty() => Some(Failure::Safety),
        (_, Some(Err(pending))) => Some(Failure::Liveness { pending }),
        (_, None) => Some(Failure::Liveness {
            pending: "the run ended before its liveness phase did".into(),
        }),
        (RunEnd::Completed { .. }, Some(Ok(()))) => {
            no_progress(scenario, &outcome.metrics).map(|pending| Failure::Liveness { pending })
        }
    };
    outcome.history = Some(history);
    outcome
}

/// Progress every run must make, whatever its faults: a run that acknowledged nothing (or,
/// on a consensus store, never elected a leader) proves nothing, even if no check fired.
fn no_progress(scenario: &Scenario, metrics: &Metrics) -> Option<String> {
    if metrics.acknowledged == 0 {
        return Some("no operation was acknowledged in the whole run".into());
    }
    if scenario.store != Store::Ledger && metrics.leaders_elected == 0 {
        return Some("no leader was ever elected".into());
    }
    None
}

/// The phases of a run; the liveness verdict (`Err` names what is still pending).
async fn phases(sim: &Sim, scenario: &Scenario) -> Result<(), String> {
    let store = start_store(sim, scenario);
    let recipe_bugs: RecipeBugs = scenario
        .bugs
        .iter()
        .filter_map(|bug| match bug {
            KnownBug::Recipe(bug) => Some(*bug),
            _ => None,
        })
        .collect();
    let resource = scenario.workload.start_resource(sim, recipe_bugs);
    let stop = Arc::new(AtomicBool::new(false));
    let workers = scenario
        .workload
        .start(sim, &store, resource.as_ref(), recipe_bugs, &stop);
    sim.fault_phase_ended().await;
    sim.sleep(Duration::from_millis(scenario.recovery_ms)).await;
    stop.store(true, Ordering::Relaxed);
    let bound = Duration::from_millis(scenario.liveness_bound_ms);
    let pending = Pending::default();
    let liveness = async {
        pending.set("the workers to stop");
        for worker in workers {
            // A worker on a client that crashed is gone; its last operation stays open.
            let _ = worker.await;
        }
        sim.history().record(Event::Phase(PhaseEvent::FinalReads));
        scenario
            .workload
            .finish(sim, &store, resource.as_ref(), recipe_bugs, &pending)
            .await
    };
    let verdict = match sim::time::timeout(bound, liveness).await {
        Ok(verdict) => verdict,
        Err(_) => Err(format!(
            "the liveness bound of {} ms passed with work pending: {}",
            scenario.liveness_bound_ms,
            pending.get()
        )),
    };
    sim.sleep(SETTLE).await;
    verdict
}

/// The etcd store's configuration for `scenario`: the model's defaults, its known bugs and
/// the scenario's tuning.
fn etcd_config(servers: &[NodeId], scenario: &Scenario) -> EtcdConfig {
    let tuning = &scenario.tuning;
    let bugs = scenario.bugs.iter().filter_map(|bug| match bug {
        KnownBug::Raft(bug) => Some(models::etcd::KnownBug::Raft(*bug)),
        KnownBug::Etcd(bug) => Some(models::etcd::KnownBug::Etcd(*bug)),
        KnownBug::Zab(_) | KnownBug::Recipe(_) => None,
    });
    let mut config = EtcdConfig::new(servers).with_bugs(bugs);
    if let Some(entries) = tuning.max_entries_per_append {
        config.raft.max_entries_per_append = entries;
    }
    if let Some(threshold) = tuning.snapshot_threshold {
        config.raft.snapshot_threshold = Some(threshold);
    }
    if let Some((min, max)) = tuning.election_timeout_ms {
        config.raft.election_timeout_min = Duration::from_millis(min);
        config.raft.election_timeout_max = Duration::from_millis(max);
    }
    if let Some(interval) = tuning.lease_checkpoint_interval_ms {
        config.lease_checkpoint_interval = Duration::from_millis(interval);
    }
    if let Some(check) = tuning.campaign_check {
        config.campaign_check = check;
    }
    config
}

/// Starts the scenario's store and provides it to code that finds the world by itself
/// ([`Sim::service`]): the drop-in clients connect to it.
fn start_store(sim: &Sim, scenario: &Scenario) -> RunningStore {
    let tuning = &scenario.tuning;
    match scenario.store {
        Store::Raft => {
            let config = etcd_config(&sim.servers(), scenario);
            let cluster = EtcdCluster::start(sim, config);
            sim.provide(cluster.clone());
            RunningStore::Raft(cluster)
        }
        Store::Zab => {
            let mut config = ZkEnsembleConfig::new(sim.servers());
            config.observers = scenario.observers;
            config.bugs = scenario
                .bugs
                .iter()
                .filter_map(|bug| match bug {
                    KnownBug::Zab(bug) => Some(*bug),
                    _ => None,
                })
                .collect::<KnownBugs>();
            if let Some(window) = tuning.diff_window {
                config.diff_window = window;
            }
            if let Some(ticks) = tuning.sync_limit_ticks {
                config.sync_limit_ticks = ticks;
            }
            config.sequence_width = scenario.sequence_width();
            let ensemble = ZkEnsemble::new(sim, config).expect("a validated ensemble");
            ensemble.start(sim);
            sim.provide(ensemble.clone());
            RunningStore::Zab(ensemble)
        }
        Store::Ledger => RunningStore::Ledger(Ledger::start(sim)),
    }
}
