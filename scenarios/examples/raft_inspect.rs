//! Prints a summary of one Raft-store workload run (debugging aid).
//! Usage: raft_inspect <seed> <bug|none> <servers> <kinds> [sync_ms]
use models::etcd::KnownBug;
use scenarios::etcd_workload::{Faults, KvWorkload, Tuning, run};
use sim::{
    Seed,
    fault::{FaultKind, SwarmConfig},
    history::{Event, OpResult, ProtocolEvent},
};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seed: u64 = args[1].parse().unwrap();
    let bugs: Vec<KnownBug> = match args[2].as_str() {
        "none" => vec![],
        name => vec![name.parse().unwrap()],
    };
    let kinds: Vec<FaultKind> = args[4]
        .split(',')
        .map(|k| serde_json::from_str(&format!("\"{k}\"")).unwrap())
        .collect();
    let servers: usize = args[3].parse().unwrap();
    let sync_ms: u64 = args.get(5).map_or(0, |s| s.parse().unwrap());
    let workload = KvWorkload {
        servers,
        bugs,
        disk_sync_latency: (sync_ms > 0).then(|| {
            (
                Duration::from_millis(sync_ms / 2),
                Duration::from_millis(sync_ms),
            )
        }),
        faults: Faults::Swarm(SwarmConfig {
            fault_phase_ms: 8_000,
            mean_interval_ms: std::env::var("MEAN_MS").map_or(300, |v| v.parse().unwrap()),
            kinds,
            max_unavailable_servers: Some(
                servers.div_ceil(2).max(1) - if servers > 1 { 1 } else { 0 },
            ),
            ..SwarmConfig::default()
        }),
        tune: Tuning::with(|config| {
            let env = |name: &str| std::env::var(name).ok().map(|v| v.parse::<u64>().unwrap());
            if let Some(max) = env("MAX_ENTRIES") {
                config.raft.max_entries_per_append = max as usize;
            }
            if let Some(min) = env("ELECTION_MIN") {
                config.raft.election_timeout_min = Duration::from_millis(min);
            }
            if let Some(max) = env("ELECTION_MAX") {
                config.raft.election_timeout_max = Duration::from_millis(max);
            }
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
    for record in history.records() {
        match &record.event {
            Event::Protocol(ProtocolEvent::BecameLeader { term }) => {
                leaders += 1;
                println!("{} {:?} leader term {term}", record.at, record.node);
            }
            Event::Protocol(ProtocolEvent::Applied { .. }) => applied += 1,
            Event::Fault(fault) => {
                println!("{} fault {} {:?}", record.at, fault.fault, fault.outcome)
            }
            _ => {}
        }
    }
    if std::env::var("TRACE").is_ok() {
        print!("{}", history.to_json_lines());
    }
    println!("{}", result.outcome);
    println!(
        "ops ok {ok} fail {fail} unknown {unknown} open {open}; elections {leaders}; applied events {applied}; final read ok {} from {}",
        result.final_read_succeeded, result.final_reads_from
    );
}
