//! Benchmarks live in `benches/`; this library holds what several of them share.
#![deny(missing_docs)]

/// Every bench and example runs with mimalloc, as the `coordsim` binary does: a simulated
/// run allocates and frees messages, effects and history records by the hundred thousand,
/// and the system's malloc and free were about an eighth of a run's instructions
/// ([`scenarios::allocator`]).
#[global_allocator]
static ALLOCATOR: scenarios::allocator::MiMalloc = scenarios::allocator::MiMalloc;

pub mod raw_madsim;
pub mod standard_lock;
