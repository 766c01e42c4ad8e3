//! Futures for a task that waits on many sources at once.
//!
//! Such a task is polled on every message. Polling a [`LocalSleep`] reads the local clock
//! each time, and polling a madsim sleep adds a timer entry each time. A [`Signalled`]
//! future is polled with a waker of its own that remembers that it fired and then wakes
//! the task: it is polled only when it was just set or has woken the task, not on every
//! poll of the task.

use futures_util::task::AtomicWaker;
use sim::clock::{LocalSleep, LocalTime};
use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll, Wake, Waker},
};

/// Set when the future's waker is woken; wakes the task in turn.
#[derive(Default)]
struct Signal {
    fired: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, Ordering::Relaxed);
        self.task.wake();
    }
}

/// At most one future, polled only when it may have progressed. See the
/// [module docs](self).
pub(crate) struct Signalled<F> {
    future: Option<F>,
    /// The future was set and not yet polled.
    fresh: bool,
    signal: Arc<Signal>,
    waker: Waker,
}

impl<F: Future + Unpin> Signalled<F> {
    /// Holds no future.
    pub(crate) fn new() -> Self {
        let signal = Arc::new(Signal::default());
        let waker = Waker::from(signal.clone());
        Self {
            future: None,
            fresh: false,
            signal,
            waker,
        }
    }

    /// The future, if one is set.
    pub(crate) fn get(&self) -> Option<&F> {
        self.future.as_ref()
    }

    /// Sets `future` (dropping any earlier one).
    pub(crate) fn set(&mut self, future: F) {
        self.future = Some(future);
        self.fresh = true;
    }

    /// Drops the future.
    pub(crate) fn clear(&mut self) {
        self.future = None;
    }

    /// The future's output once it completes (it is then dropped). `cx`'s task is woken
    /// when the future may have progressed.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.signal.task.register(cx.waker());
        let fired = self.signal.fired.swap(false, Ordering::Relaxed);
        if !fired && !self.fresh {
            return Poll::Pending;
        }
        self.fresh = false;
        let Some(future) = self.future.as_mut() else {
            return Poll::Pending;
        };
        let mut own = Context::from_waker(&self.waker);
        let output = std::task::ready!(Pin::new(future).poll(&mut own));
        self.future = None;
        Poll::Ready(output)
    }
}

/// A re-armable local-clock timer.
pub(crate) type SignalledTimer = Signalled<LocalSleep>;

impl SignalledTimer {
    /// The deadline it is armed for.
    pub(crate) fn deadline(&self) -> Option<LocalTime> {
        self.get().map(LocalSleep::deadline)
    }

    /// Whether the armed sleep has completed (the timer is then disarmed).
    pub(crate) fn poll_expired(&mut self, cx: &mut Context<'_>) -> bool {
        self.poll(cx).is_ready()
    }
}
