//! A history with the readings that several checks share, each taken at most once.
//!
//! A run's checks all judge one history, and many begin with the same reading of it: eight
//! ZooKeeper checks and the queue lock's `recipe.no_lost_wakeup` read its ZooKeeper
//! operations ([`zk_operations`]), four etcd checks its key-value operations
//! ([`KvHistory::of`]), two checks its applied runs ([`applied_runs`]). Taken once per check,
//! these readings cost a lock seed about 13M instructions (of 400M) on ZooKeeper. Three
//! ZooKeeper lock checks read the waits in line ([`lock_waits`], and
//! [`line_waits`](crate::history::lock_waits::line_waits) with elections' campaigns):
//! 4.6M of a 289M queue-lock seed read three times. Three ZooKeeper checks read the sync
//! before each operation ([`preceding_syncs`]).
//!
//! Why sharing them is safe:
//! - each reading is a pure function of the history, which the views borrow immutably for
//!   their whole life: the reading taken once is exactly the one each check would take;
//! - checks get a reading by shared reference, so no check can change what another reads;
//! - a reading is taken on first use, so a check set that needs none pays nothing;
//! - the views belong to one history's checks ([`crate::run`], the run driver) and are
//!   dropped with them: nothing outlives the history or passes between histories.

use crate::history::{
    applied_runs::{AppliedRun, applied_runs},
    kv::KvHistory,
    lock_waits::{ElectionSteps, Lines, LockWait, lock_waits, read_waits},
    zk::{ZkOp, preceding_syncs, zk_operations},
};
use sim::{history::History, time::SimTime};
use std::cell::OnceCell;

/// A history and the readings of it that checks share; it reads as the history itself
/// (`Deref`), so a check that needs no shared reading takes it as a `&History`.
pub struct HistoryViews<'h> {
    history: &'h History,
    zk_operations: OnceCell<Vec<ZkOp<'h>>>,
    preceding_syncs: OnceCell<Vec<Option<SimTime>>>,
    kv: OnceCell<KvHistory<'h>>,
    applied_runs: OnceCell<Vec<AppliedRun>>,
    line_waits: OnceCell<(Vec<LockWait>, ElectionSteps)>,
    lock_waits: OnceCell<Vec<LockWait>>,
}

impl<'h> HistoryViews<'h> {
    /// Views of `history`, none taken yet.
    pub fn new(history: &'h History) -> Self {
        Self {
            history,
            zk_operations: OnceCell::new(),
            preceding_syncs: OnceCell::new(),
            kv: OnceCell::new(),
            applied_runs: OnceCell::new(),
            line_waits: OnceCell::new(),
            lock_waits: OnceCell::new(),
        }
    }

    /// The history.
    pub fn history(&self) -> &'h History {
        self.history
    }

    /// [`zk_operations`] of the history.
    pub fn zk_operations(&self) -> &[ZkOp<'h>] {
        self.zk_operations
            .get_or_init(|| zk_operations(self.history))
    }

    /// [`preceding_syncs`] of [`Self::zk_operations`], by position.
    pub fn preceding_syncs(&self) -> &[Option<SimTime>] {
        self.preceding_syncs
            .get_or_init(|| preceding_syncs(self.zk_operations()))
    }

    /// [`KvHistory::of`] the history.
    pub fn kv(&self) -> &KvHistory<'h> {
        self.kv.get_or_init(|| KvHistory::of(self.history))
    }

    /// [`applied_runs`] of the history.
    pub fn applied_runs(&self) -> &[AppliedRun] {
        self.applied_runs.get_or_init(|| applied_runs(self.history))
    }

    /// [`line_waits`] of the history for [`Lines::LocksAndElections`].
    ///
    /// [`line_waits`]: crate::history::lock_waits::line_waits
    pub fn line_waits(&self) -> &[LockWait] {
        &self.line_reading().0
    }

    /// [`lock_waits`] of the history: the waits of [`Self::line_waits`] when that reading
    /// met no election step (it is then the same reading), else a reading of its own.
    pub fn lock_waits(&self) -> &[LockWait] {
        match self.line_reading() {
            (waits, ElectionSteps::None) => waits,
            (_, ElectionSteps::Met) => self.lock_waits.get_or_init(|| lock_waits(self.history)),
        }
    }

    fn line_reading(&self) -> &(Vec<LockWait>, ElectionSteps) {
        self.line_waits
            .get_or_init(|| read_waits(self.history, Lines::LocksAndElections))
    }
}

impl std::ops::Deref for HistoryViews<'_> {
    type Target = History;

    fn deref(&self) -> &History {
        self.history
    }
}

#[cfg(test)]
mod tests {
    use super::HistoryViews;
    use crate::history::{
        applied_runs::applied_runs,
        kv::KvHistory,
        lock_waits::{Lines, WaitEnd, line_waits, lock_waits},
        zk::{preceding_syncs, zk_operations},
    };
    use crate::test_history::{
        C1, election_step, established, exclusive, invoke, lock_step, record, requested, sync,
    };
    use sim::{
        NodeId,
        history::{Event, History, ProtocolEvent, recipe::ElectionStep, zk::ZkOperation},
        time::SimTime,
    };

    #[test]
    fn each_view_is_the_reading_of_the_history_taken_once() {
        let applied = |ms, index| {
            let event = ProtocolEvent::Applied {
                index,
                term: 1,
                digest: index,
                request: None,
            };
            record(ms, NodeId::server(0), Event::Protocol(event))
        };
        let mut records = vec![established(1, C1, 7), applied(2, 1), applied(3, 2)];
        records.extend(sync(4, C1, 1));
        records.push(invoke(6, C1, 2, ZkOperation::Exists { path: "/a".into() }));
        let history = History::from_records(records);
        let views = HistoryViews::new(&history);
        assert_eq!(views.zk_operations().len(), 2);
        assert_eq!(views.zk_operations(), zk_operations(&history).as_slice());
        assert!(std::ptr::eq(views.zk_operations(), views.zk_operations()));
        let syncs = preceding_syncs(&zk_operations(&history));
        assert_eq!(views.preceding_syncs(), syncs.as_slice());
        assert_eq!(syncs[1], Some(SimTime::from_millis(4)));
        assert!(std::ptr::eq(
            views.preceding_syncs(),
            views.preceding_syncs()
        ));
        assert_eq!(views.applied_runs().len(), 1);
        assert_eq!(views.applied_runs(), applied_runs(&history).as_slice());
        assert!(std::ptr::eq(views.applied_runs(), views.applied_runs()));
        assert_eq!(views.kv(), &KvHistory::of(&history));
        assert!(std::ptr::eq(views.kv(), views.kv()));
        assert!(std::ptr::eq(views.history(), &history));
        assert_eq!(views.records().len(), history.records().len());
    }

    #[test]
    fn lock_waits_share_the_line_reading_only_when_it_met_no_election_step() {
        // C1 asks for the lock at 1 ms and gets it at 5 ms: one lock wait.
        let mut records = vec![
            lock_step(1, C1, requested()),
            lock_step(5, C1, exclusive(3)),
        ];
        let locks_only = History::from_records(records.clone());
        let views = HistoryViews::new(&locks_only);
        assert_eq!(views.lock_waits(), lock_waits(&locks_only).as_slice());
        assert_eq!(views.lock_waits().len(), 1);
        assert!(std::ptr::eq(views.lock_waits(), views.line_waits()));
        // The same process campaigns at 2 ms, while it waits: read with elections, the
        // campaign ends its lock wait; read for locks only, the wait runs to 5 ms.
        records.insert(1, election_step(2, C1, ElectionStep::Campaigned));
        let with_election = History::from_records(records);
        let views = HistoryViews::new(&with_election);
        let locks = lock_waits(&with_election);
        assert_eq!(views.lock_waits(), locks.as_slice());
        assert_eq!(
            views.line_waits(),
            line_waits(&with_election, Lines::LocksAndElections).as_slice()
        );
        assert_ne!(views.lock_waits(), views.line_waits());
        assert_eq!(
            locks[0].end,
            WaitEnd::Acquired {
                token: 3,
                at: locks[0].until
            }
        );
    }
}
