//! Server-side one-shot watches (ZooKeeper's `WatchManager`): which connections watch
//! which paths. A watch fires once and is forgotten; it dies with its connection.

use sim::history::zk::WatchEventType;
use std::collections::{BTreeMap, BTreeSet};

/// Watches per path, for connections identified by `C`.
#[derive(Clone, Debug)]
pub struct WatchManager<C: Ord + Copy> {
    /// Data and exists watches (fired by create, data change, delete).
    data: BTreeMap<String, BTreeSet<C>>,
    /// Child watches (fired by a child created or deleted, or the node deleted).
    child: BTreeMap<String, BTreeSet<C>>,
}

impl<C: Ord + Copy> Default for WatchManager<C> {
    fn default() -> Self {
        Self {
            data: BTreeMap::new(),
            child: BTreeMap::new(),
        }
    }
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

    /// The connections a change fires (each once), removing their watches.
    pub fn trigger(&mut self, path: &str, event: WatchEventType, fired: &mut Vec<C>) {
        let start = fired.len();
        let tables: &mut [&mut BTreeMap<String, BTreeSet<C>>] = match event {
            WatchEventType::NodeCreated | WatchEventType::NodeDataChanged => &mut [&mut self.data],
            WatchEventType::NodeChildrenChanged => &mut [&mut self.child],
            WatchEventType::NodeDeleted => &mut [&mut self.data, &mut self.child],
        };
        for table in tables.iter_mut() {
            if let Some(connections) = table.remove(path) {
                fired.extend(connections);
            }
        }
        fired[start..].sort_unstable();
        let mut seen = BTreeSet::new();
        let mut index = start;
        while index < fired.len() {
            if seen.insert(fired[index]) {
                index += 1;
            } else {
                fired.remove(index);
            }
        }
    }

    /// Drops every watch of a connection (it closed).
    pub fn remove_connection(&mut self, connection: C) {
        for table in [&mut self.data, &mut self.child] {
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
}
