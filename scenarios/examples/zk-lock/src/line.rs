//! The line both locks wait in, as the seed post describes it: list the lock directory's
//! children, the lowest sequence number holds, every other waiter watches the one just below
//! its own and looks again when that one goes.

use crate::Holding;
use zookeeper_client::{Client, Error, EventType};

/// A child's sequence number: the digits after its last `-` (`lock-0000000007`,
/// `_c_…-lock-0000000007`), or `None` for a child that is not a lock node.
pub(crate) fn sequence_of(child: &str) -> Option<i64> {
    child.rsplit('-').next()?.parse().ok()
}

/// What one look at the line found.
pub(crate) enum Place {
    /// `own` has the lowest number: it holds.
    First,
    /// The child just before `own` in the line (its name in the lock directory).
    Behind(String),
}

/// Whether a waiter looks for its own node in the listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OwnNode {
    /// As the post's loop: no child numbered below its own means it holds, even when its
    /// own node is gone (its session ended while it waited).
    Assumed,
    /// Its own node must be listed, or the wait fails with `NoNode`.
    Listed,
}

/// Where `own` (a child's name) stands among `children`; `None` when `own` has no
/// sequence number, or when `check` is [`OwnNode::Listed`] and it is not among them.
pub(crate) fn place_of(children: &[String], own: &str, check: OwnNode) -> Option<Place> {
    let own_sequence = sequence_of(own)?;
    if check == OwnNode::Listed && !children.iter().any(|child| child == own) {
        return None;
    }
    let predecessor = children
        .iter()
        .filter_map(|child| Some((sequence_of(child)?, child)))
        .filter(|(sequence, _)| *sequence < own_sequence)
        .max_by_key(|(sequence, _)| *sequence);
    Some(match predecessor {
        None => Place::First,
        Some((_, child)) => Place::Behind(child.clone()),
    })
}

/// Waits until `own` (a child of `dir`) is first in line: the post's loop, step 2 to 5,
/// telling `holding` each time its predecessor's watch wakes it. Every error of the store
/// ends the wait (the post returns it to its caller).
pub(crate) async fn wait_until_first(
    client: &Client,
    dir: &str,
    own: &str,
    check: OwnNode,
    holding: &mut impl Holding,
) -> Result<(), Error> {
    loop {
        let children = client.list_children(dir).await?;
        match place_of(&children, own, check) {
            None => return Err(Error::NoNode),
            Some(Place::First) => return Ok(()),
            Some(Place::Behind(predecessor)) => {
                // `getData` with a watch, as the post's `GetW`: a predecessor already gone
                // means look again.
                let watched = format!("{dir}/{predecessor}");
                match client.get_and_watch_data(&watched).await {
                    Ok((_data, _stat, watcher)) => {
                        // A session event is the session's end, not the predecessor's.
                        if watcher.changed().await.event_type != EventType::Session {
                            holding.woken(&watched);
                        }
                    }
                    Err(Error::NoNode) => {}
                    Err(error) => return Err(error),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn the_lowest_number_holds_and_each_other_waits_behind_the_one_below() {
        let children = names(&[
            "lock-0000000004",
            "lock-0000000001",
            "other",
            "lock-0000000009",
        ]);
        assert!(matches!(
            place_of(&children, "lock-0000000001", OwnNode::Listed),
            Some(Place::First)
        ));
        assert!(matches!(
            place_of(&children, "lock-0000000009", OwnNode::Listed),
            Some(Place::Behind(child)) if child == "lock-0000000004"
        ));
    }

    #[test]
    fn a_waiter_whose_node_is_gone_holds_as_the_post_assumes_and_fails_when_it_looks() {
        let children = names(&["lock-0000000004", "lock-0000000009"]);
        assert!(matches!(
            place_of(&children, "lock-0000000002", OwnNode::Assumed),
            Some(Place::First)
        ));
        assert!(place_of(&children, "lock-0000000002", OwnNode::Listed).is_none());
    }

    #[test]
    fn protected_names_sort_by_their_number_not_their_guid() {
        let children = names(&["_c_ff-1-lock-0000000003", "_c_0a-2-lock-0000000005"]);
        assert!(matches!(
            place_of(&children, "_c_0a-2-lock-0000000005", OwnNode::Listed),
            Some(Place::Behind(child)) if child == "_c_ff-1-lock-0000000003"
        ));
    }
}
