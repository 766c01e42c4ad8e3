//! The judges: checkers, the history readers they share, and the linearizability checker.
//!
//! Every checker is a pure function of a recorded [`sim::history::History`]: it never looks
//! inside a model, and this crate does not depend on `models` at all (Cargo enforces what
//! habit used to), so a model bug cannot leak into the oracle. Each module checks one
//! property and returns typed violations that cite where the property comes from.
//!
//! Checkers are grouped by what they judge:
//! - [`protocol`]: consensus-level properties of any store whose servers record
//!   `BecameLeader`, `TermChanged` and `Applied` (Raft terms and log indexes, ZAB epochs and
//!   zxids);
//! - [`etcd`]: the etcd-like key-value store (reads, writes, leases, watches);
//! - [`zk`]: the ZooKeeper-like store (znodes, sessions, watches);
//! - [`recipes`]: the coordination recipes (mutual exclusion as believed and at the fenced
//!   resource, the herd effect, leader uniqueness as believed, discovery views converging,
//!   pub/sub delivery);
//! - [`linearizability`]: the Wing–Gong–Lowe search and its models;
//! - [`history`]: typed views of a history that several checkers share.
//!
//! Each group has one public check set ([`protocol::CHECKS`], [`etcd::CHECKS`],
//! [`zk::CHECKS`]); [`by_name`] finds a check by its stable name (`protocol.leader_uniqueness`,
//! `etcd.linearizable`, `zk.sync_then_read`, …), as scenario files name them.
#![deny(missing_docs)]

mod checked;
pub mod coverage;
pub mod etcd;
pub mod history;
pub mod linearizability;
pub mod protocol;
pub mod recipes;
#[cfg(test)]
mod test_history;
mod violation;
pub mod zk;

pub use checked::{Checked, Verdict};
pub use violation::{Violation, boxed};

use history::views::HistoryViews;
use sim::history::History;
use std::time::Duration;

/// What a check may need to know about a run beyond its history's events. Everything else
/// (when the final reads began, which faults fired) is read from the history itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckContext {
    /// ZooKeeper watches count as missed only for changes acknowledged at least this long
    /// before the end of the run (a notification still in flight is not a miss).
    pub watch_settle: Duration,
    /// How far apart two nodes' clock rates may be, for lease-expiry checks, ppm.
    pub lease_drift_allowance_ppm: u64,
    /// The etcd store's lease timing, which `etcd.lease_expires_in_bound` replays. The run
    /// driver sets it from the store's configuration.
    pub lease_timing: etcd::lease_expires_in_bound::LeaseTiming,
    /// What the `index` of the store's `Applied` and `SnapshotInstalled` events is, so that
    /// `protocol.applied_in_order` knows which index comes next: a Raft log index (the etcd
    /// store, and the default) or a ZAB zxid (the ZooKeeper store). The run driver sets it
    /// from the store.
    pub index_kind: IndexKind,
    /// How many bits the ZooKeeper store's sequence counter has (32, ZooKeeper's, unless a
    /// scenario narrows it so that it wraps within the run): `zk.sequential_names` follows
    /// the sequence numbers round its wrap. The run driver sets it from the scenario.
    pub sequence_counter_bits: u32,
}

/// What a protocol event's `index` counts, and so which index follows which.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexKind {
    /// A Raft log index: entry `i` is followed by entry `i + 1` (Raft §5.3).
    #[default]
    LogIndex,
    /// A ZAB zxid, packed as ZooKeeper does (`epoch << 32 | counter`). Within an epoch the
    /// counter goes up by one; a leader's first proposal of a new epoch has counter 1 (the
    /// `models` ZAB leader proposes `(e, 1)`, `(e, 2)`, … once established and logs no
    /// NEWLEADER transaction at counter 0; ZooKeeper likewise starts each epoch's counter
    /// at 1). Epochs in which nothing was committed are skipped.
    Zxid,
}

impl IndexKind {
    /// Whether `next` may be applied right after `previous` (or right after a snapshot
    /// taken at `previous`): a log index's successor; for a zxid, the next counter of the
    /// same epoch or counter 1 of any later epoch.
    pub fn follows(self, previous: u64, next: u64) -> bool {
        match self {
            IndexKind::LogIndex => previous.checked_add(1) == Some(next),
            IndexKind::Zxid => {
                let (epoch, counter) = (previous >> 32, previous & 0xffff_ffff);
                let (next_epoch, next_counter) = (next >> 32, next & 0xffff_ffff);
                (next_epoch == epoch && next_counter == counter + 1)
                    || (next_epoch > epoch && next_counter == 1)
            }
        }
    }

    /// An index for a human: `index 5`, or `zxid 0x200000005 (2,5)`.
    pub fn describe(self, index: u64) -> String {
        match self {
            IndexKind::LogIndex => format!("index {index}"),
            IndexKind::Zxid => format!("zxid {index:#x} ({},{})", index >> 32, index & 0xffff_ffff),
        }
    }
}

impl Default for CheckContext {
    fn default() -> Self {
        Self {
            watch_settle: Duration::from_secs(1),
            lease_drift_allowance_ppm: 1_000,
            lease_timing: Default::default(),
            index_kind: IndexKind::LogIndex,
            sequence_counter_bits: 32,
        }
    }
}

/// One checker, by its stable name.
#[derive(Clone, Copy)]
pub struct Check {
    /// Stable name: `<group>.<module>`, e.g. `zk.sync_then_read`.
    pub name: &'static str,
    /// The property its violations report (what [`Violation::property`] returns).
    pub property: &'static str,
    /// What it counts as judged, plural (`holds`, `operations`, `watches`): an outcome
    /// reports `recipe.mutual_exclusion: 212 holds`, and 0 of them as vacuous.
    pub judges: &'static str,
    /// Runs it, on a history with the readings checks share ([`HistoryViews`]).
    pub run: fn(&HistoryViews<'_>, &CheckContext) -> Verdict,
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check")
            .field("name", &self.name)
            .field("property", &self.property)
            .field("judges", &self.judges)
            .finish_non_exhaustive()
    }
}

/// Every check of every group, the optional ones included.
pub fn all() -> impl Iterator<Item = &'static Check> {
    protocol::CHECKS
        .iter()
        .chain(protocol::OPTIONAL)
        .chain(etcd::CHECKS)
        .chain(etcd::OPTIONAL)
        .chain(zk::CHECKS)
        .chain(recipes::LOCK_CHECKS)
        .chain(recipes::RW_LOCK_CHECKS)
        .chain(recipes::ELECTION_CHECKS)
        .chain(recipes::OPTIONAL)
        .chain(recipes::PRIMITIVE_CHECKS)
}

/// The check called `name`, if there is one.
pub fn by_name(name: &str) -> Option<&'static Check> {
    all().find(|check| check.name == name)
}

/// Runs `checks` on `history`: each check with its verdict, in the order given. The checks
/// share one [`HistoryViews`] of the history.
pub fn run<'a>(
    checks: impl IntoIterator<Item = &'a Check>,
    history: &History,
    context: &CheckContext,
) -> Vec<(&'a Check, Verdict)> {
    let views = HistoryViews::new(history);
    checks
        .into_iter()
        .map(|check| (check, (check.run)(&views, context)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_are_unique_and_grouped() {
        let mut names: Vec<&str> = all().map(|check| check.name).collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "duplicate check names");
        for name in names {
            let group = name.split('.').next().unwrap();
            assert!(
                ["protocol", "etcd", "zk", "recipe"].contains(&group),
                "{name}"
            );
            assert_eq!(by_name(name).unwrap().name, name);
        }
        assert!(by_name("zk.nonexistent").is_none());
    }

    #[test]
    fn every_check_on_an_empty_history_judged_nothing_and_says_so() {
        // A check's count is what it looked at, never a constant: on a history with
        // nothing in it every check is vacuous (and finds nothing), which an outcome
        // reports as such instead of as a pass.
        let empty = History::from_records(Vec::new());
        for check in all() {
            let verdict = (check.run)(&HistoryViews::new(&empty), &CheckContext::default());
            assert!(
                verdict.is_vacuous(),
                "{} judged {}",
                check.name,
                verdict.judged
            );
            assert!(verdict.violations.is_empty(), "{}", check.name);
            assert!(!check.judges.is_empty(), "{} names no unit", check.name);
        }
    }
}
