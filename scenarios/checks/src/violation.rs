//! What every checker's violations have in common.

use std::fmt;

/// A broken property, with the evidence. Each checker has its own violation type (naming
/// the exact nodes, terms, times and operations involved); this trait lets suites handle
/// them together.
pub trait Violation: fmt::Display + fmt::Debug + Send + Sync {
    /// The property, e.g. `"leader uniqueness"`.
    fn property(&self) -> &'static str;
    /// Where the property comes from: a paper section, a bug report.
    fn reference(&self) -> &'static str;
}

/// Boxes a checker's violations for a suite.
pub fn boxed<V: Violation + 'static>(violations: Vec<V>) -> Vec<Box<dyn Violation>> {
    violations
        .into_iter()
        .map(|violation| Box::new(violation) as Box<dyn Violation>)
        .collect()
}
