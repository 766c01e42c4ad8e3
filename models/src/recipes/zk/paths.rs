//! Path helpers the ZooKeeper recipes share.

use crate::recipes::shared::bugs::{RecipeBug, RecipeBugs};
use crate::zk::{SequenceWidth, ZkClient, ZkClientError};
use sim::history::zk::{CreateMode, ZkError};

/// Creates every missing ancestor of `path` as an empty persistent node (Curator's
/// `creatingParentsIfNeeded`). A parent created meanwhile by someone else is fine; a lost
/// connection is retried, since creating a persistent empty node twice is harmless.
pub(crate) async fn ensure_parents(zk: &ZkClient, path: &str) -> Result<(), ZkClientError> {
    let mut prefix = String::new();
    let parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        prefix.push('/');
        prefix.push_str(part);
        loop {
            match zk.create(&prefix, "", CreateMode::Persistent).await {
                Ok(_) | Err(ZkClientError::Api(ZkError::NodeExists)) => break,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            }
        }
    }
    Ok(())
}

/// The sequence number ZooKeeper appended to the sequential node `name`, which the recipe
/// created with the prefix `prefix` (`lock-`, `item-`, …): the text after the prefix, read as
/// the signed 32-bit counter ZooKeeper formats `%010d` (`0000000012`, `-000000005`,
/// `-2147483648`). The prefix, not a count of characters, says where the number starts:
/// after the counter wraps, ten characters from the end may fall after the minus sign
/// (which is how go-zookeeper lost it, go-zookeeper/zk#65).
pub(crate) fn sequence_of(name: &str, prefix: &str) -> Option<i32> {
    sequence_text(name, prefix)?.parse().ok()
}

/// The text after the last `prefix` in `name`.
///
/// `str::rfind` would do, but sets up a substring searcher per call; the prefix ends only
/// the sequence's width (about ten bytes) from the end, so candidate positions tried from
/// the end find it after a few bytes. (A match of UTF-8 `prefix` starts on a character
/// boundary, so the slice after it is one.)
fn sequence_text<'n>(name: &'n str, prefix: &str) -> Option<&'n str> {
    let (haystack, needle) = (name.as_bytes(), prefix.as_bytes());
    let last_start = haystack.len().checked_sub(needle.len())?;
    let start = (0..=last_start).rev().find(|&start| {
        // The first byte alone rules out almost every position, without a comparison call.
        needle.first().is_none_or(|&first| haystack[start] == first)
            && haystack[start..].starts_with(needle)
    })?;
    name.get(start + needle.len()..)
}

/// The sequential nodes `names` (each with the prefix its recipe created it with), oldest
/// first, as [`SequenceWidth::in_order`] orders them over the servers' counter (`width`);
/// names that carry no sequence after their prefix are left out. With
/// `recipe.seq_overflow_compare` the sequences are compared as text, as kazoo did
/// (python-zk/kazoo#730): right while the counter has not wrapped, since `%010d` pads every
/// non-negative number to ten digits; after the wrap every negative name sorts before the
/// positive ones, and of two negatives the newer first (`-000000031` before `-000000032`).
pub(crate) fn in_sequence_order(
    names: Vec<(String, &str)>,
    width: SequenceWidth,
    bugs: RecipeBugs,
) -> Vec<String> {
    if bugs.has(RecipeBug::SeqOverflowCompare) {
        let mut by_text: Vec<(String, String)> = names
            .into_iter()
            .filter_map(|(name, prefix)| {
                let text = sequence_text(&name, prefix)?.to_string();
                sequence_of(&name, prefix).map(|_| (text, name))
            })
            .collect();
        by_text.sort();
        return by_text.into_iter().map(|(_, name)| name).collect();
    }
    width.in_order(
        names
            .into_iter()
            .filter_map(|(name, prefix)| Some((sequence_of(&name, prefix)?, name)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_text_is_the_text_after_the_last_prefix_as_rfind_finds_it() {
        let rfind = |name: &str, prefix: &str| {
            let start = name.rfind(prefix)? + prefix.len();
            name.get(start..).map(str::to_string)
        };
        let cases = [
            ("_c_ab-lock-0000000012", "lock-"),
            ("lock-lock-0000000001", "lock-"),
            ("lock-", "lock-"),
            ("lock", "lock-"),
            ("", "lock-"),
            ("abc", ""),
            ("x-élan-0000000003", "élan-"),
            ("_c_ab-lock--000000005", "lock-"),
        ];
        for (name, prefix) in cases {
            assert_eq!(
                sequence_text(name, prefix).map(str::to_string),
                rfind(name, prefix),
                "{name:?} after {prefix:?}"
            );
        }
    }

    #[test]
    fn sequence_numbers_follow_the_prefix_sign_and_all() {
        assert_eq!(sequence_of("_c_ab-lock-0000000012", "lock-"), Some(12));
        assert_eq!(sequence_of("lock-0000000000", "lock-"), Some(0));
        assert_eq!(sequence_of("lock-2147483647", "lock-"), Some(2_147_483_647));
        assert_eq!(sequence_of("lock--2147483648", "lock-"), Some(i32::MIN));
        assert_eq!(sequence_of("_c_ab-lock--000000005", "lock-"), Some(-5));
        assert_eq!(sequence_of("short", "lock-"), None);
        assert_eq!(sequence_of("lock-", "lock-"), None);
    }

    #[test]
    fn names_without_the_prefix_are_left_out_with_either_order() {
        // A line's listing may hold other nodes of its parent: `Line::in_order` passes every
        // name with the prefix, unsearched, and relies on this.
        let listed = || {
            [
                "x-lock-0000000002",
                "other-0000000001",
                "lock",
                "y-lock-0000000001",
            ]
            .into_iter()
            .map(|name| (name.to_string(), "lock-"))
            .collect::<Vec<_>>()
        };
        let width = SequenceWidth::ZOOKEEPER;
        for bugs in [
            RecipeBugs::default(),
            [RecipeBug::SeqOverflowCompare].into_iter().collect(),
        ] {
            assert_eq!(
                in_sequence_order(listed(), width, bugs),
                ["y-lock-0000000001", "x-lock-0000000002"]
            );
        }
    }

    #[test]
    fn across_the_wrap_text_order_puts_new_nodes_first_and_the_counters_order_does_not() {
        let six = SequenceWidth::new(6).unwrap();
        // Oldest first: 31, then (wrapped) -32, -31, -30 in their order of creation.
        let line = || {
            [
                "a-lock--000000031",
                "b-lock-0000000031",
                "c-lock--000000030",
                "d-lock--000000032",
            ]
            .into_iter()
            .map(|name| (name.to_string(), "lock-"))
            .collect::<Vec<_>>()
        };
        let correct = in_sequence_order(line(), six, RecipeBugs::default());
        assert_eq!(
            correct,
            [
                "b-lock-0000000031",
                "d-lock--000000032",
                "a-lock--000000031",
                "c-lock--000000030"
            ]
        );
        let buggy = in_sequence_order(
            line(),
            six,
            [RecipeBug::SeqOverflowCompare].into_iter().collect(),
        );
        assert_eq!(
            buggy,
            [
                "c-lock--000000030",
                "a-lock--000000031",
                "d-lock--000000032",
                "b-lock-0000000031"
            ]
        );
    }
}
