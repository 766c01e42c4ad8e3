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

pub(crate) mod broken;
mod datagram;
mod stream;

pub use broken::{BreakReason, ConnectionBroken};
pub use datagram::{Datagram, DatagramEndpoint, DatagramNetwork, DatagramRecv};
pub use stream::{ConnectError, Connection, ConnectionRecv, Listener, StreamNetwork};

use crate::world::state::WorldShared;
use madsim::time::Sleep;
use std::{
    future::Future,
    pin::Pin,
    task::{Context, Waker},
    time::Duration,
};

/// Wakes a receiver when the earliest queued message becomes deliverable.
///
/// madsim adds a timer entry each time a `Sleep` is polled; a receiver is polled on every
/// wake-up, so an entry is added only when the deadline or the task changes. madsim cannot
/// cancel an entry, and every entry wakes its task when it fires, so the number and order
/// of entries decide the run: this adds exactly one per new (deadline, task), as a fresh
/// sleep would, but through one `Sleep` reset to each deadline, not a new one each time.
#[derive(Default)]
pub(crate) struct ArrivalTimer {
    /// The deadline (nanoseconds since the world started) and the task of the entry added
    /// last.
    armed: Option<(u64, Waker)>,
    /// Reset to each new deadline and polled to add its entry (created at the first).
    sleep: Option<Sleep>,
}

/// A message that becomes the earliest in a receiver's queue, due at `arrival` (nanoseconds
/// since the world started): wakes the receiver waiting with `waker` then, not now.
///
/// Waking it now would cost a run of its task only for it to find the message not yet due
/// and arm its timer for `arrival`; this arms that timer for it, with the same waker, from
/// the sender's side (about one task run less per message sent to an idle receiver). The
/// waker stays stored, for a break or a closer message to wake it. A message due already
/// (no latency) wakes the receiver at once, as the timer cannot be armed for now.
pub(crate) fn wake_at_arrival(
    world: &WorldShared,
    timer: &mut ArrivalTimer,
    waker: &mut Option<Waker>,
    now: u64,
    arrival: u64,
) {
    if arrival <= now {
        if let Some(waker) = waker.take() {
            waker.wake();
        }
        return;
    }
    if let Some(waker) = waker.as_ref() {
        timer.arm(world, arrival, &mut Context::from_waker(waker));
    }
}

impl ArrivalTimer {
    /// Ensures `cx`'s task is woken at `deadline`, in nanoseconds since the world started
    /// (which must be in the future).
    pub fn arm(&mut self, world: &WorldShared, deadline: u64, cx: &mut Context<'_>) {
        match &mut self.armed {
            Some((armed_deadline, waker)) => {
                if *armed_deadline == deadline && waker.will_wake(cx.waker()) {
                    return;
                }
                *armed_deadline = deadline;
                // Clones only if the task changed.
                waker.clone_from(cx.waker());
            }
            None => self.armed = Some((deadline, cx.waker().clone())),
        }
        let deadline = world.epoch + Duration::from_nanos(deadline);
        let sleep = self
            .sleep
            .get_or_insert_with(|| world.time.sleep_until(deadline));
        let mut sleep = Pin::new(sleep);
        // Exact: madsim's `sleep_until` rounds a deadline up to at least 1 ms from now.
        sleep.as_mut().reset(deadline);
        // The deadline is in the future, so this adds the entry and is pending.
        let _ = sleep.poll(cx);
    }
}
