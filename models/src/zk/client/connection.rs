//! The connection task: connects, reads replies and events, pings, fails pending calls on
//! connection loss, reconnects, and expires or abandons the session.

use super::{
    ClientState, Phase, Registration, SessionExpiry, Shared, Watch, WatchRequest, WatchedEvent,
    ZkClientError, failed, ok, unknown, watchers::ClientHandle,
};
use crate::zk::{
    txn::SessionId,
    wire::{ClientMessage, Refusal},
};
use futures_util::future::{Either, select};
use rand::{Rng, seq::SliceRandom};
use sim::{
    NodeId,
    history::zk::{AddWatchMode, WatchEventType, WatchKind, ZkError, ZkEvent, ZkResponse},
    net::Connection,
};
use std::{sync::Arc, time::Duration};

/// The connection manager: connects, reads replies and events, pings, reconnects.
pub(super) async fn run_connection(shared: Arc<Shared>) {
    let mut servers = shared.config.servers.clone();
    servers.shuffle(
        &mut shared
            .context
            .rng(&format!("zk-client-servers-{}", shared.config.process)),
    );
    let clock = shared.context.clock().clone();
    let mut next = 0usize;
    let mut jitter = shared
        .context
        .rng(&format!("zk-client-backoff-{}", shared.config.process));
    // With `SessionExpiry::AfterDisconnectedTimeout`: when the session is given up unless a
    // connection is made first.
    let mut abandon_at = None;
    loop {
        let connecting = connect(&shared, &servers, &mut next, &mut jitter);
        let connected = match abandon_at {
            Some(at) => {
                let deadline = std::pin::pin!(clock.sleep_until(at));
                match select(std::pin::pin!(connecting), deadline).await {
                    Either::Left((connected, _)) => connected,
                    Either::Right(((), _)) => {
                        abandon(&shared);
                        return;
                    }
                }
            }
            None => connecting.await,
        };
        let Some((connection, server)) = connected else {
            return;
        };
        abandon_at = None;
        let timeout = Duration::from_millis(shared.lock().timeout_ms);
        if serve(&shared, &connection, timeout).await == Continue::Stop {
            connection.close();
            return;
        }
        connection.close();
        disconnected(&shared, server);
        if shared.config.expiry == SessionExpiry::AfterDisconnectedTimeout {
            abandon_at = Some(clock.now() + timeout);
        }
    }
}

/// Tries the servers in turn from `next` until one attaches the session: the connection and
/// its server, or `None` once the session is expired or closed.
///
/// Waits before each attempt as `zookeeper-client` 0.11 does (`IterableEndpoints::timeout`):
/// not at all in the first round, then, with `n` servers, `min(1 s, n × 100 ms) × 2^(round
/// - 1)` plus up to 100 ms of jitter before a round's first server, and `k × 50 ms` plus
/// up to 50 ms before its `k`-th. That client caps each wait at the time left to its
/// session deadline; the model, whose servers decide expiry and whose client may keep
/// trying past it, caps it at one session timeout.
async fn connect(
    shared: &Shared,
    servers: &[NodeId],
    next: &mut usize,
    jitter: &mut impl Rng,
) -> Option<(Connection<ClientMessage>, NodeId)> {
    let me = shared.context.id();
    let clock = shared.context.clock();
    let mut attempt = 0usize;
    loop {
        if matches!(
            shared.lock().phase,
            Phase::Expired | Phase::Closed | Phase::AuthFailed
        ) {
            return None;
        }
        let server = servers[*next % servers.len()];
        *next += 1;
        let session_timeout = Duration::from_millis(shared.lock().timeout_ms);
        let wait = backoff(attempt, servers.len(), jitter).min(session_timeout);
        attempt += 1;
        if !wait.is_zero() {
            clock.sleep(wait).await;
        }
        let (session, timeout_ms, last_zxid, auth) = {
            let state = shared.lock();
            (
                state.session,
                state.timeout_ms,
                state.last_zxid,
                state.auth.clone(),
            )
        };
        let connect_timeout = Duration::from_millis((timeout_ms / servers.len() as u64).max(50));
        let Ok(connection) = shared.network.connect(me, server, connect_timeout).await else {
            continue;
        };
        let hello = ClientMessage::Connect {
            session,
            timeout_ms,
            last_zxid_seen: last_zxid,
            auth,
        };
        if connection.send(hello).is_err() {
            continue;
        }
        match clock.timeout(connect_timeout, connection.recv()).await {
            Ok(Ok(ClientMessage::Connected {
                session: granted,
                timeout_ms,
            })) => {
                return attach(shared, &connection, server, granted, timeout_ms)
                    .then_some((connection, server));
            }
            Ok(Ok(ClientMessage::Refused {
                reason: Refusal::SessionExpired,
            })) => {
                expire(shared);
                return None;
            }
            Ok(Ok(ClientMessage::Refused {
                reason: Refusal::AuthFailed,
            })) => {
                fail_auth(shared, server);
                return None;
            }
            _ => connection.close(),
        }
    }
}

/// The wait before the `attempt`-th try (from 0) of one reconnection among `servers`
/// servers, before the cap (see [`connect`]).
fn backoff(attempt: usize, servers: usize, jitter: &mut impl Rng) -> Duration {
    let (round, offset) = (attempt / servers, attempt % servers);
    if round == 0 {
        return Duration::ZERO;
    }
    let unit = Duration::from_millis(100);
    if offset == 0 {
        let base = Duration::from_secs(1).min(unit * servers as u32);
        // Saturates long before a u32 overflows: the cap is one session timeout.
        let exponent = u32::try_from(round - 1).unwrap_or(u32::MAX).min(16);
        base * 2u32.pow(exponent) + Duration::from_millis(jitter.gen_range(0..100))
    } else {
        unit * offset as u32 / 2 + Duration::from_millis(jitter.gen_range(0..50))
    }
}

/// The session `granted` attached on `connection` to `server`: recorded (established or
/// resumed), watches set again, waiting calls woken. False, with the connection closed, if
/// the client was closed or expired meanwhile.
fn attach(
    shared: &Shared,
    connection: &Connection<ClientMessage>,
    server: NodeId,
    granted: SessionId,
    timeout_ms: u64,
) -> bool {
    let mut state = shared.lock();
    if matches!(
        state.phase,
        Phase::Closed | Phase::Expired | Phase::AuthFailed
    ) {
        connection.close();
        return false;
    }
    state.timeout_ms = timeout_ms;
    let process = shared.config.process;
    match state.session {
        None => shared.record_zk(ZkEvent::SessionEstablished {
            process,
            session: granted,
            timeout_ms,
            server,
        }),
        Some(_) => shared.record_zk(ZkEvent::SessionResumed {
            process,
            session: granted,
            server,
        }),
    }
    state.session = Some(granted);
    resend_watches(&state, connection);
    state.phase = Phase::Connected {
        connection: connection.clone(),
    };
    state.attachment = sim::signal::Signal::new();
    for waiter in state.waiting_for_connection.drain(..) {
        let _ = waiter.try_send(());
    }
    true
}

/// Reads replies and events from `connection` and pings it, until the connection is lost
/// or silent for two thirds of the session `timeout` (`Continue::Yes`: connect again), or a
/// message ends the session (`Continue::Stop`).
async fn serve(
    shared: &Arc<Shared>,
    connection: &Connection<ClientMessage>,
    timeout: Duration,
) -> Continue {
    let clock = shared.context.clock();
    let read_timeout = timeout * 2 / 3;
    let ping_interval = read_timeout / 2;
    let mut last_heard = clock.now();
    let mut next_ping = clock.now() + ping_interval;
    // One sleep for the whole loop, moved only when its deadline moves: a reply rarely
    // moves it (the next ping usually comes first), and a new sleep per reply would add a
    // madsim timer entry per reply that madsim cannot take back.
    let mut sleep = std::pin::pin!(clock.sleep_until(next_ping.min(last_heard + read_timeout)));
    loop {
        let deadline = next_ping.min(last_heard + read_timeout);
        if sleep.deadline() != deadline {
            sleep.as_mut().get_mut().reset(deadline);
        }
        let received = {
            let receive = std::pin::pin!(connection.recv());
            match select(receive, sleep.as_mut()).await {
                Either::Left((received, _)) => Some(received),
                Either::Right(((), _)) => None,
            }
        };
        match received {
            Some(Ok(message)) => {
                last_heard = clock.now();
                if handle_message(shared, message) == Continue::Stop {
                    return Continue::Stop;
                }
            }
            Some(Err(_)) => return Continue::Yes,
            None => {
                let now = clock.now();
                if now >= last_heard + read_timeout {
                    return Continue::Yes;
                }
                if now >= next_ping {
                    next_ping = now + ping_interval;
                    // A failed send means the server closed: keep reading what it sent
                    // before closing; the receive reports the end.
                    let _ = connection.send(ClientMessage::Ping);
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Continue {
    Yes,
    Stop,
}

fn resend_watches(state: &ClientState, connection: &Connection<ClientMessage>) {
    if state.watches.is_empty() {
        return;
    }
    let (mut data, mut exist, mut child) = (Vec::new(), Vec::new(), Vec::new());
    let (mut persistent, mut recursive) = (Vec::new(), Vec::new());
    for (path, kind) in state.watches.keys() {
        match kind {
            WatchKind::Data => data.push(path.clone()),
            WatchKind::Exists => exist.push(path.clone()),
            WatchKind::Children => child.push(path.clone()),
            WatchKind::Persistent => persistent.push(path.clone()),
            WatchKind::PersistentRecursive => recursive.push(path.clone()),
        }
    }
    let _ = connection.send(ClientMessage::SetWatches {
        relative_zxid: state.last_zxid,
        data,
        exist,
        child,
        persistent,
        recursive,
    });
}

fn handle_message(shared: &Arc<Shared>, message: ClientMessage) -> Continue {
    let process = shared.config.process;
    let mut state = shared.lock();
    match message {
        // As `zookeeper-client` (`Session::handle_reply`): an AuthFailed answer to any
        // request ends the session for the client.
        ClientMessage::Reply {
            xid,
            result: Err(ZkError::AuthFailed),
            ..
        } => {
            if let Some(call) = state.pending.remove(&xid) {
                shared.complete(call.op_id, failed(ZkError::AuthFailed));
                let _ = call.reply.try_send(Err(ZkClientError::AuthFailed));
            }
            drop(state);
            let server = match &shared.lock().phase {
                Phase::Connected { connection } => connection.peer(),
                _ => return Continue::Stop,
            };
            fail_auth(shared, server);
            Continue::Stop
        }
        ClientMessage::Reply { xid, zxid, result } => {
            state.last_zxid = state.last_zxid.max(zxid);
            let Some(call) = state.pending.remove(&xid) else {
                return Continue::Yes;
            };
            let outcome = match result {
                Ok(response) => {
                    shared.complete(call.op_id, ok(&response));
                    let watch = call.watch.and_then(|(path, request)| {
                        let kind = match (request, &response) {
                            (WatchRequest::Data, _) => WatchKind::Data,
                            (WatchRequest::Exists, ZkResponse::Exists { stat: Some(_) }) => {
                                WatchKind::Data
                            }
                            (WatchRequest::Exists, _) => WatchKind::Exists,
                            (WatchRequest::Children, _) => WatchKind::Children,
                            (WatchRequest::Persistent(AddWatchMode::Persistent), _) => {
                                WatchKind::Persistent
                            }
                            (WatchRequest::Persistent(AddWatchMode::PersistentRecursive), _) => {
                                WatchKind::PersistentRecursive
                            }
                        };
                        let op_id = call.op_id?;
                        let session = state.session.unwrap_or(0);
                        shared.record_zk(ZkEvent::WatchRegistered {
                            process,
                            session,
                            op_id,
                            path: path.clone(),
                            kind,
                        });
                        // A persistent watch keeps every event until its owner reads it.
                        let (sender, receiver) = match kind.is_persistent() {
                            true => async_channel::unbounded(),
                            false => async_channel::bounded(1),
                        };
                        state
                            .watches
                            .entry((path.clone(), kind))
                            .or_default()
                            .push(Registration { op_id, sender });
                        Some(Watch {
                            receiver,
                            op_id,
                            kind,
                            path,
                            client: ClientHandle::of(shared),
                        })
                    });
                    Ok((response, watch))
                }
                Err(ZkError::SessionExpired) => {
                    shared.complete(call.op_id, failed(ZkError::SessionExpired));
                    Err(ZkClientError::SessionExpired)
                }
                Err(error) => {
                    shared.complete(call.op_id, failed(error.clone()));
                    Err(ZkClientError::Api(error))
                }
            };
            let _ = call.reply.try_send(outcome);
            Continue::Yes
        }
        ClientMessage::WatchEvent { path, event, zxid } => {
            state.last_zxid = state.last_zxid.max(zxid);
            let kinds: &[WatchKind] = match event {
                WatchEventType::NodeCreated | WatchEventType::NodeDataChanged => {
                    &[WatchKind::Data, WatchKind::Exists]
                }
                WatchEventType::NodeDeleted => {
                    &[WatchKind::Data, WatchKind::Exists, WatchKind::Children]
                }
                WatchEventType::NodeChildrenChanged => &[WatchKind::Children],
            };
            let session = state.session.unwrap_or(0);
            let deliver = |registration: &Registration, kind: WatchKind| {
                shared.record_zk(ZkEvent::WatchDelivered {
                    process,
                    session,
                    op_id: registration.op_id,
                    path: path.clone(),
                    kind,
                    event,
                    zxid,
                });
                let _ = registration.sender.try_send(WatchedEvent {
                    path: path.clone(),
                    event,
                    zxid,
                });
            };
            for &kind in kinds {
                let Some(registrations) = state.watches.remove(&(path.clone(), kind)) else {
                    continue;
                };
                for registration in &registrations {
                    deliver(registration, kind);
                }
            }
            // Persistent watches stay set. As `zookeeper-client` routes events
            // (`WatchManager::dispatch_path_event`): a persistent watch on the path gets every
            // event; a recursive one on the path or an ancestor gets all but
            // NodeChildrenChanged, whose path is the parent's.
            let key = (path.clone(), WatchKind::Persistent);
            for registration in state.watches.get(&key).into_iter().flatten() {
                deliver(registration, WatchKind::Persistent);
            }
            if event != WatchEventType::NodeChildrenChanged {
                for watched in crate::zk::path::path_and_ancestors(&path) {
                    let key = (watched.to_string(), WatchKind::PersistentRecursive);
                    for registration in state.watches.get(&key).into_iter().flatten() {
                        deliver(registration, WatchKind::PersistentRecursive);
                    }
                }
            }
            Continue::Yes
        }
        ClientMessage::Closed { xid } => {
            if let Some(call) = state.pending.remove(&xid) {
                let _ = call.reply.try_send(Ok((ZkResponse::Deleted, None)));
            }
            if let Some(session) = state.session {
                shared.record_zk(ZkEvent::SessionClosed { process, session });
            }
            state.phase = Phase::Closed;
            state.attachment.set();
            fail_pending(shared, &mut state, ZkClientError::Closed);
            state.watches.clear();
            Continue::Stop
        }
        ClientMessage::SessionExpired => {
            drop(state);
            expire(shared);
            Continue::Stop
        }
        // Pong, or messages a server does not send once attached.
        _ => Continue::Yes,
    }
}

fn fail_pending(shared: &Shared, state: &mut ClientState, error: ZkClientError) {
    let reason = match error {
        ZkClientError::SessionExpired => "session expired",
        ZkClientError::Closed => "client closed",
        ZkClientError::AuthFailed => "authentication failed",
        _ => "connection loss",
    };
    for (_, call) in std::mem::take(&mut state.pending) {
        shared.complete(call.op_id, unknown(reason));
        let _ = call.reply.try_send(Err(error.clone()));
    }
    if error != ZkClientError::ConnectionLoss {
        // Operations waiting for a connection will never get one.
        for waiter in state.waiting_for_connection.drain(..) {
            let _ = waiter.try_send(());
        }
    }
}

fn expire(shared: &Shared) {
    let mut state = shared.lock();
    if matches!(state.phase, Phase::Expired) {
        return;
    }
    if let Phase::Connected { connection } = &state.phase {
        connection.close();
    }
    state.phase = Phase::Expired;
    state.attachment.set();
    if let Some(session) = state.session {
        shared.record_zk(ZkEvent::SessionExpired {
            process: shared.config.process,
            session,
        });
    }
    fail_pending(shared, &mut state, ZkClientError::SessionExpired);
    // Watches of an expired session never fire: dropping the senders tells their owners.
    state.watches.clear();
}

/// The server refused the client's credentials and closed the connection: the client is
/// done (terminal AUTH_FAILED). Calls in flight may have taken effect (their outcome is
/// unknown); the session lives on at the servers until it expires.
fn fail_auth(shared: &Shared, server: NodeId) {
    let mut state = shared.lock();
    if matches!(
        state.phase,
        Phase::Expired | Phase::Closed | Phase::AuthFailed
    ) {
        return;
    }
    if let Phase::Connected { connection } = &state.phase {
        connection.close();
        if let Some(session) = state.session {
            shared.record_zk(ZkEvent::Disconnected {
                process: shared.config.process,
                session,
                server,
            });
        }
    }
    state.phase = Phase::AuthFailed;
    state.attachment.set();
    fail_pending(shared, &mut state, ZkClientError::AuthFailed);
    state.watches.clear();
}

/// Gives the session up after a session timeout without a connection
/// ([`SessionExpiry::AfterDisconnectedTimeout`]): as an expiry to the client's callers, but
/// recorded as abandoned — the servers were not asked, and may hold the session still.
fn abandon(shared: &Shared) {
    let mut state = shared.lock();
    if matches!(state.phase, Phase::Expired | Phase::Closed) {
        return;
    }
    state.phase = Phase::Expired;
    state.attachment.set();
    if let Some(session) = state.session {
        shared.record_zk(ZkEvent::SessionAbandoned {
            process: shared.config.process,
            session,
        });
    }
    fail_pending(shared, &mut state, ZkClientError::SessionExpired);
    state.watches.clear();
}

fn disconnected(shared: &Shared, server: NodeId) {
    let mut state = shared.lock();
    lose_connection(shared, &mut state, server);
}

/// Drops the current connection (if still current): pending calls fail with ConnectionLoss.
fn lose_connection(shared: &Shared, state: &mut ClientState, server: NodeId) {
    let Phase::Connected { connection } = &state.phase else {
        return;
    };
    connection.close();
    state.phase = Phase::Connecting;
    state.attachment.set();
    if let Some(session) = state.session {
        shared.record_zk(ZkEvent::Disconnected {
            process: shared.config.process,
            session,
            server,
        });
    }
    fail_pending(shared, state, ZkClientError::ConnectionLoss);
}
