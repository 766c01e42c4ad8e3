//! Lease keep-alives, renewed in the leader's lessor without a log entry, as etcd renews
//! them (etcd v3.5.33 `server/etcdserver/v3_server.go` `EtcdServer.LeaseRenew`, and
//! `server/lease/lessor.go` `lessor.Renew`):
//!
//! - a server that does not lead answers "not applied" with its leader hint, and the client
//!   asks the leader (etcd forwards the renewal to the leader over HTTP; the model's client
//!   follows the hint, as for every request a follower cannot serve);
//! - the leader first makes sure it still leads and has applied what is committed: one
//!   ReadIndex round (`ensureLeadership`: `linearizableReadNotify`, then "am I still the
//!   leader"; then `waitAppliedIndex`). ReadIndex also waits for the leader's first entry of
//!   its term to commit, so a new leader has applied every expiry an earlier leader logged
//!   before it renews. etcd added the check in v3.5.13 (#16822, backported for #15247);
//!   from v3.5.16 it skips the round while the member's Raft ticks are recent
//!   (`isActive`), which the model does not: it always takes the round;
//! - then the lessor renews ([`Lessor::renew`]): a lease past its deadline waits for its
//!   expiry to apply (answered TTL 0) or for the lessor's demotion ("not applied"); a lease
//!   with a checkpointed remaining time has it cleared through the log first.

use super::Server;
use crate::etcd::{
    command::StoreCommand, config::EtcdBug, lease::Renewal, protocol::ClientResponse,
    server::LogCommand,
};
use crate::raft::ProposeError;
use sim::history::kv::{KvOperation, KvResponse};

/// A keep-alive the leader has not answered yet.
pub(super) struct PendingRenewal {
    pub(super) connection: u64,
    pub(super) request_id: u64,
    pub(super) lease: u64,
}

/// A checkpoint clear proposed for a keep-alive, which is renewed once it applies.
pub(super) struct PendingClear {
    term: u64,
    renewal: PendingRenewal,
}

impl Server {
    /// A client's keep-alive of `lease`.
    pub(super) fn keep_alive(&mut self, connection: u64, request_id: u64, lease: u64) {
        let renewal = PendingRenewal {
            connection,
            request_id,
            lease,
        };
        if !self.raft.core().is_leader() {
            if self.config.has(EtcdBug::LessorNotDemoted) && self.lessor.is_primary() {
                // The bug: the deposed leader's lessor was never demoted, and renews on its
                // own, without asking Raft whether this server still leads.
                let outcome =
                    self.lessor
                        .renew_unchecked(self.raft.now(), lease, self.machine.leases());
                self.answer_renewal(renewal, outcome);
                return;
            }
            self.answer_renewal(renewal, Renewal::NotPrimary);
            return;
        }
        self.read_after_read_index(
            connection,
            request_id,
            KvOperation::LeaseKeepAlive { lease },
        );
    }

    /// The ReadIndex round of a keep-alive confirmed this server's leadership, and the
    /// state machine has applied through its read index: the lessor renews.
    pub(super) fn renew_confirmed(&mut self, renewal: PendingRenewal) {
        let outcome = if self.raft.core().is_leader() {
            self.lessor
                .renew(self.raft.now(), renewal.lease, self.machine.leases())
        } else {
            Renewal::NotPrimary
        };
        self.answer_renewal(renewal, outcome);
    }

    fn answer_renewal(&mut self, renewal: PendingRenewal, outcome: Renewal) {
        let response = match outcome {
            Renewal::NotPrimary => ClientResponse::NotApplied {
                leader_hint: self.raft.core().leader(),
            },
            // etcd answers a keep-alive of a gone lease with TTL 0, not an error (3.4.23
            // `etcdserver/api/v3rpc/lease.go` `leaseKeepAlive`: `if err ==
            // lease.ErrLeaseNotFound { err = nil; ttl = 0 }`).
            Renewal::NotFound => ClientResponse::Kv(Ok(KvResponse::LeaseKeepAlive { ttl_ms: 0 })),
            Renewal::Renewed { ttl_ms } => {
                ClientResponse::Kv(Ok(KvResponse::LeaseKeepAlive { ttl_ms }))
            }
            Renewal::AwaitExpiry => {
                self.renewals_awaiting_expiry.push(renewal);
                return;
            }
            Renewal::ClearCheckpointFirst => {
                let clear = StoreCommand::LeaseCheckpoint {
                    remaining: vec![(renewal.lease, 0)],
                };
                match self.raft.propose(LogCommand::new(clear)) {
                    Ok(slot) => {
                        self.checkpoint_clears.insert(
                            slot.index,
                            PendingClear {
                                term: slot.term,
                                renewal,
                            },
                        );
                        return;
                    }
                    Err(ProposeError::NotLeader { leader_hint }) => {
                        ClientResponse::NotApplied { leader_hint }
                    }
                }
            }
        };
        self.respond(renewal.connection, renewal.request_id, response);
    }

    /// The entry at `index` of `term` was applied: if it is a keep-alive's checkpoint clear,
    /// the lessor is asked again (the lease may have expired meanwhile).
    pub(super) fn checkpoint_clear_applied(&mut self, index: u64, term: u64) {
        let Some(clear) = self.checkpoint_clears.remove(&index) else {
            return;
        };
        if clear.term == term {
            self.renew_confirmed(clear.renewal);
        } else {
            // Another leader's entry won this index: the clear was never applied.
            self.answer_renewal(clear.renewal, Renewal::NotPrimary);
        }
    }

    /// The expiry (or revocation) of `lease` was applied: renewals that waited for it are
    /// answered TTL 0 (etcd: `<-l.revokec` → `ErrLeaseNotFound`).
    pub(super) fn renewals_lease_removed(&mut self, lease: u64) {
        let waiting = std::mem::take(&mut self.renewals_awaiting_expiry);
        let (gone, still): (Vec<_>, Vec<_>) = waiting
            .into_iter()
            .partition(|renewal| renewal.lease == lease);
        self.renewals_awaiting_expiry = still;
        for renewal in gone {
            self.answer_renewal(renewal, Renewal::NotFound);
        }
    }

    /// This server stopped leading: renewals still waiting are answered "not applied"
    /// (etcd: `<-demotec` → `ErrNotPrimary`, and a checkpoint proposal that fails), so
    /// their clients ask the new leader.
    pub(super) fn renewals_leadership_lost(&mut self) {
        let waiting = std::mem::take(&mut self.renewals_awaiting_expiry);
        let clears = std::mem::take(&mut self.checkpoint_clears);
        let renewals = waiting
            .into_iter()
            .chain(clears.into_values().map(|clear| clear.renewal));
        for renewal in renewals {
            self.answer_renewal(renewal, Renewal::NotPrimary);
        }
    }
}
