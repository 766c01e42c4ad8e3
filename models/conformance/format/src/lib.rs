//! Conformance probe files (see `models/conformance/README.md`): one probe per file, a
//! sequence of client steps, each with the answer the real server gave and, where the model
//! differs on purpose, a declared deviation.
//!
//! Both sides use this crate: the model runner (`conformance`) and the recorder that runs the
//! probes against the real servers (`conformance-recorder`, outside the workspace). One
//! reading, one rendering: an answer renders the same way on both sides or the suite could not
//! compare them exactly.

mod normalise;
mod parse;
mod verbs;
mod zk_stat;

pub use normalise::Roles;
pub use parse::{Deviation, Probe, ProbeError, Step, StepKind};
pub use verbs::{Store, verbs};
pub use zk_stat::ZkStat;

use std::fmt::Write;

impl Probe {
    /// The probe file again, with `answers` (one per step, in order) in place of the recorded
    /// ones. Comments, the `about` line and declared deviations stay as they are.
    pub fn rewritten(&self, answers: &[Vec<String>]) -> String {
        assert_eq!(answers.len(), self.steps.len(), "one answer per step");
        let mut out = String::new();
        for line in &self.header {
            out.push_str(line);
            out.push('\n');
        }
        for (step, answer) in self.steps.iter().zip(answers) {
            out.push('\n');
            for line in &step.comments {
                out.push_str(line);
                out.push('\n');
            }
            let _ = writeln!(out, "{}", step.text);
            out.push_str("----\n");
            for line in answer {
                let _ = writeln!(out, "{line}");
            }
            if let Some(deviation) = &step.deviation {
                let _ = writeln!(out, "deviation: {}", deviation.reason);
                for line in &deviation.model {
                    let _ = writeln!(out, "{line}");
                }
            }
        }
        out
    }
}

/// How a model's answer to one step compares with the probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// The model answered as the real server did.
    Agrees,
    /// The model answered as the step's declared deviation says.
    Declared,
    /// Neither: `expected` is what the probe wants (the server's answer, or the deviation's).
    Differs {
        /// The lines the probe wants.
        expected: Vec<String>,
    },
}

impl Step {
    /// Compares the model's answer with the recorded one (or the declared deviation's).
    pub fn compare(&self, model_answer: &[String]) -> Agreement {
        match &self.deviation {
            Some(deviation) if deviation.model == model_answer => Agreement::Declared,
            Some(deviation) => Agreement::Differs {
                expected: deviation.model.clone(),
            },
            None if self.answer == model_answer => Agreement::Agrees,
            None => Agreement::Differs {
                expected: self.answer.clone(),
            },
        }
    }
}

/// A step's disagreement as a diff: the step, then `-` the wanted lines, `+` the model's.
pub fn diff(step: &Step, expected: &[String], got: &[String]) -> String {
    let mut out = format!("line {}: {}\n", step.line, step.text);
    if let Some(deviation) = &step.deviation {
        let _ = writeln!(out, "  (declared deviation: {})", deviation.reason);
    }
    for line in expected {
        let _ = writeln!(out, "- {line}");
    }
    for line in got {
        let _ = writeln!(out, "+ {line}");
    }
    out
}
