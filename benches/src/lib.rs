//! Benchmarks live in `benches/`; this library holds what several of them share.
#![deny(missing_docs)]

pub mod raw_madsim;
pub mod standard_lock;
