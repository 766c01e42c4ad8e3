//! A lease is not expired before its time to live has passed since its last renewal.
//!
//! etcd grants a lease for a TTL and each keep-alive renews it for the full TTL; a leader
//! expires a lease only once it went unrenewed that long on its clock — and a new leader
//! must not expire leases early after an election (etcd extends leases on promotion and
//! checkpoints remaining TTLs, etcd-io/etcd#9924). Expiring early deletes a live client's
//! lock key. `allowed_drift_ppm` covers clock-rate differences between nodes; runs with
//! clock *steps* can legitimately break this property and should not be checked with it.
//!
//! **Reads:** the clients' grants and keep-alives (`Invoke`/`Complete`, the client's view of
//! when each renewal was acknowledged) and `ProtocolEvent::SessionExpired`, recorded by every
//! replica when it applies the committed expiry: the earliest replica's apply is compared with
//! the latest renewal a client saw acknowledged.

use crate::{Checked, Violation, history::leases::leases};
use sim::{history::History, time::SimTime};
use std::{fmt, time::Duration};

/// A lease expired too soon after a renewal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpiredEarly {
    /// The lease.
    pub lease: u64,
    /// When a renewal was invoked.
    pub renewed_at: SimTime,
    /// Its time to live, milliseconds.
    pub ttl_ms: u64,
    /// When the lease was expired.
    pub expired_at: SimTime,
}

impl fmt::Display for ExpiredEarly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lease {} renewed (TTL {} ms) at {} but expired at {}",
            self.lease, self.ttl_ms, self.renewed_at, self.expired_at
        )
    }
}

impl Violation for ExpiredEarly {
    fn property(&self) -> &'static str {
        "lease not expired early"
    }

    fn reference(&self) -> &'static str {
        "etcd API (lease TTL, keep-alive); etcd-io/etcd#9924 (lease checkpointing)"
    }

    fn at(&self) -> Option<SimTime> {
        // The early expiry.
        Some(self.expired_at)
    }
}

/// Every expiry that comes less than a TTL (less drift) after an acknowledged renewal.
pub fn check(history: &History, allowed_drift_ppm: u64) -> Checked<ExpiredEarly> {
    let mut violations = Vec::new();
    let mut judged = 0;
    for (lease, facts) in leases(history) {
        let Some(ttl_ms) = facts.ttl_ms else { continue };
        let ttl = Duration::from_millis(ttl_ms);
        let slack = ttl * u32::try_from(allowed_drift_ppm).unwrap_or(u32::MAX) / 1_000_000;
        for &expired_at in &facts.expired_at {
            judged += 1;
            let latest = facts
                .renewals
                .iter()
                .filter(|renewal| {
                    renewal.acknowledged_at.is_some() && renewal.invoked_at <= expired_at
                })
                .map(|renewal| renewal.invoked_at)
                .max();
            if let Some(renewed_at) = latest
                && expired_at + slack < renewed_at + ttl
            {
                violations.push(ExpiredEarly {
                    lease,
                    renewed_at,
                    ttl_ms,
                    expired_at,
                });
            }
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::read_sees_prior_writes::tests::{complete, invoke};
    use sim::{
        NodeId,
        history::{
            Event, ProtocolEvent, Record,
            kv::{KvOperation, KvResponse},
        },
    };

    fn history(keep_alive_at_ms: u64, expired_at_ms: u64) -> History {
        History::from_records(vec![
            invoke(0, 1, KvOperation::LeaseGrant { ttl_ms: 1_000 }),
            complete(
                1,
                1,
                KvResponse::LeaseGrant {
                    lease: 3,
                    ttl_ms: 1_000,
                },
            ),
            invoke(
                keep_alive_at_ms,
                2,
                KvOperation::LeaseKeepAlive { lease: 3 },
            ),
            complete(
                keep_alive_at_ms + 1,
                2,
                KvResponse::LeaseKeepAlive { ttl_ms: 1_000 },
            ),
            Record {
                at: SimTime::from_millis(expired_at_ms),
                node: Some(NodeId::server(0)),
                event: Event::Protocol(ProtocolEvent::SessionExpired { session: 3 }),
            },
        ])
    }

    #[test]
    fn expiring_within_a_ttl_of_a_keep_alive_is_early() {
        assert!(check(&history(500, 1_600), 100).is_empty());
        let early = check(&history(500, 1_200), 100);
        assert_eq!(early.len(), 1);
        assert_eq!(early[0].renewed_at, SimTime::from_millis(500));
    }
}
