//! The recipes' known-bug variants (`scenarios/known-bugs.md`, "Recipes"): each the real
//! wrong behaviour in the recipe's code, off by default.

use std::fmt;

/// A documented recipe bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecipeBug {
    /// `recipe.no_fencing`: the critical section writes to the resource without its fencing
    /// token, so the resource cannot refuse a holder that lost the lock without knowing.
    NoFencing,
    /// `etcd_mutex.no_postwait_check`: after waiting for the keys before its own to go,
    /// `Lock` returns without checking that its own key still exists — its lease may have
    /// expired while it waited, and a later waiter may hold the lock.
    EtcdMutexNoPostwaitCheck,
    /// `recipe.trust_local_state_after_expiry`: a holder (or leader) keeps acting on its
    /// local belief that it holds the lock (or leads); it does not watch its session
    /// (ZooKeeper: connection and node; etcd: the session's lease) while it holds.
    TrustLocalStateAfterExpiry,
    /// `etcd_election.no_postwait_check`: after waiting for the candidates before it to go,
    /// `Election.Campaign` returns without checking that its own key still exists — its
    /// lease may have expired while it waited, and a later candidate may lead. This is etcd's
    /// own code today (etcd-io/etcd#11051): `Election.Campaign` in
    /// `client/v3/concurrency/election.go` returns after `waitDeletes` (`key.go`) with no
    /// read of its key, on main and every release branch (v3.4.23 `clientv3/concurrency`,
    /// v3.5.33 commit 9f4b125405c7fbd92e2c9cbb5235feffe1904a1d); the open fix is
    /// etcd-io/etcd#22387. The drop-in etcd-client's `ElectionClient::campaign` reproduces it
    /// by default (`models::etcd::CampaignCheck::Upstream`).
    EtcdElectionNoPostwaitCheck,
    /// `recipe.oneshot_watch_no_reread`: a ZooKeeper discovery cache applies a watch event
    /// (reads the children) but, when it re-arms the one-shot watch after acting on the
    /// view, ignores the children that read returned, so a change between the event and
    /// the re-arming stays unseen until the next event.
    OneshotWatchNoReread,
    /// `recipe.read_without_sync`: a configuration reader does not `sync` before it reads,
    /// so it reads whatever its server has applied — from a follower that lags the leader,
    /// an old (complete) version long after a newer one was published.
    ReadWithoutSync,
    /// `recipe.unprotected_seq_create`: a line's (the queue lock's, the election's)
    /// sequential create carries no GUID; after a connection loss the client cannot tell
    /// whether the create took effect and creates again, and the first node, if it was
    /// made, stays in line as an orphan of the client's own live session — which the
    /// client then waits behind.
    UnprotectedSeqCreate,
    /// `recipe.protection_without_session_check`: a protected create that looks for its
    /// node after losing a reply takes any node with its GUID, without checking that the
    /// current session owns it, and the line takes the lock by its node's place alone.
    /// With a create carried on into a new session (Curator's retry loop after a simulated
    /// expiry), the client adopts its old session's node, which the servers still hold and
    /// will delete when they expire that session.
    ProtectionWithoutSessionCheck,
    /// `resource.check_not_atomic`: the fenced resource checks a write's token against the
    /// highest it has accepted, then writes the value durably to its disk, and only then
    /// commits the write and raises the highest token; two writers whose writes arrive
    /// within that gap both pass the check, and a lower token is accepted after a higher.
    CheckNotAtomic,
    /// `recipe.herd_watch_all`: a queue-lock waiter watches every node ahead of it in line
    /// instead of only its predecessor, so each release (the first node's deletion) wakes
    /// every waiter, and each looks at the line again.
    HerdWatchAll,
    /// `recipe.seq_overflow_compare`: a recipe that waits in a line of sequential nodes — the
    /// queue lock, the election, the read/write lock — compares their sequences as text, as kazoo did (python-zk/kazoo#730). Until the parent's counter
    /// wraps, `%010d` makes text order the counter's order; after it, a new waiter's negative
    /// name sorts before the holder's positive one (and of two negatives the newer first),
    /// so the newest waiter finds itself first while the lock is held.
    SeqOverflowCompare,
    /// `recipe.election_watches_leader`: a ZooKeeper election candidate that is not first
    /// in line watches the leader's node (the first) instead of its immediate predecessor,
    /// as many home-grown election recipes do: the leader's going wakes every candidate,
    /// and each lists the line again (the herd effect the recipe exists to avoid).
    ElectionWatchesLeader,
    /// `recipe.no_relist_on_gone_predecessor`: a waiter in a ZooKeeper line whose
    /// predecessor vanished between its `getChildren` and its `exists` keeps the watch the
    /// `exists` left (a watch for the node's *creation*, which never comes) and waits on it
    /// instead of listing the children again: it sleeps until its patience runs out while
    /// the lock is free, and every waiter behind it waits too (a lost wake-up).
    NoRelistOnGonePredecessor,
    /// `recipe.barrier_enter_on_wakeup`: a double-barrier participant that finds fewer
    /// participants than the barrier's size waits for a change under the barrier (a child
    /// watch, as the ZooKeeper tutorial's `Barrier` does) and, woken, goes through the entry
    /// without counting again, as Curator's `DistributedDoubleBarrier` did on any wake-up
    /// (apache/curator GH-1290): it lets a participant in when the second one arrives.
    BarrierEnterOnWakeup,
    /// `recipe.counter_retry_after_connection_loss`: the counter retries its conditional
    /// write after a connection loss, re-reading the value and writing value + 1 again, as a
    /// retry loop around the whole read-modify-write does (kazoo's `Counter` runs it under
    /// `client.retry`); if the lost write had been applied, the increment counts twice.
    CounterRetryAfterConnectionLoss,
    /// `recipe.pubsub_resume_from_last_received`: a subscriber resumes from the revision of
    /// the last message it delivered instead of the one after it, and delivers that
    /// message again on the new subscription.
    PubsubResumeFromLastReceived,
    /// `resource.rejects_equal_token`: the fenced resource rejects a write whose token is
    /// *not higher* than the highest it has accepted (`token <= highest` for
    /// `token < highest`), so a holder's (or leader's) second write with its own token is
    /// refused: the holder is locked out of the resource its lock protects.
    RejectsEqualToken,
}

impl RecipeBug {
    /// Every recipe bug.
    pub const ALL: [RecipeBug; 17] = [
        RecipeBug::NoFencing,
        RecipeBug::EtcdMutexNoPostwaitCheck,
        RecipeBug::TrustLocalStateAfterExpiry,
        RecipeBug::EtcdElectionNoPostwaitCheck,
        RecipeBug::OneshotWatchNoReread,
        RecipeBug::ReadWithoutSync,
        RecipeBug::UnprotectedSeqCreate,
        RecipeBug::ProtectionWithoutSessionCheck,
        RecipeBug::CheckNotAtomic,
        RecipeBug::HerdWatchAll,
        RecipeBug::SeqOverflowCompare,
        RecipeBug::ElectionWatchesLeader,
        RecipeBug::NoRelistOnGonePredecessor,
        RecipeBug::BarrierEnterOnWakeup,
        RecipeBug::CounterRetryAfterConnectionLoss,
        RecipeBug::PubsubResumeFromLastReceived,
        RecipeBug::RejectsEqualToken,
    ];

    /// The stable name, e.g. `recipe.no_fencing`.
    pub const fn name(self) -> &'static str {
        match self {
            RecipeBug::NoFencing => "recipe.no_fencing",
            RecipeBug::EtcdMutexNoPostwaitCheck => "etcd_mutex.no_postwait_check",
            RecipeBug::TrustLocalStateAfterExpiry => "recipe.trust_local_state_after_expiry",
            RecipeBug::EtcdElectionNoPostwaitCheck => "etcd_election.no_postwait_check",
            RecipeBug::OneshotWatchNoReread => "recipe.oneshot_watch_no_reread",
            RecipeBug::ReadWithoutSync => "recipe.read_without_sync",
            RecipeBug::UnprotectedSeqCreate => "recipe.unprotected_seq_create",
            RecipeBug::ProtectionWithoutSessionCheck => "recipe.protection_without_session_check",
            RecipeBug::CheckNotAtomic => "resource.check_not_atomic",
            RecipeBug::HerdWatchAll => "recipe.herd_watch_all",
            RecipeBug::SeqOverflowCompare => "recipe.seq_overflow_compare",
            RecipeBug::ElectionWatchesLeader => "recipe.election_watches_leader",
            RecipeBug::NoRelistOnGonePredecessor => "recipe.no_relist_on_gone_predecessor",
            RecipeBug::BarrierEnterOnWakeup => "recipe.barrier_enter_on_wakeup",
            RecipeBug::CounterRetryAfterConnectionLoss => {
                "recipe.counter_retry_after_connection_loss"
            }
            RecipeBug::PubsubResumeFromLastReceived => "recipe.pubsub_resume_from_last_received",
            RecipeBug::RejectsEqualToken => "resource.rejects_equal_token",
        }
    }

    /// Where it is documented.
    pub const fn source(self) -> &'static str {
        match self {
            RecipeBug::NoFencing => {
                "Kleppmann, How to do distributed locking (2016); Jepsen etcd 3.4.3 (2020)"
            }
            RecipeBug::EtcdMutexNoPostwaitCheck => "etcd-io/etcd#11456 (fixed by #11408)",
            RecipeBug::TrustLocalStateAfterExpiry => {
                "ZooKeeper sessions doc; CURATOR-460, CURATOR-696"
            }
            RecipeBug::EtcdElectionNoPostwaitCheck => {
                "etcd-io/etcd#11051 (upstream today: Election.Campaign, \
                 client/v3/concurrency/election.go, v3.5.33 9f4b1254; open fix #22387), #19597"
            }
            RecipeBug::OneshotWatchNoReread => {
                "ZooKeeper Programmer's Guide, ZooKeeper Watches (watches are one-time triggers)"
            }
            RecipeBug::UnprotectedSeqCreate => {
                "ZooKeeper Recipes (the GUID note); Curator withProtection, CURATOR-45, \
                 CURATOR-335; samuel/go-zookeeper#229"
            }
            RecipeBug::ProtectionWithoutSessionCheck => {
                "CURATOR-498 (protected ephemeral nodes across a session change; fixed in \
                 Curator 4.2.0)"
            }
            RecipeBug::CheckNotAtomic => {
                "Kleppmann, How to do distributed locking (2016); Junqueira, fencing with \
                 ZooKeeper (2016)"
            }
            RecipeBug::HerdWatchAll => "ZooKeeper Recipes, Locks (the herd effect)",
            RecipeBug::SeqOverflowCompare => {
                "python-zk/kazoo#730 (text order), go-zookeeper/zk#65 (the sign dropped); \
                 ZOOKEEPER-2944 (the counter wraps to -2147483648)"
            }
            RecipeBug::ElectionWatchesLeader => {
                "ZooKeeper Recipes, Leader Election (watch the next znode down, to avoid the \
                 herd effect); misha_cafex 0.0.6 Cafex.ZK.Leader (non-leaders watch the leader)"
            }
            RecipeBug::NoRelistOnGonePredecessor => {
                "ZooKeeper Recipes, Locks (if exists() returns null, go to step 2); \
                 apache/helix#44; shayhatsor/zookeeper#26 (ZooKeeper's WriteLock recipe); \
                 kazoo#490"
            }
            RecipeBug::ReadWithoutSync => {
                "ZooKeeper Programmer's Guide, Consistency Guarantees (sync before a read that \
                 needs the latest)"
            }
            RecipeBug::BarrierEnterOnWakeup => {
                "apache/curator GH-1290 (fixed by #1291: DistributedDoubleBarrier returned from \
                 enter on any wake-up); ZOOKEEPER-1011 (the tutorial's Barrier races)"
            }
            RecipeBug::CounterRetryAfterConnectionLoss => {
                "python-zk/kazoo kazoo/recipe/counter.py (Counter._change runs the read and the \
                 versioned set under client.retry, which retries ConnectionLoss); ZooKeeper \
                 Programmer's Guide (ConnectionLoss: the operation may or may not have succeeded)"
            }
            RecipeBug::PubsubResumeFromLastReceived => {
                "etcd clientv3 watch.go (resume from the last revision + 1); \
                 shubhamranjan/dotnet-etcd#310, etcd-io/jetcd#946, kragniz/python-etcd3#729"
            }
            RecipeBug::RejectsEqualToken => {
                "planted, no shipped instance cited: an off-by-one against Kleppmann, How to do \
                 distributed locking (2016), which rejects only a token lower than one accepted"
            }
        }
    }
}

impl fmt::Display for RecipeBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The recipe bugs switched on for a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecipeBugs(u32);

impl RecipeBugs {
    /// Whether `bug` is on.
    pub fn has(self, bug: RecipeBug) -> bool {
        self.0 & (1 << bug as u8) != 0
    }
}

impl FromIterator<RecipeBug> for RecipeBugs {
    fn from_iter<I: IntoIterator<Item = RecipeBug>>(bugs: I) -> Self {
        Self(bugs.into_iter().fold(0, |set, bug| set | 1 << bug as u8))
    }
}
