//! What a check came to: its violations, and how much of the history it judged.
//!
//! A check that judged nothing and found nothing has not shown that the property holds: it
//! had no evidence either way. etcd's robustness tests put the rule plainly: "if we are
//! expecting something to happen, we should validate that it really happens". So every
//! check counts what it judged, in its own unit ([`crate::Check::judges`]: holds,
//! operations, watches, …), and a count of 0 is reported as *vacuous*, never as a pass.

use crate::Violation;
use std::ops::Deref;

/// One checker's result on one history: the violations it found and how many items (in the
/// unit its [`crate::Check`] names) it judged. It derefs to the violations, so a test reads
/// it as a slice (`check(&history).is_empty()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked<V> {
    /// The violations found, in the order the checker found them.
    pub violations: Vec<V>,
    /// How many items the checker judged; 0 means it had no evidence (vacuous).
    pub judged: u64,
}

impl<V> Checked<V> {
    /// `violations` found after judging `judged` items.
    pub fn new(violations: Vec<V>, judged: u64) -> Self {
        Self { violations, judged }
    }

    /// Whether the check judged nothing.
    pub fn is_vacuous(&self) -> bool {
        self.judged == 0
    }

    /// The violations, boxed for a suite, with the count.
    pub fn verdict(self) -> Verdict
    where
        V: Violation + 'static,
    {
        Verdict {
            violations: crate::boxed(self.violations),
            judged: self.judged,
            resolved: None,
        }
    }
}

impl<V> Deref for Checked<V> {
    type Target = [V];

    fn deref(&self) -> &[V] {
        &self.violations
    }
}

impl<V> IntoIterator for Checked<V> {
    type Item = V;
    type IntoIter = std::vec::IntoIter<V>;

    fn into_iter(self) -> Self::IntoIter {
        self.violations.into_iter()
    }
}

impl<'a, V> IntoIterator for &'a Checked<V> {
    type Item = &'a V;
    type IntoIter = std::slice::Iter<'a, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.violations.iter()
    }
}

impl<V: PartialEq> PartialEq<Vec<V>> for Checked<V> {
    fn eq(&self, other: &Vec<V>) -> bool {
        &self.violations == other
    }
}

/// A [`Checked`] with its violations boxed: what [`crate::Check::run`] returns.
#[derive(Debug)]
pub struct Verdict {
    /// The violations found.
    pub violations: Vec<Box<dyn Violation>>,
    /// How many items the check judged; 0 means vacuous.
    pub judged: u64,
    /// For a linearizability check, how its operations of unknown outcome were resolved from
    /// what the replicas applied; `None` for the other checks.
    pub resolved: Option<crate::linearizability::resolve::Resolved>,
}

impl Verdict {
    /// Whether the check judged nothing.
    pub fn is_vacuous(&self) -> bool {
        self.judged == 0
    }
}
