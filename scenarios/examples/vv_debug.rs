use models::{etcd::KnownBug, raft::RaftBug};
use scenarios::etcd_workload::{Faults, KvWorkload, Tuning, run};
use sim::{NodeId, Seed, fault::*, history::Event};
use std::time::Duration;
fn main() {
    let seed: u64 = std::env::args().nth(1).unwrap().parse().unwrap();
    let crash: u64 = std::env::args().nth(2).unwrap().parse().unwrap();
    let down: u64 = std::env::args().nth(3).unwrap().parse().unwrap();
    let (s1, s2, s3) = (NodeId::server(0), NodeId::server(1), NodeId::server(2));
    let at = |at_ms, fault| ScheduledFault { at_ms, fault };
    let plan = FaultPlan::new(vec![
        at(
            0,
            Fault::Partition {
                shape: PartitionShape::Groups {
                    groups: vec![vec![s1], vec![s3]],
                },
            },
        ),
        at(crash, Fault::Crash { node: s2 }),
        at(crash + down, Fault::Restart { node: s2 }),
        at(3_000, Fault::HealAll),
    ]);
    let w = KvWorkload {
        servers: 3,
        bugs: vec![KnownBug::Raft(RaftBug::VolatileVote)],
        tune: Tuning::with(|c| {
            c.raft.election_timeout_min = Duration::from_millis(300);
            c.raft.election_timeout_max = Duration::from_millis(310);
        }),
        faults: Faults::Plan(plan),
        loss_percent: std::env::var("LOSS").map_or(0, |v| v.parse().unwrap()),
        ..KvWorkload::default()
    };
    if std::env::var("COUNT").is_ok() {
        let mut found = 0;
        for seed in 0..seed {
            let r = run(Seed::new(seed), &w);
            if !scenarios::checkers::leader_uniqueness::check(&r.outcome.history).is_empty() {
                found += 1;
            }
        }
        println!("{found}/{seed}");
        return;
    }
    let r = run(Seed::new(seed), &w);
    for rec in r.outcome.history.records() {
        if rec.at.as_millis() > 1500 {
            break;
        }
        match &rec.event {
            Event::Protocol(p) if !matches!(p, sim::history::ProtocolEvent::Applied { .. }) => {
                println!("{} {:?} {:?}", rec.at, rec.node, p)
            }
            Event::Fault(f) => println!("{} fault {}", rec.at, f.fault),
            _ => {}
        }
    }
}
