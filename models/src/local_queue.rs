//! A single-consumer queue between tasks of one node (no locks, no `Send`).

use std::{
    cell::RefCell,
    collections::VecDeque,
    rc::Rc,
    task::{Context, Poll, Waker},
};

struct Inner<T> {
    items: VecDeque<T>,
    waker: Option<Waker>,
}

/// A queue many local tasks push into and one task pops from. Clones share the queue.
pub(crate) struct LocalQueue<T> {
    inner: Rc<RefCell<Inner<T>>>,
}

impl<T> Clone for LocalQueue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T> LocalQueue<T> {
    pub(crate) fn new() -> Self {
        Self {
            inner: Rc::new(RefCell::new(Inner {
                items: VecDeque::new(),
                waker: None,
            })),
        }
    }

    pub(crate) fn push(&self, item: T) {
        let waker = {
            let mut inner = self.inner.borrow_mut();
            inner.items.push_back(item);
            inner.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    pub(crate) fn poll_pop(&self, cx: &mut Context<'_>) -> Poll<T> {
        let mut inner = self.inner.borrow_mut();
        match inner.items.pop_front() {
            Some(item) => Poll::Ready(item),
            None => {
                if !inner
                    .waker
                    .as_ref()
                    .is_some_and(|waker| waker.will_wake(cx.waker()))
                {
                    inner.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}
