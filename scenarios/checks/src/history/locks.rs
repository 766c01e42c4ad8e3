//! Lock holds as clients believed them, and the writes fenced resources received.
//!
//! Reads the `RecipeEvent::Lock` records the lock recipes write at the client node (what
//! the client believed: acquired with a token, released, lost) and the crashes of client
//! nodes (a crashed process believes nothing any more: its hold ends at the crash). Reads
//! `RecipeEvent::ResourceWrite` records, which the fenced resource writes at its own node
//! for every write it receives.

use sim::{
    NodeId,
    history::{
        Event, History, RecipeEvent, ResourceVerdict,
        recipe::{LockStep, LossReason},
    },
    time::SimTime,
};
use std::collections::BTreeMap;

/// A client process: the node and the logical process on it.
pub type Holder = (NodeId, u32);

/// How a hold ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldEnd {
    /// The client let go.
    Released,
    /// The client learned it had lost the lock.
    Lost(LossReason),
    /// The client's node crashed.
    Crashed,
    /// The run ended while the client still believed it held the lock.
    StillHeld,
}

/// One interval during which a client believed it held a lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    /// The lock.
    pub lock: String,
    /// Who held it.
    pub holder: Holder,
    /// Its fencing token.
    pub token: u64,
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
        let before = |hold: &Hold, time: SimTime| hold.until.is_none_or(|until| until > time);
        before(self, other.from) && before(other, self.from)
    }
}

/// Every hold of every lock, in the order they began.
pub fn holds(history: &History) -> Vec<Hold> {
    let mut open: BTreeMap<(Holder, String), usize> = BTreeMap::new();
    let mut holds: Vec<Hold> = Vec::new();
    let close = |holds: &mut Vec<Hold>, index: usize, at: SimTime, end: HoldEnd| {
        holds[index].until = Some(at);
        holds[index].end = end;
    };
    for record in history.records() {
        match (&record.event, record.node) {
            (
                Event::Recipe(RecipeEvent::Lock {
                    process,
                    lock,
                    step,
                }),
                Some(node),
            ) => {
                let key = ((node, *process), lock.clone());
                match step {
                    LockStep::Acquired { token } => {
                        // A second Acquired without an end replaces the first belief.
                        if let Some(index) = open.remove(&key) {
                            close(&mut holds, index, record.at, HoldEnd::Released);
                        }
                        open.insert(key, holds.len());
                        holds.push(Hold {
                            lock: lock.clone(),
                            holder: (node, *process),
                            token: *token,
                            from: record.at,
                            until: None,
                            end: HoldEnd::StillHeld,
                        });
                    }
                    LockStep::Released { .. } => {
                        if let Some(index) = open.remove(&key) {
                            close(&mut holds, index, record.at, HoldEnd::Released);
                        }
                    }
                    LockStep::Lost { why, .. } => {
                        if let Some(index) = open.remove(&key) {
                            close(&mut holds, index, record.at, HoldEnd::Lost(*why));
                        }
                    }
                    LockStep::Requested | LockStep::Woken { .. } | LockStep::GaveUp { .. } => {}
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
                        close(&mut holds, index, record.at, HoldEnd::Crashed);
                    }
                }
            }
            _ => {}
        }
    }
    holds
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
