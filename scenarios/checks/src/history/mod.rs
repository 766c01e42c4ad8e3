//! History readers: typed views of a recorded history that several checkers share.
//!
//! Each reader documents which events it reads and who records them.

pub mod applied_requests;
pub mod applied_runs;
pub mod barrier;
pub(crate) mod beliefs;
pub mod counter;
pub mod elections;
pub mod faults;
pub mod kv;
pub mod leaders;
pub mod leases;
pub mod lock_waits;
pub mod locks;
pub mod membership;
pub mod pubsub;
pub mod sessions;
pub mod views;
pub mod zk;

use sim::{
    history::{Event, History, PhaseEvent},
    time::SimTime,
};

/// When the workload's final reads began (the run driver records [`PhaseEvent::FinalReads`]
/// after the heal), if they did.
pub fn final_reads_from(history: &History) -> Option<SimTime> {
    phase_at(history, &PhaseEvent::FinalReads)
}

/// When the run driver healed everything at the end of the fault phase, if it did.
pub fn healed_at(history: &History) -> Option<SimTime> {
    phase_at(history, &PhaseEvent::Healed)
}

fn phase_at(history: &History, phase: &PhaseEvent) -> Option<SimTime> {
    history
        .records()
        .iter()
        .find_map(|record| match &record.event {
            Event::Phase(event) if event == phase => Some(record.at),
            _ => None,
        })
}
