//! Configuration reads are fresh: a read that began after the publish of a version
//! completed returns that version or a newer one in every part. ZooKeeper's reads are
//! sequentially consistent, not linearizable — a follower may lag the leader — so a reader
//! that needs the latest calls `sync` first (Programmer's Guide, *Consistency Guarantees*:
//! "if a client needs the latest ... should call sync() before doing the read"); after the
//! sync its server has applied every write completed before the sync was issued, and the
//! recipe issues it after the read began. A reader that skips the sync
//! (`recipe.read_without_sync`) can read, from a lagging follower, a complete but old
//! version long after a newer one was published.
//!
//! **Reads:** the configuration recipe's `RecipeEvent::Config` records, all written at
//! client nodes in simulated time: `Published` by the writer once the last step of its
//! publish (creating `ready`) was acknowledged, `Reading` by a reader when it begins a read
//! (before any of its requests), and `Read` when the reader believes the read complete,
//! with each part's version as read. A read is the `Read` of a process together with that
//! process's last `Reading` before it. Both ends are what the clients observed, so a
//! publish recorded before a read began truly completed before it. No server event is
//! read.

use crate::Checked;
use crate::{Violation, history::locks::Holder};
use sim::{
    history::{Event, History, RecipeEvent, recipe::ConfigStep},
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// A read that returned an older version than one published before it began.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleRead {
    /// The configuration.
    pub config: String,
    /// The reader.
    pub reader: Holder,
    /// When the read began.
    pub began: SimTime,
    /// When it completed.
    pub completed: SimTime,
    /// Each part's version as read.
    pub parts: Vec<u64>,
    /// The newest version whose publish had completed when the read began.
    pub published: u64,
    /// When that publish completed.
    pub published_at: SimTime,
}

impl fmt::Display for StaleRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} read `{}` from {} to {} and got versions {:?}, but version {} was \
             published at {}, before the read began",
            self.reader.0,
            self.reader.1,
            self.config,
            self.began,
            self.completed,
            self.parts,
            self.published,
            self.published_at
        )
    }
}

impl Violation for StaleRead {
    fn property(&self) -> &'static str {
        "configuration reads are fresh"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Programmer's Guide, Consistency Guarantees (sync before a read that needs \
         the latest)"
    }

    fn at(&self) -> Option<SimTime> {
        // When the stale read completed.
        Some(self.completed)
    }
}

/// Every read that returned an older version than one published before it began.
pub fn check(history: &History) -> Checked<StaleRead> {
    // Per configuration: the newest version published so far, and when.
    let mut published: BTreeMap<&str, (u64, SimTime)> = BTreeMap::new();
    // Per configuration and reader: when its read under way began, and what was published
    // by then.
    let mut reading: BTreeMap<(&str, Holder), (SimTime, Option<(u64, SimTime)>)> = BTreeMap::new();
    let mut stale = Vec::new();
    // Reads that began after some version was published: the others owe nothing.
    let mut judged = 0;
    for record in history.records() {
        let (
            Event::Recipe(RecipeEvent::Config {
                process,
                config,
                step,
            }),
            Some(node),
        ) = (&record.event, record.node)
        else {
            continue;
        };
        let reader = (node, *process);
        match step {
            ConfigStep::Published { version } => {
                let newest = published
                    .entry(config.as_str())
                    .or_insert((*version, record.at));
                if *version >= newest.0 {
                    *newest = (*version, record.at);
                }
            }
            ConfigStep::Reading => {
                let before = published.get(config.as_str()).copied();
                reading.insert((config.as_str(), reader), (record.at, before));
            }
            ConfigStep::Read { parts } => {
                let Some((began, Some((version, at)))) = reading.remove(&(config.as_str(), reader))
                else {
                    continue;
                };
                judged += u64::from(at < began);
                // A publish recorded at the very instant the read began is not before it.
                if at < began && parts.iter().any(|part| *part < version) {
                    stale.push(StaleRead {
                        config: config.clone(),
                        reader,
                        began,
                        completed: record.at,
                        parts: parts.clone(),
                        published: version,
                        published_at: at,
                    });
                }
            }
        }
    }
    Checked::new(stale, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, C2, record};
    use sim::{NodeId, history::Record};

    fn step(ms: u64, node: NodeId, step: ConfigStep) -> Record {
        record(
            ms,
            node,
            Event::Recipe(RecipeEvent::Config {
                process: 0,
                config: "/c".into(),
                step,
            }),
        )
    }

    #[test]
    fn a_read_begun_after_a_publish_must_see_it() {
        let published = |ms, version| step(ms, C1, ConfigStep::Published { version });
        let reading = |ms| step(ms, C2, ConfigStep::Reading);
        let read = |ms, parts| step(ms, C2, ConfigStep::Read { parts });
        // Began before version 2 was published: version 1 is fine; began after: version 2
        // or newer is fine.
        let good = History::from_records(vec![
            published(10, 1),
            reading(15),
            published(20, 2),
            read(25, vec![1, 1]),
            reading(30),
            read(35, vec![2, 2]),
            reading(40),
            read(45, vec![3, 3]),
        ]);
        assert_eq!(check(&good), vec![]);
        let bad = History::from_records(vec![
            published(10, 1),
            published(20, 2),
            reading(30),
            read(35, vec![1, 1]),
        ]);
        let violations = check(&bad);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].published, 2);
        assert!(violations[0].to_string().contains("[1, 1]"));
    }

    #[test]
    fn a_read_without_its_beginning_or_before_any_publish_is_not_judged() {
        let history = History::from_records(vec![
            step(5, C2, ConfigStep::Reading),
            step(10, C1, ConfigStep::Published { version: 2 }),
            step(15, C2, ConfigStep::Read { parts: vec![1] }),
            step(20, C2, ConfigStep::Read { parts: vec![1] }),
        ]);
        assert_eq!(check(&history), vec![]);
    }
}
