//! FIFO connections, as TCP gives them: in order, no loss, no duplicates, and a break
//! that both ends observe.
//!
//! A connection is an *epoch*: once broken (partition, clog, crash) or closed it stays
//! broken, and nothing sent on it is delivered afterwards; reconnecting creates a new
//! connection with a new id. A partition or one-way clog between the two ends breaks the
//! connection at once (both ends' pending receives return [`ConnectionBroken`]); a pause does
//! not (messages wait for the paused node, as in a kernel buffer).

use super::{
    ArrivalTimer,
    broken::{BreakReason, ConnectionBroken},
};
use crate::{
    node::NodeId,
    shared::Shared,
    time,
    world::state::{Breakable, CrashHook, WorldShared},
};
use std::{
    collections::VecDeque,
    fmt,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, Waker},
    time::Duration,
};

impl std::error::Error for ConnectionBroken {}

/// A connection attempt failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectError {
    /// The destination is crashed or not listening.
    Refused,
    /// No answer within the timeout (the destination is cut off).
    TimedOut,
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Refused => write!(f, "connection refused"),
            ConnectError::TimedOut => write!(f, "connection attempt timed out"),
        }
    }
}

impl std::error::Error for ConnectError {}

/// A network of FIFO connections carrying messages of type `M`.
pub struct StreamNetwork<M> {
    inner: Arc<StreamInner<M>>,
}

impl<M> Clone for StreamNetwork<M> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

struct StreamInner<M> {
    world: Arc<WorldShared>,
    listeners: Vec<Shared<ListenerSlot<M>>>,
}

struct ListenerSlot<M> {
    listening: bool,
    backlog: VecDeque<Connection<M>>,
    waker: Option<Waker>,
}

impl<M: Send + 'static> CrashHook for StreamInner<M> {
    fn on_crash(&self, index: usize) -> u64 {
        let backlog = {
            let mut slot = self.listeners[index].lock();
            slot.listening = false;
            slot.waker = None;
            std::mem::take(&mut slot.backlog)
        };
        // Dropped outside the slot lock: dropping a connection end takes its own lock.
        drop(backlog);
        0
    }
}

impl<M: Send + 'static> StreamNetwork<M> {
    pub(crate) fn new(world: Arc<WorldShared>) -> Self {
        let listeners = (0..world.nodes.len())
            .map(|_| {
                Shared::new(ListenerSlot {
                    listening: false,
                    backlog: VecDeque::new(),
                    waker: None,
                })
            })
            .collect();
        let inner = Arc::new(StreamInner { world, listeners });
        let hook: Arc<dyn CrashHook> = inner.clone();
        inner.world.register_crash_hook(&hook);
        Self { inner }
    }

    /// Starts accepting connections on `node` (again, after a restart).
    pub fn listen(&self, node: NodeId) -> Listener<M> {
        let index = self.inner.world.index(node);
        self.inner.listeners[index].lock().listening = true;
        Listener {
            network: self.clone(),
            index,
        }
    }

    /// Connects `from` to `to`. Takes a round trip; fails with [`ConnectError::Refused`]
    /// if `to` is crashed or not listening, and with [`ConnectError::TimedOut`] after
    /// `timeout` (global time) if `to` is cut off.
    pub async fn connect(
        &self,
        from: NodeId,
        to: NodeId,
        timeout: Duration,
    ) -> Result<Connection<M>, ConnectError> {
        enum Attempt {
            Refused(Duration),
            Unreachable,
            Handshake(Duration),
        }
        let world = &self.inner.world;
        let (from_index, to_index) = (world.index(from), world.index(to));
        let attempt = {
            let mut state = world.state.lock();
            if state.is_crashed(to_index) {
                Attempt::Refused(state.sample_latency() * 2)
            } else if !state.reachable(from_index, to_index) {
                Attempt::Unreachable
            } else {
                Attempt::Handshake(state.sample_latency() + state.sample_latency())
            }
        };
        let round_trip = match attempt {
            Attempt::Refused(round_trip) => {
                time::sleep(round_trip.min(timeout)).await;
                return Err(ConnectError::Refused);
            }
            Attempt::Unreachable => {
                time::sleep(timeout).await;
                return Err(ConnectError::TimedOut);
            }
            Attempt::Handshake(round_trip) if round_trip > timeout => {
                time::sleep(timeout).await;
                return Err(ConnectError::TimedOut);
            }
            Attempt::Handshake(round_trip) => round_trip,
        };
        time::sleep(round_trip).await;
        // The world may have changed during the handshake.
        let still_reachable = {
            let state = world.state.lock();
            if state.is_crashed(to_index) {
                Some(ConnectError::Refused)
            } else if !state.reachable(from_index, to_index) {
                Some(ConnectError::TimedOut)
            } else {
                None
            }
        };
        if let Some(error) = still_reachable {
            if error == ConnectError::TimedOut {
                time::sleep(timeout.saturating_sub(round_trip)).await;
            }
            return Err(error);
        }
        if !self.inner.listeners[to_index].lock().listening {
            return Err(ConnectError::Refused);
        }
        let id = world.state.lock().allocate_connection_id();
        let shared = Arc::new(ConnectionShared {
            id,
            nodes: [from, to],
            world: world.clone(),
            state: Shared::new(ConnectionState::default()),
        });
        let breakable: Arc<dyn Breakable> = shared.clone();
        world.state.lock().register_connection(
            id,
            [from_index, to_index],
            Arc::downgrade(&breakable),
        );
        let accepted = Connection::end(shared.clone(), 1);
        let initiated = Connection::end(shared, 0);
        {
            let mut slot = self.inner.listeners[to_index].lock();
            slot.backlog.push_back(accepted);
            if let Some(waker) = slot.waker.take() {
                waker.wake();
            }
        }
        Ok(initiated)
    }
}

/// Accepts connections on one node.
pub struct Listener<M> {
    network: StreamNetwork<M>,
    index: usize,
}

impl<M: Send + 'static> Listener<M> {
    /// Waits for the next incoming connection.
    pub async fn accept(&self) -> Connection<M> {
        std::future::poll_fn(|cx| {
            let mut slot = self.network.inner.listeners[self.index].lock();
            if let Some(connection) = slot.backlog.pop_front() {
                return Poll::Ready(connection);
            }
            slot.waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

enum Frame<M> {
    Message(M),
    /// The sender closed the connection after everything before this frame.
    Closed,
}

struct ConnectionShared<M> {
    id: u64,
    /// `[initiator, acceptor]`.
    nodes: [NodeId; 2],
    world: Arc<WorldShared>,
    state: Shared<ConnectionState<M>>,
}

struct ConnectionState<M> {
    /// `inbound[side]`: frames travelling to `side`, in arrival order, with their arrival
    /// times (nanoseconds since the world started).
    inbound: [VecDeque<(u64, Frame<M>)>; 2],
    last_arrival: [Option<u64>; 2],
    wakers: [Option<Waker>; 2],
    timers: [ArrivalTimer; 2],
    broken: Option<BreakReason>,
}

impl<M> Default for ConnectionState<M> {
    fn default() -> Self {
        Self {
            inbound: [VecDeque::new(), VecDeque::new()],
            last_arrival: [None, None],
            wakers: [None, None],
            timers: [ArrivalTimer::default(), ArrivalTimer::default()],
            broken: None,
        }
    }
}

impl<M> ConnectionState<M> {
    fn wake_both(&mut self) {
        for waker in self.wakers.iter_mut().filter_map(Option::take) {
            waker.wake();
        }
    }
}

impl<M: Send> Breakable for ConnectionShared<M> {
    fn break_abruptly(&self, reason: BreakReason) -> Option<u64> {
        let (discarded, frames) = {
            let mut state = self.state.lock();
            match state.broken {
                None => {}
                // Closed, but frames still in flight: a break still discards them.
                Some(BreakReason::Closed { .. }) if state.inbound.iter().any(|q| !q.is_empty()) => {
                }
                Some(_) => return None,
            }
            state.broken = Some(reason);
            let frames = std::mem::take(&mut state.inbound);
            state.wake_both();
            let discarded = frames
                .iter()
                .flatten()
                .filter(|(_, frame)| matches!(frame, Frame::Message(_)))
                .count() as u64;
            (discarded, frames)
        };
        drop(frames);
        Some(discarded)
    }
}

/// One end of a FIFO connection. Clones share the end; when the last clone is dropped the
/// end is closed (the peer receives what was sent before, then [`BreakReason::Closed`]).
pub struct Connection<M> {
    end: Arc<ConnectionEnd<M>>,
}

impl<M> Clone for Connection<M> {
    fn clone(&self) -> Self {
        Self {
            end: self.end.clone(),
        }
    }
}

struct ConnectionEnd<M> {
    shared: Arc<ConnectionShared<M>>,
    side: usize,
}

impl<M> Drop for ConnectionEnd<M> {
    fn drop(&mut self) {
        close(&self.shared, self.side);
    }
}

fn close<M>(shared: &ConnectionShared<M>, side: usize) {
    let now = time::now_nanos(&shared.world.time);
    let mut state = shared.state.lock();
    if state.broken.is_some() {
        return;
    }
    let by = shared.nodes[side];
    state.broken = Some(BreakReason::Closed { by });
    let peer = 1 - side;
    let at = state.last_arrival[peer].map_or(now, |last| last.max(now));
    state.inbound[peer].push_back((at, Frame::Closed));
    if let Some(waker) = state.wakers[peer].take() {
        waker.wake();
    }
}

impl<M> fmt::Debug for Connection<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.end.shared.id)
            .field("local", &self.local())
            .field("peer", &self.peer())
            .finish()
    }
}

impl<M> Connection<M> {
    fn end(shared: Arc<ConnectionShared<M>>, side: usize) -> Self {
        Self {
            end: Arc::new(ConnectionEnd { shared, side }),
        }
    }

    /// The connection's id: unique in the run, so a reconnect is a new epoch.
    pub fn id(&self) -> u64 {
        self.end.shared.id
    }

    /// This end's node.
    pub fn local(&self) -> NodeId {
        self.end.shared.nodes[self.end.side]
    }

    /// The other end's node.
    pub fn peer(&self) -> NodeId {
        self.end.shared.nodes[1 - self.end.side]
    }

    /// Whether the connection is broken or closed (as far as this end knows).
    pub fn is_broken(&self) -> bool {
        self.end.shared.state.lock().broken.is_some()
    }

    /// Closes this end now (as dropping the last clone would).
    pub fn close(&self) {
        close(&self.end.shared, self.end.side);
    }
}

impl<M: Send + 'static> Connection<M> {
    /// Sends `message`; it arrives after everything sent before it.
    pub fn send(&self, message: M) -> Result<(), ConnectionBroken> {
        let shared = &self.end.shared;
        let peer = 1 - self.end.side;
        let latency = {
            let mut world = shared.world.state.lock();
            world.counts.messages_sent += 1;
            world.sample_latency()
        };
        let now = time::now_nanos(&shared.world.time);
        let mut state = shared.state.lock();
        if let Some(reason) = state.broken {
            return Err(ConnectionBroken { reason });
        }
        let arrival = now.saturating_add(time::duration_nanos(latency));
        let at = match state.last_arrival[peer] {
            Some(last) => last.max(arrival),
            None => arrival,
        };
        state.last_arrival[peer] = Some(at);
        state.inbound[peer].push_back((at, Frame::Message(message)));
        if state.inbound[peer].len() == 1 {
            let state = &mut *state;
            super::wake_at_arrival(
                &shared.world,
                &mut state.timers[peer],
                &mut state.wakers[peer],
                now,
                at,
            );
        }
        Ok(())
    }

    /// Receives the next message, or the break.
    pub fn recv(&self) -> ConnectionRecv<'_, M> {
        ConnectionRecv { connection: self }
    }
}

/// Future returned by [`Connection::recv`].
pub struct ConnectionRecv<'a, M> {
    connection: &'a Connection<M>,
}

impl<M: Send + 'static> Future for ConnectionRecv<'_, M> {
    type Output = Result<M, ConnectionBroken>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let end = &self.connection.end;
        let side = end.side;
        let world = &end.shared.world;
        let now = time::now_nanos(&world.time);
        let mut guard = end.shared.state.lock();
        let state = &mut *guard;
        match state.inbound[side].front() {
            Some((at, _)) if *at <= now => {
                let (_, frame) = state.inbound[side].pop_front().expect("front exists");
                return Poll::Ready(match frame {
                    Frame::Message(message) => Ok(message),
                    Frame::Closed => Err(ConnectionBroken {
                        reason: state.broken.unwrap_or(BreakReason::Closed {
                            by: end.shared.nodes[1 - side],
                        }),
                    }),
                });
            }
            Some((at, _)) => {
                let at = *at;
                state.timers[side].arm(world, at, cx);
            }
            None => {
                if let Some(reason) = state.broken {
                    return Poll::Ready(Err(ConnectionBroken { reason }));
                }
            }
        }
        state.wakers[side] = Some(cx.waker().clone());
        Poll::Pending
    }
}
