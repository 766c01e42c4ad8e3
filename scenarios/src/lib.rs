//! Workloads, checkers and suites. (Filled in by the checker and suite issues.)
#![deny(missing_docs)]
