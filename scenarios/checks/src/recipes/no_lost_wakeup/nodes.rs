//! What the history says of the nodes in each line: when each was created and first known
//! gone, and when everything before each place in line was gone.

use crate::history::zk::{ZkOp, parent_of};
use sim::{
    history::{
        Event, History, OpResult,
        zk::{WatchEventType, ZkError, ZkEvent, ZkOperation, ZkResponse},
    },
    time::SimTime,
};
use std::collections::{BTreeMap, BTreeSet};

/// The last segment of `path`.
pub(super) fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or_default()
}

/// The sequence ZooKeeper appended to a node's name (`%010d`: ten digits, or `-` and nine
/// after the counter wrapped to negative), if it has one.
pub(super) fn sequence_of(name: &str) -> Option<i64> {
    let suffix = name.get(name.len().checked_sub(10)?..)?;
    let (sign, digits) = match suffix.strip_prefix('-') {
        Some(digits) => (-1, digits),
        None => (1, suffix),
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(sign * digits.parse::<i64>().ok()?)
}

/// What the history says of the nodes under each parent: when each was created (its
/// create's invocation and reply) and when it was first known gone.
///
/// Read once per history, in time linear in its operations and listings: a 60 s lock run
/// holds thousands of nodes and listings, and matching every listing against every node (or
/// every wait against its whole line) was most of the run's cost.
#[derive(Default)]
pub(super) struct Nodes {
    /// Per parent, per child name: its sequence.
    pub(super) children: BTreeMap<String, BTreeMap<String, i64>>,
    /// Per path: the create's invocation and reply times.
    created: BTreeMap<String, (SimTime, SimTime)>,
    /// Per path: when it was first known gone.
    pub(super) gone_at: BTreeMap<String, SimTime>,
    /// Per parent: its line, or `None` when sequence order is not creation order there.
    pub(super) lines: BTreeMap<String, Option<Line>>,
}

/// A successful `getChildren` of a parent.
struct Listing<'a> {
    invoked_at: SimTime,
    done_at: SimTime,
    /// The children it listed, sorted.
    names: Vec<&'a str>,
}

/// A parent's children with a sequence, in sequence order, and when everything before each
/// place in line was known gone.
pub(super) struct Line {
    /// The children's sequences, ascending.
    sequences: Vec<i64>,
    /// `clear_before[i]`: when every child before `sequences[i]` was known gone (the latest
    /// of their times), or `None` if one never was; `clear_before[0]` has nothing before it.
    clear_before: Vec<Option<SimTime>>,
}

impl Line {
    /// When every child with a sequence below `sequence` was known gone, if each was.
    pub(super) fn clear_below(&self, sequence: i64) -> Option<SimTime> {
        self.clear_before[self.sequences.partition_point(|other| *other < sequence)]
    }
}

/// The names of sorted `names` that sorted `other` does not hold, in order.
fn not_in<'a, 'b>(names: &'b [&'a str], other: &'b [&str]) -> impl Iterator<Item = &'a str> + 'b {
    let mut others = other.iter().peekable();
    names.iter().copied().filter(move |name| {
        while others.next_if(|other| **other < *name).is_some() {}
        others.peek().is_none_or(|other| **other != *name)
    })
}

impl Nodes {
    /// Reads `history`, whose ZooKeeper operations are `ops`
    /// ([`crate::history::zk::zk_operations`]).
    pub(super) fn read(history: &History, ops: &[ZkOp<'_>]) -> Self {
        let mut nodes = Nodes::default();
        let mut listings: BTreeMap<&str, Vec<Listing<'_>>> = BTreeMap::new();
        // The listed children already added, by sequence first: a waiter's listing mostly
        // repeats names known from earlier listings (8,329 listed, 274 new in a 60 s lock
        // run), and finding a name among a parent's children by comparing whole names
        // cost about half of this reading.
        let mut listed: BTreeSet<(i64, &str, &str)> = BTreeSet::new();
        for op in ops {
            let Some((done_at, result)) = op.completion else {
                continue;
            };
            match (op.operation, result) {
                (ZkOperation::Create { .. }, OpResult::Ok { .. }) => {
                    if let Some(path) = op.ok().and_then(ZkResponse::created_path) {
                        nodes.add(parent_of(path), name_of(path));
                        nodes
                            .created
                            .insert(path.to_string(), (op.invoked_at, done_at));
                    }
                }
                (ZkOperation::Delete { path, .. }, OpResult::Ok { .. })
                | (
                    ZkOperation::Delete { path, .. }
                    | ZkOperation::GetData { path }
                    | ZkOperation::Exists { path },
                    OpResult::Fail {
                        error: sim::history::OpError::Zk(ZkError::NoNode),
                    },
                ) => nodes.gone(path, done_at),
                (
                    ZkOperation::Exists { path },
                    OpResult::Ok {
                        response: sim::history::Response::Zk(ZkResponse::Exists { stat: None }),
                    },
                ) => nodes.gone(path, done_at),
                (
                    ZkOperation::GetChildren { path: parent },
                    OpResult::Ok {
                        response: sim::history::Response::Zk(ZkResponse::Children { children, .. }),
                    },
                ) => {
                    let mut names: Vec<&str> = children.iter().map(String::as_str).collect();
                    names.sort_unstable();
                    // The parent's previous listing was read before this one, and every name
                    // it showed was added then: only the others can be new (280 of 8,329
                    // listed in a 60 s lock run).
                    let previous = listings
                        .get(parent.as_str())
                        .and_then(|listed| listed.last())
                        .map_or(&[][..], |listing| listing.names.as_slice());
                    for child in not_in(&names, previous) {
                        if let Some(sequence) = sequence_of(child)
                            && listed.insert((sequence, child, parent))
                        {
                            nodes.add(parent, child);
                        }
                    }
                    listings.entry(parent).or_default().push(Listing {
                        invoked_at: op.invoked_at,
                        done_at,
                        names,
                    });
                }
                _ => {}
            }
        }
        for record in history.records() {
            if let Event::Zk(ZkEvent::WatchDelivered {
                path,
                event: WatchEventType::NodeDeleted,
                ..
            }) = &record.event
            {
                nodes.gone(path, record.at);
            }
        }
        nodes.gone_from_listings(&mut listings);
        let parents: Vec<String> = nodes.children.keys().cloned().collect();
        for parent in parents {
            let line = nodes.in_order(&parent).then(|| nodes.line(&parent));
            nodes.lines.insert(parent, line);
        }
        nodes
    }

    /// A node with a sequence that a listing of its parent, invoked after its create
    /// returned, did not show, was gone when that listing returned.
    fn gone_from_listings(&mut self, listings: &mut BTreeMap<&str, Vec<Listing<'_>>>) {
        for parent_listings in listings.values_mut() {
            parent_listings.sort_by_key(|listing| listing.invoked_at);
        }
        let mut gone = Vec::new();
        for (path, (_, returned)) in &self.created {
            let (parent, name) = (parent_of(path), name_of(path));
            if sequence_of(name).is_none() {
                continue;
            }
            let Some(parent_listings) = listings.get(parent) else {
                continue;
            };
            let first = parent_listings.partition_point(|listing| listing.invoked_at <= *returned);
            let mut earliest = self.gone_at.get(path).copied();
            for listing in &parent_listings[first..] {
                // A listing returns after it was invoked: none from here on is earlier.
                if earliest.is_some_and(|at| listing.invoked_at >= at) {
                    break;
                }
                if listing.names.binary_search(&name).is_err() {
                    earliest = Some(earliest.map_or(listing.done_at, |at| at.min(listing.done_at)));
                }
            }
            if let Some(at) = earliest {
                gone.push((path.clone(), at));
            }
        }
        for (path, at) in gone {
            self.gone(&path, at);
        }
    }

    fn add(&mut self, parent: &str, name: &str) {
        let Some(sequence) = sequence_of(name) else {
            return;
        };
        if !self.children.contains_key(parent) {
            self.children.insert(parent.to_string(), BTreeMap::new());
        }
        let children = self.children.get_mut(parent).expect("inserted above");
        if !children.contains_key(name) {
            children.insert(name.to_string(), sequence);
        }
    }

    fn gone(&mut self, path: &str, at: SimTime) {
        match self.gone_at.get_mut(path) {
            Some(earliest) => *earliest = (*earliest).min(at),
            None => {
                self.gone_at.insert(path.to_string(), at);
            }
        }
    }

    /// `parent`'s children in sequence order, with when the line before each was clear.
    fn line(&self, parent: &str) -> Line {
        let mut children: Vec<(i64, Option<SimTime>)> = self
            .children
            .get(parent)
            .into_iter()
            .flatten()
            .map(|(name, sequence)| {
                (
                    *sequence,
                    self.gone_at.get(&format!("{parent}/{name}")).copied(),
                )
            })
            .collect();
        children.sort_by_key(|(sequence, _)| *sequence);
        let mut clear_before = vec![Some(SimTime::ZERO)];
        for (_, gone_at) in &children {
            let before = *clear_before.last().expect("starts with one");
            clear_before.push(before.zip(*gone_at).map(|(before, gone)| before.max(gone)));
        }
        Line {
            sequences: children.into_iter().map(|(sequence, _)| sequence).collect(),
            clear_before,
        }
    }

    /// Whether sequence order is creation order under `parent`: no negative sequence, and
    /// no node created after another returned has a lower sequence.
    fn in_order(&self, parent: &str) -> bool {
        let Some(children) = self.children.get(parent) else {
            return true;
        };
        if children.values().any(|sequence| *sequence < 0) {
            return false;
        }
        let mut creates: Vec<(i64, SimTime, SimTime)> = children
            .iter()
            .filter_map(|(name, sequence)| {
                let (invoked, returned) = self.created.get(&format!("{parent}/{name}"))?;
                Some((*sequence, *invoked, *returned))
            })
            .collect();
        creates.sort();
        // Sorted by sequence: a later sequence must not have returned before an earlier
        // one was invoked.
        let mut earliest_return_after: Option<SimTime> = None;
        for (_, invoked, returned) in creates.iter().rev() {
            if earliest_return_after.is_some_and(|returned_later| returned_later < *invoked) {
                return false;
            }
            earliest_return_after =
                Some(earliest_return_after.map_or(*returned, |at| at.min(*returned)));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::not_in;

    #[test]
    fn not_in_keeps_the_names_the_other_listing_lacks_in_order() {
        let names = ["a", "b", "d", "e"];
        let found = |other: &[&str]| not_in(&names, other).collect::<Vec<_>>();
        assert_eq!(found(&["b", "c", "e"]), ["a", "d"]);
        assert_eq!(found(&[]), names);
        assert_eq!(found(&["0", "f"]), names);
        assert!(found(&names).is_empty());
        assert!(not_in(&[], &["a"]).next().is_none());
    }
}
