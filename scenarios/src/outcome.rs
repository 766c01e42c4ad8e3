//! `Outcome`: what one run of a scenario with a seed came to, as data.

use checks::linearizability::resolve::Resolved;
use serde::{Deserialize, Serialize};
use sim::{FaultCounts, Seed, digest::Digest, fault::FaultPlan, history::History};
use std::fmt;

/// How a run failed. A run that is not clean is exactly one of these.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Failure {
    /// A checker found a violation (listed in the outcome).
    Safety,
    /// The liveness bound passed with work pending, or the run made no progress.
    Liveness {
        /// What was still pending, e.g. "c3: final read of key/ (attempt 7)".
        pending: String,
    },
    /// A model (or the workload) panicked; the run was cut short.
    Crash {
        /// The panic message.
        message: String,
    },
    /// The run reached its time limit before the scenario finished: never clean.
    TimeLimit {
        /// Simulated time when it stopped, milliseconds.
        at_ms: u64,
    },
}

impl Failure {
    /// The kind's name: `safety`, `liveness`, `crash`, `time_limit`.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Safety => "safety",
            Failure::Liveness { .. } => "liveness",
            Failure::Crash { .. } => "crash",
            Failure::TimeLimit { .. } => "time_limit",
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Safety => write!(f, "safety: a checker found a violation"),
            Failure::Liveness { pending } => write!(f, "liveness: {pending}"),
            Failure::Crash { message } => write!(f, "crash: a model panicked: {message}"),
            Failure::TimeLimit { at_ms } => {
                write!(f, "time limit: the run was still going at {at_ms} ms")
            }
        }
    }
}

/// A checker's violation, as data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViolationRecord {
    /// The check that found it (`zk.sync_then_read`).
    pub check: String,
    /// The property (`sync then read sees prior acknowledged writes`).
    pub property: String,
    /// Where the property comes from.
    pub reference: String,
    /// The evidence.
    pub evidence: String,
    /// When the evidence shows the property broken, in milliseconds of simulated time since
    /// the run started ([`checks::Violation::at`], truncated); `None` when the check names
    /// no instant. Outcomes written before there was a time read as `None`.
    #[serde(default)]
    pub at_ms: Option<u64>,
}

impl fmt::Display for ViolationRecord {
    /// `violated <property> (<check>) at <ms> ms [<reference>]: <evidence>`, the time left
    /// out when the check names none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "violated {} ({})", self.property, self.check)?;
        if let Some(at_ms) = self.at_ms {
            write!(f, " at {at_ms} ms")?;
        }
        write!(f, " [{}]: {}", self.reference, self.evidence)
    }
}

/// What one check judged in a run: how many items, in its unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckTally {
    /// The check (`recipe.mutual_exclusion`).
    pub check: String,
    /// How many items it judged; 0 is vacuous.
    pub judged: u64,
    /// Its unit, plural (`holds`).
    pub judges: String,
    /// Whether the scenario relies on it ([`crate::Scenario::relied_on`]): a sweep fails if
    /// such a check judged nothing in every seed.
    pub relied_on: bool,
    /// How many violations it found.
    pub violations: u64,
    /// For `etcd.linearizable` and `zk.linearizable`: how the operations of unknown outcome
    /// (lost replies) were resolved from what the replicas applied, and how many stayed
    /// ambiguous and were searched both ways.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<Resolved>,
}

impl CheckTally {
    /// Whether the check judged nothing.
    pub fn is_vacuous(&self) -> bool {
        self.judged == 0
    }
}

impl fmt::Display for CheckTally {
    /// `recipe.mutual_exclusion: 212 holds`, `… 0 holds (vacuous)`, with the violations.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} {}", self.check, self.judged, self.judges)?;
        if self.is_vacuous() {
            write!(
                f,
                " (vacuous{})",
                if self.relied_on { ", relied on" } else { "" }
            )?;
        }
        if self.violations > 0 {
            write!(f, ", {} violations", self.violations)?;
        }
        if let Some(resolved) = &self.resolved {
            write!(f, "; {resolved}")?;
        }
        Ok(())
    }
}

/// What a run did, counted from the history (what clients and servers recorded).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metrics {
    /// Client operations invoked.
    pub operations: u64,
    /// Completed with a result.
    pub acknowledged: u64,
    /// Definitely failed.
    pub failed: u64,
    /// Outcome unknown (timeouts, lost connections, never completed).
    pub unknown: u64,
    /// Server leaders elected (the stores' `BecameLeader` events; a recipe's leaders, as
    /// in an election recipe, are not counted here).
    pub leaders_elected: u64,
    /// Snapshots servers took of their state machines (`SnapshotTaken` events: Raft log
    /// compaction).
    #[serde(default)]
    pub snapshots_taken: u64,
    /// Snapshots sent to servers and installed in place of applying entries
    /// (`SnapshotInstalled` events: Raft InstallSnapshot, ZAB SNAP sync), not the state a
    /// restarted server booted from, which is recorded the same way
    /// (`checks::protocol::resumes_held_state::snapshots_sent`).
    #[serde(default)]
    pub snapshots_installed: u64,
    /// History records.
    pub records: u64,
    /// Simulated time at the end of the run, milliseconds.
    pub ended_at_ms: u64,
}

impl Metrics {
    pub(crate) fn of(history: &History, ended_at_ms: u64) -> Self {
        use sim::history::{Event, OpResult, ProtocolEvent};
        let mut metrics = Metrics {
            records: history.len() as u64,
            ended_at_ms,
            ..Metrics::default()
        };
        for record in history.records() {
            match &record.event {
                Event::Invoke { .. } => metrics.operations += 1,
                Event::Complete { result, .. } => match result {
                    OpResult::Ok { .. } => metrics.acknowledged += 1,
                    OpResult::Fail { .. } => metrics.failed += 1,
                    OpResult::Unknown { .. } => {}
                },
                Event::Protocol(ProtocolEvent::BecameLeader { .. }) => metrics.leaders_elected += 1,
                Event::Protocol(ProtocolEvent::SnapshotTaken { .. }) => {
                    metrics.snapshots_taken += 1
                }
                _ => {}
            }
        }
        metrics.unknown = metrics.operations - metrics.acknowledged - metrics.failed;
        metrics.snapshots_installed = checks::protocol::resumes_held_state::snapshots_sent(history);
        metrics
    }
}

/// How many violations of each check an outcome's text prints in full; the rest are
/// counted (one run of a broken variant can find hundreds, and the first few say it).
pub const VIOLATIONS_SHOWN_PER_CHECK: usize = 3;

/// What one run came to.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// The scenario's name.
    pub scenario: String,
    /// The scenario's digest (which description ran).
    pub scenario_digest: Digest,
    /// The seed.
    pub seed: Seed,
    /// The history's digest: a replay must reproduce it (none if the run crashed).
    pub history_digest: Option<Digest>,
    /// The fault plan the run followed (generated ones included, in full).
    pub fault_plan: FaultPlan,
    /// Faults that fired, each kind by its own counter.
    pub fault_counts: FaultCounts,
    /// What the run did.
    pub metrics: Metrics,
    /// Checkers' violations.
    pub violations: Vec<ViolationRecord>,
    /// Every check that ran, with what it judged, in the order they ran. Empty for a run
    /// that crashed before its final audit.
    #[serde(default)]
    pub checks: Vec<CheckTally>,
    /// The coverage marks the run reached, with how often ([`sim::coverage`]).
    #[serde(default)]
    pub marks: sim::coverage::Marks,
    /// The checks of the store or workload the scenario does not run, with its reasons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_checks: Vec<crate::scenario::SkippedCheck>,
    /// Why the run failed, if it did.
    pub failure: Option<Failure>,
    /// The history (not serialized with the outcome: write it with `to_json_lines`).
    #[serde(skip)]
    pub history: Option<History>,
    /// The scenario as it ran, in full (store, known-bug variants, fault source, …): with
    /// the seed, what reproduces the run, which `coordsim replay --from` runs. `None` in
    /// outcomes written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_as_run: Option<Box<crate::Scenario>>,
}

impl Outcome {
    /// Whether the run is clean: completed, progressed, no violation.
    pub fn is_clean(&self) -> bool {
        self.failure.is_none()
    }

    /// The checks the scenario relies on that judged nothing in this run.
    pub fn vacuous_relied_on(&self) -> impl Iterator<Item = &CheckTally> {
        self.checks
            .iter()
            .filter(|tally| tally.relied_on && tally.is_vacuous())
    }

    /// The violations, grouped by check in the order the checks first fired.
    pub fn violations_by_check(&self) -> Vec<(&str, Vec<&ViolationRecord>)> {
        let mut groups: Vec<(&str, Vec<&ViolationRecord>)> = Vec::new();
        for violation in &self.violations {
            match groups
                .iter_mut()
                .find(|(check, _)| *check == violation.check)
            {
                Some((_, group)) => group.push(violation),
                None => groups.push((&violation.check, vec![violation])),
            }
        }
        groups
    }

    /// How many violations the text output prints in full: at most
    /// [`VIOLATIONS_SHOWN_PER_CHECK`] of each check.
    pub fn violations_shown(&self) -> usize {
        self.violations_by_check()
            .iter()
            .map(|(_, group)| group.len().min(VIOLATIONS_SHOWN_PER_CHECK))
            .sum()
    }

    /// Whether some violation is of `property`.
    pub fn violated(&self, property: &str) -> bool {
        self.violations.iter().any(|v| v.property == property)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "scenario `{}` (digest {}) with seed {} ({})",
            self.scenario,
            self.scenario_digest,
            self.seed,
            self.seed.value()
        )?;
        match &self.failure {
            None => writeln!(f, "verdict:         clean")?,
            Some(failure) => writeln!(f, "verdict:         FAILED, {failure}")?,
        }
        if let Some(digest) = self.history_digest {
            writeln!(f, "history digest:  {digest}")?;
        }
        let m = &self.metrics;
        writeln!(
            f,
            "metrics:         {} operations ({} acknowledged, {} failed, {} unknown), {} server leaders elected, ended at {} ms",
            m.operations, m.acknowledged, m.failed, m.unknown, m.leaders_elected, m.ended_at_ms
        )?;
        if m.snapshots_taken + m.snapshots_installed > 0 {
            writeln!(
                f,
                "snapshots:       {} taken, {} installed",
                m.snapshots_taken, m.snapshots_installed
            )?;
        }
        if self.fault_plan.faults.is_empty() {
            writeln!(f, "fault plan:      none")?;
        } else {
            write!(
                f,
                "fault plan:      {} faults\n{}",
                self.fault_plan.faults.len(),
                self.fault_plan
            )?;
        }
        write!(f, "faults fired:    {}", self.fault_counts)?;
        if !self.checks.is_empty() {
            write!(f, "\nchecks:          {} ran", self.checks.len())?;
            for tally in &self.checks {
                write!(f, "\n  {tally}")?;
            }
        }
        if !self.marks.is_empty() {
            let reached: Vec<String> = self
                .marks
                .iter()
                .map(|(mark, count)| format!("{mark} ×{count}"))
                .collect();
            write!(f, "\nmarks reached:   {}", reached.join(", "))?;
        }
        for skipped in &self.skipped_checks {
            write!(f, "\n  {skipped}")?;
        }
        if !self.violations.is_empty() {
            let groups = self.violations_by_check();
            let counts: Vec<String> = groups
                .iter()
                .map(|(check, group)| format!("{check} ×{}", group.len()))
                .collect();
            write!(
                f,
                "\nviolations:      {} ({})",
                self.violations.len(),
                counts.join(", ")
            )?;
            for (check, group) in groups {
                write!(f, "\n  {check}: {}", group.len())?;
                for violation in group.iter().take(VIOLATIONS_SHOWN_PER_CHECK) {
                    write!(f, "\n    {violation}")?;
                }
                if group.len() > VIOLATIONS_SHOWN_PER_CHECK {
                    write!(
                        f,
                        "\n    … and {} more",
                        group.len() - VIOLATIONS_SHOWN_PER_CHECK
                    )?;
                }
            }
        }
        Ok(())
    }
}
