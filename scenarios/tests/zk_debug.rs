mod zk_support;
#[test]
fn debug_one() {
    let seed: u64 = std::env::var("S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let servers: usize = std::env::var("N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let mut workload = zk_support::ZkWorkload::new(servers, 2);
    if servers == 1 {
        workload.swarm.kinds = vec![
            sim::fault::FaultKind::Latency,
            sim::fault::FaultKind::ClockStep,
        ];
    }
    let start = std::time::Instant::now();
    let outcome = workload.run(sim::Seed::new(seed));
    println!("wall {:?}", start.elapsed());
    println!("{outcome}");
    let ops = outcome.history.operations();
    let ok = ops
        .iter()
        .filter(|o| matches!(o.completion, Some((_, sim::history::OpResult::Ok { .. }))))
        .count();
    println!("ops {} ok {}", ops.len(), ok);
    if std::env::var("V").is_ok() {
        for r in outcome
            .history
            .records()
            .iter()
            .filter(|r| {
                !matches!(
                    r.event,
                    sim::history::Event::Protocol(sim::history::ProtocolEvent::Applied { .. })
                        | sim::history::Event::Invoke { .. }
                        | sim::history::Event::Complete { .. }
                )
            })
            .take(300)
        {
            println!("{} {:?} {:?}", r.at, r.node, r.event);
        }
    }
}
