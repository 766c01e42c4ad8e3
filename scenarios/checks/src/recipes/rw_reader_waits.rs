//! Readers wait only for writers: a reader of a read/write lock is woken only by the
//! departure of a writer's node, never a reader's.
//!
//! In the ZooKeeper recipes' "Shared Locks" a reader watches the writer with the next-lowest
//! sequence number below its own node, and holds as soon as no writer is below it. A reader
//! that watched another reader would wait for readers it could share the lock with: the lock
//! would be secretly exclusive among readers (correct, but not a read/write lock).
//!
//! The watched node's name tells a writer's node from a reader's: the recipe names them
//! `…write-<sequence>` and `…read-<sequence>` (as Curator's `__WRIT__` and `__READ__`), and
//! records the path whose watch woke it.
//!
//! **Reads:** the lock recipes' `RecipeEvent::Lock` records (requested with its mode, woken
//! with the watched path, acquired, gave up), written at the client node by the recipe as it
//! waits: the client's own account of what it waited for. No server event is read.

use crate::Checked;
use crate::{Violation, history::locks::Holder};
use sim::{
    history::{
        Event, History, RecipeEvent,
        recipe::{LockMode, LockStep},
    },
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// What marks a writer's node in a read/write lock (the recipe's own naming).
const WRITER_NODE_MARK: &str = "write-";

/// A reader was woken by a node that is not a writer's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReaderWokenByNonWriter {
    /// The lock.
    pub lock: String,
    /// The waiting reader.
    pub reader: Holder,
    /// When the watch woke it.
    pub at: SimTime,
    /// The node whose watch fired.
    pub watched: String,
}

impl fmt::Display for ReaderWokenByNonWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (node, process) = self.reader;
        write!(
            f,
            "reader {node}/{process} waiting for `{}` was woken at {} by `{}`, which is not a writer's node",
            self.lock, self.at, self.watched
        )
    }
}

impl Violation for ReaderWokenByNonWriter {
    fn property(&self) -> &'static str {
        "readers wait only for writers"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper recipes, Shared Locks: a reader watches the next-lowest write node only"
    }

    fn at(&self) -> Option<SimTime> {
        // When the reader was woken.
        Some(self.at)
    }
}

/// Every wake-up of a waiting reader by a watch on a node that is not a writer's.
pub fn check(history: &History) -> Checked<ReaderWokenByNonWriter> {
    let (judged, violations) = judge(history);
    Checked::new(violations, judged as u64)
}

/// How many wake-ups of waiting readers the check judged. A run with none judged nothing:
/// no reader waited, and the check passes vacuously there (the suites assert that readers
/// do wait).
pub fn readers_woken(history: &History) -> usize {
    judge(history).0
}

/// The wake-ups of waiting readers judged, and those by a node that is not a writer's.
fn judge(history: &History) -> (usize, Vec<ReaderWokenByNonWriter>) {
    let mut judged = 0;
    // The mode each client process is waiting in, per lock.
    let mut waiting: BTreeMap<(Holder, String), LockMode> = BTreeMap::new();
    let mut violations = Vec::new();
    for record in history.records() {
        let (
            Event::Recipe(RecipeEvent::Lock {
                process,
                lock,
                step,
            }),
            Some(node),
        ) = (&record.event, record.node)
        else {
            continue;
        };
        let key = ((node, *process), lock.clone());
        match step {
            LockStep::Requested { mode } => {
                waiting.insert(key, *mode);
            }
            LockStep::Acquired { .. } | LockStep::GaveUp { .. } => {
                waiting.remove(&key);
            }
            LockStep::Woken { watched } => {
                let name = watched.rsplit('/').next().unwrap_or_default();
                let reader_waiting = waiting.get(&key) == Some(&LockMode::Shared);
                judged += usize::from(reader_waiting);
                if reader_waiting && !name.contains(WRITER_NODE_MARK) {
                    violations.push(ReaderWokenByNonWriter {
                        lock: lock.clone(),
                        reader: key.0,
                        at: record.at,
                        watched: watched.clone(),
                    });
                }
            }
            LockStep::Released { .. } | LockStep::Lost { .. } => {}
        }
    }
    (judged, violations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, exclusive, lock_step, shared};

    fn requested(mode: LockMode) -> LockStep {
        LockStep::Requested { mode }
    }

    fn woken(node: &str) -> LockStep {
        LockStep::Woken {
            watched: format!("/lock/{node}"),
        }
    }

    #[test]
    fn a_reader_woken_by_a_writer_and_a_writer_woken_by_a_reader_pass() {
        let history = History::from_records(vec![
            lock_step(100, C1, requested(LockMode::Shared)),
            lock_step(200, C1, woken("_c_1-write-0000000002")),
            lock_step(201, C1, shared(7)),
            lock_step(100, C2, requested(LockMode::Exclusive)),
            lock_step(300, C2, woken("_c_3-read-0000000003")),
            lock_step(301, C2, exclusive(8)),
        ]);
        assert_eq!(check(&history), vec![]);
        // It judged the reader's one wake-up (the writer's is not a reader's).
        assert_eq!(readers_woken(&history), 1);
    }

    #[test]
    fn a_history_where_no_reader_waited_judges_nothing() {
        let history = History::from_records(vec![
            lock_step(100, C1, requested(LockMode::Shared)),
            lock_step(101, C1, shared(7)),
        ]);
        assert_eq!(check(&history), vec![]);
        assert_eq!(readers_woken(&history), 0);
    }

    #[test]
    fn a_reader_woken_by_a_reader_is_reported() {
        let history = History::from_records(vec![
            lock_step(100, C1, requested(LockMode::Shared)),
            lock_step(200, C1, woken("_c_2-read-0000000004")),
            lock_step(201, C1, shared(7)),
            // After it holds, a stray wake-up is not waiting.
            lock_step(300, C1, woken("_c_2-read-0000000004")),
        ]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].at, SimTime::from_millis(200));
        assert!(violations[0].to_string().contains("read-0000000004"));
    }
}
