//! Discovery converges: once the faults are healed and the group has been still for a
//! settle time, every discoverer still watching sees exactly the members whose
//! registration is live.
//!
//! A discovery recipe promises eventual accuracy, not instant accuracy: a watch event is in
//! flight for a while, and a discoverer cut off from the store sees nothing new. What it
//! must not do is stay wrong. ZooKeeper's watches are one-time triggers (ZooKeeper
//! Programmer's Guide, "ZooKeeper Watches"): a cache that re-arms its watch without reading
//! the children again misses whatever changed in between, and stays wrong until the next
//! change, maybe for ever (`recipe.oneshot_watch_no_reread`). etcd's watch from a revision
//! gives every change after it; a discoverer that watches from its read's revision + 1
//! misses nothing.
//!
//! The judgement is made at the end of the run, if the run healed at least `settle` before
//! it (a run in which no fault fired has nothing to heal: it is judged too): a member certainly registered through the last `settle` must be in every live
//! discoverer's last view; a member certainly gone throughout it (or never registered) must
//! not be; a member whose registration began, ended or may have ended within it may be
//! either.
//!
//! **Reads:** ([`crate::history::membership`]) the members' and discoverers' own
//! `Membership` records (registered after the store acknowledged, unregistered after the
//! store acknowledged, the view handed to the caller), all recorded by the recipes at the
//! client node; for when a registration's session ended, only what clients were told or
//! what the store committed: a ZooKeeper session's `SessionExpired`/`SessionClosed` as its
//! client library was told (a leader's own expiry decision is not read: the ensemble may
//! disagree with it, e.g. `zab.last_processed_zxid_on_diff`), and an etcd lease's committed
//! expiry (`ProtocolEvent::SessionExpired`, applied by replicas: see [`crate::etcd`]) or
//! acknowledged revoke; client crashes and the heal from the world's fault and phase
//! records. A discoverer is live unless its node crashed, or its ZooKeeper session ended
//! (as it was told), after its last view.

use crate::Checked;
use crate::{
    Violation,
    history::{
        healed_at,
        membership::{DiscovererState, Expected, Process, discoverers, expected, registrations},
    },
};
use sim::{
    history::{Event, History},
    time::SimTime,
};
use std::{fmt, time::Duration};

/// A live discoverer whose last view is not the group's membership.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewNotConverged {
    /// The group.
    pub group: String,
    /// The discoverer.
    pub discoverer: Process,
    /// Its last view.
    pub view: Vec<String>,
    /// When it reported it.
    pub viewed_at: SimTime,
    /// Members certainly registered that it does not see.
    pub missing: Vec<String>,
    /// Members certainly gone (or never registered) that it still sees.
    pub stale: Vec<String>,
    /// When the judgement was made.
    pub judged_at: SimTime,
}

impl fmt::Display for ViewNotConverged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (node, process) = self.discoverer;
        write!(
            f,
            "{node}/{process}'s view of `{}` at {} was {:?} (since {})",
            self.group, self.judged_at, self.view, self.viewed_at
        )?;
        if !self.missing.is_empty() {
            write!(f, "; it misses registered {:?}", self.missing)?;
        }
        if !self.stale.is_empty() {
            write!(f, "; it still sees departed {:?}", self.stale)?;
        }
        Ok(())
    }
}

impl Violation for ViewNotConverged {
    fn property(&self) -> &'static str {
        "discovery converges"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Programmer's Guide, ZooKeeper Watches (one-time triggers: re-read when \
         re-arming); etcd watch from a revision"
    }

    fn at(&self) -> Option<SimTime> {
        // When the view was judged.
        Some(self.judged_at)
    }
}

/// The live discoverers whose last view, at `at`, does not match the members certainly
/// registered (or certainly gone) over `[at - settle, at]`. The discovery workload's
/// finishing step waits on this with no settle time.
pub fn behind(history: &History, at: SimTime, settle: Duration) -> Vec<ViewNotConverged> {
    let registrations = registrations(history);
    let from = earlier(at, settle);
    let mut violations = Vec::new();
    for discoverer in discoverers(history) {
        if discoverer.state != DiscovererState::Live {
            continue;
        }
        let Expected { must_see, may_see } = expected(&registrations, &discoverer.group, from, at);
        let (viewed_at, view) = discoverer.last_view().clone();
        let missing: Vec<String> = must_see
            .iter()
            .filter(|member| !view.contains(member))
            .cloned()
            .collect();
        let stale: Vec<String> = view
            .iter()
            .filter(|member| !must_see.contains(*member) && !may_see.contains(*member))
            .cloned()
            .collect();
        if !missing.is_empty() || !stale.is_empty() {
            violations.push(ViewNotConverged {
                group: discoverer.group.clone(),
                discoverer: discoverer.process,
                view,
                viewed_at,
                missing,
                stale,
                judged_at: at,
            });
        }
    }
    violations
}

/// Every live discoverer whose last view at the end of the run is wrong, if the run healed
/// at least `settle` before its end, or no fault ever fired in it (otherwise there is
/// nothing to judge).
pub fn check(history: &History, settle: Duration) -> Checked<ViewNotConverged> {
    let no_faults = !history
        .records()
        .iter()
        .any(|record| matches!(record.event, Event::Fault(_)));
    let healed = healed_at(history).or(no_faults.then_some(SimTime::ZERO));
    // A run that did not heal, or ended too soon after, judges nobody's view.
    let (Some(healed), Some(last)) = (healed, history.records().last()) else {
        return Checked::new(Vec::new(), 0);
    };
    if earlier(last.at, settle) < healed {
        return Checked::new(Vec::new(), 0);
    }
    let judged = crate::history::membership::discoverers(history).len() as u64;
    Checked::new(behind(history, last.at, settle), judged)
}

/// `by` before `at` (the start, if that is earlier).
fn earlier(at: SimTime, by: Duration) -> SimTime {
    SimTime::from_nanos(
        at.as_nanos()
            .saturating_sub(u64::try_from(by.as_nanos()).unwrap_or(u64::MAX)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{
        C1, C2, crash, healed, lease_expired, lease_granted, membership_step, zk_session,
        zk_session_ended,
    };
    use sim::history::{History, recipe::MembershipStep};

    fn registered(member: &str) -> MembershipStep {
        MembershipStep::Registered {
            member: member.into(),
        }
    }

    fn unregistered(member: &str) -> MembershipStep {
        MembershipStep::Unregistered {
            member: member.into(),
        }
    }

    fn view(members: &[&str]) -> MembershipStep {
        MembershipStep::ViewChanged {
            members: members.iter().map(|member| member.to_string()).collect(),
        }
    }

    const SETTLE: Duration = Duration::from_secs(1);
    const MEMBER: u32 = 0;
    const WATCHER: u32 = 1;

    #[test]
    fn a_view_that_followed_every_change_converges() {
        let history = History::from_records(vec![
            zk_session(10, C1, MEMBER, 7),
            membership_step(100, C1, MEMBER, registered("m1")),
            membership_step(110, C2, WATCHER, view(&["m1"])),
            membership_step(500, C1, MEMBER, unregistered("m1")),
            membership_step(510, C2, WATCHER, view(&[])),
            membership_step(600, C1, MEMBER, registered("m1")),
            membership_step(610, C2, WATCHER, view(&["m1"])),
            healed(1_000),
            membership_step(5_000, C2, 9, view(&["m1"])),
        ]);
        assert_eq!(check(&history, SETTLE), vec![]);
    }

    #[test]
    fn a_view_that_missed_the_last_change_does_not() {
        let history = History::from_records(vec![
            zk_session(10, C1, MEMBER, 7),
            membership_step(100, C1, MEMBER, registered("m1")),
            membership_step(110, C2, WATCHER, view(&["m1"])),
            membership_step(500, C1, MEMBER, unregistered("m1")),
            membership_step(510, C2, WATCHER, view(&[])),
            // The re-registration is never seen: the watch was re-armed after it.
            membership_step(600, C1, MEMBER, registered("m1")),
            healed(1_000),
            membership_step(5_000, C2, 9, view(&["m1"])),
        ]);
        let violations = check(&history, SETTLE);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].discoverer, (C2, WATCHER));
        assert_eq!(violations[0].missing, vec!["m1".to_string()]);
        assert!(
            violations[0]
                .to_string()
                .contains("misses registered [\"m1\"]")
        );
    }

    #[test]
    fn an_expired_session_takes_its_member_out_and_a_stale_view_is_caught() {
        let base = vec![
            zk_session(10, C1, MEMBER, 7),
            membership_step(100, C1, MEMBER, registered("m1")),
            membership_step(110, C2, WATCHER, view(&["m1"])),
            zk_session_ended(2_000, C1, MEMBER, 7),
            healed(3_000),
        ];
        let mut stale = base.clone();
        stale.push(membership_step(6_000, C2, 9, view(&[])));
        let violations = check(&History::from_records(stale), SETTLE);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].stale, vec!["m1".to_string()]);
        let mut fresh = base;
        fresh.insert(4, membership_step(2_100, C2, WATCHER, view(&[])));
        fresh.push(membership_step(6_000, C2, 9, view(&[])));
        assert_eq!(check(&History::from_records(fresh), SETTLE), vec![]);
    }

    #[test]
    fn an_etcd_lease_expiry_ends_the_registration_it_carried() {
        let mut records = lease_granted(10, C1, MEMBER, 1, 42).to_vec();
        records.extend([
            membership_step(100, C1, MEMBER, registered("m1")),
            membership_step(110, C2, WATCHER, view(&["m1"])),
            lease_expired(2_000, 42),
            healed(3_000),
            membership_step(6_000, C2, 9, view(&[])),
        ]);
        let violations = check(&History::from_records(records), SETTLE);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].stale, vec!["m1".to_string()]);
    }

    #[test]
    fn changes_within_the_settle_time_may_be_seen_or_not() {
        let history = History::from_records(vec![
            zk_session(10, C1, MEMBER, 7),
            membership_step(100, C1, MEMBER, registered("m1")),
            membership_step(110, C2, WATCHER, view(&["m1"])),
            healed(1_000),
            membership_step(5_500, C1, MEMBER, unregistered("m1")),
            membership_step(5_900, C2, 9, view(&[])),
        ]);
        assert_eq!(check(&history, SETTLE), vec![]);
    }

    #[test]
    fn a_crashed_member_drops_out_after_its_session_timeout_and_a_crashed_watcher_is_not_judged() {
        // Session timeout 1 s: certainly gone from 1.5 s (crash at 0.5 s, healed earlier).
        let history = History::from_records(vec![
            zk_session(10, C1, MEMBER, 7),
            membership_step(100, C1, MEMBER, registered("m1")),
            membership_step(110, C2, WATCHER, view(&["m1"])),
            healed(200),
            crash(500, C1),
            membership_step(5_000, C2, 9, view(&[])),
        ]);
        let violations = check(&history, SETTLE);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].stale, vec!["m1".to_string()]);
        let history = History::from_records(vec![
            zk_session(10, C1, MEMBER, 7),
            membership_step(100, C1, MEMBER, registered("m1")),
            membership_step(110, C2, WATCHER, view(&["m1"])),
            healed(200),
            crash(4_000, C2),
            membership_step(5_000, C1, 9, registered("m2")),
            membership_step(7_000, C1, 8, view(&["m1", "m2"])),
        ]);
        assert_eq!(check(&history, SETTLE), vec![]);
    }

    #[test]
    fn nothing_is_judged_without_a_heal_or_time_to_settle_after_it() {
        // Faults fired and were never healed (a run cut short).
        let history = History::from_records(vec![
            zk_session(10, C1, MEMBER, 7),
            membership_step(100, C1, MEMBER, registered("m1")),
            crash(200, C2),
            membership_step(5_000, C1, WATCHER, view(&[])),
        ]);
        assert_eq!(check(&history, SETTLE), vec![]);
        // No fault ever fired: nothing to heal, judged.
        let history = History::from_records(vec![
            zk_session(10, C1, MEMBER, 7),
            membership_step(100, C1, MEMBER, registered("m1")),
            membership_step(5_000, C2, WATCHER, view(&[])),
        ]);
        assert_eq!(check(&history, SETTLE).len(), 1);
        let history = History::from_records(vec![
            zk_session(10, C1, MEMBER, 7),
            membership_step(100, C1, MEMBER, registered("m1")),
            healed(4_500),
            membership_step(5_000, C2, WATCHER, view(&[])),
        ]);
        assert_eq!(check(&history, SETTLE), vec![]);
        assert_eq!(
            behind(&history, SimTime::from_millis(5_000), Duration::ZERO).len(),
            1
        );
    }
}
