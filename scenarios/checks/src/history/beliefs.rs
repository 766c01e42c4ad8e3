//! Intervals during which a client process believed it held something — a lock, an
//! election's leadership — with the fencing token it held it by, and whether alone or (a
//! read lock) shared with other readers. The lock reader
//! ([`super::locks`]) and the election reader ([`super::elections`]) are both built on this.
//!
//! Reads the recipe records each reader selects, written at the client node by the recipe
//! (the client's belief itself), and the crashes of client nodes from the fault records (a
//! crashed process believes nothing any more: its belief ends at the crash).

use sim::{
    NodeId,
    history::{
        Event, History,
        beliefs::{BeliefChange, Held, RecipeBelief, belief_change},
        recipe::{LockMode, LossReason},
    },
    time::SimTime,
};
use std::collections::BTreeMap;

/// A client process: the node and the logical process on it.
pub type Holder = (NodeId, u32);

/// How a belief ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldEnd {
    /// The client let go (released the lock, resigned the leadership).
    Released,
    /// The client learned it had lost it.
    Lost(LossReason),
    /// The client's node crashed.
    Crashed,
    /// The client recorded that it acquired (or began to lead) again, by this token,
    /// without having let go of this belief or learned that it lost it. The recipes are not
    /// re-entrant, so this is a violation (`recipe.no_acquire_while_held`), not an end the
    /// readers may assume: the belief is closed here only so that the intervals stay
    /// disjoint per process.
    BeganAgain {
        /// The token of the new belief.
        token: u64,
    },
    /// The run ended while the client still believed.
    StillHeld,
}

/// One interval of belief.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Belief {
    /// The lock or election.
    pub(crate) name: String,
    pub(crate) holder: Holder,
    pub(crate) token: u64,
    pub(crate) mode: LockMode,
    pub(crate) from: SimTime,
    pub(crate) until: Option<SimTime>,
    pub(crate) end: HoldEnd,
}

/// Whether two intervals `[from, until)` overlap (`None`: still open at the end of the run,
/// which overlaps everything after its start).
pub(crate) fn intervals_overlap(
    (from, until): (SimTime, Option<SimTime>),
    (other_from, other_until): (SimTime, Option<SimTime>),
) -> bool {
    let open_at = |until: Option<SimTime>, time: SimTime| until.is_none_or(|until| until > time);
    open_at(until, other_from) && open_at(other_until, from)
}

/// For each lock or election (`name`), every interval paired with the earliest earlier one
/// of a different holder that it overlaps; `intervals` are in the order they began. Each
/// later interval is reported once.
pub(crate) fn first_overlaps<T: Clone>(
    intervals: Vec<T>,
    name: impl Fn(&T) -> &str,
    holder: impl Fn(&T) -> Holder,
    overlaps: impl Fn(&T, &T) -> bool,
) -> Vec<(T, T)> {
    let mut by_name: BTreeMap<String, Vec<T>> = BTreeMap::new();
    for interval in intervals {
        by_name
            .entry(name(&interval).to_string())
            .or_default()
            .push(interval);
    }
    let mut pairs = Vec::new();
    for (_, intervals) in by_name {
        for (index, later) in intervals.iter().enumerate() {
            if let Some(earlier) = intervals[..index]
                .iter()
                .find(|earlier| holder(earlier) != holder(later) && overlaps(earlier, later))
            {
                pairs.push((earlier.clone(), later.clone()));
            }
        }
    }
    pairs
}

/// Every belief in what `of` selects (locks, leaderships or both) that the recipe records
/// show, in the order they began (read by `sim`'s [`belief_change`], as the nemesis reads
/// them).
pub(crate) fn beliefs(history: &History, of: impl Fn(Held) -> bool) -> Vec<Belief> {
    let mut open: BTreeMap<(Holder, String), usize> = BTreeMap::new();
    let mut beliefs: Vec<Belief> = Vec::new();
    let close = |beliefs: &mut Vec<Belief>, index: usize, at: SimTime, end: HoldEnd| {
        beliefs[index].until = Some(at);
        beliefs[index].end = end;
    };
    for record in history.records() {
        match (&record.event, record.node) {
            (Event::Recipe(recipe), Some(node)) => {
                let Some(RecipeBelief {
                    process,
                    name,
                    change,
                    ..
                }) = belief_change(recipe).filter(|belief| of(belief.held))
                else {
                    continue;
                };
                let key = ((node, process), name.to_string());
                match change {
                    BeliefChange::Began { token, mode } => {
                        // A second start without an end is reported, not taken as a
                        // release (`HoldEnd::BeganAgain`).
                        if let Some(index) = open.remove(&key) {
                            close(
                                &mut beliefs,
                                index,
                                record.at,
                                HoldEnd::BeganAgain { token },
                            );
                        }
                        open.insert(key, beliefs.len());
                        beliefs.push(Belief {
                            name: name.to_string(),
                            holder: (node, process),
                            token,
                            mode,
                            from: record.at,
                            until: None,
                            end: HoldEnd::StillHeld,
                        });
                    }
                    BeliefChange::LetGo => {
                        if let Some(index) = open.remove(&key) {
                            close(&mut beliefs, index, record.at, HoldEnd::Released);
                        }
                    }
                    BeliefChange::Lost(why) => {
                        if let Some(index) = open.remove(&key) {
                            close(&mut beliefs, index, record.at, HoldEnd::Lost(why));
                        }
                    }
                    // Waits are read by `lock_waits`, not here.
                    BeliefChange::StartedWaiting | BeliefChange::StoppedWaiting => {}
                }
            }
            (Event::Fault(fault), _) => {
                if let Some(crashed) = fault.crashed() {
                    let ended: Vec<(Holder, String)> = open
                        .keys()
                        .filter(|((node, _), _)| *node == crashed)
                        .cloned()
                        .collect();
                    for key in ended {
                        let index = open.remove(&key).expect("listed");
                        close(&mut beliefs, index, record.at, HoldEnd::Crashed);
                    }
                }
            }
            _ => {}
        }
    }
    beliefs
}

/// Every lock hold and every leadership, in the order they began: what a writer to a fenced
/// resource believed it held, whichever recipe gave it its token.
pub(crate) fn tokens_believed(history: &History) -> Vec<Belief> {
    beliefs(history, |_| true)
}
