//! Building small histories by hand for checker unit tests.

use sim::{
    NodeId,
    history::{
        Event, OpError, OpId, OpResult, Operation, ProtocolEvent, Record, Response,
        zk::{CreateMode, WatchEventType, WatchKind, ZkError, ZkEvent, ZkOperation, ZkResponse},
    },
    time::SimTime,
};

pub const C1: NodeId = NodeId::client(0);
pub const C2: NodeId = NodeId::client(1);

fn at(ms: u64) -> SimTime {
    SimTime::from_millis(ms)
}

pub fn record(ms: u64, node: NodeId, event: Event) -> Record {
    Record {
        at: at(ms),
        node: Some(node),
        event,
    }
}

pub fn established(ms: u64, client: NodeId, session: u64) -> Record {
    record(
        ms,
        client,
        Event::Zk(ZkEvent::SessionEstablished {
            process: 0,
            session,
            timeout_ms: 1000,
            server: NodeId::server(0),
        }),
    )
}

pub fn invoke(ms: u64, client: NodeId, op: u64, operation: ZkOperation) -> Record {
    record(
        ms,
        client,
        Event::Invoke {
            client,
            process: 0,
            op_id: OpId(op),
            operation: Operation::Zk(operation),
        },
    )
}

pub fn ok(ms: u64, client: NodeId, op: u64, response: ZkResponse) -> Record {
    record(
        ms,
        client,
        Event::Complete {
            op_id: OpId(op),
            result: OpResult::Ok {
                response: Response::Zk(response),
            },
        },
    )
}

pub fn fail(ms: u64, client: NodeId, op: u64, error: ZkError) -> Record {
    record(
        ms,
        client,
        Event::Complete {
            op_id: OpId(op),
            result: OpResult::Fail {
                error: OpError::Zk(error),
            },
        },
    )
}

pub fn sync(ms: u64, client: NodeId, op: u64) -> [Record; 2] {
    [
        invoke(ms, client, op, ZkOperation::Sync { path: "/".into() }),
        ok(ms + 1, client, op, ZkResponse::Synced),
    ]
}

pub fn set_data(path: &str, data: &str) -> ZkOperation {
    ZkOperation::SetData {
        path: path.into(),
        data: data.into(),
        version: None,
    }
}

pub fn create(path: &str, mode: CreateMode) -> ZkOperation {
    ZkOperation::Create {
        path: path.into(),
        data: String::new(),
        mode,
    }
}

/// A `create2` reply (the zookeeper-client drop-in's create): the node's path and its new
/// stat, ephemeral to session `owner` (0: not ephemeral).
pub fn created2(path: &str, owner: u64) -> ZkResponse {
    ZkResponse::CreatedWithStat {
        path: path.into(),
        stat: stat(1, 0, owner),
    }
}

pub fn get_data(path: &str) -> ZkOperation {
    ZkOperation::GetData { path: path.into() }
}

pub fn stat(mzxid: u64, version: i32, owner: u64) -> sim::history::zk::Stat {
    sim::history::zk::Stat {
        czxid: 1,
        mzxid,
        pzxid: 1,
        version,
        ephemeral_owner: owner,
        ..Default::default()
    }
}

pub fn registered(ms: u64, client: NodeId, op: u64, path: &str, kind: WatchKind) -> Record {
    record(
        ms,
        client,
        Event::Zk(ZkEvent::WatchRegistered {
            process: 0,
            session: 7,
            op_id: OpId(op),
            path: path.into(),
            kind,
        }),
    )
}

pub fn delivered(ms: u64, client: NodeId, op: u64, path: &str, zxid: u64) -> Record {
    record(
        ms,
        client,
        Event::Zk(ZkEvent::WatchDelivered {
            process: 0,
            session: 7,
            op_id: OpId(op),
            path: path.into(),
            kind: WatchKind::Data,
            event: WatchEventType::NodeDataChanged,
            zxid,
        }),
    )
}

/// A delivery of `event` on `path` to the watch set by `op`, of `kind`.
pub fn delivered_event(
    ms: u64,
    client: NodeId,
    op: u64,
    (kind, event, path): (WatchKind, WatchEventType, &str),
    zxid: u64,
) -> Record {
    record(
        ms,
        client,
        Event::Zk(ZkEvent::WatchDelivered {
            process: 0,
            session: 7,
            op_id: OpId(op),
            path: path.into(),
            kind,
            event,
            zxid,
        }),
    )
}

pub fn removed(ms: u64, client: NodeId, op: u64, path: &str, kind: WatchKind) -> Record {
    record(
        ms,
        client,
        Event::Zk(ZkEvent::WatchRemoved {
            process: 0,
            session: 7,
            op_id: OpId(op),
            path: path.into(),
            kind,
        }),
    )
}

pub fn applied(ms: u64, node: NodeId, index: u64) -> Record {
    record(
        ms,
        node,
        Event::Protocol(ProtocolEvent::Applied {
            index,
            term: index >> 32,
            digest: index,
            request: None,
        }),
    )
}

pub fn lock_step(ms: u64, client: NodeId, step: sim::history::recipe::LockStep) -> Record {
    record(
        ms,
        client,
        Event::Recipe(sim::history::RecipeEvent::Lock {
            process: 0,
            lock: "/lock".into(),
            step,
        }),
    )
}

/// A lock step: the client asked for the lock alone.
pub fn requested() -> sim::history::recipe::LockStep {
    sim::history::recipe::LockStep::Requested {
        mode: sim::history::recipe::LockMode::Exclusive,
    }
}

/// C1's `exists` of `path` (operation `op`) at `ms`, answered a millisecond later with a
/// node of `czxid` owned by session `owner`.
pub fn exists_owned(ms: u64, op: u64, path: &str, owner: u64, czxid: u64) -> [Record; 2] {
    [
        invoke(ms, C1, op, ZkOperation::Exists { path: path.into() }),
        ok(
            ms + 1,
            C1,
            op,
            ZkResponse::Exists {
                stat: Some(sim::history::zk::Stat {
                    czxid,
                    ephemeral_owner: owner,
                    ..sim::history::zk::Stat::default()
                }),
            },
        ),
    ]
}

/// A lock step: the client acquired the lock alone, with `token`.
pub fn exclusive(token: u64) -> sim::history::recipe::LockStep {
    sim::history::recipe::LockStep::Acquired {
        token,
        mode: sim::history::recipe::LockMode::Exclusive,
    }
}

/// A lock step: the client acquired the lock shared with other readers, with `token`.
pub fn shared(token: u64) -> sim::history::recipe::LockStep {
    sim::history::recipe::LockStep::Acquired {
        token,
        mode: sim::history::recipe::LockMode::Shared,
    }
}

pub fn election_step(ms: u64, client: NodeId, step: sim::history::recipe::ElectionStep) -> Record {
    record(
        ms,
        client,
        Event::Recipe(sim::history::RecipeEvent::Election {
            process: 0,
            election: "/election".into(),
            step,
        }),
    )
}

pub fn crash(ms: u64, node: NodeId) -> Record {
    Record {
        at: at(ms),
        node: None,
        event: Event::Fault(sim::history::FaultRecord {
            fault: sim::fault::Fault::Crash { node: node.into() },
            target: Some(node),
            outcome: sim::history::FaultOutcome::Applied {
                cut_links: Vec::new(),
                broken_connections: 0,
                lost_writes: 0,
            },
        }),
    }
}

pub fn resource_write(
    ms: u64,
    writer: NodeId,
    token: Option<u64>,
    verdict: sim::history::ResourceVerdict,
) -> Record {
    record(
        ms,
        NodeId::resource(0),
        Event::Recipe(sim::history::RecipeEvent::ResourceWrite {
            resource: "resource".into(),
            writer,
            process: 0,
            token,
            value: format!("{writer}@{ms}"),
            verdict,
        }),
    )
}

pub fn membership_step(
    ms: u64,
    client: NodeId,
    process: u32,
    step: sim::history::recipe::MembershipStep,
) -> Record {
    record(
        ms,
        client,
        Event::Recipe(sim::history::RecipeEvent::Membership {
            process,
            group: "/group".into(),
            step,
        }),
    )
}

pub fn pubsub_step(
    ms: u64,
    client: NodeId,
    process: u32,
    step: sim::history::recipe::PubSubStep,
) -> Record {
    record(
        ms,
        client,
        Event::Recipe(sim::history::RecipeEvent::PubSub {
            process,
            topic: "/topic".into(),
            step,
        }),
    )
}

/// A ZooKeeper session (timeout 1 s) established for `process` on `client`.
pub fn zk_session(ms: u64, client: NodeId, process: u32, session: u64) -> Record {
    record(
        ms,
        client,
        Event::Zk(ZkEvent::SessionEstablished {
            process,
            session,
            timeout_ms: 1000,
            server: NodeId::server(0),
        }),
    )
}

/// `process` on `client` told that its session expired.
pub fn zk_session_ended(ms: u64, client: NodeId, process: u32, session: u64) -> Record {
    record(
        ms,
        client,
        Event::Zk(ZkEvent::SessionExpired { process, session }),
    )
}

/// A lease grant by `process` on `client`, acknowledged with `lease`.
pub fn lease_granted(ms: u64, client: NodeId, process: u32, op: u64, lease: u64) -> [Record; 2] {
    use sim::history::kv::{KvOperation, KvResponse};
    [
        record(
            ms,
            client,
            Event::Invoke {
                client,
                process,
                op_id: OpId(op),
                operation: Operation::Kv(KvOperation::LeaseGrant { ttl_ms: 1000 }),
            },
        ),
        record(
            ms + 1,
            client,
            Event::Complete {
                op_id: OpId(op),
                result: OpResult::Ok {
                    response: Response::Kv(KvResponse::LeaseGrant {
                        lease,
                        ttl_ms: 1000,
                    }),
                },
            },
        ),
    ]
}

/// A replica applied the committed expiry of `lease`.
pub fn lease_expired(ms: u64, lease: u64) -> Record {
    record(
        ms,
        NodeId::server(0),
        Event::Protocol(ProtocolEvent::SessionExpired { session: lease }),
    )
}

/// The run driver healed everything.
pub fn healed(ms: u64) -> Record {
    Record {
        at: at(ms),
        node: None,
        event: Event::Phase(sim::history::PhaseEvent::Healed),
    }
}
