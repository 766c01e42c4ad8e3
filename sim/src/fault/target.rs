//! The node a fault acts on: a named node, or a role resolved when the fault fires.

use crate::node::NodeId;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::{fmt, str::FromStr};

/// Which node a fault acts on. Written as a string in plans:
/// - `"s2"`, `"c1"`: that node;
/// - `"leader"`: the server that most recently became leader and has neither stepped down
///   nor crashed (from the servers' `BecameLeader` / `SteppedDown` events);
/// - `"follower"`: a running server other than the leader, picked from the nemesis stream;
/// - `"holder"`, `"waiter"`, `"newest_waiter"`: a client node by its process's part in a
///   lock or election (the newest holder, the longest and the newest waiter);
/// - `"$name"`: the node an earlier fault of the same plan resolved to, where that fault
///   said `"as": "name"` (to crash the leader a partition stranded, say).
///
/// A role resolves when the fault fires; the history records what it resolved to, so a plan
/// with roles replays to the same history and can be shrunk like any other.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// This node.
    Node(NodeId),
    /// The current leader.
    Leader,
    /// A running server that is not the leader.
    Follower,
    /// The client node of the process that most recently acquired a lock or gained an
    /// election's leadership and still believes it holds it (from the recipes' lock and
    /// election records, as they are recorded).
    Holder,
    /// The client node of the process that has waited longest for a lock it asked for, or
    /// campaigned longest in an election, and has neither got it nor given up (from the
    /// recipes' lock and election records).
    Waiter,
    /// The client node of the process that most recently asked for a lock (or began to
    /// campaign) and has neither got it nor given up: the one most likely to have its
    /// line's create in flight (from the same records as [`Target::Waiter`]).
    NewestWaiter,
    /// The node an earlier fault resolved to (its `as` name).
    Label(String),
}

impl Target {
    /// The node, if this target names one outright.
    pub fn node(&self) -> Option<NodeId> {
        match self {
            Target::Node(node) => Some(*node),
            _ => None,
        }
    }
}

impl From<NodeId> for Target {
    fn from(node: NodeId) -> Self {
        Target::Node(node)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Node(node) => write!(f, "{node}"),
            Target::Leader => f.write_str("leader"),
            Target::Follower => f.write_str("follower"),
            Target::Holder => f.write_str("holder"),
            Target::Waiter => f.write_str("waiter"),
            Target::NewestWaiter => f.write_str("newest_waiter"),
            Target::Label(name) => write!(f, "${name}"),
        }
    }
}

/// A target that is not a node name, a role, or a `$name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetParseError(String);

impl fmt::Display for TargetParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a target (expected a node such as s1 or c2, `leader`, `follower`, \
             `holder`, `waiter`, `newest_waiter`, or `$name` for the node an earlier fault's `as` named)",
            self.0
        )
    }
}

impl std::error::Error for TargetParseError {}

impl FromStr for Target {
    type Err = TargetParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "leader" => Ok(Target::Leader),
            "follower" => Ok(Target::Follower),
            "holder" => Ok(Target::Holder),
            "waiter" => Ok(Target::Waiter),
            "newest_waiter" => Ok(Target::NewestWaiter),
            _ => {
                if let Some(name) = text.strip_prefix('$') {
                    let valid = !name.is_empty()
                        && name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    return if valid {
                        Ok(Target::Label(name.to_string()))
                    } else {
                        Err(TargetParseError(text.to_string()))
                    };
                }
                text.parse::<NodeId>()
                    .map(Target::Node)
                    .map_err(|_| TargetParseError(text.to_string()))
            }
        }
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print_back() {
        for text in [
            "s1",
            "c12",
            "r1",
            "leader",
            "follower",
            "holder",
            "waiter",
            "newest_waiter",
            "$stranded",
            "$k-1",
        ] {
            let target: Target = text.parse().unwrap();
            assert_eq!(target.to_string(), text);
        }
        for bad in ["", "leadr", "$", "$a b", "x1", "s0"] {
            let error = bad.parse::<Target>().unwrap_err().to_string();
            assert!(error.contains("expected a node"), "{bad}: {error}");
        }
    }
}
