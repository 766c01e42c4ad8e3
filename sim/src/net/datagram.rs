//! Datagrams: may be lost, delayed, reordered (by random latency) and duplicated.

use super::{ArrivalTimer, wake_at_arrival};
use crate::{
    node::NodeId,
    shared::Shared,
    time,
    world::state::{CrashHook, WorldShared},
};
use std::{
    cmp::Ordering,
    collections::BinaryHeap,
    fmt,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, Waker},
};

/// A network of datagram endpoints carrying messages of type `M`, one endpoint per node.
///
/// Create it once per run ([`crate::Sim::datagram_network`]) and hand clones to node
/// programs; each program takes its node's [`DatagramEndpoint`].
pub struct DatagramNetwork<M> {
    inner: Arc<DatagramInner<M>>,
}

impl<M> Clone for DatagramNetwork<M> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

struct DatagramInner<M> {
    world: Arc<WorldShared>,
    mailboxes: Vec<Shared<Mailbox<M>>>,
}

struct Mailbox<M> {
    /// When each message on the wire is delivered: the heap's top is the next one.
    queue: BinaryHeap<InFlight>,
    /// The messages on the wire, each in the slot its heap entry names: a heap operation
    /// moves an element per level of the heap, so the heap holds small keys, and each
    /// message is moved in and out once.
    slots: Vec<Option<(NodeId, M)>>,
    /// Slots not in use.
    free_slots: Vec<u32>,
    next_sequence: u64,
    waker: Option<Waker>,
    timer: ArrivalTimer,
}

/// A message on the wire. Ordered so that the heap's top is the earliest delivery; the
/// sequence number breaks ties in sending order (so the slot never decides).
struct InFlight {
    /// Nanoseconds since the world started (see [`WorldShared::epoch`]).
    deliver_at: u64,
    sequence: u64,
    slot: u32,
}

impl PartialEq for InFlight {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for InFlight {}

impl PartialOrd for InFlight {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for InFlight {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        (other.deliver_at, other.sequence).cmp(&(self.deliver_at, self.sequence))
    }
}

impl<M: Send> CrashHook for DatagramInner<M> {
    fn on_crash(&self, index: usize) -> u64 {
        let mut mailbox = self.mailboxes[index].lock();
        let dropped = mailbox.queue.len() as u64;
        mailbox.queue.clear();
        mailbox.slots.clear();
        mailbox.free_slots.clear();
        dropped
    }
}

impl<M: Clone + Send + 'static> DatagramNetwork<M> {
    pub(crate) fn new(world: Arc<WorldShared>) -> Self {
        let mailboxes = (0..world.nodes.len())
            .map(|_| {
                Shared::new(Mailbox {
                    queue: BinaryHeap::new(),
                    slots: Vec::new(),
                    free_slots: Vec::new(),
                    next_sequence: 0,
                    waker: None,
                    timer: ArrivalTimer::default(),
                })
            })
            .collect();
        let inner = Arc::new(DatagramInner { world, mailboxes });
        let hook: Arc<dyn CrashHook> = inner.clone();
        inner.world.register_crash_hook(&hook);
        Self { inner }
    }

    /// `node`'s endpoint. An endpoint has one receiver: clones share its mailbox.
    pub fn endpoint(&self, node: NodeId) -> DatagramEndpoint<M> {
        DatagramEndpoint {
            index: self.inner.world.index(node),
            node,
            inner: self.inner.clone(),
        }
    }
}

/// A received datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Datagram<M> {
    /// Sender.
    pub from: NodeId,
    /// Payload.
    pub message: M,
}

/// One node's datagram endpoint.
pub struct DatagramEndpoint<M> {
    inner: Arc<DatagramInner<M>>,
    node: NodeId,
    index: usize,
}

impl<M> Clone for DatagramEndpoint<M> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            node: self.node,
            index: self.index,
        }
    }
}

impl<M> fmt::Debug for DatagramEndpoint<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatagramEndpoint")
            .field("node", &self.node)
            .finish()
    }
}

impl<M: Clone + Send + 'static> DatagramEndpoint<M> {
    /// This endpoint's node.
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// Puts `message` on the wire to `to`. Never blocks and never fails: a datagram that
    /// the network drops is simply never delivered (and counted).
    pub fn send(&self, to: NodeId, message: M) {
        let world = &self.inner.world;
        let to_index = world.index(to);
        let Some((latency, duplicate)) = world.state.lock().route_datagram(self.index, to_index)
        else {
            return;
        };
        let now = time::now_nanos(&world.time);
        let mut mailbox = self.inner.mailboxes[to_index].lock();
        if let Some(duplicate_latency) = duplicate {
            let deliver_at = now.saturating_add(time::duration_nanos(duplicate_latency));
            mailbox.push(world, now, deliver_at, self.node, message.clone());
        }
        let deliver_at = now.saturating_add(time::duration_nanos(latency));
        mailbox.push(world, now, deliver_at, self.node, message);
    }

    /// Receives the next datagram (waits until one is delivered).
    pub fn recv(&self) -> DatagramRecv<'_, M> {
        DatagramRecv { endpoint: self }
    }

    /// Receives a datagram if one has been delivered by now.
    pub fn try_recv(&self) -> Option<Datagram<M>> {
        let now = time::now_nanos(&self.inner.world.time);
        self.inner.mailboxes[self.index].lock().pop_delivered(now)
    }
}

impl<M> Mailbox<M> {
    fn push(&mut self, world: &WorldShared, now: u64, deliver_at: u64, from: NodeId, message: M) {
        self.next_sequence += 1;
        let sequence = self.next_sequence;
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some((from, message));
                slot
            }
            None => {
                self.slots.push(Some((from, message)));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2³² messages in flight")
            }
        };
        self.queue.push(InFlight {
            deliver_at,
            sequence,
            slot,
        });
        // Only a new earliest message changes when the receiver must wake up.
        let earliest = self
            .queue
            .peek()
            .is_some_and(|top| top.sequence == sequence);
        if earliest {
            wake_at_arrival(world, &mut self.timer, &mut self.waker, now, deliver_at);
        }
    }

    fn pop_delivered(&mut self, now: u64) -> Option<Datagram<M>> {
        if self.queue.peek()?.deliver_at > now {
            return None;
        }
        let InFlight { slot, .. } = self.queue.pop()?;
        let (from, message) = self.slots[slot as usize]
            .take()
            .expect("a queued message's slot holds it");
        self.free_slots.push(slot);
        Some(Datagram { from, message })
    }
}

/// Future returned by [`DatagramEndpoint::recv`].
pub struct DatagramRecv<'a, M> {
    endpoint: &'a DatagramEndpoint<M>,
}

impl<M: Clone + Send + 'static> Future for DatagramRecv<'_, M> {
    type Output = Datagram<M>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Datagram<M>> {
        let inner = &self.endpoint.inner;
        let time = &inner.world.time;
        let now = time::now_nanos(time);
        let mut mailbox = inner.mailboxes[self.endpoint.index].lock();
        if let Some(datagram) = mailbox.pop_delivered(now) {
            return Poll::Ready(datagram);
        }
        if !mailbox
            .waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            mailbox.waker = Some(cx.waker().clone());
        }
        if let Some(deliver_at) = mailbox.queue.peek().map(|top| top.deliver_at) {
            mailbox.timer.arm(&inner.world, deliver_at, cx);
        }
        Poll::Pending
    }
}
