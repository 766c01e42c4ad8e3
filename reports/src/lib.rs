//! coordsim as a library: the testing API for the user's own code ([`testing`]), and what it
//! shares with the `coordsim` command (the description of history records, the lock
//! comparison, the HTML timeline and the JSON trace of a run).

pub mod describe;
pub mod lock_comparison;
pub mod testing;
pub mod timeline;
pub mod trace;

/// `(package, test target, test name)` of the calling test, for
/// [`testing::UserTest::for_test`]: the replay line names them. `coordsim::this_test!("my_test")`
/// in an integration test `tests/locks.rs` of package `my-service` gives
/// `("my-service", "locks", "my_test")`.
pub use sim::this_test;
