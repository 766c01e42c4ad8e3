//! Futures for a task that waits on many sources at once.
//!
//! Such a task is polled on every message. Polling a [`LocalSleep`] reads the local clock
//! each time, and polling a madsim sleep adds a timer entry each time. A [`Signalled`]
//! future is polled with a waker of the task's [`Wakeups`], which remembers that it fired
//! and then wakes the task: it is polled only when it was just set or its wake-ups fired,
//! not on every poll of the task.

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

/// The wake-ups of a task's [`Signalled`] futures: they are polled with its waker, which
/// records that one of them fired and wakes the task.
pub(crate) struct Wakeups {
    signal: Arc<Signal>,
    waker: Waker,
    /// The task waker registered last, while it is still registered: a wake-up takes the
    /// registered waker, and `fired` says when one did.
    registered: Option<Waker>,
}

impl Wakeups {
    pub(crate) fn new() -> Self {
        let signal = Arc::new(Signal::default());
        let waker = Waker::from(signal.clone());
        Self {
            signal,
            waker,
            registered: None,
        }
    }

    /// Registers `cx`'s task to be woken by the futures polled through `self`; tells
    /// whether one of them fired since the last call (then each must be polled).
    ///
    /// The task is polled on every message, and registering costs atomic operations, so a
    /// task still registered (nothing fired since, same task) is not registered again.
    #[inline]
    pub(crate) fn take(&mut self, cx: &mut Context<'_>) -> bool {
        let fired = self.signal.fired.swap(false, Ordering::Relaxed);
        if fired {
            self.registered = None;
        }
        if !self
            .registered
            .as_ref()
            .is_some_and(|registered| registered.will_wake(cx.waker()))
        {
            self.signal.task.register(cx.waker());
            self.registered = Some(cx.waker().clone());
        }
        fired
    }
}

/// At most one future, polled only when it was just set or its [`Wakeups`] fired. See
/// the [module docs](self).
pub(crate) struct Signalled<F> {
    future: Option<F>,
    /// The future was set and not yet polled.
    fresh: bool,
}

impl<F: Future + Unpin> Signalled<F> {
    /// Holds no future.
    pub(crate) fn new() -> Self {
        Self {
            future: None,
            fresh: false,
        }
    }

    /// The future, if one is set.
    #[inline]
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

    /// The future's output once it completes (it is then dropped). `woken` is what
    /// [`Wakeups::take`] said in this poll of the task.
    #[inline]
    pub(crate) fn poll(&mut self, woken: bool, wakeups: &Wakeups) -> Poll<F::Output> {
        if !woken && !self.fresh {
            return Poll::Pending;
        }
        self.poll_now(wakeups)
    }

    fn poll_now(&mut self, wakeups: &Wakeups) -> Poll<F::Output> {
        self.fresh = false;
        let Some(future) = self.future.as_mut() else {
            return Poll::Pending;
        };
        let mut own = Context::from_waker(&wakeups.waker);
        let output = std::task::ready!(Pin::new(future).poll(&mut own));
        self.future = None;
        Poll::Ready(output)
    }
}

impl Signalled<LocalSleep> {
    /// The deadline it is armed for.
    pub(crate) fn deadline(&self) -> Option<LocalTime> {
        self.get().map(LocalSleep::deadline)
    }
}

/// A re-armable local-clock timer with wake-ups of its own.
pub(crate) struct SignalledTimer {
    sleep: Signalled<LocalSleep>,
    wakeups: Wakeups,
}

impl SignalledTimer {
    /// A timer that is not armed.
    pub(crate) fn new() -> Self {
        Self {
            sleep: Signalled::new(),
            wakeups: Wakeups::new(),
        }
    }

    /// The deadline it is armed for.
    pub(crate) fn deadline(&self) -> Option<LocalTime> {
        self.sleep.deadline()
    }

    /// Arms it with `sleep` (replacing any earlier one).
    pub(crate) fn set(&mut self, sleep: LocalSleep) {
        self.sleep.set(sleep);
    }

    /// Disarms it.
    pub(crate) fn clear(&mut self) {
        self.sleep.clear();
    }

    /// Whether the armed sleep has completed (the timer is then disarmed).
    pub(crate) fn poll_expired(&mut self, cx: &mut Context<'_>) -> bool {
        if self.sleep.get().is_none() {
            // Nothing to wake the task for (a later `set` is polled when fresh).
            return false;
        }
        let woken = self.wakeups.take(cx);
        self.sleep.poll(woken, &self.wakeups).is_ready()
    }
}
