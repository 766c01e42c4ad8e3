//! Explores fault mixes for the Raft store: sweeps seeds with a known-bug variant (or none)
//! and prints, per seed, which properties were violated. This is how the configurations of
//! tests/raft_known_bugs.rs were found; use it to look for new ones.
//!
//! ```text
//! cargo run -p scenarios --example raft_explore --profile test -- <bug|none> <servers> <seeds> [faults]
//! ```
//! `faults`: a comma list of swarm fault kinds (`crash,partition,pause,loss,duplication,clog,
//! latency,clock_step,clock_drift`; default `crash,partition`), or `killer` (the leader
//! killer), or `cutoff:N` (cut the leader off with N clients). Knobs (environment):
//! `MEAN_MS` (fault interval, default 300), `LOSS`/`DUP` (percent), `SYNC_MS` (slowest disk
//! sync), `MAX_ENTRIES` (per AppendEntries), `ELECTION_MIN`/`ELECTION_MAX` (ms),
//! `READ_HEAVY`, `PROCS`, `THINK` (ms), `REQ_MS`/`CONNECT_MS`/`BACKOFF_MS` (client),
//! `DRIFT` (ppm of a cut-off leader's clock), `CUT_MS`, `STRAND` (percent).

use checks::etcd::{acknowledged_write_durability, read_sees_prior_writes};
use models::etcd::{ClientConfig, KnownBug};
use scenarios::etcd_workload::{Faults, KvWorkload, LeaderKiller, OperationMix, Tuning, run};
use sim::{
    Seed,
    fault::{FaultKind, SwarmConfig},
};
use std::time::Duration;

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |value| {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value}: expected a number"))
    })
}

fn faults(spec: &str, servers: usize) -> Faults {
    let mean_ms = knob("MEAN_MS", 300);
    if spec == "killer" {
        return Faults::LeaderKiller(LeaderKiller {
            phase: Duration::from_secs(8),
            max_delay: Duration::from_millis(mean_ms),
            leader_percent: 30,
            strand_leader_percent: knob("STRAND", 50) as u32,
        });
    }
    if let Some(clients) = spec.strip_prefix("cutoff:") {
        return Faults::CutOffLeader {
            phase: Duration::from_secs(8),
            interval: Duration::from_millis(mean_ms),
            duration: Duration::from_millis(knob("CUT_MS", 900)),
            with_clients: clients.parse().expect("cutoff:N"),
            leader_drift_ppm: -(knob("DRIFT", 0) as i32),
        };
    }
    let kinds: Vec<FaultKind> = spec
        .split(',')
        .map(|kind| {
            serde_json::from_str(&format!("\"{kind}\""))
                .unwrap_or_else(|_| panic!("unknown fault kind {kind}"))
        })
        .collect();
    Faults::Swarm(SwarmConfig {
        fault_phase_ms: 8_000,
        mean_interval_ms: mean_ms,
        max_unavailable_servers: Some(if servers == 1 { 1 } else { (servers - 1) / 2 }),
        kinds,
        ..SwarmConfig::default()
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: raft_explore <bug|none> <servers> <seeds> [faults]");
        std::process::exit(2);
    }
    let bugs: Vec<KnownBug> = match args[1].as_str() {
        "none" => vec![],
        name => vec![name.parse().unwrap_or_else(|error| panic!("{error}"))],
    };
    let servers: usize = args[2].parse().expect("a server count");
    let seeds: u64 = args[3].parse().expect("a seed count");
    let spec = args.get(4).map_or("crash,partition", String::as_str);
    let sync_ms = knob("SYNC_MS", 0);
    let workload = KvWorkload {
        servers,
        bugs,
        processes_per_client: knob("PROCS", 2) as u32,
        think_time: Duration::from_millis(knob("THINK", 40)),
        duplication_percent: knob("DUP", 0) as u32,
        loss_percent: knob("LOSS", 0) as u32,
        disk_sync_latency: (sync_ms > 0).then(|| {
            (
                Duration::from_millis(sync_ms / 2),
                Duration::from_millis(sync_ms),
            )
        }),
        client: ClientConfig {
            request_timeout: Duration::from_millis(knob("REQ_MS", 1_000)),
            connect_timeout: Duration::from_millis(knob("CONNECT_MS", 300)),
            retry_backoff: Duration::from_millis(knob("BACKOFF_MS", 50)),
            ..ClientConfig::default()
        },
        mix: if std::env::var("READ_HEAVY").is_ok() {
            OperationMix {
                put_percent: 30,
                get_percent: 65,
                serializable_get_percent: 0,
                txn_percent: 5,
            }
        } else {
            OperationMix::default()
        },
        tune: Tuning::with(|config| {
            let optional = |name: &str| std::env::var(name).ok().map(|_| knob(name, 0));
            if let Some(max) = optional("MAX_ENTRIES") {
                config.raft.max_entries_per_append = max as usize;
            }
            if let Some(min) = optional("ELECTION_MIN") {
                config.raft.election_timeout_min = Duration::from_millis(min);
            }
            if let Some(max) = optional("ELECTION_MAX") {
                config.raft.election_timeout_max = Duration::from_millis(max);
            }
        }),
        faults: faults(spec, servers),
        ..KvWorkload::default()
    };
    let started = std::time::Instant::now();
    let mut violating = 0;
    for index in 0..seeds {
        let result = run(Seed::new(index), &workload);
        let history = &result.outcome.history;
        let mut properties: Vec<String> = checks::run(
            checks::protocol::CHECKS,
            history,
            &checks::CheckContext::default(),
        )
        .iter()
        .map(|violation| violation.property().to_string())
        .collect();
        if !read_sees_prior_writes::check(history).is_empty() {
            properties.push("read sees prior writes".into());
        }
        if !acknowledged_write_durability::check(history, result.final_reads_from).is_empty() {
            properties.push("acknowledged write durability".into());
        }
        properties.sort();
        properties.dedup();
        if !properties.is_empty() {
            violating += 1;
            println!("seed {index}: {properties:?}");
        }
    }
    println!(
        "{violating}/{seeds} seeds violated something ({:?})",
        started.elapsed()
    );
}
