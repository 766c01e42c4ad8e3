//! The one known-bug type: every variant of every model under one stable name, parsed here.
//!
//! Names follow `scenarios/known-bugs.md` (a copy of the team's `BUGS.md`): `raft.*` for the
//! Raft core, `etcd.*` for the etcd store above it, `zab.*` for the ZAB store. A variant is
//! the real wrong behaviour in the model, switched on per run; nothing here tells a checker
//! what to expect.

use crate::store::Store;
use models::{etcd::EtcdBug, raft::RaftBug, recipes::RecipeBug, zab::ZabBug};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::{fmt, str::FromStr};

/// A known-bug variant of some model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KnownBug {
    /// In the Raft core (Raft store).
    Raft(RaftBug),
    /// In the etcd store above Raft.
    Etcd(EtcdBug),
    /// In ZAB or the ZooKeeper store above it.
    Zab(ZabBug),
    /// In a coordination recipe (`recipe.*`, `etcd_mutex.*`, `etcd_election.*`).
    Recipe(RecipeBug),
}

impl KnownBug {
    /// Every variant, in a fixed order.
    pub fn all() -> impl Iterator<Item = KnownBug> {
        RaftBug::ALL
            .into_iter()
            .map(KnownBug::Raft)
            .chain(EtcdBug::ALL.into_iter().map(KnownBug::Etcd))
            .chain(ZabBug::ALL.into_iter().map(KnownBug::Zab))
            .chain(RecipeBug::ALL.into_iter().map(KnownBug::Recipe))
    }

    /// The stable name, e.g. `raft.volatile_vote`.
    pub fn name(self) -> &'static str {
        match self {
            KnownBug::Raft(bug) => bug.name(),
            KnownBug::Etcd(bug) => bug.name(),
            KnownBug::Zab(bug) => bug.name(),
            KnownBug::Recipe(bug) => bug.name(),
        }
    }

    /// Whether the variant exists in runs on `store` (a recipe bug exists wherever its
    /// recipe runs).
    pub fn runs_on(self, store: Store) -> bool {
        match self {
            KnownBug::Raft(_) | KnownBug::Etcd(_) => store == Store::Raft,
            KnownBug::Zab(_) => store == Store::Zab,
            KnownBug::Recipe(
                RecipeBug::EtcdMutexNoPostwaitCheck | RecipeBug::EtcdElectionNoPostwaitCheck,
            ) => store == Store::Raft,
            KnownBug::Recipe(
                RecipeBug::OneshotWatchNoReread
                | RecipeBug::ReadWithoutSync
                | RecipeBug::UnprotectedSeqCreate
                | RecipeBug::ProtectionWithoutSessionCheck
                | RecipeBug::HerdWatchAll
                | RecipeBug::SeqOverflowCompare
                | RecipeBug::ElectionWatchesLeader
                | RecipeBug::NoRelistOnGonePredecessor,
            ) => store == Store::Zab,
            KnownBug::Recipe(RecipeBug::PubsubResumeFromLastReceived) => store == Store::Raft,
            KnownBug::Recipe(
                RecipeBug::BarrierEnterOnWakeup | RecipeBug::CounterRetryAfterConnectionLoss,
            ) => store == Store::Zab,
            KnownBug::Recipe(_) => store != Store::Ledger,
        }
    }
}

impl fmt::Display for KnownBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no known-bug variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownBug(pub String);

impl fmt::Display for UnknownBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown known-bug variant `{}` ({})",
            self.0,
            crate::suggest::expected(
                &self.0,
                KnownBug::all().map(KnownBug::name),
                "`coordsim list`"
            )
        )
    }
}

impl std::error::Error for UnknownBug {}

impl FromStr for KnownBug {
    type Err = UnknownBug;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        KnownBug::all()
            .find(|bug| bug.name() == name)
            .ok_or_else(|| UnknownBug(name.to_string()))
    }
}

impl Serialize for KnownBug {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for KnownBug {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// One row of the known-bug table: the variant, the catalogue scenario in which it shows
/// itself, the check that must catch it (by name), within how many seeds, and where the bug
/// comes from. The suites of both stores are driven by this table: the variant must fail
/// the named check on some seed of the sweep, and the correct model must run the same seeds
/// clean (which includes progress).
#[derive(Clone, Copy, Debug)]
pub struct KnownBugCase {
    /// The variant.
    pub bug: KnownBug,
    /// The catalogue scenario.
    pub scenario: &'static str,
    /// The check that must fire (`checks::by_name`), or [`LIVENESS_VERDICT`] for a variant
    /// whose harm is that nothing happens (no leader, no progress) with no safety check
    /// broken: then the run must fail its liveness bound.
    pub check: &'static str,
    /// It must fire within this many seeds (from seed 0).
    pub seeds: u64,
    /// Where the bug is documented.
    pub source: &'static str,
}

/// The `check` of a row whose variant is caught by the run's liveness verdict (the failure
/// kind `liveness`: the scenario's liveness bound passed after the heal with work pending)
/// rather than by a check; BUGS.md names "liveness" as the checker of such bugs.
pub const LIVENESS_VERDICT: &str = "liveness";

impl KnownBugCase {
    /// Whether `outcome` shows the variant as this row says it must: the row's check fired,
    /// or, for a [`LIVENESS_VERDICT`] row, the run failed its liveness bound.
    pub fn caught_in(&self, outcome: &crate::Outcome) -> bool {
        if self.check == LIVENESS_VERDICT {
            matches!(outcome.failure, Some(crate::Failure::Liveness { .. }))
        } else {
            outcome.violations.iter().any(|v| v.check == self.check)
        }
    }

    /// The check a shrink of a detecting run must keep firing: the row's check, or none
    /// for a [`LIVENESS_VERDICT`] row (the failure kind alone is the target).
    pub fn shrink_check(&self) -> Option<&'static str> {
        (self.check != LIVENESS_VERDICT).then_some(self.check)
    }
}

/// The known-bug table: every variant that runs through the catalogue so far, the Raft
/// core's and the ZAB store's. Each row's scenario is plain data: its faults come from an
/// explicit plan or a generator (roles and spans, resolved as they fire), so a failing seed
/// replays from its printed plan and shrinks like any other.
///
/// The ZAB rows aim at the moment each bug needs with the directed generators of
/// `sim::fault`: the leader killer, with every rejoin synced by DIFF; the cut-off leader
/// with a client that only reads, or with reading clients that join it once the others
/// have moved on; quorum restarts; crashes on rejoin. Exact traces of the same bugs are
/// scripted plans in the catalogue (`zab_trace_*`), run by `zab_known_bugs.rs` and
/// `zk_session_guarantees.rs`. The `etcd.*` rows run the etcd store's scenarios: leases
/// under leader changes, and election waiters watching from a compaction revision.
///
/// The ZAB bounds come from sweeps of 50 seeds: within its bound, each check fires on
/// several seeds (the test prints how many), not on one lucky seed. (The two added later
/// were swept over 20: `zab.setcurrentepoch_on_uptodate` fires `zk.write_durability` on
/// 7 of its trace's first 20; `zab.snap_zxid_below_log_tail` fires
/// `protocol.replica_prefix` on 18 of its trace's first 20.) `zab.fle_nontransitive_order`
/// is caught by the liveness verdict, no check ([`LIVENESS_VERDICT`]); its trace's test in
/// `zab_known_bugs.rs` also asserts that no safety check fires.
///
/// Long on purpose: one row per known bug, read top to bottom.
pub fn table() -> Vec<KnownBugCase> {
    use models::{raft::RaftBug as R, zab::ZabBug as Z};
    let case = |bug, scenario, check, seeds, source| KnownBugCase {
        bug,
        scenario,
        check,
        seeds,
        source,
    };
    let raft = |bug, scenario, check, seeds, source| {
        case(KnownBug::Raft(bug), scenario, check, seeds, source)
    };
    let zab = |bug: ZabBug, scenario, check, seeds| {
        case(KnownBug::Zab(bug), scenario, check, seeds, bug.source())
    };
    let recipe = |bug: RecipeBug, scenario, check, seeds| {
        case(KnownBug::Recipe(bug), scenario, check, seeds, bug.source())
    };
    vec![
        raft(
            R::AckBeforeFsync,
            "raft_single_server",
            "etcd.acknowledged_write_durability",
            10,
            "etcd-io/etcd#14370",
        ),
        raft(
            R::CommitPrevTermByCount,
            "raft_figure8",
            "protocol.replica_agreement",
            100,
            "Ongaro & Ousterhout, Raft §5.4.2, Figure 8",
        ),
        raft(
            R::TruncateOnStaleAppend,
            "raft_duplicated_appends",
            "protocol.replica_agreement",
            10,
            "Students' Guide to Raft (Gjengset, 2016)",
        ),
        raft(
            R::ReadWithoutReadIndex,
            "raft_cut_off_leader_slow_clock",
            "etcd.read_sees_prior_writes",
            20,
            "etcd-io/etcd#741",
        ),
        raft(
            R::ReadIndexBeforeTermCommit,
            "raft_cut_off_leader",
            "etcd.read_sees_prior_writes",
            20,
            "etcd-io/raft 758ff0163 (etcd#12680)",
        ),
        raft(
            R::VolatileVote,
            "raft_split_vote_restart",
            "protocol.leader_uniqueness",
            20,
            "camunda/camunda#5356, hazelcast/hazelcast#16643",
        ),
        raft(
            R::NoPreVoteNoCheckQuorum,
            "raft_flapping_follower",
            "protocol.leader_stability",
            4,
            "etcd-io/etcd#8499, #9333; Cloudflare 2020-11-02",
        ),
        KnownBugCase {
            bug: KnownBug::Etcd(models::etcd::EtcdBug::LeaseTtlResetOnLeaderChange),
            scenario: "raft_leases_under_elections",
            check: "etcd.lease_expires_in_bound",
            seeds: 10,
            source: "etcd-io/etcd#9395 (fixed by lease checkpoints, #9924)",
        },
        KnownBugCase {
            bug: KnownBug::Etcd(models::etcd::EtcdBug::CompactDropsTombstone),
            scenario: "etcd_compacted_watch",
            // The waiter's watch from the compaction revision skips the delete at it.
            check: "etcd.watch_delivery",
            seeds: 5,
            source: "etcd-io/etcd#18089, #19179",
        },
        KnownBugCase {
            bug: KnownBug::Etcd(models::etcd::EtcdBug::LessorNotDemoted),
            scenario: "raft_leases_under_elections",
            // The deposed leader's lessor acknowledges renewals of a lease the real leader
            // expires: to the client, the lease expired before its TTL since a renewal.
            check: "etcd.lease_not_expired_early",
            seeds: 10,
            source: "etcd-io/etcd#15247, #12528 (fixed by #16822)",
        },
        KnownBugCase {
            bug: KnownBug::Etcd(models::etcd::EtcdBug::WatchRestoreKeepsStaleMinRev),
            scenario: "etcd_watch_after_snapshot",
            // s3 installs a snapshot after the heal and sends its watchers, again, every
            // change since they were created.
            check: "etcd.watch_delivery",
            seeds: 5,
            source: "etcd-io/etcd#15271 (fixed by #15492), #20221",
        },
        // A quorum restarts without the leader of an epoch that logged nothing durable on
        // it, re-derives the epoch from its logs and establishes it again.
        zab(
            Z::EpochNotPersisted,
            "zab_quorum_restart",
            "protocol.leader_uniqueness",
            10,
        ),
        // A stranded leader's unreplicated proposals survive its rejoin by DIFF.
        zab(
            Z::DiffWithoutTrunc,
            "zab_leader_killer_diffs",
            "protocol.replica_prefix",
            10,
        ),
        // A session expires while a server is away; the close reaches it in a DIFF that it
        // marks processed without applying, and its ephemeral node lives on there.
        zab(
            Z::LastProcessedZxidOnDiff,
            "zab_leader_killer_diffs",
            "zk.ephemeral_lifetime",
            10,
        ),
        // The rejoining follower's early NEWLEADER ack commits writes only the leader has
        // durably; both crash, and the others elect without them.
        zab(
            Z::AckNewLeaderBeforePersist,
            "zab_rejoin_crash",
            "zk.write_durability",
            20,
        ),
        // The cut-off leader answers its reader's syncs while the others commit writes.
        zab(
            Z::SyncNotQuorum,
            "zab_cut_off_leader_reader",
            "zk.sync_then_read",
            10,
        ),
        // Readers that saw the new leader's writes reconnect to the cut-off one.
        zab(
            Z::ReconnectIgnoresLastZxid,
            "zab_cut_off_leader_readers_join",
            "zk.session_consistency",
            20,
        ),
        // The rejoining follower ACKs NEWLEADER and a write with its old current epoch;
        // it crashes with the leader before UPTODATE's epoch is durable, and the stalled
        // follower, of the newer epoch but without the write, wins the next election. The
        // scripted trace of ZOOKEEPER-3911's schedule (4 faults) shows it on 7 of its first
        // 20 seeds, first at seed 2; `zab_rejoin_crash`'s swarm shows it too (seeds 5 and
        // 14 of 20), but its 55-fault plans do not shrink below 19 in 1,000 runs.
        zab(
            Z::SetCurrentEpochOnUpToDate,
            "zab_trace_ack_newleader_before_persist",
            "zk.write_durability",
            10,
        ),
        // ZOOKEEPER-1419's restart: s1 and s2 with epoch 2, s3 with epoch 1, equal (empty)
        // logs. With the id tie-break ignoring epochs the votes keep changing hands and no
        // leader is elected after the restart; no safety check breaks, the liveness bound
        // does. A buggy run broadcasts every vote change, so it costs seconds: one seed.
        zab(
            Z::FleNontransitiveOrder,
            "zab_trace_fle_nontransitive_order",
            LIVENESS_VERDICT,
            1,
        ),
        // The old leader's dead write survives the SNAP on its disk; after two leader
        // changes it leads and commits it (the trace is exact but for a few seeds' timing).
        zab(
            Z::SnapZxidBelowLogTail,
            "zab_trace_snap_zxid_below_log_tail",
            "protocol.replica_prefix",
            5,
        ),
        recipe(
            RecipeBug::NoFencing,
            "zk_queue_lock_expiry",
            "recipe.fenced_writes",
            10,
        ),
        recipe(
            RecipeBug::TrustLocalStateAfterExpiry,
            "zk_queue_lock_cut_off_holder",
            "recipe.mutual_exclusion",
            10,
        ),
        recipe(
            RecipeBug::EtcdMutexNoPostwaitCheck,
            "etcd_mutex_cut_off_waiter",
            "recipe.mutual_exclusion",
            10,
        ),
        // The first candidate in line is cut off past its lease; when the leader resigns it
        // takes the lead its key no longer holds, beside the candidate after it.
        recipe(
            RecipeBug::EtcdElectionNoPostwaitCheck,
            "etcd_election_cut_off_candidate",
            "recipe.leader_uniqueness",
            10,
        ),
        // The discoverers' caches miss a member that joins while they act on a view.
        recipe(
            RecipeBug::OneshotWatchNoReread,
            "zk_discovery",
            "recipe.discovery_converges",
            10,
        ),
        // The leader cut off with the readers leads on while the others elect anew and the
        // writer publishes: without a sync the readers read its old version.
        recipe(
            RecipeBug::ReadWithoutSync,
            "zk_ready_config_cut_off_readers",
            "recipe.config_fresh",
            5,
        ),
        // A server crashes as a waiter's create commits; the create's reply is lost, the
        // waiter creates again and waits behind its first node.
        recipe(
            RecipeBug::UnprotectedSeqCreate,
            "zk_queue_lock_crashes",
            "recipe.no_orphan_waiter",
            10,
        ),
        // The newest waiter is cut off as its create commits and gives its session up; the
        // leader change keeps that session alive; in its new session the client finds the
        // old session's node by its GUID and takes the lock by it.
        recipe(
            RecipeBug::ProtectionWithoutSessionCheck,
            "zk_queue_lock_curator_joiner_cut_off",
            "recipe.holder_owns_node",
            10,
        ),
        // The holder, paused just past its session, writes as it resumes while the next
        // holder writes: the resource checks both tokens before either commits, and the
        // stale write commits last.
        recipe(
            RecipeBug::CheckNotAtomic,
            "zk_queue_lock_expiry_slow_resource",
            "recipe.fenced_writes",
            20,
        ),
        // Every waiter watches the first node in line: its holder's release wakes them all.
        recipe(
            RecipeBug::HerdWatchAll,
            "zk_queue_lock",
            "recipe.herd_effect",
            5,
        ),
        // The lock node's sequence counter is 6 bits wide and wraps every 64 creates and
        // deletes: the first waiter past the wrap reads its negative name as first in line
        // while the holder's node, just below the wrap, is still there.
        recipe(
            RecipeBug::SeqOverflowCompare,
            "zk_queue_lock_seq_wrap",
            "recipe.mutual_exclusion",
            3,
        ),
        // Every candidate watches the leader's node: each resignation wakes them all.
        recipe(
            RecipeBug::ElectionWatchesLeader,
            "zk_election",
            "recipe.herd_effect",
            5,
        ),
        // Two clients take quick turns: a joiner's predecessor goes between its listing and
        // its `exists`, and it sleeps on a creation watch until its patience runs out, with
        // the lock free.
        recipe(
            RecipeBug::NoRelistOnGonePredecessor,
            "zk_queue_lock_quick_turns",
            "recipe.no_lost_wakeup",
            5,
        ),
        // A participant that counts too few goes through when the next one arrives, without
        // `ready` and without a full listing: every round, no faults needed.
        recipe(
            RecipeBug::BarrierEnterOnWakeup,
            "zk_double_barrier",
            "recipe.barrier",
            3,
        ),
        // A client's replies are lost while its conditional write commits; the counter reads
        // again and writes again, and the version sequence shows one increment moving the
        // counter twice (97 of seeds 0-99; under server faults, `zk_counter_faults`, 85 of
        // 0-199, as `primitives.rs` shows).
        recipe(
            RecipeBug::CounterRetryAfterConnectionLoss,
            "zk_counter_replies_lost",
            "recipe.counter",
            3,
        ),
        // Every resubscription starts at the last revision delivered: a new subscription that
        // begins one revision early, every 2.5 s, no faults needed.
        recipe(
            RecipeBug::PubsubResumeFromLastReceived,
            "etcd_pubsub",
            "recipe.pubsub_delivery",
            3,
        ),
        // Each leader writes three times with its leadership's token: the resource refuses
        // the second, no faults needed.
        recipe(
            RecipeBug::RejectsEqualToken,
            "zk_election",
            "recipe.holder_not_refused",
            3,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_catalogue_scenarios_of_the_bugs_store_and_real_checks() {
        for case in table() {
            let scenario = crate::catalogue::get(case.scenario)
                .unwrap_or_else(|| panic!("{}: no scenario {}", case.bug, case.scenario));
            assert!(case.bug.runs_on(scenario.store), "{}", case.bug);
            if case.check == LIVENESS_VERDICT {
                continue;
            }
            let check = checks::by_name(case.check).expect("a real check");
            assert!(
                scenario.check_set().iter().any(|c| c.name == check.name),
                "{}: the scenario does not run {}",
                case.bug,
                case.check
            );
        }
    }

    #[test]
    fn every_name_parses_back_and_names_are_unique() {
        let names: Vec<&str> = KnownBug::all().map(KnownBug::name).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        for bug in KnownBug::all() {
            assert_eq!(bug.name().parse::<KnownBug>(), Ok(bug));
            let family = bug.name().split('.').next().unwrap();
            assert!(
                [
                    "raft",
                    "etcd",
                    "zab",
                    "recipe",
                    "resource",
                    "etcd_mutex",
                    "etcd_election"
                ]
                .contains(&family),
                "{bug}"
            );
        }
        let error = "raft.nonsense".parse::<KnownBug>().unwrap_err().to_string();
        assert!(
            error.contains("did you mean `raft.no_prevote_no_checkquorum`"),
            "{error}"
        );
        // A few near names, not every variant.
        assert!(error.matches('`').count() <= 2 * (1 + 5 + 1), "{error}");
    }
}
