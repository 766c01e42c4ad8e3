//! The lease operations and expiries of a history (pure; `sim::history::kv` vocabulary).

use sim::{
    history::{
        Event, History, OpResult, Operation, ProtocolEvent, Response,
        kv::{KvOperation, KvResponse},
    },
    time::SimTime,
};
use std::collections::BTreeMap;

/// What a history says about one lease.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseFacts {
    /// Time to live granted, milliseconds.
    pub ttl_ms: Option<u64>,
    /// Grants and keep-alives that may have renewed it (acknowledged or unknown outcome),
    /// in invocation order.
    pub renewals: Vec<Renewal>,
    /// When replicas applied its committed expiry (`ProtocolEvent::SessionExpired`, one
    /// record per replica that applied it).
    pub expired_at: Vec<SimTime>,
    /// When a revoke of it was acknowledged.
    pub revoked_at: Vec<SimTime>,
    /// When revokes whose outcome is unknown were invoked (each may have ended the lease).
    pub maybe_revoked_at: Vec<SimTime>,
}

impl LeaseFacts {
    /// When the lease ended (first expiry or acknowledged revoke), if it did.
    pub fn ended_at(&self) -> Option<SimTime> {
        self.expired_at
            .iter()
            .chain(&self.revoked_at)
            .min()
            .copied()
    }
}

/// A grant or keep-alive that may have renewed a lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Renewal {
    /// When the client invoked it.
    pub invoked_at: SimTime,
    /// When the client got its acknowledgement (none: the outcome is unknown, so it may or
    /// may not have renewed the lease, at any time after `invoked_at`).
    pub acknowledged_at: Option<SimTime>,
}

/// Facts about every lease granted in `history`, by lease id.
pub fn leases(history: &History) -> BTreeMap<u64, LeaseFacts> {
    let mut leases: BTreeMap<u64, LeaseFacts> = BTreeMap::new();
    for record in history.operations() {
        let Operation::Kv(operation) = record.operation else {
            continue;
        };
        let result = record.completion.map(|(_, result)| result);
        let acknowledged_at = match record.completion {
            Some((at, OpResult::Ok { .. })) => Some(at),
            _ => None,
        };
        let renewal = Renewal {
            invoked_at: record.invoked_at,
            acknowledged_at,
        };
        match (operation, result) {
            (
                KvOperation::LeaseGrant { .. },
                Some(OpResult::Ok {
                    response: Response::Kv(KvResponse::LeaseGrant { lease, ttl_ms }),
                }),
            ) => {
                let facts = leases.entry(*lease).or_default();
                facts.ttl_ms = Some(*ttl_ms);
                facts.renewals.push(renewal);
            }
            // A keep-alive answered TTL 0 found the lease gone: it renewed nothing.
            (KvOperation::LeaseKeepAlive { lease }, result)
                if !matches!(result, Some(OpResult::Fail { .. }))
                    && !matches!(result, Some(OpResult::Ok { response: Response::Kv(response) })
                        if response.says_lease_gone()) =>
            {
                leases.entry(*lease).or_default().renewals.push(renewal);
            }
            (KvOperation::LeaseRevoke { lease }, Some(OpResult::Ok { .. })) => {
                let (at, _) = record.completion.expect("a result has a completion");
                leases.entry(*lease).or_default().revoked_at.push(at);
            }
            (KvOperation::LeaseRevoke { lease }, None | Some(OpResult::Unknown { .. })) => {
                leases
                    .entry(*lease)
                    .or_default()
                    .maybe_revoked_at
                    .push(record.invoked_at);
            }
            _ => {}
        }
    }
    for record in history.records() {
        if let Event::Protocol(ProtocolEvent::SessionExpired { session }) = &record.event
            && let Some(facts) = leases.get_mut(session)
        {
            facts.expired_at.push(record.at);
        }
    }
    leases
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::read_sees_prior_writes::tests::{complete, invoke};

    /// etcd answers a keep-alive of a gone lease with TTL 0 and no error: that renewed
    /// nothing, so it is no renewal (else a lease that expired before it would look renewed
    /// after its expiry).
    #[test]
    fn a_keep_alive_answered_ttl_zero_is_no_renewal() {
        let history = History::from_records(vec![
            invoke(0, 1, KvOperation::LeaseGrant { ttl_ms: 1_000 }),
            complete(
                1,
                1,
                KvResponse::LeaseGrant {
                    lease: 3,
                    ttl_ms: 1_000,
                },
            ),
            invoke(500, 2, KvOperation::LeaseKeepAlive { lease: 3 }),
            complete(501, 2, KvResponse::LeaseKeepAlive { ttl_ms: 1_000 }),
            invoke(3_000, 3, KvOperation::LeaseKeepAlive { lease: 3 }),
            complete(3_001, 3, KvResponse::LeaseKeepAlive { ttl_ms: 0 }),
        ]);
        let renewed_at: Vec<u64> = leases(&history)[&3]
            .renewals
            .iter()
            .map(|renewal| renewal.invoked_at.as_millis())
            .collect();
        assert_eq!(renewed_at, [0, 500]);
    }
}
