//! A one-shot, many-waiter event.

use crate::shared::Shared;
use std::{
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, Waker},
};

/// Set once; every waiter, past and future, then proceeds.
#[derive(Clone, Debug, Default)]
pub struct Signal {
    state: Arc<Shared<SignalState>>,
}

#[derive(Debug, Default)]
struct SignalState {
    set: bool,
    waiters: Vec<Waker>,
}

impl Signal {
    /// A signal that is not yet set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the signal and wakes every waiter.
    pub fn set(&self) {
        let waiters = {
            let mut state = self.state.lock();
            state.set = true;
            std::mem::take(&mut state.waiters)
        };
        for waker in waiters {
            waker.wake();
        }
    }

    /// Whether the signal is set.
    pub fn is_set(&self) -> bool {
        self.state.lock().set
    }

    /// Completes once the signal is set.
    pub fn wait(&self) -> SignalWait {
        SignalWait {
            state: self.state.clone(),
        }
    }
}

/// Future returned by [`Signal::wait`].
#[derive(Debug)]
pub struct SignalWait {
    state: Arc<Shared<SignalState>>,
}

impl Future for SignalWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.state.lock();
        if state.set {
            return Poll::Ready(());
        }
        if !state.waiters.iter().any(|w| w.will_wake(cx.waker())) {
            state.waiters.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
