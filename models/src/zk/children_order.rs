//! The order `getChildren` answers in.
//!
//! ZooKeeper answers in its `HashSet`'s order (`DataNode.getChildren`), which follows
//! Java's string hash, not the names: a recipe must sort what it lists. The model goes one
//! better than the server: it orders the children by a hash of each name keyed by the
//! world's seed, so the order is stable within a run (and a replay) but changes from seed
//! to seed, and a recipe that forgets to sort fails here as it would in production.

use sim::digest::StableHasher;

/// A keyed order of child names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildrenOrder {
    key: u64,
}

impl ChildrenOrder {
    /// The order keyed by `key` (an ensemble draws it from the world's seed).
    pub fn keyed(key: u64) -> Self {
        Self { key }
    }

    /// Puts `children` in this order: by the keyed hash of each name (names that hash
    /// alike, by name).
    pub fn arrange(self, children: &mut [String]) {
        // The names move out and back, not copied: a lock's waiters list their line many
        // times a turn, and a sort key that copied each name allocated it.
        let mut ranked: Vec<(u64, String)> = children
            .iter_mut()
            .map(|name| (self.rank(name), std::mem::take(name)))
            .collect();
        // Children are distinct names, so no two keys are equal: unstable is stable here.
        ranked.sort_unstable();
        for (slot, (_, name)) in children.iter_mut().zip(ranked) {
            *slot = name;
        }
    }

    fn rank(self, name: &str) -> u64 {
        let mut hasher = StableHasher::new();
        hasher.write_u64(self.key);
        hasher.write_bytes(name.as_bytes());
        hasher.finish().0
    }
}

#[cfg(test)]
mod tests {
    use super::ChildrenOrder;

    #[test]
    fn the_order_is_stable_for_a_key_and_unrelated_to_the_names() {
        let names: Vec<String> = (0..12).map(|n| format!("lock-{n:010}")).collect();
        let arranged = |key| {
            let mut children = names.clone();
            children.reverse();
            ChildrenOrder::keyed(key).arrange(&mut children);
            children
        };
        assert_eq!(arranged(7), arranged(7), "stable for a key");
        assert_ne!(arranged(7), names, "not the names' order");
        assert_ne!(arranged(7), arranged(8), "another key, another order");
        let mut sorted = arranged(7);
        sorted.sort();
        assert_eq!(sorted, names, "the same children");
    }

    #[test]
    fn the_order_is_by_rank_then_name() {
        let order = ChildrenOrder::keyed(7);
        let mut names: Vec<String> = (0..40).map(|n| format!("c-{n}")).collect();
        let mut expected = names.clone();
        expected.sort_by_key(|name| (order.rank(name), name.clone()));
        order.arrange(&mut names);
        assert_eq!(names, expected);
    }
}
