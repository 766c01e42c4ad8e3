//! Leases: the replicated table (granted leases, their TTLs and keys) and the leader-local
//! lessor that decides when a lease expires.
//!
//! Time is not replicated: only the leader's lessor keeps deadlines, on its own local clock
//! (etcd's `lessor` is "primary" only on the leader). Keep-alives are not logged: the
//! leader's lessor renews the lease in place ([`Lessor::renew`], etcd v3.5.33
//! `server/lease/lessor.go` `Renew`), after the server has made sure it still leads. When the
//! lessor finds a lease expired the server proposes [`super::StoreCommand::LeaseExpire`];
//! the keys go when that entry is applied, on every replica alike.
//!
//! A new leader must not expire leases early (its predecessor may have renewed them): it
//! extends every lease by an election timeout. Nor may it restart every TTL from scratch
//! (then frequent elections keep abandoned leases alive forever, etcd#9395). So the leader
//! checkpoints, through the log, the remaining time of leases whose TTL is longer than the
//! checkpoint interval, and a new leader starts each lease at its checkpointed remaining
//! time (full TTL if none), as etcd does since #9924. A keep-alive of a checkpointed lease
//! first clears the checkpoint through the log (etcd: "we limit the number of RAFT entries
//! written per lease to a max of 2 per checkpoint interval").

use sim::clock::LocalTime;
use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

/// A granted lease, as every replica knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseRecord {
    /// Time to live, milliseconds.
    pub ttl_ms: u64,
    /// Remaining time at the last checkpoint; `None` after a grant or a checkpoint clear
    /// (full TTL).
    pub checkpointed_remaining_ms: Option<u64>,
    /// Keys attached to the lease.
    pub keys: BTreeSet<String>,
}

/// The replicated lease table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseTable {
    leases: BTreeMap<u64, LeaseRecord>,
}

impl LeaseTable {
    /// The lease, if granted and not revoked or expired.
    pub fn get(&self, lease: u64) -> Option<&LeaseRecord> {
        self.leases.get(&lease)
    }

    /// Every lease.
    pub fn iter(&self) -> impl Iterator<Item = (&u64, &LeaseRecord)> {
        self.leases.iter()
    }

    pub(super) fn grant(&mut self, lease: u64, ttl_ms: u64) {
        self.leases.insert(
            lease,
            LeaseRecord {
                ttl_ms,
                checkpointed_remaining_ms: None,
                keys: BTreeSet::new(),
            },
        );
    }

    pub(super) fn remove(&mut self, lease: u64) -> Option<LeaseRecord> {
        self.leases.remove(&lease)
    }

    /// Records a checkpoint; 0 clears it, as etcd's `remainingTTL` of 0 means "none"
    /// (`Lease.RemainingTTL` falls back to the TTL).
    pub(super) fn checkpoint(&mut self, lease: u64, remaining_ms: u64) {
        if let Some(record) = self.leases.get_mut(&lease) {
            record.checkpointed_remaining_ms = (remaining_ms > 0).then_some(remaining_ms);
        }
    }

    pub(super) fn attach(&mut self, lease: u64, key: &str) {
        if let Some(record) = self.leases.get_mut(&lease) {
            record.keys.insert(key.to_string());
        }
    }

    pub(super) fn detach(&mut self, lease: u64, key: &str) {
        if let Some(record) = self.leases.get_mut(&lease) {
            record.keys.remove(key);
        }
    }
}

/// How a new leader sets the deadlines of existing leases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromotionTtl {
    /// From the checkpointed remaining time (correct).
    Checkpointed,
    /// Full TTL for every lease, and no checkpoints (`etcd.lease_ttl_reset_on_leader_change`).
    ResetToFullTtl,
}

/// What the lessor makes of a keep-alive (etcd v3.5.33 `server/lease/lessor.go` `Renew`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// This lessor is not primary (`ErrNotPrimary`): the client must ask the leader.
    NotPrimary,
    /// The lease is gone (`ErrLeaseNotFound`): the client is answered TTL 0.
    NotFound,
    /// The lease is past its deadline: the renewal waits for the expiry to apply (then
    /// [`Renewal::NotFound`]) or for this lessor's demotion (then [`Renewal::NotPrimary`]),
    /// as etcd's waits on `l.revokec` or `demotec`.
    AwaitExpiry,
    /// The lease has a checkpointed remaining time: clear it through the log first, then
    /// ask again (etcd proposes `Remaining_TTL: 0` and waits for it to apply, so that a
    /// later leader does not start the renewed lease from the stale checkpoint).
    ClearCheckpointFirst,
    /// Renewed: the lease lives its full TTL, `ttl_ms`, from now.
    Renewed {
        /// The lease's TTL, milliseconds.
        ttl_ms: u64,
    },
}

/// The leader-local deadline keeper.
#[derive(Clone, Debug)]
pub struct Lessor {
    promotion: PromotionTtl,
    primary: bool,
    deadlines: BTreeMap<u64, LocalTime>,
    /// Leases whose expiry has been proposed and not yet applied.
    expiring: BTreeSet<u64>,
}

impl Lessor {
    /// A lessor that is not primary.
    pub fn new(promotion: PromotionTtl) -> Self {
        Self {
            promotion,
            primary: false,
            deadlines: BTreeMap::new(),
            expiring: BTreeSet::new(),
        }
    }

    /// Whether this lessor keeps deadlines (this server leads).
    pub fn is_primary(&self) -> bool {
        self.primary
    }

    /// This server became leader: start every lease's clock, `extend` later than its
    /// remaining time (etcd extends by an election timeout, so that renewals sent to the
    /// old leader just before it fell are not lost).
    pub fn promote(&mut self, now: LocalTime, table: &LeaseTable, extend: Duration) {
        self.primary = true;
        self.expiring.clear();
        self.deadlines = table
            .iter()
            .map(|(&lease, record)| {
                let remaining_ms = match self.promotion {
                    PromotionTtl::Checkpointed => {
                        record.checkpointed_remaining_ms.unwrap_or(record.ttl_ms)
                    }
                    PromotionTtl::ResetToFullTtl => record.ttl_ms,
                };
                (lease, now + Duration::from_millis(remaining_ms) + extend)
            })
            .collect();
    }

    /// This server stopped leading: it decides nothing about leases any more.
    pub fn demote(&mut self) {
        self.primary = false;
        self.deadlines.clear();
        self.expiring.clear();
    }

    /// A grant was applied: the lease lives `ttl_ms` from now.
    pub fn granted(&mut self, now: LocalTime, lease: u64, ttl_ms: u64) {
        if self.primary {
            self.deadlines
                .insert(lease, now + Duration::from_millis(ttl_ms));
            self.expiring.remove(&lease);
        }
    }

    /// A keep-alive of `lease` (`table`: the applied lease table), as etcd's `Renew`: only
    /// a primary renews, a lease past its deadline is not renewed (its expiry is or will be
    /// proposed), a checkpointed lease is cleared through the log first; otherwise the lease
    /// lives its full TTL from `now`. The caller has made sure this server still leads
    /// (etcd's `ensureLeadership` in `EtcdServer.LeaseRenew`).
    pub fn renew(&mut self, now: LocalTime, lease: u64, table: &LeaseTable) -> Renewal {
        if !self.primary {
            return Renewal::NotPrimary;
        }
        let Some(record) = table.get(lease) else {
            return Renewal::NotFound;
        };
        let expired = self.expiring.contains(&lease)
            || self
                .deadlines
                .get(&lease)
                .is_some_and(|deadline| *deadline <= now);
        if expired {
            return Renewal::AwaitExpiry;
        }
        // etcd clears only with a checkpointer (`le.cp != nil`); the TTL-reset bug has none.
        if record.checkpointed_remaining_ms.is_some()
            && self.promotion == PromotionTtl::Checkpointed
        {
            return Renewal::ClearCheckpointFirst;
        }
        self.deadlines
            .insert(lease, now + Duration::from_millis(record.ttl_ms));
        Renewal::Renewed {
            ttl_ms: record.ttl_ms,
        }
    }

    /// What a lessor that was not demoted does with a keep-alive
    /// (`etcd.lessor_not_demoted`): it renews any lease it knows, at once.
    pub fn renew_unchecked(&mut self, now: LocalTime, lease: u64, table: &LeaseTable) -> Renewal {
        let Some(record) = table.get(lease) else {
            return Renewal::NotFound;
        };
        self.deadlines
            .insert(lease, now + Duration::from_millis(record.ttl_ms));
        self.expiring.remove(&lease);
        Renewal::Renewed {
            ttl_ms: record.ttl_ms,
        }
    }

    /// A lease was revoked or expired.
    pub fn removed(&mut self, lease: u64) {
        self.deadlines.remove(&lease);
        self.expiring.remove(&lease);
    }

    /// Remaining time of `lease` on this (primary) lessor.
    pub fn remaining(&self, now: LocalTime, lease: u64) -> Option<Duration> {
        self.deadlines
            .get(&lease)
            .map(|deadline| deadline.saturating_duration_since(now))
    }

    /// Leases past their deadline whose expiry is not yet proposed; marks them proposed.
    pub fn take_expired(&mut self, now: LocalTime) -> Vec<u64> {
        if !self.primary {
            return Vec::new();
        }
        let expired: Vec<u64> = self
            .deadlines
            .iter()
            .filter(|(lease, deadline)| **deadline <= now && !self.expiring.contains(lease))
            .map(|(lease, _)| *lease)
            .collect();
        self.expiring.extend(expired.iter().copied());
        expired
    }

    /// The remaining times to checkpoint through the log, every `interval` (none with the
    /// TTL-reset bug, which has no checkpoints). As etcd v3.5.33 `lessor.go`: only leases
    /// whose remaining TTL (checkpointed, else full) is longer than the interval
    /// (`scheduleCheckpointIfNeeded`), and of those only the ones not expired and with less
    /// than their TTL left (`findDueScheduledCheckpoints`). Two differences: etcd keeps a
    /// schedule per lease (due an interval after its grant, promotion or last checkpoint)
    /// where the model checkpoints every due lease at once every interval; and etcd counts
    /// whole seconds where the model counts milliseconds (its TTLs are a few seconds).
    pub fn checkpoints(
        &self,
        now: LocalTime,
        table: &LeaseTable,
        interval: Duration,
    ) -> Vec<(u64, u64)> {
        if !self.primary || self.promotion == PromotionTtl::ResetToFullTtl {
            return Vec::new();
        }
        let interval_ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
        self.deadlines
            .iter()
            .filter_map(|(lease, deadline)| {
                let record = table.get(*lease)?;
                let remaining_ttl_ms = record.checkpointed_remaining_ms.unwrap_or(record.ttl_ms);
                let remaining_ms =
                    u64::try_from(deadline.saturating_duration_since(now).as_millis())
                        .unwrap_or(u64::MAX);
                let due = remaining_ttl_ms > interval_ms
                    && remaining_ms > 0
                    && remaining_ms < record.ttl_ms;
                due.then_some((*lease, remaining_ms))
            })
            .collect()
    }

    /// The earliest deadline, if primary.
    pub fn next_deadline(&self) -> Option<LocalTime> {
        if !self.primary {
            return None;
        }
        self.deadlines
            .iter()
            .filter(|(lease, _)| !self.expiring.contains(lease))
            .map(|(_, deadline)| *deadline)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(millis: u64) -> LocalTime {
        LocalTime::from_millis(millis)
    }

    #[test]
    fn a_new_leader_starts_leases_from_their_checkpoint() {
        let mut table = LeaseTable::default();
        table.grant(7, 1_000);
        table.checkpoint(7, 300);
        let mut correct = Lessor::new(PromotionTtl::Checkpointed);
        correct.promote(ms(5_000), &table, Duration::ZERO);
        assert_eq!(correct.next_deadline(), Some(ms(5_300)));
        let mut buggy = Lessor::new(PromotionTtl::ResetToFullTtl);
        buggy.promote(ms(5_000), &table, Duration::ZERO);
        assert_eq!(buggy.next_deadline(), Some(ms(6_000)));
        assert!(
            buggy
                .checkpoints(ms(5_500), &table, Duration::from_millis(100))
                .is_empty()
        );
        // A keep-alive's checkpoint clear restores the full TTL for the next leader.
        table.checkpoint(7, 0);
        correct.promote(ms(9_000), &table, Duration::from_millis(50));
        assert_eq!(correct.next_deadline(), Some(ms(10_050)));
    }

    #[test]
    fn expiry_is_proposed_once_and_only_by_a_primary() {
        let mut table = LeaseTable::default();
        table.grant(1, 100);
        let mut lessor = Lessor::new(PromotionTtl::Checkpointed);
        assert!(lessor.take_expired(ms(1_000)).is_empty());
        lessor.promote(ms(0), &table, Duration::ZERO);
        assert!(lessor.take_expired(ms(99)).is_empty());
        assert_eq!(lessor.take_expired(ms(100)), vec![1]);
        assert!(lessor.take_expired(ms(200)).is_empty());
        lessor.demote();
        assert_eq!(lessor.next_deadline(), None);
    }

    #[test]
    fn a_keep_alive_renews_in_place_unless_expired_or_checkpointed() {
        let mut table = LeaseTable::default();
        table.grant(1, 1_000);
        let mut lessor = Lessor::new(PromotionTtl::Checkpointed);
        assert_eq!(lessor.renew(ms(0), 1, &table), Renewal::NotPrimary);
        lessor.promote(ms(0), &table, Duration::ZERO);
        assert_eq!(
            lessor.renew(ms(400), 1, &table),
            Renewal::Renewed { ttl_ms: 1_000 }
        );
        assert_eq!(
            lessor.next_deadline(),
            Some(ms(1_400)),
            "the full TTL from now"
        );
        assert_eq!(lessor.renew(ms(400), 2, &table), Renewal::NotFound);
        table.checkpoint(1, 600);
        assert_eq!(
            lessor.renew(ms(800), 1, &table),
            Renewal::ClearCheckpointFirst
        );
        table.checkpoint(1, 0);
        assert_eq!(
            lessor.renew(ms(800), 1, &table),
            Renewal::Renewed { ttl_ms: 1_000 }
        );
        // Past its deadline, and once its expiry is proposed: no renewal.
        assert_eq!(lessor.renew(ms(1_800), 1, &table), Renewal::AwaitExpiry);
        assert_eq!(lessor.take_expired(ms(1_800)), vec![1]);
        assert_eq!(lessor.renew(ms(1_800), 1, &table), Renewal::AwaitExpiry);
        // The TTL-reset bug has no checkpointer, so nothing to clear.
        let mut buggy = Lessor::new(PromotionTtl::ResetToFullTtl);
        buggy.promote(ms(0), &table, Duration::ZERO);
        table.checkpoint(1, 600);
        assert_eq!(
            buggy.renew(ms(100), 1, &table),
            Renewal::Renewed { ttl_ms: 1_000 }
        );
    }

    #[test]
    fn only_leases_longer_than_the_interval_and_partly_used_are_checkpointed() {
        let mut table = LeaseTable::default();
        table.grant(1, 1_000);
        table.grant(2, 400);
        let mut lessor = Lessor::new(PromotionTtl::Checkpointed);
        let interval = Duration::from_millis(500);
        assert!(
            lessor.checkpoints(ms(0), &table, interval).is_empty(),
            "not primary"
        );
        lessor.promote(ms(0), &table, Duration::ZERO);
        assert!(
            lessor.checkpoints(ms(0), &table, interval).is_empty(),
            "a full TTL left is not checkpointed"
        );
        // Lease 2's TTL is not longer than the interval: never checkpointed.
        assert_eq!(
            lessor.checkpoints(ms(300), &table, interval),
            vec![(1, 700)]
        );
        table.checkpoint(1, 450);
        assert!(
            lessor.checkpoints(ms(550), &table, interval).is_empty(),
            "a checkpointed remaining TTL within the interval is not scheduled again"
        );
    }
}
