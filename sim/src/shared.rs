//! A mutex that ignores poisoning.
//!
//! The simulation is single-threaded; a panic inside a node task is caught by madsim and
//! either ends the run or restarts the node, and in both cases the world's state is still
//! the state to report. Poisoning would only turn that report into a second panic.

use std::sync::{Mutex, MutexGuard};

#[derive(Debug, Default)]
pub(crate) struct Shared<T> {
    inner: Mutex<T>,
}

impl<T> Shared<T> {
    pub(crate) fn new(value: T) -> Self {
        Self {
            inner: Mutex::new(value),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
