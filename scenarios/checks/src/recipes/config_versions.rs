//! Configuration behind `ready`: a read completed after seeing `ready` has one version in
//! every part (Hunt et al., ZooKeeper, section 2.3: "if a process sees the ready znode, it
//! will also see all the configuration changes made by the new leader").
//!
//! **Reads:** the configuration recipe's `RecipeEvent::Config` `Read` records, written at
//! the client node once the reader believes its read complete, with each part's version
//! as read. No server event is read.

use crate::Checked;
use crate::{Violation, history::locks::Holder};
use sim::{
    history::{Event, History, RecipeEvent, recipe::ConfigStep},
    time::SimTime,
};
use std::fmt;

/// A completed read that mixed versions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MixedRead {
    /// The configuration.
    pub config: String,
    /// The reader.
    pub reader: Holder,
    /// When it completed.
    pub at: SimTime,
    /// Each part's version as read.
    pub parts: Vec<u64>,
}

impl fmt::Display for MixedRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} read `{}` at {} with mixed versions {:?}",
            self.reader.0, self.reader.1, self.config, self.at, self.parts
        )
    }
}

impl Violation for MixedRead {
    fn property(&self) -> &'static str {
        "configuration versions"
    }

    fn reference(&self) -> &'static str {
        "Hunt et al., ZooKeeper (USENIX ATC 2010), section 2.3, the ready znode"
    }

    fn at(&self) -> Option<SimTime> {
        // The mixed read.
        Some(self.at)
    }
}

/// Every completed read that mixed versions.
pub fn check(history: &History) -> Checked<MixedRead> {
    let reads = history.records().iter().filter(|record| {
        matches!(
            record.event,
            Event::Recipe(RecipeEvent::Config {
                step: ConfigStep::Read { .. },
                ..
            })
        )
    });
    let judged = reads.count() as u64;
    let violations = history
        .records()
        .iter()
        .filter_map(|record| match (&record.event, record.node) {
            (
                Event::Recipe(RecipeEvent::Config {
                    process,
                    config,
                    step: ConfigStep::Read { parts },
                }),
                Some(node),
            ) if parts.windows(2).any(|pair| pair[0] != pair[1]) => Some(MixedRead {
                config: config.clone(),
                reader: (node, *process),
                at: record.at,
                parts: parts.clone(),
            }),
            _ => None,
        })
        .collect();
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::{C1, record};

    fn read(ms: u64, parts: Vec<u64>) -> sim::history::Record {
        record(
            ms,
            C1,
            Event::Recipe(RecipeEvent::Config {
                process: 0,
                config: "/c".into(),
                step: ConfigStep::Read { parts },
            }),
        )
    }

    #[test]
    fn one_version_throughout_passes_and_a_mixed_read_is_reported() {
        let history = History::from_records(vec![read(10, vec![3, 3, 3]), read(20, vec![4, 4])]);
        assert_eq!(check(&history), vec![]);
        let history = History::from_records(vec![read(10, vec![3, 4, 4])]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1);
        assert!(violations[0].to_string().contains("[3, 4, 4]"));
    }
}
