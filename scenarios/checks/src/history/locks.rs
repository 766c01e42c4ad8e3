//! Lock holds as clients believed them, and the writes fenced resources received.
//!
//! Reads the `RecipeEvent::Lock` records the lock recipes write at the client node (what
//! the client believed: acquired with a token and a mode, exclusive or shared; released;
//! lost) and the crashes of client nodes (a crashed process believes nothing any more: its
//! hold ends at the crash; the `beliefs` reader the election reader shares). Reads `RecipeEvent::ResourceWrite` records,
//! which the fenced resource writes at its own node for every write it receives.

use super::beliefs::{beliefs, intervals_overlap};
use sim::{
    history::{Event, History, RecipeEvent, ResourceVerdict, beliefs::Held, recipe::LockMode},
    time::SimTime,
};

pub use super::beliefs::{HoldEnd, Holder};

/// One interval during which a client believed it held a lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    /// The lock.
    pub lock: String,
    /// Who held it.
    pub holder: Holder,
    /// Its fencing token.
    pub token: u64,
    /// Whether it held the lock alone or shared with other readers.
    pub mode: LockMode,
    /// When the client recorded that it acquired the lock.
    pub from: SimTime,
    /// When the belief ended (`None`: still held at the end of the run).
    pub until: Option<SimTime>,
    /// How it ended.
    pub end: HoldEnd,
}

impl Hold {
    /// Whether the two holds overlap in time (a hold still open at the end of the run
    /// overlaps everything after its start).
    pub fn overlaps(&self, other: &Hold) -> bool {
        intervals_overlap((self.from, self.until), (other.from, other.until))
    }
}

/// Every hold of every lock, in the order they began.
pub fn holds(history: &History) -> Vec<Hold> {
    beliefs(history, |held| held == Held::Lock)
        .into_iter()
        .map(|belief| Hold {
            lock: belief.name,
            holder: belief.holder,
            token: belief.token,
            mode: belief.mode,
            from: belief.from,
            until: belief.until,
            end: belief.end,
        })
        .collect()
}

/// A write a fenced resource received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceWrite {
    /// The resource.
    pub resource: String,
    /// When it arrived.
    pub at: SimTime,
    /// Who sent it.
    pub writer: Holder,
    /// The token it carried.
    pub token: Option<u64>,
    /// What it wrote.
    pub value: String,
    /// What the resource did.
    pub verdict: ResourceVerdict,
}

/// Every write every fenced resource received, in arrival order.
pub fn resource_writes(history: &History) -> Vec<ResourceWrite> {
    history
        .records()
        .iter()
        .filter_map(|record| match &record.event {
            Event::Recipe(RecipeEvent::ResourceWrite {
                resource,
                writer,
                process,
                token,
                value,
                verdict,
            }) => Some(ResourceWrite {
                resource: resource.clone(),
                at: record.at,
                writer: (*writer, *process),
                token: *token,
                value: value.clone(),
                verdict: *verdict,
            }),
            _ => None,
        })
        .collect()
}
