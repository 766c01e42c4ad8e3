//! Liveness: a lease nobody renews expires within its TTL plus a bound.
//!
//! An abandoned lease (its client crashed or stopped renewing) must expire so that the locks
//! and registrations attached to it are released. If every leader change restarted TTLs,
//! frequent elections would keep abandoned leases alive forever (etcd-io/etcd#9395,
//! `etcd.lease_ttl_reset_on_leader_change`; fixed by lease checkpointing, #9924).
//!
//! **Reads:** the client's lease operations (grants, keep-alives, revokes, from
//! `Invoke`/`Complete`) and `ProtocolEvent::SessionExpired`, recorded by every replica when it
//! applies the committed expiry of a lease (see the group doc: only a committed entry counts,
//! and `protocol.replica_agreement` holds the replicas to the same entries).

use crate::{Violation, history::leases::leases};
use sim::{history::History, time::SimTime};
use std::{fmt, time::Duration};

/// A lease outlived its last renewal by more than its TTL plus the bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseNeverExpired {
    /// The lease.
    pub lease: u64,
    /// When it was last renewed (invocation of the last grant or keep-alive).
    pub last_renewed_at: SimTime,
    /// The time by which it should have expired.
    pub deadline: SimTime,
    /// When it did end, if it did.
    pub ended_at: Option<SimTime>,
}

impl fmt::Display for LeaseNeverExpired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lease {} last renewed at {} should have expired by {}, but ",
            self.lease, self.last_renewed_at, self.deadline
        )?;
        match self.ended_at {
            Some(at) => write!(f, "ended only at {at}"),
            None => write!(f, "never ended"),
        }
    }
}

impl Violation for LeaseNeverExpired {
    fn property(&self) -> &'static str {
        "lease expires in bound"
    }

    fn reference(&self) -> &'static str {
        "etcd-io/etcd#9395 (lease TTL reset on leader change), fixed by #9924"
    }

    fn at(&self) -> Option<SimTime> {
        // When the deadline passed.
        Some(self.deadline)
    }
}

/// Every lease not ended within `ttl + bound` of its last possible renewal, among those whose
/// deadline falls before the end of the history.
pub fn check(history: &History, bound: Duration) -> Vec<LeaseNeverExpired> {
    let end = history.records().last().map_or(SimTime::ZERO, |r| r.at);
    let mut violations = Vec::new();
    for (lease, facts) in leases(history) {
        let Some(ttl_ms) = facts.ttl_ms else { continue };
        let Some(last_renewed_at) = facts.renewals.iter().map(|(at, _)| *at).max() else {
            continue;
        };
        let deadline = last_renewed_at + Duration::from_millis(ttl_ms) + bound;
        // A revoke with an unknown outcome may have ended it without an expiry.
        if deadline > end || !facts.maybe_revoked_at.is_empty() {
            continue;
        }
        let ended_at = facts.ended_at();
        if ended_at.is_none_or(|at| at > deadline) {
            violations.push(LeaseNeverExpired {
                lease,
                last_renewed_at,
                deadline,
                ended_at,
            });
        }
    }
    violations
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

    fn history(expired_at_ms: Option<u64>, end_ms: u64) -> History {
        let mut records = vec![
            invoke(0, 1, KvOperation::LeaseGrant { ttl_ms: 1_000 }),
            complete(
                1,
                1,
                KvResponse::LeaseGrant {
                    lease: 3,
                    ttl_ms: 1_000,
                },
            ),
        ];
        if let Some(at) = expired_at_ms {
            records.push(Record {
                at: SimTime::from_millis(at),
                node: Some(NodeId::server(0)),
                event: Event::Protocol(ProtocolEvent::SessionExpired { session: 3 }),
            });
        }
        records.push(Record {
            at: SimTime::from_millis(end_ms),
            node: None,
            event: Event::Note { text: "end".into() },
        });
        History::from_records(records)
    }

    #[test]
    fn an_abandoned_lease_must_expire_within_its_ttl_plus_the_bound() {
        let bound = Duration::from_millis(500);
        assert!(check(&history(Some(1_200), 10_000), bound).is_empty());
        assert_eq!(check(&history(None, 10_000), bound).len(), 1);
        assert_eq!(check(&history(Some(5_000), 10_000), bound).len(), 1);
        assert!(
            check(&history(None, 1_400), bound).is_empty(),
            "the run ended before the deadline"
        );
    }
}
