//! Server-side watches (ZooKeeper's `WatchManager`): which connections watch which paths.
//! A one-shot watch fires once and is forgotten; a persistent one (`addWatch`, 3.6+) stays
//! until it is removed. Every watch dies with its connection.
//!
//! ZooKeeper keeps two managers, `dataWatches` and `childWatches` (`DataTree`). `addWatch`
//! puts a PERSISTENT watch in both and a PERSISTENT_RECURSIVE one in `dataWatches` only, so
//! a recursive watch never sees `NodeChildrenChanged`; `dataWatches.triggerWatch` walks the
//! changed path's parents for recursive watches. `removeWatches` (3.8, before
//! ZOOKEEPER-4472) removes the connection from `childWatches` (Children), `dataWatches`
//! (Data) or both (Any) at that path, whatever the watch's mode.

use super::path::path_and_ancestors;
use sim::history::zk::{AddWatchMode, WatchEventType, WatcherType};
use std::collections::{BTreeMap, BTreeSet};

type Table<C> = BTreeMap<String, BTreeSet<C>>;

/// Watches per path, for connections identified by `C`.
#[derive(Clone, Debug)]
pub struct WatchManager<C: Ord + Copy> {
    /// Data and exists watches (fired by create, data change, delete).
    data: Table<C>,
    /// Child watches (fired by a child created or deleted, or the node deleted).
    child: Table<C>,
    /// Persistent watches, their `dataWatches` half.
    persistent_data: Table<C>,
    /// Persistent watches, their `childWatches` half.
    persistent_child: Table<C>,
    /// Persistent recursive watches (in `dataWatches` only).
    recursive: Table<C>,
}

impl<C: Ord + Copy> Default for WatchManager<C> {
    fn default() -> Self {
        Self {
            data: BTreeMap::new(),
            child: BTreeMap::new(),
            persistent_data: BTreeMap::new(),
            persistent_child: BTreeMap::new(),
            recursive: BTreeMap::new(),
        }
    }
}

fn insert<C: Ord + Copy>(table: &mut Table<C>, path: &str, connection: C) {
    table
        .entry(path.to_string())
        .or_default()
        .insert(connection);
}

fn remove<C: Ord + Copy>(table: &mut Table<C>, path: &str, connection: C) -> bool {
    let Some(connections) = table.get_mut(path) else {
        return false;
    };
    let removed = connections.remove(&connection);
    if connections.is_empty() {
        table.remove(path);
    }
    removed
}

impl<C: Ord + Copy> WatchManager<C> {
    /// Watches `path`'s data (or existence).
    pub fn watch_data(&mut self, path: &str, connection: C) {
        self.data
            .entry(path.to_string())
            .or_default()
            .insert(connection);
    }

    /// Watches `path`'s children.
    pub fn watch_children(&mut self, path: &str, connection: C) {
        self.child
            .entry(path.to_string())
            .or_default()
            .insert(connection);
    }

    /// Sets a persistent watch (`addWatch`).
    pub fn watch_persistent(&mut self, path: &str, mode: AddWatchMode, connection: C) {
        match mode {
            AddWatchMode::Persistent => {
                insert(&mut self.persistent_data, path, connection);
                insert(&mut self.persistent_child, path, connection);
            }
            AddWatchMode::PersistentRecursive => insert(&mut self.recursive, path, connection),
        }
    }

    /// Removes a connection's watches of `kind` on `path` (`removeWatches`); whether there
    /// was one (ZooKeeper answers `NoWatcher` when there was none).
    pub fn remove(&mut self, path: &str, kind: WatcherType, connection: C) -> bool {
        let mut removed = false;
        if matches!(kind, WatcherType::Children | WatcherType::Any) {
            removed |= remove(&mut self.child, path, connection);
            removed |= remove(&mut self.persistent_child, path, connection);
        }
        if matches!(kind, WatcherType::Data | WatcherType::Any) {
            removed |= remove(&mut self.data, path, connection);
            removed |= remove(&mut self.persistent_data, path, connection);
            removed |= remove(&mut self.recursive, path, connection);
        }
        removed
    }

    /// The connections a change fires (each once), removing their one-shot watches.
    pub fn trigger(&mut self, path: &str, event: WatchEventType, fired: &mut Vec<C>) {
        let start = fired.len();
        let (data_side, child_side) = match event {
            WatchEventType::NodeCreated | WatchEventType::NodeDataChanged => (true, false),
            WatchEventType::NodeChildrenChanged => (false, true),
            WatchEventType::NodeDeleted => (true, true),
        };
        if data_side {
            fired.extend(self.data.remove(path).into_iter().flatten());
            fired.extend(self.persistent_data.get(path).into_iter().flatten());
            // Most runs set no recursive watch; then the walk up the path's ancestors (a
            // search for `/` per level, on every change every server applies) finds nothing.
            if !self.recursive.is_empty() {
                for watched in path_and_ancestors(path) {
                    fired.extend(self.recursive.get(watched).into_iter().flatten());
                }
            }
        }
        if child_side {
            fired.extend(self.child.remove(path).into_iter().flatten());
            fired.extend(self.persistent_child.get(path).into_iter().flatten());
        }
        // Sorted, so a connection fired twice is fired by neighbours: keep the first of each.
        fired[start..].sort_unstable();
        let mut kept = start;
        for index in start..fired.len() {
            if kept == start || fired[kept - 1] != fired[index] {
                fired[kept] = fired[index];
                kept += 1;
            }
        }
        fired.truncate(kept);
    }

    /// Drops every watch of a connection (it closed).
    pub fn remove_connection(&mut self, connection: C) {
        for table in [
            &mut self.data,
            &mut self.child,
            &mut self.persistent_data,
            &mut self.persistent_child,
            &mut self.recursive,
        ] {
            table.retain(|_, connections| {
                connections.remove(&connection);
                !connections.is_empty()
            });
        }
    }

    /// Drops everything (the server stopped serving).
    pub fn clear(&mut self) {
        self.data.clear();
        self.child.clear();
        self.persistent_data.clear();
        self.persistent_child.clear();
        self.recursive.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_fire_once_by_kind() {
        let mut watches = WatchManager::<u32>::default();
        watches.watch_data("/a", 1);
        watches.watch_data("/a", 2);
        watches.watch_children("/a", 1);
        let mut fired = Vec::new();
        watches.trigger("/a", WatchEventType::NodeChildrenChanged, &mut fired);
        assert_eq!(fired, vec![1]);
        fired.clear();
        watches.trigger("/a", WatchEventType::NodeChildrenChanged, &mut fired);
        assert_eq!(fired, Vec::<u32>::new(), "one-shot");
        watches.watch_children("/a", 2);
        watches.trigger("/a", WatchEventType::NodeDeleted, &mut fired);
        assert_eq!(
            fired,
            vec![1, 2],
            "delete fires data and child watches, once each"
        );
        watches.watch_data("/b", 3);
        watches.remove_connection(3);
        fired.clear();
        watches.trigger("/b", WatchEventType::NodeDataChanged, &mut fired);
        assert!(fired.is_empty());
    }

    fn fired_by(watches: &mut WatchManager<u32>, path: &str, event: WatchEventType) -> Vec<u32> {
        let mut fired = Vec::new();
        watches.trigger(path, event, &mut fired);
        fired
    }

    #[test]
    fn persistent_watches_stay_and_recursive_ones_skip_children_changed() {
        let mut watches = WatchManager::<u32>::default();
        watches.watch_persistent("/a", AddWatchMode::Persistent, 1);
        watches.watch_persistent("/a", AddWatchMode::PersistentRecursive, 2);
        watches.watch_data("/a", 1);
        use WatchEventType::*;
        assert_eq!(
            fired_by(&mut watches, "/a", NodeDataChanged),
            vec![1, 2],
            "once per connection"
        );
        assert_eq!(
            fired_by(&mut watches, "/a", NodeDataChanged),
            vec![1, 2],
            "not used up"
        );
        assert_eq!(
            fired_by(&mut watches, "/a", NodeChildrenChanged),
            vec![1],
            "not recursive"
        );
        assert_eq!(
            fired_by(&mut watches, "/a/b/c", NodeCreated),
            vec![2],
            "a grandchild"
        );
        assert_eq!(
            fired_by(&mut watches, "/ab", NodeCreated),
            Vec::<u32>::new(),
            "not a prefix"
        );
        assert_eq!(fired_by(&mut watches, "/a", NodeDeleted), vec![1, 2]);
    }

    #[test]
    fn a_trigger_dedups_only_what_it_adds() {
        let mut watches = WatchManager::<u32>::default();
        watches.watch_data("/a", 1);
        watches.watch_persistent("/a", AddWatchMode::Persistent, 1);
        watches.watch_data("/a", 3);
        // Fired by an earlier change: kept, and not merged with this change's.
        let mut fired = vec![3, 1];
        watches.trigger("/a", WatchEventType::NodeDataChanged, &mut fired);
        assert_eq!(fired, vec![3, 1, 1, 3]);
    }

    #[test]
    fn remove_watches_by_kind_answers_whether_there_was_one() {
        let mut watches = WatchManager::<u32>::default();
        watches.watch_data("/a", 1);
        watches.watch_children("/a", 1);
        assert!(watches.remove("/a", WatcherType::Children, 1));
        assert!(!watches.remove("/a", WatcherType::Children, 1), "NoWatcher");
        assert_eq!(
            fired_by(&mut watches, "/a", WatchEventType::NodeDataChanged),
            vec![1]
        );
        watches.watch_persistent("/p", AddWatchMode::Persistent, 1);
        assert!(watches.remove("/p", WatcherType::Data, 1));
        assert_eq!(
            fired_by(&mut watches, "/p", WatchEventType::NodeChildrenChanged),
            vec![1],
            "Data removes the persistent watch's data half only (3.8)"
        );
        assert!(watches.remove("/p", WatcherType::Any, 1));
        assert!(!watches.remove("/p", WatcherType::Any, 1), "NoWatcher");
        assert!(!watches.remove("/q", WatcherType::Data, 2), "NoWatcher");
    }
}
