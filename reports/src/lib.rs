//! coordsim as a library: the testing API for the user's own code ([`testing`]), and what it
//! shares with the `coordsim` command (the description of history records, the lock
//! comparison, the HTML timeline and the JSON trace of a run).

pub mod describe;
pub mod lock_comparison;
pub mod testing;
pub mod timeline;
pub mod trace;
