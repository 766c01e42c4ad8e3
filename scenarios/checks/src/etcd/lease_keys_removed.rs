//! The keys attached to a lease are gone once the lease expired or was revoked.
//!
//! etcd: "when a lease expires or is revoked, all keys attached to it are deleted" (etcd API,
//! Lease). A read invoked after the lease ended must not show any key attached to it; a
//! key that outlives its lease lets two clients believe they hold the same lock
//! (etcd-io/etcd#15247, #12528).
//!
//! **Reads:** the clients' reads and lease operations (`Invoke`/`Complete`) and
//! `ProtocolEvent::SessionExpired`, recorded by every replica when it applies the committed
//! expiry. An expiry that is committed ends the lease for every replica that applies it, so a
//! read invoked after the first such record that still shows an attached key is the violation.

use crate::history::views::HistoryViews;
use crate::{Checked, Violation, history::leases::leases};
use sim::{
    NodeId,
    history::{History, OpId, kv::ReadConsistency},
    time::SimTime,
};
use std::fmt;

/// A read shows a key of a lease that had already ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyOutlivedLease {
    /// The lease.
    pub lease: u64,
    /// When it ended.
    pub ended_at: SimTime,
    /// The key still seen.
    pub key: String,
    /// The read that saw it.
    pub read: OpId,
    /// Its client.
    pub reader: NodeId,
    /// When the read was invoked.
    pub read_invoked_at: SimTime,
}

impl fmt::Display for KeyOutlivedLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lease {} ended at {}, but read {} by {} invoked at {} still shows its key {:?}",
            self.lease, self.ended_at, self.read, self.reader, self.read_invoked_at, self.key
        )
    }
}

impl Violation for KeyOutlivedLease {
    fn property(&self) -> &'static str {
        "lease keys removed"
    }

    fn reference(&self) -> &'static str {
        "etcd API (lease: attached keys deleted on expiry/revoke); etcd-io/etcd#15247"
    }

    fn at(&self) -> Option<SimTime> {
        // When the read that saw the key was invoked.
        Some(self.read_invoked_at)
    }
}

/// Every linearizable read that shows a key of a lease that ended before it was invoked.
pub fn check(history: &History) -> Checked<KeyOutlivedLease> {
    check_views(&HistoryViews::new(history))
}

/// What [`check`] finds, reading the history through views the checks share.
pub fn check_views(history: &HistoryViews<'_>) -> Checked<KeyOutlivedLease> {
    let leases = leases(history);
    let kv = history.kv();
    let mut violations = Vec::new();
    let mut judged = 0;
    for read in &kv.reads {
        if read.consistency != ReadConsistency::Linearizable {
            continue;
        }
        for found in read.kvs {
            let Some(lease) = found.lease else { continue };
            judged += 1;
            let Some(ended_at) = leases.get(&lease).and_then(|facts| facts.ended_at()) else {
                continue;
            };
            if ended_at < read.invoked_at {
                violations.push(KeyOutlivedLease {
                    lease,
                    ended_at,
                    key: found.key.clone(),
                    read: read.op_id,
                    reader: read.client,
                    read_invoked_at: read.invoked_at,
                });
            }
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::read_sees_prior_writes::tests::{complete, get, invoke};
    use sim::history::{
        Event, ProtocolEvent, Record,
        kv::{KeyValue, KvOperation, KvResponse},
    };

    fn history(expired_at_ms: u64) -> History {
        History::from_records(vec![
            invoke(1, 1, KvOperation::LeaseGrant { ttl_ms: 100 }),
            complete(
                2,
                1,
                KvResponse::LeaseGrant {
                    lease: 7,
                    ttl_ms: 100,
                },
            ),
            Record {
                at: SimTime::from_millis(expired_at_ms),
                node: Some(NodeId::server(0)),
                event: Event::Protocol(ProtocolEvent::SessionExpired { session: 7 }),
            },
            invoke(200, 2, get("lock")),
            complete(
                201,
                2,
                KvResponse::Get {
                    revision: 3,
                    kvs: vec![KeyValue {
                        key: "lock".into(),
                        value: "me".into(),
                        create_revision: 2,
                        mod_revision: 2,
                        version: 1,
                        lease: Some(7),
                    }],
                },
            ),
        ])
    }

    #[test]
    fn a_key_seen_after_its_lease_expired_is_a_violation() {
        assert_eq!(check(&history(150)).len(), 1);
        assert!(
            check(&history(250)).is_empty(),
            "expired after the read began"
        );
    }
}
