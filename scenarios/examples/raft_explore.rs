//! Sweeps seeds for a known-bug variant and prints which checkers fire (exploration aid).
//! Usage: raft_explore <bug-name|none> <servers> <seeds> <kinds,comma> [dup%] [sync_ms]
use models::etcd::KnownBug;
use scenarios::{
    checkers::{acknowledged_write_durability, protocol_checks, read_sees_prior_writes},
    etcd_workload::Tuning,
    etcd_workload::{Faults, KvWorkload, run},
};
use sim::{
    Seed,
    fault::{FaultKind, SwarmConfig},
};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bugs: Vec<KnownBug> = match args[1].as_str() {
        "none" => vec![],
        name => vec![name.parse().unwrap()],
    };
    let servers: usize = args[2].parse().unwrap();
    let seeds: u64 = args[3].parse().unwrap();
    let kinds: Vec<FaultKind> = args[4]
        .split(',')
        .map(|k| serde_json::from_str(&format!("\"{k}\"")).unwrap())
        .collect();
    let duplication_percent: u32 = args.get(5).map_or(0, |s| s.parse().unwrap());
    let sync_ms: u64 = args.get(6).map_or(0, |s| s.parse().unwrap());
    let workload = KvWorkload {
        servers,
        bugs,
        duplication_percent,
        processes_per_client: std::env::var("PROCS").map_or(2, |v| v.parse().unwrap()),
        clients: std::env::var("CLIENTS").map_or(2, |v| v.parse().unwrap()),
        think_time: Duration::from_millis(
            std::env::var("THINK").map_or(40, |v| v.parse().unwrap()),
        ),
        loss_percent: std::env::var("LOSS").map_or(0, |v| v.parse().unwrap()),
        disk_sync_latency: (sync_ms > 0).then(|| {
            (
                Duration::from_millis(sync_ms / 2),
                Duration::from_millis(sync_ms),
            )
        }),
        client: models::etcd::ClientConfig {
            request_timeout: Duration::from_millis(
                std::env::var("REQ_MS").map_or(1000, |v| v.parse().unwrap()),
            ),
            connect_timeout: Duration::from_millis(
                std::env::var("CONNECT_MS").map_or(300, |v| v.parse().unwrap()),
            ),
            retry_backoff: Duration::from_millis(
                std::env::var("BACKOFF_MS").map_or(50, |v| v.parse().unwrap()),
            ),
            ..Default::default()
        },
        mix: if std::env::var("READ_HEAVY").is_ok() {
            scenarios::etcd_workload::OperationMix {
                put_percent: 30,
                get_percent: 65,
                serializable_get_percent: 0,
                txn_percent: 5,
            }
        } else {
            Default::default()
        },
        faults: if let Ok(with) = std::env::var("CUTOFF") {
            Faults::CutOffLeader {
                phase: Duration::from_secs(8),
                interval: Duration::from_millis(
                    std::env::var("MEAN_MS").map_or(700, |v| v.parse().unwrap()),
                ),
                duration: Duration::from_millis(
                    std::env::var("CUT_MS").map_or(700, |v| v.parse().unwrap()),
                ),
                with_clients: with.parse().unwrap(),
                leader_drift_ppm: std::env::var("DRIFT").map_or(0, |v| v.parse().unwrap()),
            }
        } else if std::env::var("KILLER").is_ok() {
            Faults::LeaderKiller(scenarios::etcd_workload::LeaderKiller {
                phase: Duration::from_secs(8),
                max_delay: Duration::from_millis(
                    std::env::var("MEAN_MS").map_or(300, |v| v.parse().unwrap()),
                ),
                leader_percent: 40,
                strand_leader_percent: std::env::var("PART").map_or(40, |v| v.parse().unwrap()),
            })
        } else {
            Faults::Swarm(SwarmConfig {
                fault_phase_ms: 8_000,
                mean_interval_ms: std::env::var("MEAN_MS").map_or(300, |v| v.parse().unwrap()),
                kinds,
                max_unavailable_servers: Some(
                    servers.div_ceil(2).max(1) - if servers > 1 { 1 } else { 0 },
                ),
                ..SwarmConfig::default()
            })
        },
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
    let started = std::time::Instant::now();
    let mut found = 0;
    for index in 0..seeds {
        let seed = Seed::new(index);
        let result = run(seed, &workload);
        let history = &result.outcome.history;
        let mut names: Vec<String> = protocol_checks(history)
            .iter()
            .map(|v| v.property().to_string())
            .collect();
        if !read_sees_prior_writes::check(history).is_empty() {
            names.push("read sees prior writes".into());
        }
        if !acknowledged_write_durability::check(history, result.final_reads_from).is_empty() {
            names.push("durability".into());
        }
        if std::env::var("VERBOSE").is_ok() {
            let elections = history
                .records()
                .iter()
                .filter(|r| {
                    matches!(
                        r.event,
                        sim::history::Event::Protocol(
                            sim::history::ProtocolEvent::BecameLeader { .. }
                        )
                    )
                })
                .count();
            println!(
                "seed {index}: elections {elections}, acked {}, {}",
                result.acknowledged,
                result
                    .outcome
                    .fault_counts
                    .to_string()
                    .lines()
                    .next()
                    .unwrap()
            );
        }
        names.sort();
        names.dedup();
        if !names.is_empty() {
            found += 1;
            println!("seed {index}: {names:?}");
        }
    }
    println!(
        "{found}/{seeds} seeds violated something, {:?}",
        started.elapsed()
    );
}
