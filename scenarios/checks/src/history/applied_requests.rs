//! Whether a client's request was applied: the requests the clients sent (ZooKeeper's
//! `ZkEvent::RequestSent`: operation, session, xid; etcd's `KvEvent::RequestSent`:
//! operation, the identity the client stamped on the write) matched with the requests the
//! replicas' applied entries name (`Applied`'s `request`: ZooKeeper's transaction header,
//! the stamp an etcd entry keeps).
//!
//! **Reads:** `ZkEvent::RequestSent` and `KvEvent::RequestSent`, recorded by the client
//! libraries when they send a write; `ProtocolEvent::Applied` with a `request`, recorded by
//! each replica for every entry it applies whose change a client request asked for;
//! `Invoke`, to find operations that share an id. Why a checker may rely on the replicas'
//! records: see [`crate::linearizability::resolve`].

use sim::{
    history::{Event, History, OpId, ProtocolEvent, RequestRef, kv::KvEvent, zk::ZkEvent},
    time::SimTime,
};
use std::collections::{BTreeMap, BTreeSet};

/// What the history shows of whether one operation's request took effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestFate {
    /// A replica applied its change first at `at` (one entry, however many replicas).
    Applied {
        /// When the first replica recorded applying it.
        at: SimTime,
    },
    /// It was sent, and no replica applied a change for it.
    NeverApplied,
    /// The history cannot tell: never recorded as sent (it may not have been), or its
    /// identity is ambiguous (several operations share it, it was sent more than once, or
    /// its request was applied as more than one entry).
    Unknown(Ambiguity),
}

/// Why a request's fate is not read from the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ambiguity {
    /// No `RequestSent` names the operation.
    NotRecordedAsSent,
    /// Several invocations carry the operation's id.
    SharedOperationId,
    /// The operation was sent under more than one request, or another operation was sent
    /// under the same one.
    SharedRequest,
    /// Replicas applied the request as more than one entry (different indexes or terms).
    AppliedTwice,
}

/// The requests sent and applied in a history.
#[derive(Debug, Default)]
pub struct AppliedRequests {
    /// Per operation, the requests it was sent as.
    sent: BTreeMap<OpId, Vec<RequestRef>>,
    /// Per request, the operations sent as it.
    senders: BTreeMap<RequestRef, usize>,
    /// Operations invoked more than once under one id.
    shared_ids: BTreeSet<OpId>,
    /// Per request, the entries (term, index) applied for it and when it was first applied.
    applied: BTreeMap<RequestRef, (BTreeSet<(u64, u64)>, SimTime)>,
}

impl AppliedRequests {
    /// Reads `history`'s sent and applied requests.
    pub fn of(history: &History) -> Self {
        let mut requests = Self::default();
        let mut invoked = BTreeSet::new();
        for record in history.records() {
            match &record.event {
                Event::Invoke { op_id, .. } if !invoked.insert(*op_id) => {
                    requests.shared_ids.insert(*op_id);
                }
                Event::Zk(ZkEvent::RequestSent {
                    session,
                    op_id,
                    xid,
                    ..
                }) => requests.sent_as(
                    *op_id,
                    RequestRef {
                        client: *session,
                        sequence: *xid,
                    },
                ),
                Event::Kv(KvEvent::RequestSent { op_id, request, .. }) => {
                    requests.sent_as(*op_id, *request)
                }
                Event::Protocol(ProtocolEvent::Applied {
                    index,
                    term,
                    request: Some(request),
                    ..
                }) => {
                    let (entries, _) = requests
                        .applied
                        .entry(*request)
                        .or_insert_with(|| (BTreeSet::new(), record.at));
                    entries.insert((*term, *index));
                }
                _ => {}
            }
        }
        requests
    }

    fn sent_as(&mut self, op_id: OpId, request: RequestRef) {
        self.sent.entry(op_id).or_default().push(request);
        *self.senders.entry(request).or_default() += 1;
    }

    /// Whether operation `op_id`'s request took effect, as far as the history shows.
    pub fn fate(&self, op_id: OpId) -> RequestFate {
        if self.shared_ids.contains(&op_id) {
            return RequestFate::Unknown(Ambiguity::SharedOperationId);
        }
        let request = match self.sent.get(&op_id).map(Vec::as_slice) {
            None | Some([]) => return RequestFate::Unknown(Ambiguity::NotRecordedAsSent),
            Some([request]) => *request,
            Some(_) => return RequestFate::Unknown(Ambiguity::SharedRequest),
        };
        if self.senders.get(&request).copied().unwrap_or(0) != 1 {
            return RequestFate::Unknown(Ambiguity::SharedRequest);
        }
        match self.applied.get(&request) {
            None => RequestFate::NeverApplied,
            Some((entries, _)) if entries.len() > 1 => {
                RequestFate::Unknown(Ambiguity::AppliedTwice)
            }
            Some((_, first_at)) => RequestFate::Applied { at: *first_at },
        }
    }
}
