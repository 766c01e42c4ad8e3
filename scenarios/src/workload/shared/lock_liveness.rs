//! How long the lock workload's liveness phase needs: the bound that grows with the clients.
//!
//! After the heal the workers stop and then every lock-taking process takes the lock once
//! more (`Locks::finish`). One lock serializes them, so the phase is about as long as the
//! turns it asks for, one after the other:
//! - the workers' last turns: a worker waiting when told to stop goes on waiting until it
//!   gets the lock or its patience runs out, and then may hold once more:
//!   `patience_ms` + one turn;
//! - the final turns: one per process, in a row.
//!
//! A turn is the hold and the hand-off to the next holder: the fenced write and its reply
//! (2 one-way messages), the release written through the leader and committed at the
//! waiter's server (about 6), the watch notification (1), and the next holder's request
//! written or read through the leader and answered (about 6), with a disk sync in each of
//! the two commits. The bound allows every one of them the world's *largest* latency.
//!
//! Measured at 256 clients (2026-11-27, with and without the `_faults` plans): a turn took
//! 122–149 ms with the default 50 ms hold (72–99 ms of hand-off at the mean latencies; seeds
//! 0–2) on all three locks, about 7 acquisitions per simulated second (6.2–8.2), as at 8
//! clients; the whole phase took 35–47 s (seeds 0–9), against the 30 s the catalogue's lock
//! scenarios give it. The bound below gives 204 ms a turn, 62.4 s at 256 clients.

use super::locks::Locks;
use crate::scenario::WorldSettings;

/// One-way messages in a row in the longest hand-off (see the module doc).
const HANDOFF_MESSAGES: u64 = 15;

/// Disk syncs in a row in a hand-off: the release's commit and the next request's.
const HANDOFF_SYNCS: u64 = 2;

impl Locks {
    /// The simulated time the liveness phase needs when `processes` processes take this
    /// lock in `world`: the workers' last waits (`patience_ms`) and `processes + 1` turns,
    /// each the hold and a hand-off at the world's largest message and sync latencies.
    pub(crate) fn liveness_needed_ms(&self, processes: u64, world: &WorldSettings) -> u64 {
        let handoff_us = HANDOFF_MESSAGES * world.network.latency_max_us
            + HANDOFF_SYNCS * world.disk.sync_latency_max_us;
        let turn_ms = self.hold_ms + handoff_us.div_ceil(1_000);
        self.patience_ms
            .saturating_add(processes.saturating_add(1).saturating_mul(turn_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phase_grows_by_a_turn_per_process_after_the_workers_last_waits() {
        let (locks, world) = (Locks::default(), WorldSettings::default());
        // The defaults: 10 s of patience; a turn of 50 ms hold, 15 messages of up to 10 ms
        // and 2 syncs of up to 2 ms.
        assert_eq!(locks.liveness_needed_ms(0, &world), 10_000 + 204);
        assert_eq!(locks.liveness_needed_ms(5, &world), 10_000 + 6 * 204);
        assert_eq!(locks.liveness_needed_ms(256, &world), 10_000 + 257 * 204);
        let slower = {
            let mut world = world.clone();
            world.network.latency_max_us = 20_000;
            world
        };
        assert_eq!(locks.liveness_needed_ms(1, &slower), 10_000 + 2 * 354);
        let longer = Locks {
            hold_ms: 4_000,
            ..Locks::default()
        };
        assert_eq!(longer.liveness_needed_ms(1, &world), 10_000 + 2 * 4_154);
    }
}
