//! Sequential specifications and the histories checked against them.

use std::{fmt::Debug, hash::Hash};

/// A sequential specification: what one copy of the object does with one operation at a
/// time. The checker searches for an order of a concurrent history's operations, consistent
/// with real time, that this specification accepts (Herlihy & Wing, "Linearizability",
/// TOPLAS 1990).
pub trait Model: Sync {
    /// The object's state. Hashed and compared to memoize the search (Lowe's optimisation),
    /// so it should be small: intern strings before checking.
    type State: Clone + Eq + Hash + Debug + Send;
    /// What a client asked.
    type Input: Debug + Sync;
    /// What the client was told.
    type Output: Debug + Sync;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// Applies `input` to `state`. `output` is what the client saw, or `None` when the
    /// outcome is unknown (timed out, connection lost): then the operation may have taken
    /// effect with whatever result it would have had. Returns the next state, or `None` if
    /// the operation could not have produced `output` in `state`.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State>;

    /// Whether `input` never changes the state. An operation that is read-only *and* whose
    /// outcome is unknown constrains nothing (it accepts any output and changes nothing), so
    /// the checker leaves it out: each such operation would otherwise double the orders to
    /// search. The default, `false`, is always safe.
    fn is_read_only(&self, input: &Self::Input) -> bool {
        let _ = input;
        false
    }

    /// Whether `input` with `output` is an *observation*: wherever [`Model::step`] accepts
    /// it, the state it returns is the same, at most with some of what the state left
    /// unknown bound, and the state records everything its acceptance learns (so
    /// `step(s) == Some(s)` means it is accepted in every state `s` stands for, and a state
    /// with less bound accepts at least what a more bound one does). The search then never tries such an operation later than the first
    /// point where it is accepted without changing the state: if no linearization follows
    /// from there, none follows from leaving it for later (it could be moved to the front
    /// of any that did). Without this, each no-op observation pending while the search
    /// backtracks doubles the orders it tries. The default, `false`, is always safe.
    fn is_observation(&self, input: &Self::Input, output: Option<&Self::Output>) -> bool {
        let _ = (input, output);
        false
    }

    /// Splits a history into independent sub-histories (P-compositionality: a history is
    /// linearizable iff every sub-history is, when operations on different parts never
    /// interact). Each inner list holds indexes into `history`. The default: no split.
    fn partition(&self, history: &[Operation<Self::Input, Self::Output>]) -> Vec<Vec<usize>> {
        vec![(0..history.len()).collect()]
    }

    /// A label for a partition (e.g. its key), for reports.
    fn describe_partition(
        &self,
        history: &[Operation<Self::Input, Self::Output>],
        partition: &[usize],
    ) -> String {
        let _ = history;
        format!("{} operations", partition.len())
    }

    /// One operation, for reports, e.g. `put(x, 1) -> ok`.
    fn describe_operation(&self, input: &Self::Input, output: Option<&Self::Output>) -> String {
        match output {
            Some(output) => format!("{input:?} -> {output:?}"),
            None => format!("{input:?} -> unknown"),
        }
    }

    /// A state, for reports.
    fn describe_state(&self, state: &Self::State) -> String {
        format!("{state:?}")
    }
}

/// Splits `history` by the key `key_of` reads from each input, in key order: the
/// [`Model::partition`] of every model whose keys never interact.
pub(crate) fn partition_by_key<I, O>(
    history: &[Operation<I, O>],
    key_of: impl Fn(&I) -> u32,
) -> Vec<Vec<usize>> {
    let mut by_key: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (index, operation) in history.iter().enumerate() {
        by_key
            .entry(key_of(&operation.input))
            .or_default()
            .push(index);
    }
    by_key.into_values().collect()
}

/// One operation of a concurrent history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation<I, O> {
    /// The operation's id in the source history (a coordsim `OpId`, a Jepsen line number).
    pub id: u64,
    /// The client lane it ran on (an index into [`OperationHistory::lanes`]).
    pub lane: u32,
    /// What was asked.
    pub input: I,
    /// When it was invoked (any monotonic unit; coordsim uses simulated nanoseconds).
    pub invoked_at: u64,
    /// How it ended.
    pub outcome: Outcome<O>,
}

/// How an operation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<O> {
    /// The client was told `output` at `at`.
    Returned {
        /// When.
        at: u64,
        /// What.
        output: O,
    },
    /// The client never learned the outcome: the operation may take effect at any time
    /// after its invocation, or never (its return time is open-ended).
    Unknown,
    /// The client never learned the outcome, but the history shows that the operation's
    /// request took effect by `by` (a replica applied it then: see
    /// [`super::resolve`]). It is linearized between its invocation and `by`, with
    /// whatever result it would have had (the result is still unknown).
    TookEffect {
        /// When a replica first applied it.
        by: u64,
    },
}

impl<I, O> Operation<I, O> {
    /// The output, if known.
    pub fn output(&self) -> Option<&O> {
        match &self.outcome {
            Outcome::Returned { output, .. } => Some(output),
            Outcome::Unknown | Outcome::TookEffect { .. } => None,
        }
    }

    /// The return time (for an operation that took effect, when it took effect at the
    /// latest); `u64::MAX` when the outcome is unknown.
    pub fn returned_at(&self) -> u64 {
        match &self.outcome {
            Outcome::Returned { at, .. } => *at,
            Outcome::TookEffect { by } => *by,
            Outcome::Unknown => u64::MAX,
        }
    }
}

/// A history ready to check: operations plus the names of their client lanes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperationHistory<I, O> {
    /// The operations, in any order.
    pub operations: Vec<Operation<I, O>>,
    /// Lane names (`c1/0` for process 0 of client node c1, `process 3` for Jepsen).
    pub lanes: Vec<String>,
    /// Operations of the source history that were left out, with why (e.g. serializable
    /// reads, which are not meant to be linearizable). Reported, never silently dropped.
    pub skipped: Vec<Skipped>,
    /// What the times count, for reports.
    pub time_unit: TimeUnit,
    /// How the operations of unknown outcome were resolved from what the replicas applied
    /// ([`super::resolve`]); `None` when they were not (an imported history).
    pub resolved: Option<super::resolve::Resolved>,
}

/// What an [`Operation`]'s times count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeUnit {
    /// Plain ticks.
    #[default]
    Ticks,
    /// Simulated nanoseconds (coordsim histories).
    Nanoseconds,
    /// Line numbers of a log (Jepsen).
    LogLine,
}

impl TimeUnit {
    /// `time` in this unit, for people.
    pub fn format(self, time: u64) -> String {
        match self {
            TimeUnit::Ticks => time.to_string(),
            TimeUnit::Nanoseconds => sim::time::SimTime::from_nanos(time).to_string(),
            TimeUnit::LogLine => format!("line {time}"),
        }
    }
}

impl<I, O> Default for OperationHistory<I, O> {
    fn default() -> Self {
        Self {
            operations: Vec::new(),
            lanes: Vec::new(),
            skipped: Vec::new(),
            time_unit: TimeUnit::Ticks,
            resolved: None,
        }
    }
}

/// An operation the checker did not check, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Its id in the source history.
    pub id: u64,
    /// Why it was left out.
    pub reason: &'static str,
}

impl<I, O> OperationHistory<I, O> {
    /// The lane named `name`, added if new.
    pub fn lane(&mut self, name: &str) -> u32 {
        match self.lanes.iter().position(|lane| lane == name) {
            Some(index) => index as u32,
            None => {
                self.lanes.push(name.to_string());
                (self.lanes.len() - 1) as u32
            }
        }
    }

    /// How many operations were skipped for each reason, in reason order.
    pub fn skipped_by_reason(&self) -> std::collections::BTreeMap<&'static str, usize> {
        let mut counts = std::collections::BTreeMap::new();
        for skipped in &self.skipped {
            *counts.entry(skipped.reason).or_insert(0) += 1;
        }
        counts
    }
}
