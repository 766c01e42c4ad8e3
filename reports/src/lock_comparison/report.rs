//! The comparison's rows — one per (store, lock, client count), its figures over every seed
//! with their spread — as a table and as JSON.

use super::measure::{RunFigures, percentile, ratio};
use scenarios::{scenario::Store, workload::LockRecipe};
use serde::Serialize;
use sim::FaultCounts;
use std::fmt;
use tabled::{builder::Builder, settings::Style};

/// A figure over a row's runs: all seeds' runs together (a percentile over every sample, or
/// a ratio of totals), and the least and greatest of the per-seed values. `None`: no run
/// had anything to measure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Figure {
    /// Over every seed's samples together.
    pub all_seeds: Option<f64>,
    /// The least per-seed value.
    pub seed_min: Option<f64>,
    /// The greatest per-seed value.
    pub seed_max: Option<f64>,
}

impl Figure {
    fn of(all_seeds: Option<f64>, per_seed: impl Iterator<Item = Option<f64>>) -> Self {
        let per_seed: Vec<f64> = per_seed.flatten().collect();
        Self {
            all_seeds,
            seed_min: per_seed.iter().copied().reduce(f64::min),
            seed_max: per_seed.iter().copied().reduce(f64::max),
        }
    }

    /// `12.3 (11.0–14.1)`: the value, then the spread over seeds when there is one.
    fn cell(&self) -> String {
        let Some(value) = self.all_seeds else {
            return "–".into();
        };
        match (self.seed_min, self.seed_max) {
            (Some(min), Some(max)) if min != max => {
                format!("{} ({}–{})", number(value), number(min), number(max))
            }
            _ => number(value),
        }
    }
}

/// Three significant digits or so, no more decimals than that.
fn number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// One (store, lock, client count): its figures over the clean runs of every seed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The store.
    pub store: Store,
    /// The lock: a catalogue recipe, or user code by the name it was compared under.
    pub lock: LockName,
    /// The scenario the runs started from (a catalogue scenario's name, or the user code's).
    pub scenario: String,
    /// Client nodes, one lock-taking process each.
    pub clients: usize,
    /// The liveness bound its runs had, simulated milliseconds: the scenario's, raised to
    /// what the lock workload needs with this many clients
    /// ([`with_clients`](super::with_clients)).
    pub liveness_bound_ms: u64,
    /// Runs measured (clean ones: a failed run is reported, not measured).
    pub runs: usize,
    /// Acquisitions in those runs.
    pub acquisitions: u64,
    /// Waits in those runs that gave up instead of acquiring (not in the latencies).
    pub waits_given_up: u64,
    /// Releases with someone waiting, whose hand-offs were measured.
    pub hand_offs: usize,
    /// Request → acquired, median, simulated milliseconds.
    pub acquire_latency_p50_ms: Figure,
    /// Request → acquired, 99th percentile, simulated milliseconds.
    pub acquire_latency_p99_ms: Figure,
    /// Release → next acquisition, median, simulated milliseconds.
    pub handoff_latency_p50_ms: Figure,
    /// Release → next acquisition, 99th percentile, simulated milliseconds.
    pub handoff_latency_p99_ms: Figure,
    /// Watch notifications reaching waiters per release that woke any.
    pub notifications_per_release: Figure,
    /// Messages on the wire (servers' included) per acquisition.
    pub messages_per_acquisition: Figure,
    /// Acquisitions per simulated second of the workload phase.
    pub acquisitions_per_s: Figure,
    /// The faults that fired in those runs, added up.
    pub fault_counts: FaultCounts,
}

impl Row {
    /// The row of `lock` on `store` with `clients` clients and its runs' liveness bound,
    /// from its clean runs (in seed order) and the faults each fired.
    pub(super) fn of(
        (store, lock, scenario): (Store, &LockName, &str),
        clients: usize,
        liveness_bound_ms: u64,
        runs: &[(RunFigures, FaultCounts)],
    ) -> Self {
        let figures = || runs.iter().map(|(figures, _)| figures);
        let pooled = |samples: fn(&RunFigures) -> &Vec<f64>| -> Vec<f64> {
            figures()
                .flat_map(|run| samples(run).iter().copied())
                .collect()
        };
        let per_seed_percentile = |samples: fn(&RunFigures) -> &Vec<f64>, percent| {
            Figure::of(
                percentile(&pooled(samples), percent),
                figures().map(move |run| percentile(samples(run), percent)),
            )
        };
        let total = |count: fn(&RunFigures) -> u64| figures().map(count).sum::<u64>();
        let mut fault_counts = FaultCounts::default();
        for (_, counts) in runs {
            fault_counts.accumulate(counts);
        }
        let workload_ms: f64 = figures().map(|run| run.workload_ms).sum();
        Row {
            store,
            lock: lock.clone(),
            scenario: scenario.to_string(),
            clients,
            liveness_bound_ms,
            runs: runs.len(),
            acquisitions: total(|run| run.acquisitions),
            waits_given_up: total(|run| run.waits_given_up),
            hand_offs: figures().map(|run| run.handoff_latencies_ms.len()).sum(),
            acquire_latency_p50_ms: per_seed_percentile(|run| &run.acquire_latencies_ms, 50),
            acquire_latency_p99_ms: per_seed_percentile(|run| &run.acquire_latencies_ms, 99),
            handoff_latency_p50_ms: per_seed_percentile(|run| &run.handoff_latencies_ms, 50),
            handoff_latency_p99_ms: per_seed_percentile(|run| &run.handoff_latencies_ms, 99),
            notifications_per_release: Figure::of(
                ratio(
                    total(|run| run.notifications),
                    total(|run| run.releases_that_woke),
                ),
                figures().map(RunFigures::notifications_per_release),
            ),
            messages_per_acquisition: Figure::of(
                ratio(
                    total(|run| run.messages_sent),
                    total(|run| run.acquisitions),
                ),
                figures().map(RunFigures::messages_per_acquisition),
            ),
            acquisitions_per_s: Figure::of(
                (workload_ms > 0.0)
                    .then(|| total(|run| run.workload_acquisitions) as f64 * 1_000.0 / workload_ms),
                figures().map(RunFigures::acquisitions_per_s),
            ),
            fault_counts,
        }
    }

    /// The lock's name in a table or a legend: `zab herd lock`.
    pub fn label(&self) -> String {
        self.lock.label(self.store)
    }
}

/// Which lock a row measures. It serializes as the recipe's name (`zk_herd_lock`) or the
/// user lock's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum LockName {
    /// One of coordsim's own lock recipes.
    Recipe(LockRecipe),
    /// User code, by the name it was compared under.
    User(String),
}

impl LockName {
    /// `zab herd lock`, `zab queue lock`, `raft etcd mutex`, `zab my lock`.
    pub fn label(&self, store: Store) -> String {
        format!("{store} {self}")
    }
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LockName::Recipe(LockRecipe::ZkHerdLock) => "herd lock",
            LockName::Recipe(LockRecipe::ZkQueueLock) => "queue lock",
            LockName::Recipe(LockRecipe::EtcdMutex) => "etcd mutex",
            LockName::Recipe(LockRecipe::ZkRwLock) => "read/write lock",
            LockName::User(name) => name,
        })
    }
}

/// The rows as a Markdown table.
pub(super) fn table(rows: &[Row]) -> String {
    let mut builder = Builder::default();
    builder.push_record([
        "store",
        "lock",
        "clients",
        "acquire p50 ms",
        "acquire p99 ms",
        "hand-off p50 ms",
        "hand-off p99 ms",
        "notifications / release",
        "messages / acquisition",
        "acquisitions / s",
    ]);
    for row in rows {
        builder.push_record([
            row.store.to_string(),
            row.lock.to_string(),
            row.clients.to_string(),
            row.acquire_latency_p50_ms.cell(),
            row.acquire_latency_p99_ms.cell(),
            row.handoff_latency_p50_ms.cell(),
            row.handoff_latency_p99_ms.cell(),
            row.notifications_per_release.cell(),
            row.messages_per_acquisition.cell(),
            row.acquisitions_per_s.cell(),
        ]);
    }
    builder.build().with(Style::markdown()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_shows_the_spread_only_when_seeds_differ() {
        let spread = Figure::of(Some(12.34), [Some(11.0), None, Some(140.0)].into_iter());
        assert_eq!(spread.cell(), "12.3 (11.0–140)");
        assert_eq!(
            Figure::of(Some(3.0), [Some(3.0)].into_iter()).cell(),
            "3.00"
        );
        assert_eq!(Figure::of(None, [None].into_iter()).cell(), "–");
    }
}
