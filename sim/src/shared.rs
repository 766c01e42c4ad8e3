//! A mutex that ignores poisoning and costs one atomic instruction a use.
//!
//! The simulation is single-threaded; a panic inside a node task is caught by madsim and
//! either ends the run or restarts the node, and in both cases the world's state is still
//! the state to report. Poisoning would only turn that report into a second panic.
//!
//! A world's locks are never contended (its tasks run one at a time on one thread), so
//! they are spin locks, as madsim's own are: taking one is one compare-and-swap and
//! releasing it a plain store, where a futex mutex pays an atomic exchange to release and
//! checks for panics both ways. The network, clocks and history take several per message.

use spin::mutex::{SpinMutex, SpinMutexGuard};

#[derive(Debug, Default)]
pub(crate) struct Shared<T> {
    inner: SpinMutex<T>,
}

impl<T> Shared<T> {
    pub(crate) fn new(value: T) -> Self {
        Self {
            inner: SpinMutex::new(value),
        }
    }

    pub(crate) fn lock(&self) -> SpinMutexGuard<'_, T> {
        self.inner.lock()
    }
}
