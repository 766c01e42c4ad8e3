//! Prints a summary of one Raft-store workload run (debugging aid).
use scenarios::etcd_workload::{Faults, KvWorkload, run};
use sim::{
    Seed,
    fault::{FaultKind, SwarmConfig},
    history::{Event, OpResult, ProtocolEvent},
};

fn main() {
    let seed: u64 = std::env::args().nth(1).map_or(0, |s| s.parse().unwrap());
    let workload = KvWorkload {
        servers: 5,
        faults: Faults::Swarm(SwarmConfig {
            fault_phase_ms: 8_000,
            mean_interval_ms: 400,
            kinds: vec![
                FaultKind::Partition,
                FaultKind::Crash,
                FaultKind::Pause,
                FaultKind::Loss,
            ],
            ..SwarmConfig::default()
        }),
        ..KvWorkload::default()
    };
    let result = run(Seed::new(seed), &workload);
    let history = &result.outcome.history;
    let (mut ok, mut fail, mut unknown, mut open) = (0, 0, 0, 0);
    for op in history.operations() {
        match op.completion {
            Some((_, OpResult::Ok { .. })) => ok += 1,
            Some((_, OpResult::Fail { .. })) => fail += 1,
            Some((_, OpResult::Unknown { .. })) => unknown += 1,
            None => open += 1,
        }
    }
    let mut leaders = 0;
    let mut applied = 0;
    let mut expired = 0;
    for record in history.records() {
        match &record.event {
            Event::Protocol(ProtocolEvent::BecameLeader { term }) => {
                leaders += 1;
                println!("{} {:?} leader term {term}", record.at, record.node);
            }
            Event::Protocol(ProtocolEvent::Applied { .. }) => applied += 1,
            Event::Protocol(ProtocolEvent::SessionExpired { .. }) => expired += 1,
            _ => {}
        }
    }
    println!("{}", result.outcome);
    println!(
        "ops ok {ok} fail {fail} unknown {unknown} open {open}; elections {leaders}; applied events {applied}; expired {expired}; final read ok {} from {}",
        result.final_read_succeeded, result.final_reads_from
    );
}
