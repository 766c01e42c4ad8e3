//! Server configuration and the etcd-store known-bug switches.

use crate::raft::{RaftBug, RaftConfig};
use sim::NodeId;
use std::{collections::BTreeSet, fmt, str::FromStr, time::Duration};

/// How every server of a cluster behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdConfig {
    /// Raft timing; `id` and `voters` are filled in per server.
    pub raft: RaftConfig,
    /// How often the leader's lessor looks for expired leases.
    pub lease_check_interval: Duration,
    /// How often the leader checkpoints remaining lease TTLs through the log; only leases
    /// whose TTL is longer are checkpointed (`Lessor::checkpoints`). etcd's default, 5
    /// minutes (v3.5.33 `server/lease/lessor.go` `defaultLeaseCheckpointInterval`,
    /// `--experimental-lease-checkpoint-interval`): checkpoints are for long leases, and a
    /// lease of a few seconds is never checkpointed, so a new leader gives it its full TTL
    /// (plus the promotion's extension). Scenarios about checkpoints set a short one.
    pub lease_checkpoint_interval: Duration,
    /// How long a watch that asked for progress notifications may stay without a response
    /// before its server sends an empty one at its revision (etcd's
    /// `--experimental-watch-progress-notify-interval`, 10 minutes by default).
    pub watch_progress_notify_interval: Duration,
    /// Known store bugs switched on.
    pub bugs: BTreeSet<EtcdBug>,
    /// What the election service's `Campaign` does once the keys before its own are gone
    /// (run by the drop-in etcd-client's `ElectionClient`): upstream's behaviour by default.
    pub campaign_check: CampaignCheck,
}

/// What etcd's `Election.Campaign` (`client/v3/concurrency/election.go`, which the server's
/// v3election service runs) does after it waited for the deletion of every key created
/// before its own. The drop-in etcd-client's `ElectionClient::campaign` follows it; set it
/// through the scenario's `tuning.campaign_check`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CampaignCheck {
    /// etcd as released (v3.4.23 to v3.5.33 and main): returns leadership without looking
    /// whether its own key still exists — a campaigner whose lease expired while it waited
    /// believes it leads next to the real leader (etcd-io/etcd#11051).
    #[default]
    Upstream,
    /// The open fix, etcd-io/etcd#22387: a campaigner whose own key is gone fails with
    /// `election: not leader`. As the PR's description says (its diff was not at hand), each
    /// wait also watches the campaigner's own key and ends as soon as it is deleted; and,
    /// as v3.5's `Mutex.Lock` does after its wait, the campaign reads its own key once the
    /// wait is over (a key deleted before a watch began is caught there).
    RecheckOwnKey,
}

impl EtcdConfig {
    /// A cluster of `servers` with the default timing and no bugs.
    pub fn new(servers: &[NodeId]) -> Self {
        let first = servers.first().copied().unwrap_or(NodeId::server(0));
        Self {
            raft: RaftConfig::new(first, servers.to_vec()),
            lease_check_interval: Duration::from_millis(50),
            lease_checkpoint_interval: Duration::from_secs(300),
            watch_progress_notify_interval: Duration::from_secs(600),
            bugs: BTreeSet::new(),
            campaign_check: CampaignCheck::Upstream,
        }
    }

    /// With these known bugs (Raft or store) switched on.
    pub fn with_bugs(mut self, bugs: impl IntoIterator<Item = KnownBug>) -> Self {
        for bug in bugs {
            match bug {
                KnownBug::Raft(bug) => {
                    self.raft.bugs.insert(bug);
                }
                KnownBug::Etcd(bug) => {
                    self.bugs.insert(bug);
                }
            }
        }
        self
    }

    /// Whether `bug` is switched on.
    pub fn has(&self, bug: EtcdBug) -> bool {
        self.bugs.contains(&bug)
    }

    /// The shortest TTL a lease is granted, as etcd computes it from its election timeout:
    /// one and a half election timeouts, rounded up to whole seconds (2 s with etcd's default
    /// 1 s timeout). etcd 3.4.23 `etcdserver/server.go`: `minTTL :=
    /// time.Duration((3*cfg.ElectionTicks)/2) * heartbeat` and the lessor's `MinLeaseTTL:
    /// int64(math.Ceil(minTTL.Seconds()))`. etcd's election timeout is the shortest one its
    /// Raft draws (`[electionTimeout, 2*electionTimeout)`), here `election_timeout_min`.
    pub fn min_lease_ttl(&self) -> Duration {
        let one_and_a_half = self.raft.election_timeout_min * 3 / 2;
        Duration::from_secs(one_and_a_half.as_millis().div_ceil(1000) as u64)
    }

    /// The Raft configuration of server `id`.
    pub fn raft_for(&self, id: NodeId) -> RaftConfig {
        RaftConfig {
            id,
            ..self.raft.clone()
        }
    }
}

/// Known-bug variants of the etcd store (scenarios/known-bugs.md, "etcd store").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EtcdBug {
    /// `etcd.lease_ttl_reset_on_leader_change`: no lease checkpoints; a new leader gives
    /// every lease its full TTL again (etcd#9395, fixed by #9924).
    LeaseTtlResetOnLeaderChange,
    /// `etcd.compact_drops_tombstone`: compaction drops the delete events at the compaction
    /// revision, which a watcher from that revision still needs (etcd#18089, #19179).
    CompactDropsTombstone,
    /// `etcd.lessor_not_demoted`: the lessor is not demoted when its server stops leading,
    /// and — as etcd's lessor did before #16822 — renews a keep-alive on its own while it
    /// believes it is primary, without the log or a leadership check. A deposed leader keeps
    /// acknowledging renewals that the real leader never hears of (etcd#15247, #12528).
    LessorNotDemoted,
    /// `etcd.watch_restore_keeps_stale_minrev`: when a member restores its store from a
    /// snapshot a leader sent, every watcher it serves is moved back to catch up from the
    /// revision it was created at rather than from its own next revision, and replays events
    /// it already delivered: the watch travels back in time (etcd-io/etcd#15271, fixed by
    /// #15492; #20221).
    WatchRestoreKeepsStaleMinRev,
}

impl EtcdBug {
    /// Every etcd-store bug variant.
    pub const ALL: [EtcdBug; 4] = [
        EtcdBug::LeaseTtlResetOnLeaderChange,
        EtcdBug::CompactDropsTombstone,
        EtcdBug::LessorNotDemoted,
        EtcdBug::WatchRestoreKeepsStaleMinRev,
    ];

    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            EtcdBug::LeaseTtlResetOnLeaderChange => "etcd.lease_ttl_reset_on_leader_change",
            EtcdBug::CompactDropsTombstone => "etcd.compact_drops_tombstone",
            EtcdBug::LessorNotDemoted => "etcd.lessor_not_demoted",
            EtcdBug::WatchRestoreKeepsStaleMinRev => "etcd.watch_restore_keeps_stale_minrev",
        }
    }
}

/// Any known-bug variant of the Raft store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KnownBug {
    /// In the Raft core.
    Raft(RaftBug),
    /// In the etcd store.
    Etcd(EtcdBug),
}

impl KnownBug {
    /// Every known-bug variant of the Raft store.
    pub fn all() -> Vec<KnownBug> {
        RaftBug::ALL
            .into_iter()
            .map(KnownBug::Raft)
            .chain(EtcdBug::ALL.into_iter().map(KnownBug::Etcd))
            .collect()
    }

    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            KnownBug::Raft(bug) => bug.name(),
            KnownBug::Etcd(bug) => bug.name(),
        }
    }
}

impl fmt::Display for KnownBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no known-bug variant of the Raft store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownBug {
    /// The name given.
    pub name: String,
}

impl fmt::Display for UnknownBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = KnownBug::all().into_iter().map(KnownBug::name).collect();
        write!(
            f,
            "unknown Raft-store bug variant `{}` (expected one of: {})",
            self.name,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownBug {}

impl FromStr for KnownBug {
    type Err = UnknownBug;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        KnownBug::all()
            .into_iter()
            .find(|bug| bug.name() == name)
            .ok_or_else(|| UnknownBug { name: name.into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_bug_name_round_trips_and_unknown_names_are_refused() {
        let all = KnownBug::all();
        assert_eq!(all.len(), 11);
        for bug in all {
            assert_eq!(bug.name().parse::<KnownBug>(), Ok(bug));
        }
        let error = "etcd.nope".parse::<KnownBug>().unwrap_err();
        assert!(error.to_string().contains("raft.volatile_vote"), "{error}");
    }

    #[test]
    fn the_minimum_lease_ttl_follows_the_election_timeout_as_etcd_computes_it() {
        let mut config = EtcdConfig::new(&[NodeId::server(0)]);
        // The model's default 300 ms: 450 ms, rounded up to a whole second.
        assert_eq!(config.min_lease_ttl(), Duration::from_secs(1));
        // etcd's default 1 s: 1.5 s, so 2 s.
        config.raft.election_timeout_min = Duration::from_millis(1_000);
        assert_eq!(config.min_lease_ttl(), Duration::from_secs(2));
        config.raft.election_timeout_min = Duration::from_millis(2_000);
        assert_eq!(config.min_lease_ttl(), Duration::from_secs(3));
    }
}
