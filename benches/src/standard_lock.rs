//! The standard lock scenario of issue 11's performance target: 5 servers, 16 clients,
//! 60 simulated seconds of faults (partitions, loss, latency, server crashes and pauses),
//! then the heal, the liveness phase and every check. The `locks` bench times it; the
//! `lock_seed` example runs one seed of it (for callgrind), `lock_seeds` many in one process
//! (for `farm-bench --vs`).

use scenarios::{Scenario, catalogue};

/// The catalogue lock scenarios the standard scenario is built on, one per store: the
/// ZooKeeper queue lock (ZAB store) and etcd's mutex (Raft store).
pub const BASES: [&str; 2] = ["zk_queue_lock_faults", "etcd_mutex_faults"];

/// The base for a store as the examples name it: `zab` (the queue lock) or `raft` (etcd's
/// mutex).
pub fn base_of(store: &str) -> Option<&'static str> {
    match store {
        "zab" => Some(BASES[0]),
        "raft" => Some(BASES[1]),
        _ => None,
    }
}

/// The standard lock scenario on top of the catalogue `_faults` lock scenario `base`
/// (one of [`BASES`]), named `<base>_standard`.
pub fn scenario(base: &str) -> Scenario {
    let mut scenario = catalogue::get(base).expect("a catalogue lock scenario");
    scenario.name = format!("{base}_standard");
    scenario.servers = 5;
    scenario.clients = 16;
    scenario.fault_phase_ms = 60_000;
    scenario
        .validate()
        .expect("the standard lock scenario is valid");
    scenario
}
