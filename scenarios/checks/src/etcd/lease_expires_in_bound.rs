//! Liveness: a lease nobody renews expires once the leaders have kept its clock for its TTL.
//!
//! An abandoned lease (its client crashed or stopped renewing) must expire so that the locks
//! and registrations attached to it are released. If every leader change restarted TTLs,
//! frequent elections would keep abandoned leases alive forever (etcd-io/etcd#9395,
//! `etcd.lease_ttl_reset_on_leader_change`; fixed by lease checkpointing, #9924).
//!
//! A fixed bound (TTL plus a constant) is wrong for the correct etcd: a lease's clock runs
//! only on a leader, and a new leader starts it from the last *committed* checkpoint of its
//! remaining time plus an election timeout (`Lessor::promote`, as etcd's
//! `lessor.Promote(extend)`). A leader cut off every two seconds legitimately keeps a 1 s
//! lease for several seconds. So the bound is replayed from the history, leadership by
//! leadership, granting everything the correct protocol may grant:
//!
//! - from the lease's last acknowledged renewal, its remaining time is its TTL;
//! - each later leadership starts it at that remaining time plus the promotion extension;
//! - a leadership uses up only what its checkpoints can have carried to the next leader: the
//!   time from its start to one checkpoint interval before its last committed entry (it
//!   proposes a checkpoint every interval, and entries commit in log order);
//! - a leadership that was still committing entries [`EXPIRY_ALLOWANCE`] after its deadline
//!   must have expired the lease: its lessor proposed the expiry at the deadline, ahead of
//!   those entries, so the expiry must be applied by its first such entry (plus the
//!   allowance).
//!
//! With the TTL-reset bug a new leader grants the full TTL again, which these rules do not;
//! a lease then outlives a leadership that committed past its replayed deadline.
//!
//! **Reads:** the client's lease operations (grants, keep-alives, revokes, from
//! `Invoke`/`Complete`), `ProtocolEvent::SessionExpired`, recorded by every replica when it
//! applies the committed expiry of a lease (see the group doc: only a committed entry counts,
//! and `protocol.replica_agreement` holds the replicas to the same entries), and the servers'
//! `BecameLeader`/`SteppedDown`/`Applied` events (`history::leaders`), to know when some
//! leader could commit. Reading those is safe in the direction that matters: a leadership
//! or commit a server failed to record only makes the bound *stricter*, and one it recorded
//! falsely would be a second leader in a term or a replica divergence, which
//! `protocol.leader_uniqueness` and `protocol.replica_agreement` judge on the same events.

use crate::Checked;
use crate::{
    Violation,
    history::{
        leaders::{Leadership, leaderships},
        leases::leases,
    },
};
use sim::{
    history::{Event, History, ProtocolEvent},
    time::SimTime,
};
use std::{fmt, time::Duration};

/// How long after its deadline a leader that keeps committing has to apply a lease's expiry:
/// the lessor looks for expired leases every 50 ms, and the expiry entry then needs a quorum
/// round trip and a disk sync (10 ms links and 2 ms syncs at most in the catalogue's worlds),
/// with room for the servers' clock drift over a few seconds.
pub const EXPIRY_ALLOWANCE: Duration = Duration::from_millis(250);

/// The lease timing of the store under test, which the bound replays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTiming {
    /// What a new leader adds to each lease's checkpointed remaining time (etcd: the
    /// election timeout; the model: `raft.election_timeout_max`).
    pub promotion_extension: Duration,
    /// How often a leader checkpoints remaining times through the log.
    pub checkpoint_interval: Duration,
}

impl Default for LeaseTiming {
    /// The etcd store's defaults (`models::etcd::EtcdConfig::new`).
    fn default() -> Self {
        Self {
            promotion_extension: Duration::from_millis(600),
            checkpoint_interval: Duration::from_secs(300),
        }
    }
}

/// A lease outlived a leadership that kept committing past its replayed deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseNeverExpired {
    /// The lease.
    pub lease: u64,
    /// When its last renewal was acknowledged.
    pub last_renewed_at: SimTime,
    /// How many leaderships since then started its clock again (each with the extension).
    pub promotions: usize,
    /// The leader whose lessor should have expired it, and its term.
    pub leader: Leadership,
    /// The replayed deadline on that leader.
    pub deadline: SimTime,
    /// The leader's first committed entry [`EXPIRY_ALLOWANCE`] or more past the deadline.
    pub committed_past_deadline_at: SimTime,
    /// When it did end, if it did.
    pub ended_at: Option<SimTime>,
}

impl fmt::Display for LeaseNeverExpired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lease {} renewed at {} should have expired at {} on {} (term {}, the {} leader to \
             start its clock since), which was still committing at {}, but ",
            self.lease,
            self.last_renewed_at,
            self.deadline,
            self.leader.node,
            self.leader.term,
            ordinal(self.promotions + 1),
            self.committed_past_deadline_at,
        )?;
        match self.ended_at {
            Some(at) => write!(f, "it ended only at {at}"),
            None => write!(f, "it never ended"),
        }
    }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

impl Violation for LeaseNeverExpired {
    fn property(&self) -> &'static str {
        "lease expires in bound"
    }

    fn reference(&self) -> &'static str {
        "etcd-io/etcd#9395 (lease TTL reset on leader change), fixed by #9924"
    }

    fn at(&self) -> Option<SimTime> {
        Some(self.deadline)
    }
}

/// One leadership and the times its leader applied entries while leading (it applies an
/// entry when it commits it, so these are its commits).
struct LeaderCommits {
    leadership: Leadership,
    committed_at: Vec<SimTime>,
}

fn leader_commits(history: &History) -> Vec<LeaderCommits> {
    let mut all: Vec<LeaderCommits> = leaderships(history)
        .into_iter()
        .map(|leadership| LeaderCommits {
            leadership,
            committed_at: Vec::new(),
        })
        .collect();
    for record in history.records() {
        if let (Event::Protocol(ProtocolEvent::Applied { .. }), Some(node)) =
            (&record.event, record.node)
        {
            // A server leads at most one term at a time: the last leadership it began.
            if let Some(commits) = all.iter_mut().rev().find(|commits| {
                commits.leadership.node == node && commits.leadership.covers(record.at)
            }) {
                commits.committed_at.push(record.at);
            }
        }
    }
    all
}

/// Where the replayed bound says a lease had to be expired.
struct Bound {
    promotions: usize,
    leader: Leadership,
    deadline: SimTime,
    committed_past_deadline_at: SimTime,
}

/// Replays the lease's clock from `renewed_at` over the leaderships (module doc).
fn bound(
    ttl: Duration,
    renewed_at: SimTime,
    leaders: &[LeaderCommits],
    timing: LeaseTiming,
) -> Option<Bound> {
    let mut remaining = ttl;
    let mut promotions = 0;
    for commits in leaders {
        let leadership = commits.leadership;
        if leadership.until.is_some_and(|until| until <= renewed_at) {
            continue;
        }
        // The leader that acknowledged the renewal runs the clock from it; a later one
        // restarts it from the checkpoint, extended. (A leader elected just before the
        // acknowledgement may have applied the renewal before its promotion, which then
        // gave the full TTL plus the extension from the promotion.)
        let start = if leadership.from <= renewed_at {
            remaining += (leadership.from + timing.promotion_extension)
                .saturating_duration_since(renewed_at);
            renewed_at
        } else {
            promotions += 1;
            remaining += timing.promotion_extension;
            leadership.from
        };
        let deadline = start + remaining;
        let committed = commits.committed_at.iter().filter(|at| **at >= start);
        if let Some(&past) = committed
            .clone()
            .find(|at| **at >= deadline + EXPIRY_ALLOWANCE)
        {
            return Some(Bound {
                promotions,
                leader: leadership,
                deadline,
                committed_past_deadline_at: past,
            });
        }
        if let Some(&last) = committed.last() {
            let checkpointed = last.saturating_duration_since(start + timing.checkpoint_interval);
            remaining = remaining.saturating_sub(checkpointed);
        }
    }
    None
}

/// Every lease that outlived a leadership which committed past its replayed deadline.
///
/// Leases whose last renewal or a revoke has an unknown outcome are left out: either may
/// have taken effect at any later time.
pub fn check(history: &History, timing: LeaseTiming) -> Checked<LeaseNeverExpired> {
    let leaders = leader_commits(history);
    let mut violations = Vec::new();
    let mut judged = 0;
    for (lease, facts) in leases(history) {
        let Some(ttl_ms) = facts.ttl_ms else { continue };
        let Some(last) = facts
            .renewals
            .iter()
            .max_by_key(|renewal| renewal.invoked_at)
        else {
            continue;
        };
        let Some(last_renewed_at) = last.acknowledged_at else {
            continue;
        };
        if !facts.maybe_revoked_at.is_empty() {
            continue;
        }
        let Some(bound) = bound(
            Duration::from_millis(ttl_ms),
            last_renewed_at,
            &leaders,
            timing,
        ) else {
            continue;
        };
        judged += 1;
        let must_end_by = bound.committed_past_deadline_at + EXPIRY_ALLOWANCE;
        let ended_at = facts.ended_at();
        if ended_at.is_none_or(|at| at > must_end_by) {
            violations.push(LeaseNeverExpired {
                lease,
                last_renewed_at,
                promotions: bound.promotions,
                leader: bound.leader,
                deadline: bound.deadline,
                committed_past_deadline_at: bound.committed_past_deadline_at,
                ended_at,
            });
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

    /// A history of one 1 s lease, granted (acknowledged) at 1 s, and of leaderships:
    /// `(server, from_ms, last_commit_ms, stepped_down_ms)`, each committing every 100 ms.
    struct Script {
        records: Vec<Record>,
    }

    impl Script {
        fn new() -> Self {
            Self {
                records: vec![
                    invoke(990, 1, KvOperation::LeaseGrant { ttl_ms: 1_000 }),
                    complete(
                        1_000,
                        1,
                        KvResponse::LeaseGrant {
                            lease: 3,
                            ttl_ms: 1_000,
                        },
                    ),
                ],
            }
        }

        fn protocol(&mut self, at_ms: u64, server: usize, event: ProtocolEvent) {
            self.records.push(Record {
                at: SimTime::from_millis(at_ms),
                node: Some(NodeId::server(server)),
                event: Event::Protocol(event),
            });
        }

        fn leader(
            mut self,
            server: usize,
            from_ms: u64,
            last_commit_ms: u64,
            until_ms: u64,
        ) -> Self {
            let term = u64::try_from(server).expect("small") + from_ms;
            self.protocol(from_ms, server, ProtocolEvent::BecameLeader { term });
            for (index, at_ms) in (from_ms..=last_commit_ms).step_by(100).enumerate() {
                let index = u64::try_from(index).expect("small") + from_ms;
                let (term, digest) = (term, index);
                self.protocol(
                    at_ms,
                    server,
                    ProtocolEvent::Applied {
                        index,
                        term,
                        digest,
                        request: None,
                    },
                );
            }
            self.protocol(until_ms, server, ProtocolEvent::SteppedDown { term });
            self
        }

        fn expired_at(mut self, at_ms: u64) -> Self {
            self.protocol(at_ms, 0, ProtocolEvent::SessionExpired { session: 3 });
            self
        }

        fn check(mut self) -> Vec<LeaseNeverExpired> {
            self.records.sort_by_key(|record| record.at);
            // The timing of the scenarios about checkpoints (`raft_leases_under_elections`).
            let timing = LeaseTiming {
                checkpoint_interval: Duration::from_millis(500),
                ..LeaseTiming::default()
            };
            check(&History::from_records(self.records), timing).violations
        }
    }

    fn stable_leader() -> Script {
        Script::new().leader(0, 0, 10_000, 10_000)
    }

    #[test]
    fn under_one_leader_a_lease_expires_within_its_ttl_and_the_allowance() {
        assert!(stable_leader().expired_at(2_050).check().is_empty());
        // The first commit 250 ms past the 2 s deadline is at 2.3 s: the expiry is due by
        // 2.55 s.
        assert!(stable_leader().expired_at(2_550).check().is_empty());
        let late = stable_leader().expired_at(2_600).check();
        assert_eq!(late.len(), 1);
        assert_eq!(late[0].deadline, SimTime::from_millis(2_000));
        assert_eq!(
            late[0].committed_past_deadline_at,
            SimTime::from_millis(2_300)
        );
        assert_eq!(late[0].promotions, 0);
        assert_eq!(stable_leader().check().len(), 1, "never expired");
    }

    #[test]
    fn a_run_that_ends_before_a_leader_commits_past_the_deadline_proves_nothing() {
        assert!(Script::new().leader(0, 0, 2_200, 2_200).check().is_empty());
    }

    /// A leader cut off at 1.9 s carried 0.4 s of the lease's clock in its checkpoints (it
    /// checkpoints every 500 ms; its last commit was at 1.9 s): the next leader, from 3 s,
    /// starts it at 0.6 s plus the 0.6 s extension, so 4.2 s is its deadline, 1.2 s past the
    /// TTL after the grant, and the 4.5 s expiry is in bound.
    #[test]
    fn each_new_leader_restarts_the_clock_from_the_checkpoint_plus_the_extension() {
        let leaders = || {
            Script::new()
                .leader(0, 0, 1_900, 2_200)
                .leader(1, 3_000, 10_000, 10_000)
        };
        assert!(leaders().expired_at(4_500).check().is_empty());
        let never = leaders().check();
        assert_eq!(never.len(), 1);
        assert_eq!(never[0].leader.node, NodeId::server(1));
        assert_eq!(never[0].promotions, 1);
        assert_eq!(never[0].deadline, SimTime::from_millis(4_200));
        assert_eq!(
            never[0].committed_past_deadline_at,
            SimTime::from_millis(4_500)
        );
        assert_eq!(leaders().expired_at(4_800).check().len(), 1);
    }

    /// What `etcd.lease_ttl_reset_on_leader_change` does: every new leader grants the full
    /// TTL plus the extension again (1.6 s), so a lease abandoned at 1 s outlives leaders
    /// that each lead 1.4 s. The replay charges each leadership what its checkpoints carried
    /// (0.4 s, then 0.9 s) and finds the lease due at 5.2 s on the third leader, which
    /// committed until 5.7 s; the buggy leader expired it only at 5.9 s.
    #[test]
    fn a_lease_kept_alive_by_leader_changes_is_caught() {
        let changing = || {
            Script::new()
                .leader(0, 0, 1_900, 2_200)
                .leader(1, 2_400, 3_800, 4_100)
                .leader(2, 4_300, 5_700, 6_000)
                .leader(0, 6_200, 10_000, 10_000)
        };
        assert!(changing().expired_at(5_300).check().is_empty());
        let found = changing().expired_at(5_900).check();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].leader.node, NodeId::server(2));
        assert_eq!(found[0].deadline, SimTime::from_millis(5_200));
        assert!(
            found[0].to_string().contains("the 3rd leader"),
            "{}",
            found[0]
        );
    }
}
