//! Typed transports between nodes: datagrams and FIFO connections.
//!
//! Messages are moved, never serialized: a `DatagramNetwork<RaftMessage>` carries
//! `RaftMessage` values. Sending is synchronous (the message is put on the simulated wire
//! with a delivery time) so a sans-IO driver can flush its outputs without awaiting;
//! receiving waits until the earliest message's delivery time.
//!
//! Every fate of a message is decided by the world from the `network` stream of the seed
//! and counted: lost, dropped by a partition or clog, dropped because the receiver is
//! crashed, duplicated, discarded by a broken connection.

mod datagram;
mod stream;

pub use datagram::{Datagram, DatagramEndpoint, DatagramNetwork, DatagramRecv};
pub use stream::{
    BreakReason, ConnectError, Connection, ConnectionBroken, ConnectionRecv, Listener,
    StreamNetwork,
};

use crate::time::exact_sleep_until;
use madsim::time::{Instant, Sleep, TimeHandle};
use std::{
    future::Future,
    pin::Pin,
    task::{Context, Waker},
};

/// Wakes a receiver when the earliest queued message becomes deliverable.
///
/// madsim adds a timer entry each time a `Sleep` is polled; a receiver is polled on every
/// wake-up, so the timer is re-armed only when the deadline or the task changes.
#[derive(Default)]
pub(crate) struct ArrivalTimer {
    armed: Option<(Instant, Sleep, Waker)>,
}

impl ArrivalTimer {
    /// Ensures `cx`'s task is woken at `deadline` (which must be in the future).
    pub fn arm(&mut self, time: &TimeHandle, deadline: Instant, cx: &mut Context<'_>) {
        if let Some((armed_deadline, _, waker)) = &self.armed
            && *armed_deadline == deadline
            && waker.will_wake(cx.waker())
        {
            return;
        }
        let mut sleep = exact_sleep_until(time, deadline);
        let _ = Pin::new(&mut sleep).poll(cx);
        self.armed = Some((deadline, sleep, cx.waker().clone()));
    }
}
