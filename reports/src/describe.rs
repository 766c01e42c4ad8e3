//! Records and events in words, and where in a history a reader should look: what
//! `replay` prints around a failure and what the timeline draws, from one module that both
//! import.

use scenarios::{Outcome, ViolationRecord};
use serde::Serialize;
use serde_json::Value;
use sim::{
    history::{Event, History, Record},
    time::SimTime,
};

/// Where a replay looks: the earliest violation that names its time, or, for a run that
/// failed otherwise (or whose violations name no time), the end of the history.
pub struct Focus {
    /// The record the window is centred on: the first at or after the violation's time,
    /// or the last record.
    pub record: usize,
    /// The violation's time, or the time of the last record.
    pub at: SimTime,
    /// Whether `at` is a violation's own time (else: the end of the history, as a fallback).
    pub kind: FocusKind,
    /// What is there, for a person.
    pub what: String,
}

/// Whether a focus is a violation's time or the fallback at the end of the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FocusKind {
    /// A violation's time.
    Violation,
    /// The end of the history: no violation names its time, or the run failed without one.
    EndOfHistory,
}

impl Focus {
    /// The focus of a run that failed or has violations; `None` for a clean run or an empty
    /// history.
    pub fn of(outcome: &Outcome, history: &History) -> Option<Focus> {
        let records = history.records();
        let last = records.len().checked_sub(1)?;
        if let Some((at_ms, violation)) = first_timed_violation(outcome) {
            let record = records
                .partition_point(|record| record.at.as_millis() < at_ms)
                .min(last);
            return Some(Focus {
                record,
                at: SimTime::from_millis(at_ms),
                kind: FocusKind::Violation,
                what: format!(
                    "the first violation: {} ({}) at {at_ms} ms",
                    violation.check, violation.property
                ),
            });
        }
        if outcome.is_clean() && outcome.violations.is_empty() {
            return None;
        }
        let why = match (&outcome.failure, outcome.violations.first()) {
            (_, Some(violation)) => {
                format!("{} names no time of its violation", violation.check)
            }
            (Some(failure), None) => format!("{} failure", failure.kind()),
            (None, None) => "no violation".into(),
        };
        Some(Focus {
            record: last,
            at: records[last].at,
            kind: FocusKind::EndOfHistory,
            what: format!("the end of the history ({why})"),
        })
    }

    /// The records `around` on each side of the focus: a range of indexes.
    pub fn window(&self, records: usize, around: usize) -> std::ops::Range<usize> {
        let first = self.record.saturating_sub(around);
        let end = (self.record + around + 1).min(records);
        first..end
    }
}

/// One record on one line: time, node (`-` for the world itself) and event.
pub fn describe_record(record: &Record) -> String {
    let node = record
        .node
        .map_or_else(|| "-".to_string(), |node| node.to_string());
    format!(
        "{:>12}  {node:<4} {}",
        record.at.to_string(),
        describe(&record.event)
    )
}

/// Fields of the event vocabulary whose values name a kind (shown bare, first).
const KIND_FIELDS: [&str; 11] = [
    "type",
    "recipe_event",
    "zk_event",
    "kv_event",
    "protocol_event",
    "phase",
    "model",
    "f",
    "op",
    "step",
    "outcome",
];

/// An event on one line: its kinds bare (`recipe lock acquired`), then its other fields as
/// `name=value` (nested ones in parentheses), from its serialized form, so that every event
/// of the vocabulary reads the same way. A fault reads as the fault, what it resolved to and
/// whether it applied.
pub fn describe(event: &Event) -> String {
    if let Event::Fault(record) = event {
        let target = record
            .target
            .map(|node| format!(" -> {node}"))
            .unwrap_or_default();
        let outcome = match &record.outcome {
            sim::history::FaultOutcome::Applied { .. } => "applied".to_string(),
            sim::history::FaultOutcome::Skipped { reason } => format!("skipped: {reason}"),
        };
        return format!("fault {}{target} ({outcome})", record.fault);
    }
    describe_value(&serde_json::to_value(event).expect("events serialize"))
}

/// A serialized value of the event vocabulary on one line, as [`describe`] writes events.
pub fn describe_value(value: &Value) -> String {
    let mut line = String::new();
    flatten(value, &mut line);
    line
}

fn flatten(value: &Value, line: &mut String) {
    match value {
        Value::Object(fields) => {
            let mut parts: Vec<String> = KIND_FIELDS
                .iter()
                .filter_map(|kind| fields.get(*kind).and_then(Value::as_str))
                .map(str::to_string)
                .collect();
            for (name, field) in fields {
                if KIND_FIELDS.contains(&name.as_str()) && field.is_string() {
                    continue;
                }
                let mut text = String::new();
                flatten(field, &mut text);
                if field.is_object() {
                    text = format!("({text})");
                }
                parts.push(format!("{name}={text}"));
            }
            line.push_str(&parts.join(" "));
        }
        Value::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|item| {
                    let mut text = String::new();
                    flatten(item, &mut text);
                    text
                })
                .collect();
            line.push_str(&format!("[{}]", parts.join(", ")));
        }
        Value::String(text) => line.push_str(text),
        Value::Null => line.push_str("none"),
        other => line.push_str(&other.to_string()),
    }
}

/// The earliest violation that names its time, with that time in milliseconds: the one a
/// replay and its timeline open at.
pub fn first_timed_violation(outcome: &Outcome) -> Option<(u64, &ViolationRecord)> {
    outcome
        .violations
        .iter()
        .filter_map(|violation| violation.at_ms.map(|at_ms| (at_ms, violation)))
        .min_by_key(|(at_ms, _)| *at_ms)
}
