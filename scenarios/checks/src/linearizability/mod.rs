//! Linearizability checking: a Wing–Gong–Lowe search over a sequential specification,
//! partitioned per key and memoized, as Porcupine does.
//!
//! ```
//! use checks::linearizability::{check, CheckOptions, Verdict, register};
//! // Two writes of a register, and a read that returned the older value after the newer
//! // write had completed: not linearizable.
//! let text = "\
//! INFO  jepsen.util - 0\t:invoke\t:write\t1
//! INFO  jepsen.util - 0\t:ok\t:write\t1
//! INFO  jepsen.util - 0\t:invoke\t:write\t2
//! INFO  jepsen.util - 0\t:ok\t:write\t2
//! INFO  jepsen.util - 1\t:invoke\t:read\tnil
//! INFO  jepsen.util - 1\t:ok\t:read\t1
//! ";
//! let (model, history) = checks::linearizability::jepsen::read_etcd_log(text).unwrap();
//! let report = check(&model, &history, &CheckOptions::default());
//! assert!(matches!(report.verdict, Verdict::Violation(_)));
//! ```
//!
//! A [`Model`] is a sequential specification; [`check`] splits the history with the
//! model's [`Model::partition`] (P-compositionality: Herlihy & Wing 1990, §3.3) and searches
//! each part. The verdict is [`Verdict::Ok`], a [`Verdict::Violation`] with the evidence (the
//! smallest failing partition, the longest prefix that could be linearized, the operation
//! that could not be placed after it), or [`Verdict::Unknown`] when the step or time budget
//! ran out: the checker never hangs.
//!
//! Models: [`register`] (read / write / compare-and-set, per key; Jepsen's etcd tests),
//! [`kv`] (etcd's key-value API with revisions and transactions), [`zk`] (ZooKeeper's znode
//! operations: writes, and reads made after a `sync`). Readers: coordsim histories (in each
//! model's module) and Jepsen etcd logs in the format of Porcupine's test data
//! ([`jepsen`]). [`html`] draws the evidence.

pub mod html;
pub mod jepsen;
pub mod kv;
mod model;
pub mod register;
pub mod resolve;
mod search;
pub mod zk;

pub use model::{Model, Operation, OperationHistory, Outcome, Skipped, TimeUnit};

use search::{Limits, PartitionResult};
use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

/// How much work a check may do, and on how many threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    /// Search steps allowed per partition before its verdict is `Unknown` (deterministic).
    pub max_steps_per_partition: u64,
    /// Wall-clock limit for the whole check (not deterministic: for interactive use).
    pub time_limit: Option<Duration>,
    /// Threads checking partitions in parallel (1: on the calling thread).
    pub jobs: usize,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            max_steps_per_partition: 10_000_000,
            time_limit: None,
            jobs: 1,
        }
    }
}

impl CheckOptions {
    /// With this step budget per partition.
    pub fn with_max_steps_per_partition(mut self, steps: u64) -> Self {
        self.max_steps_per_partition = steps;
        self
    }

    /// With this wall-clock limit.
    pub fn with_time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    /// On this many threads (at least one).
    pub fn with_jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs.max(1);
        self
    }
}

/// The result of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Ok, violation or unknown.
    pub verdict: Verdict,
    /// Operations checked.
    pub operations: usize,
    /// Partitions the history was split into.
    pub partitions: usize,
    /// Partitions searched (after a violation, larger partitions are not).
    pub partitions_searched: usize,
    /// Search steps over the partitions searched.
    pub steps: u64,
    /// Operations of the source history left out, by reason.
    pub skipped: BTreeMap<&'static str, usize>,
    /// How its operations of unknown outcome were resolved from what the replicas applied
    /// (`None`: they were not, as in an imported history).
    pub resolved: Option<resolve::Resolved>,
}

/// Whether the history is linearizable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every partition has a linearization.
    Ok,
    /// Some partition has none; the evidence is from the smallest such partition.
    Violation(Box<Evidence>),
    /// No violation was found, but some partition ran out of budget.
    Unknown(Unfinished),
}

/// A partition whose search ran out of budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unfinished {
    /// Its label (e.g. the key).
    pub partition: String,
    /// Its size.
    pub operations: usize,
    /// Steps taken.
    pub steps: u64,
    /// Which budget ran out.
    pub budget: Budget,
}

/// A check's budgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// [`CheckOptions::max_steps_per_partition`].
    Steps,
    /// [`CheckOptions::time_limit`].
    Time,
}

/// Why a history is not linearizable, from the smallest partition that is not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evidence {
    /// The partition's label (e.g. the key).
    pub partition: String,
    /// The partition's operations, in invocation order.
    pub operations: Vec<EvidenceOperation>,
    /// The longest prefix the search could linearize, in linearization order (indexes into
    /// `operations`).
    pub longest_prefix: Vec<usize>,
    /// The state after that prefix.
    pub state_after_prefix: String,
    /// The operation that could not be placed after that prefix: it returned before any
    /// remaining operation order was accepted (an index into `operations`).
    pub unplaceable: Option<usize>,
    /// What the operations' times count.
    pub time_unit: TimeUnit,
}

/// One operation of the evidence, described.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvidenceOperation {
    /// Its id in the source history.
    pub id: u64,
    /// Its client lane.
    pub lane: String,
    /// When it was invoked.
    pub invoked_at: u64,
    /// When it returned (`None`: outcome unknown; for a write resolved as taken effect,
    /// when a replica first applied it).
    pub returned_at: Option<u64>,
    /// What it did, e.g. `write(2) -> ok`.
    pub description: String,
}

/// Why a read whose outcome is unknown is left out of the search (it constrains nothing:
/// it may have read anything, or never have happened).
pub const UNKNOWN_READ: &str = "read with an unknown outcome (constrains nothing)";

/// Checks `history` against `model`.
pub fn check<M: Model>(
    model: &M,
    history: &OperationHistory<M::Input, M::Output>,
    options: &CheckOptions,
) -> Report {
    let operations = &history.operations;
    let mut partitions = model.partition(operations);
    // Unknown-outcome reads constrain nothing: leave them out (see `Model::is_read_only`),
    // and count them with the other operations left out.
    let mut unknown_reads = BTreeSet::new();
    for partition in &mut partitions {
        partition.retain(|&index| {
            let operation = &operations[index];
            let kept = operation.output().is_some() || !model.is_read_only(&operation.input);
            if !kept {
                unknown_reads.insert(operation.id);
            }
            kept
        });
    }
    partitions.retain(|partition| !partition.is_empty());
    // Smallest first (ties by position): the first violation found is the smallest one, and
    // the order — so the verdict and its evidence — does not depend on the thread count.
    let mut order: Vec<usize> = (0..partitions.len()).collect();
    order.sort_by_key(|&index| (partitions[index].len(), index));
    let limits = Limits {
        max_steps: options.max_steps_per_partition,
        deadline: options.time_limit.map(|limit| Instant::now() + limit),
    };

    let results: Mutex<Vec<Option<(PartitionResult, u64)>>> =
        Mutex::new(vec![None; partitions.len()]);
    // Position in `order` of the first violation found so far (usize::MAX: none).
    let first_violation = AtomicUsize::new(usize::MAX);
    let next_position = AtomicUsize::new(0);
    let worker = || {
        loop {
            let position = next_position.fetch_add(1, Ordering::Relaxed);
            if position >= order.len() || position > first_violation.load(Ordering::Relaxed) {
                return;
            }
            let index = order[position];
            let (result, steps) = search::search(model, operations, &partitions[index], limits);
            if matches!(result, PartitionResult::Violation(_)) {
                first_violation.fetch_min(position, Ordering::Relaxed);
            }
            results.lock().expect("no worker panics holding the lock")[index] =
                Some((result, steps));
        }
    };
    if options.jobs <= 1 || partitions.len() <= 1 {
        worker();
    } else {
        std::thread::scope(|scope| {
            for _ in 0..options.jobs.min(partitions.len()) {
                scope.spawn(worker);
            }
        });
    }

    let results = results.into_inner().expect("no worker panicked");
    let cutoff = first_violation.load(Ordering::Relaxed);
    let mut verdict = Verdict::Ok;
    let mut steps = 0;
    let mut searched = 0;
    for (position, &index) in order.iter().enumerate() {
        if position > cutoff {
            break;
        }
        let Some((result, partition_steps)) = &results[index] else {
            continue;
        };
        searched += 1;
        steps += partition_steps;
        let partition = &partitions[index];
        match result {
            PartitionResult::Linearizable => {}
            PartitionResult::Violation(deepest) => {
                verdict =
                    Verdict::Violation(Box::new(evidence(model, history, partition, deepest)));
            }
            PartitionResult::BudgetExhausted(budget) => {
                if verdict == Verdict::Ok {
                    verdict = Verdict::Unknown(Unfinished {
                        partition: model.describe_partition(operations, partition),
                        operations: partition.len(),
                        steps: *partition_steps,
                        budget: *budget,
                    });
                }
            }
        }
    }
    Report {
        verdict,
        operations: operations.len(),
        partitions: partitions.len(),
        partitions_searched: searched,
        steps,
        skipped: {
            let mut skipped = history.skipped_by_reason();
            if !unknown_reads.is_empty() {
                skipped.insert(UNKNOWN_READ, unknown_reads.len());
            }
            skipped
        },
        resolved: history.resolved,
    }
}

fn evidence<M: Model>(
    model: &M,
    history: &OperationHistory<M::Input, M::Output>,
    partition: &[usize],
    deepest: &search::Deepest,
) -> Evidence {
    let operations = &history.operations;
    // Invocation order for display; map partition-local indexes to display indexes.
    let mut display: Vec<usize> = (0..partition.len()).collect();
    display.sort_by_key(|&local| (operations[partition[local]].invoked_at, local));
    let mut position_of = vec![0; partition.len()];
    for (position, &local) in display.iter().enumerate() {
        position_of[local] = position;
    }
    let mut state = model.init();
    for &local in &deepest.prefix {
        let op = &operations[partition[local]];
        state = model
            .step(&state, &op.input, op.output())
            .expect("the search accepted this prefix");
    }
    Evidence {
        partition: model.describe_partition(operations, partition),
        operations: display
            .iter()
            .map(|&local| {
                let op = &operations[partition[local]];
                EvidenceOperation {
                    id: op.id,
                    lane: history
                        .lanes
                        .get(op.lane as usize)
                        .cloned()
                        .unwrap_or_else(|| format!("lane {}", op.lane)),
                    invoked_at: op.invoked_at,
                    returned_at: (!matches!(op.outcome, Outcome::Unknown))
                        .then(|| op.returned_at()),
                    description: model.describe_operation(&op.input, op.output()),
                }
            })
            .collect(),
        longest_prefix: deepest
            .prefix
            .iter()
            .map(|&local| position_of[local])
            .collect(),
        state_after_prefix: model.describe_state(&state),
        unplaceable: deepest.blocked.map(|local| position_of[local]),
        time_unit: history.time_unit,
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.verdict {
            Verdict::Ok => writeln!(f, "linearizable")?,
            Verdict::Violation(_) => writeln!(f, "NOT linearizable")?,
            Verdict::Unknown(unfinished) => writeln!(
                f,
                "unknown: the {} budget ran out after {} steps on partition {} ({} operations)",
                match unfinished.budget {
                    Budget::Steps => "step",
                    Budget::Time => "time",
                },
                unfinished.steps,
                unfinished.partition,
                unfinished.operations
            )?,
        }
        writeln!(
            f,
            "{} operations in {} partitions; {} partitions searched in {} steps",
            self.operations, self.partitions, self.partitions_searched, self.steps
        )?;
        if let Some(resolved) = &self.resolved {
            writeln!(f, "{resolved}")?;
        }
        for (reason, count) in &self.skipped {
            writeln!(f, "not checked: {count} operations ({reason})")?;
        }
        if let Verdict::Violation(evidence) = &self.verdict {
            write!(f, "{evidence}")?;
        }
        Ok(())
    }
}

/// How many operations at the end of the longest prefix the text evidence shows.
const PREFIX_SHOWN: usize = 12;

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "smallest failing partition: {} ({} operations)",
            self.partition,
            self.operations.len()
        )?;
        writeln!(
            f,
            "longest linearizable prefix ({} of {} operations):",
            self.longest_prefix.len(),
            self.operations.len()
        )?;
        // The end of the prefix is what leads to the failure; the HTML shows all of it.
        let shown_from = self.longest_prefix.len().saturating_sub(PREFIX_SHOWN);
        if shown_from > 0 {
            writeln!(f, "  … {shown_from} earlier operations …")?;
        }
        for (step, &index) in self.longest_prefix.iter().enumerate().skip(shown_from) {
            writeln!(f, "  {:>3}. {}", step + 1, self.describe(index))?;
        }
        writeln!(f, "state after the prefix: {}", self.state_after_prefix)?;
        if let Some(index) = self.unplaceable {
            writeln!(
                f,
                "cannot be placed next: {} — it returned before any remaining order was \
                 accepted",
                self.describe(index)
            )?;
        }
        Ok(())
    }
}

impl Evidence {
    /// Operation `index`, with its times, lane and id, for people.
    pub fn describe(&self, index: usize) -> String {
        let operation = &self.operations[index];
        let returned = match operation.returned_at {
            Some(at) => self.time_unit.format(at),
            None => "unknown".to_string(),
        };
        format!(
            "[{} .. {}] {} op {}: {}",
            self.time_unit.format(operation.invoked_at),
            returned,
            operation.lane,
            operation.id,
            operation.description
        )
    }
}
