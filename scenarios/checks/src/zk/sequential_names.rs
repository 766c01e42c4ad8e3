//! Sequential nodes get unique names whose sequence numbers increase per parent.
//!
//! "The sequence number ... is a monotonically increasing counter maintained by the
//! parent znode" (ZooKeeper Programmer's Guide, *Sequence Nodes*): no two creates get the
//! same name, and a create that starts after another finished gets a larger number.
//!
//! **Reads:** client operations only (the names `create` returned to clients, from
//! `Invoke`/`Complete`). No server event is trusted.

use crate::Violation;
use crate::history::zk::{parent_of, zk_operations};
use sim::{
    history::{
        History, OpId,
        zk::{CreateMode, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::{collections::BTreeMap, fmt};

/// Two sequential creates that got the same name, or numbers out of real-time order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SequenceViolation {
    /// The same name twice.
    Duplicate {
        /// The name.
        path: String,
        /// The two creates.
        creates: (OpId, OpId),
    },
    /// A later create got a number not above an earlier one's.
    NotIncreasing {
        /// The earlier create (finished first) and its name.
        earlier: (OpId, String, SimTime),
        /// The later create (started after) and its name.
        later: (OpId, String, SimTime),
    },
}

impl fmt::Display for SequenceViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SequenceViolation::Duplicate { path, creates } => {
                write!(f, "{} and {} both created {path}", creates.0, creates.1)
            }
            SequenceViolation::NotIncreasing { earlier, later } => write!(
                f,
                "{} created {} (done at {}), then {} (started at {}) created {}",
                earlier.0, earlier.1, earlier.2, later.0, later.2, later.1
            ),
        }
    }
}

impl Violation for SequenceViolation {
    fn property(&self) -> &'static str {
        "sequential names unique and increasing"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Programmer's Guide, Sequence Nodes"
    }

    fn at(&self) -> Option<SimTime> {
        // The later create; unknown for a duplicate.
        match self {
            SequenceViolation::NotIncreasing { later, .. } => Some(later.2),
            SequenceViolation::Duplicate { .. } => None,
        }
    }
}

/// One acknowledged sequential create: (sequence, name, create, invoked, acknowledged).
type SequentialCreate = (u64, String, OpId, SimTime, SimTime);

/// Every duplicate or out-of-order sequential name.
pub fn check(history: &History) -> Vec<SequenceViolation> {
    let mut by_parent: BTreeMap<String, Vec<SequentialCreate>> = BTreeMap::new();
    for op in zk_operations(history) {
        let ZkOperation::Create { mode, .. } = op.operation else {
            continue;
        };
        if !matches!(
            mode,
            CreateMode::PersistentSequential | CreateMode::EphemeralSequential
        ) {
            continue;
        }
        let (Some(ZkResponse::Created { path }), Some(done)) = (op.ok(), op.ok_at()) else {
            continue;
        };
        let Some(sequence) = path
            .len()
            .checked_sub(10)
            .and_then(|start| path[start..].parse::<u64>().ok())
        else {
            continue;
        };
        by_parent
            .entry(parent_of(path).to_string())
            .or_default()
            .push((sequence, path.clone(), op.op_id, op.invoked_at, done));
    }
    let mut violations = Vec::new();
    for creates in by_parent.values() {
        let mut names: BTreeMap<&str, OpId> = BTreeMap::new();
        for (_, name, op, _, _) in creates {
            if let Some(first) = names.insert(name, *op) {
                violations.push(SequenceViolation::Duplicate {
                    path: name.clone(),
                    creates: (first, *op),
                });
            }
        }
        for a in creates {
            for b in creates {
                if a.4 < b.3 && a.0 >= b.0 {
                    violations.push(SequenceViolation::NotIncreasing {
                        earlier: (a.2, a.1.clone(), a.4),
                        later: (b.2, b.1.clone(), b.3),
                    });
                }
            }
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::*;

    fn created(start: u64, op: u64, name: &str) -> [sim::history::Record; 2] {
        [
            invoke(
                start,
                C1,
                op,
                create("/q/n-", CreateMode::PersistentSequential),
            ),
            ok(start + 1, C1, op, ZkResponse::Created { path: name.into() }),
        ]
    }

    #[test]
    fn increasing_unique_names_pass_and_repeats_fail() {
        let mut good = created(1, 1, "/q/n-0000000000").to_vec();
        good.extend(created(5, 2, "/q/n-0000000002"));
        assert!(check(&History::from_records(good)).is_empty());
        let mut bad = created(1, 1, "/q/n-0000000003").to_vec();
        bad.extend(created(5, 2, "/q/n-0000000003"));
        let violations = check(&History::from_records(bad));
        assert!(matches!(violations[0], SequenceViolation::Duplicate { .. }));
        assert!(matches!(
            violations[1],
            SequenceViolation::NotIncreasing { .. }
        ));
    }
}
