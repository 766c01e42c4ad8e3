//! What every checker's violations have in common.

use sim::time::SimTime;
use std::fmt;

/// A broken property, with the evidence. Each checker has its own violation type (naming
/// the exact nodes, terms, times and operations involved); this trait lets suites handle
/// them together.
pub trait Violation: fmt::Display + fmt::Debug + Send + Sync {
    /// The property, e.g. `"leader uniqueness"`.
    fn property(&self) -> &'static str;
    /// Where the property comes from: a paper section, a bug report.
    fn reference(&self) -> &'static str;
    /// When, in the run's simulated time, the evidence shows the property broken (the
    /// second of two overlapping holds began, the stale read was invoked, …), so that a
    /// replay can show the events around it; `None` when the violation names no instant (a
    /// write never read, an item lost at the end).
    fn at(&self) -> Option<SimTime> {
        None
    }
}

/// Boxes a checker's violations for a suite.
pub fn boxed<V: Violation + 'static>(violations: Vec<V>) -> Vec<Box<dyn Violation>> {
    violations
        .into_iter()
        .map(|violation| Box::new(violation) as Box<dyn Violation>)
        .collect()
}
