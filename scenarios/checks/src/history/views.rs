//! A history with the readings that several checks share, each taken at most once.
//!
//! A run's checks all judge one history, and many begin with the same reading of it: eight
//! ZooKeeper checks and the queue lock's `recipe.no_lost_wakeup` read its ZooKeeper
//! operations ([`zk_operations`]), four etcd checks its key-value operations
//! ([`KvHistory::of`]), two checks its applied runs ([`applied_runs`]). Taken once per check,
//! these readings cost a lock seed about 13M instructions (of 400M) on ZooKeeper.
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
    zk::{ZkOp, zk_operations},
};
use sim::history::History;
use std::cell::OnceCell;

/// A history and the readings of it that checks share; it reads as the history itself
/// (`Deref`), so a check that needs no shared reading takes it as a `&History`.
pub struct HistoryViews<'h> {
    history: &'h History,
    zk_operations: OnceCell<Vec<ZkOp<'h>>>,
    kv: OnceCell<KvHistory<'h>>,
    applied_runs: OnceCell<Vec<AppliedRun>>,
}

impl<'h> HistoryViews<'h> {
    /// Views of `history`, none taken yet.
    pub fn new(history: &'h History) -> Self {
        Self {
            history,
            zk_operations: OnceCell::new(),
            kv: OnceCell::new(),
            applied_runs: OnceCell::new(),
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

    /// [`KvHistory::of`] the history.
    pub fn kv(&self) -> &KvHistory<'h> {
        self.kv.get_or_init(|| KvHistory::of(self.history))
    }

    /// [`applied_runs`] of the history.
    pub fn applied_runs(&self) -> &[AppliedRun] {
        self.applied_runs.get_or_init(|| applied_runs(self.history))
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
    use crate::history::{applied_runs::applied_runs, kv::KvHistory, zk::zk_operations};
    use crate::test_history::{C1, established, invoke, record, sync};
    use sim::{
        NodeId,
        history::{Event, History, ProtocolEvent, zk::ZkOperation},
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
        assert_eq!(views.applied_runs().len(), 1);
        assert_eq!(views.applied_runs(), applied_runs(&history).as_slice());
        assert!(std::ptr::eq(views.applied_runs(), views.applied_runs()));
        assert_eq!(views.kv(), &KvHistory::of(&history));
        assert!(std::ptr::eq(views.kv(), views.kv()));
        assert!(std::ptr::eq(views.history(), &history));
        assert_eq!(views.records().len(), history.records().len());
    }
}
