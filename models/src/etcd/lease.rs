//! Leases: the replicated table (granted leases, their TTLs and keys) and the leader-local
//! lessor that decides when a lease expires.
//!
//! Time is not replicated: only the leader's lessor keeps deadlines, on its own local clock
//! (etcd's `lessor` is "primary" only on the leader). When it finds a lease expired it
//! proposes [`super::StoreCommand::LeaseExpire`]; the keys go when that entry is applied,
//! on every replica alike.
//!
//! A new leader must not expire leases early (its predecessor may have renewed them), nor
//! restart every TTL from scratch (then frequent elections keep abandoned leases alive
//! forever, etcd#9395). So the leader periodically checkpoints each lease's remaining time
//! through the log, and a new leader starts each lease at its checkpointed remaining time
//! (full TTL after a keep-alive), as etcd does since #9924.

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
    /// Remaining time at the last checkpoint; `None` after a grant or keep-alive (full TTL).
    pub checkpointed_remaining_ms: Option<u64>,
    /// Keys attached to the lease.
    pub keys: BTreeSet<String>,
    /// Keep-alives applied so far: an expiry proposed for an older count is void (a
    /// keep-alive won the race in the log).
    pub renewals: u64,
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
                renewals: 0,
            },
        );
    }

    pub(super) fn remove(&mut self, lease: u64) -> Option<LeaseRecord> {
        self.leases.remove(&lease)
    }

    pub(super) fn renew(&mut self, lease: u64) -> Option<u64> {
        let record = self.leases.get_mut(&lease)?;
        record.checkpointed_remaining_ms = None;
        record.renewals += 1;
        Some(record.ttl_ms)
    }

    pub(super) fn checkpoint(&mut self, lease: u64, remaining_ms: u64) {
        if let Some(record) = self.leases.get_mut(&lease) {
            record.checkpointed_remaining_ms = Some(remaining_ms);
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

    /// A grant or keep-alive was applied: the lease lives `ttl_ms` from now.
    pub fn renewed(&mut self, now: LocalTime, lease: u64, ttl_ms: u64) {
        if self.primary {
            self.deadlines
                .insert(lease, now + Duration::from_millis(ttl_ms));
            self.expiring.remove(&lease);
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

    /// The remaining time of every lease, to checkpoint through the log (none with the
    /// TTL-reset bug, which has no checkpoints).
    pub fn checkpoints(&self, now: LocalTime) -> Vec<(u64, u64)> {
        if !self.primary || self.promotion == PromotionTtl::ResetToFullTtl {
            return Vec::new();
        }
        self.deadlines
            .iter()
            .map(|(lease, deadline)| {
                let remaining = deadline.saturating_duration_since(now);
                (
                    *lease,
                    u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX),
                )
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
        assert!(buggy.checkpoints(ms(5_000)).is_empty());
        // A keep-alive restores the full TTL for the next leader.
        table.renew(7);
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
}
