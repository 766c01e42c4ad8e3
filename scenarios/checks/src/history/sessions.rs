//! Reading a history's ZooKeeper sessions as their clients and the leader saw them: where
//! each client attached its session (established or resumed, recorded by the client
//! library), when a client was told its session expired (by the client library), and which
//! expiries the leader committed (recorded by the leader as `SessionExpired`).

use sim::{
    NodeId,
    history::{Event, History, ProtocolEvent, zk::ZkEvent},
    time::SimTime,
};

/// How a client attached to a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// A new session, with the timeout the server granted.
    Established {
        /// The negotiated session timeout, milliseconds.
        timeout_ms: u64,
    },
    /// Its existing session, after losing its connection.
    Resumed,
}

/// A client attaching its session to a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attachment {
    /// When.
    pub at: SimTime,
    /// The client node.
    pub client: NodeId,
    /// The session.
    pub session: u64,
    /// The server it attached to.
    pub server: NodeId,
    /// A new session or a resumed one.
    pub attach: Attach,
}

/// Every attachment, in order.
pub fn attachments(history: &History) -> Vec<Attachment> {
    history
        .records()
        .iter()
        .filter_map(|record| {
            let client = record.node?;
            let (session, server, attach) = match &record.event {
                Event::Zk(ZkEvent::SessionEstablished {
                    session,
                    server,
                    timeout_ms,
                    ..
                }) => (
                    *session,
                    *server,
                    Attach::Established {
                        timeout_ms: *timeout_ms,
                    },
                ),
                Event::Zk(ZkEvent::SessionResumed {
                    session, server, ..
                }) => (*session, *server, Attach::Resumed),
                _ => return None,
            };
            Some(Attachment {
                at: record.at,
                client,
                session,
                server,
                attach,
            })
        })
        .collect()
}

/// The sessions whose clients were told they expired: (when, client, session).
pub fn told_expired(history: &History) -> Vec<(SimTime, NodeId, u64)> {
    history
        .records()
        .iter()
        .filter_map(|record| match (&record.event, record.node) {
            (Event::Zk(ZkEvent::SessionExpired { session, .. }), Some(client)) => {
                Some((record.at, client, *session))
            }
            _ => None,
        })
        .collect()
}

/// The expiries the leader committed: (when, session).
pub fn committed_expiries(history: &History) -> Vec<(SimTime, u64)> {
    history
        .records()
        .iter()
        .filter_map(|record| match &record.event {
            Event::Protocol(ProtocolEvent::SessionExpired { session }) => {
                Some((record.at, *session))
            }
            _ => None,
        })
        .collect()
}
