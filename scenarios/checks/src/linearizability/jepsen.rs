//! Jepsen etcd test logs, in the format of Porcupine's test data
//! (`test_data/jepsen/etcd_NNN.log` in <https://github.com/anishathalye/porcupine>):
//!
//! ```text
//! INFO  jepsen.util - 2 :invoke :cas [3 0]
//! INFO  jepsen.util - 2 :ok :cas [3 0]
//! INFO  jepsen.util - 4 :info :write :timed-out
//! ```
//!
//! (The fields after the process are separated by tabs in the logs; any whitespace is read.)
//!
//! One register; `:read`, `:write` and `:cas [from to]`. The order of the lines is the
//! real-time order (a line's number is its time). `:ok` is a known result; `:fail` a
//! definite failure (a failed `:cas` is an observation: the value was not `from`; a failed
//! read or write did not happen; a read that failed with `:timed-out` told nothing);
//! `:info` an unknown outcome, as is an operation still open at the end of the log. Lines
//! of other loggers, and the nemesis's lines, are ignored.

use super::{
    Skipped,
    model::{Operation, OperationHistory, Outcome},
    register::{RegisterAction, RegisterInput, RegisterModel, RegisterOutput},
};
use std::{collections::BTreeMap, fmt};

/// A log line that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JepsenParseError {
    /// One-based line number (0: the log as a whole).
    pub line: usize,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for JepsenParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: expected a Jepsen etcd log line \
             (`INFO  jepsen.util - <process>\\t:<invoke|ok|fail|info>\\t:<read|write|cas>\\t<value>`): {}",
            self.line, self.problem
        )
    }
}

impl std::error::Error for JepsenParseError {}

const MARKER: &str = "jepsen.util - ";

/// Whether `text` looks like a Jepsen log (for format detection).
pub fn looks_like_jepsen_log(text: &str) -> bool {
    text.lines()
        .find(|line| !line.trim().is_empty())
        .is_some_and(|line| line.contains(MARKER))
}

struct Open {
    line: usize,
    lane: u32,
    input: RegisterInput,
}

/// Reads a Jepsen etcd log into a register history.
pub fn read_etcd_log(
    text: &str,
) -> Result<
    (
        RegisterModel,
        OperationHistory<RegisterInput, RegisterOutput>,
    ),
    JepsenParseError,
> {
    let mut model = RegisterModel::default();
    let key = model.key("jepsen");
    let mut history = OperationHistory {
        time_unit: super::TimeUnit::LogLine,
        ..OperationHistory::default()
    };
    let mut open: BTreeMap<u64, Open> = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let error = |problem: String| JepsenParseError { line, problem };
        let Some(LogLine {
            process,
            kind,
            function,
            value,
        }) = log_line(raw, &error)?
        else {
            continue;
        };
        let action = match (function, kind) {
            (":read", _) => RegisterAction::Read,
            (":write", ":invoke") => RegisterAction::Write(model.value(single(&value, &error)?)),
            (":cas", ":invoke") => {
                let (from, to) = pair(&value, &error)?;
                RegisterAction::CompareAndSet {
                    expected: model.value(from),
                    new: model.value(to),
                }
            }
            (":write" | ":cas", _) => RegisterAction::Read, // unused for completions
            _ => return Err(error(format!("unknown function `{function}`"))),
        };
        if kind == ":invoke" {
            if let Some(previous) = open.get(&process) {
                return Err(error(format!(
                    "process {process} invoked again while its operation of line {} is open",
                    previous.line
                )));
            }
            let lane = history.lane(&format!("process {process}"));
            open.insert(
                process,
                Open {
                    line,
                    lane,
                    input: RegisterInput { key, action },
                },
            );
            continue;
        }
        let Some(invocation) = open.remove(&process) else {
            return Err(error(format!(
                "`{kind}` for process {process}, which has no open operation"
            )));
        };
        let invoked = &invocation.input.action;
        let Some(outcome) = completion(kind, invoked, &value, line as u64, &mut model, &error)?
        else {
            history.skipped.push(Skipped {
                id: invocation.line as u64,
                reason: "failed definitely (did not take effect)",
            });
            continue;
        };
        history.operations.push(Operation {
            id: invocation.line as u64,
            lane: invocation.lane,
            input: invocation.input,
            invoked_at: invocation.line as u64,
            outcome,
        });
    }
    for (_, invocation) in open {
        history.operations.push(Operation {
            id: invocation.line as u64,
            lane: invocation.lane,
            input: invocation.input,
            invoked_at: invocation.line as u64,
            outcome: Outcome::Unknown,
        });
    }
    if history.operations.is_empty() {
        return Err(JepsenParseError {
            line: 0,
            problem: "no operations found".into(),
        });
    }
    history
        .operations
        .sort_by_key(|operation| operation.invoked_at);
    Ok((model, history))
}

/// One client event of the log: `<process> <type> <function> <value...>`.
struct LogLine<'a> {
    process: u64,
    /// `:invoke`, `:ok`, `:fail` or `:info`.
    kind: &'a str,
    /// `:read`, `:write` or `:cas`.
    function: &'a str,
    value: Vec<&'a str>,
}

/// The client event on the log line `raw`; `None` for a line without one (no marker, or
/// the nemesis's).
fn log_line<'a>(
    raw: &'a str,
    error: &impl Fn(String) -> JepsenParseError,
) -> Result<Option<LogLine<'a>>, JepsenParseError> {
    let Some(position) = raw.find(MARKER) else {
        return Ok(None);
    };
    let fields: Vec<&str> = raw[position + MARKER.len()..].split_whitespace().collect();
    let Some(&process_field) = fields.first() else {
        return Err(error("no process".into()));
    };
    if process_field == ":nemesis" {
        return Ok(None);
    }
    let process: u64 = process_field
        .parse()
        .map_err(|_| error(format!("process `{process_field}` is not a number")))?;
    let (Some(&kind), Some(&function)) = (fields.get(1), fields.get(2)) else {
        return Err(error("missing the event type or the function".into()));
    };
    Ok(Some(LogLine {
        process,
        kind,
        function,
        value: fields[3..].to_vec(),
    }))
}

/// How the operation `invoked` ended, by the completion `kind` with `value` at line `at`;
/// `None` for one that failed definitely (it did not take effect: left out).
fn completion(
    kind: &str,
    invoked: &RegisterAction,
    value: &[&str],
    at: u64,
    model: &mut RegisterModel,
    error: &impl Fn(String) -> JepsenParseError,
) -> Result<Option<Outcome<RegisterOutput>>, JepsenParseError> {
    let outcome = match (kind, invoked) {
        (":ok", RegisterAction::Read) => {
            let read = single(value, error)?;
            let read = (read != "nil").then(|| model.value(read));
            Outcome::Returned {
                at,
                output: RegisterOutput::Read(read),
            }
        }
        (":ok", RegisterAction::Write(_)) => Outcome::Returned {
            at,
            output: RegisterOutput::Written,
        },
        (":ok", RegisterAction::CompareAndSet { .. }) => Outcome::Returned {
            at,
            output: RegisterOutput::Swapped,
        },
        (":fail", RegisterAction::CompareAndSet { .. }) if value.first() != Some(&":timed-out") => {
            Outcome::Returned {
                at,
                output: RegisterOutput::Mismatch,
            }
        }
        (":fail", RegisterAction::Read) if value.first() == Some(&":timed-out") => Outcome::Unknown,
        (":fail", _) => return Ok(None),
        (":info", _) => Outcome::Unknown,
        _ => return Err(error(format!("unknown event type `{kind}`"))),
    };
    Ok(Some(outcome))
}

fn single<'a>(
    value: &[&'a str],
    error: &impl Fn(String) -> JepsenParseError,
) -> Result<&'a str, JepsenParseError> {
    match value {
        [one] if *one == "nil" || one.parse::<i64>().is_ok() => Ok(one),
        _ => Err(error(format!(
            "expected a number or nil, found `{}`",
            value.join(" ")
        ))),
    }
}

fn pair<'a>(
    value: &[&'a str],
    error: &impl Fn(String) -> JepsenParseError,
) -> Result<(&'a str, &'a str), JepsenParseError> {
    if let [from, to] = value {
        let from = from.strip_prefix('[');
        let to = to.strip_suffix(']');
        if let (Some(from), Some(to)) = (from, to)
            && from.parse::<i64>().is_ok()
            && to.parse::<i64>().is_ok()
        {
            return Ok((from, to));
        }
    }
    Err(error(format!(
        "expected `[from to]`, found `{}`",
        value.join(" ")
    )))
}
