//! Disks, clocks, pauses, crashes and restarts behave as the world claims.

use sim::{NodeId, Seed, World, time::SimTime};
use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

const S1: NodeId = NodeId::server(0);

fn world() -> sim::WorldBuilder {
    World::builder()
        .seed(Seed::new(11))
        .servers(1)
        .clock_skew(Duration::ZERO, 0)
        .disk_sync_latency(Duration::from_millis(10)..=Duration::from_millis(10))
}

#[test]
fn a_crash_loses_unsynced_writes_and_keeps_synced_ones() {
    let outcome = world().build().unwrap().run(|sim| async move {
        let disk = sim.disk(S1);
        let log = disk.open_log::<u32>("log").unwrap();
        let cell = disk.open_cell::<&'static str>("vote").unwrap();
        log.append([1, 2, 3]);
        cell.set("s1");
        disk.sync().await;
        log.push(4);
        log.truncate(1); // cuts into the durable prefix; must come back after the crash
        log.push(5);
        cell.set("s2");
        assert_eq!(
            log.read_all(),
            vec![1, 5],
            "unsynced writes are visible before a crash"
        );
        sim.nemesis().crash(S1);
        assert_eq!(log.read_all(), vec![1, 2, 3]);
        assert_eq!(cell.get(), Some("s1"));
        // Reopening (as a restarted program would) sees the same durable state.
        let reopened = disk.open_log::<u32>("log").unwrap();
        assert_eq!(reopened.read_all(), vec![1, 2, 3]);
        assert!(
            disk.open_cell::<u32>("log").is_err(),
            "opened a log as a cell"
        );
    });
    assert_eq!(outcome.fault_counts.unsynced_writes_lost, 4);
}

#[test]
fn a_crash_during_a_sync_loses_the_write() {
    let synced = Arc::new(Mutex::new(Vec::<Vec<u32>>::new()));
    let observed = synced.clone();
    world().build().unwrap().run(|sim| async move {
        let flag = observed.clone();
        sim.start(S1, move |context| {
            let flag = flag.clone();
            async move {
                let log = context.disk().open_log::<u32>("log").unwrap();
                flag.lock().unwrap().push(log.read_all());
                if context.incarnation() == 0 {
                    log.push(7);
                    context.disk().sync().await; // takes 10 ms; the crash comes at 5 ms
                    flag.lock().unwrap().push(vec![999]);
                }
                std::future::pending::<()>().await;
            }
        });
        sim.sleep(Duration::from_millis(5)).await;
        sim.nemesis().crash(S1);
        sim.sleep(Duration::from_millis(50)).await;
        sim.nemesis().restart(S1);
        sim.sleep(Duration::from_millis(50)).await;
    });
    let boots = synced.lock().unwrap().clone();
    assert_eq!(
        boots,
        vec![Vec::<u32>::new(), Vec::new()],
        "the sync completed despite the crash: {boots:?}"
    );
}

#[test]
fn a_restarted_program_runs_again_from_durable_state() {
    let boots = Arc::new(Mutex::new(Vec::new()));
    let observed = boots.clone();
    world().build().unwrap().run(|sim| async move {
        let record = observed.clone();
        sim.start(S1, move |context| {
            let record = record.clone();
            async move {
                let cell = context.disk().open_cell::<u32>("boots").unwrap();
                let boot = cell.get().unwrap_or(0) + 1;
                cell.set(boot);
                context.disk().sync().await;
                record.lock().unwrap().push((context.incarnation(), boot));
                std::future::pending::<()>().await;
            }
        });
        for _ in 0..3 {
            sim.sleep(Duration::from_millis(100)).await;
            sim.nemesis().crash(S1);
            sim.nemesis().restart(S1);
        }
        sim.sleep(Duration::from_millis(100)).await;
    });
    assert_eq!(*boots.lock().unwrap(), vec![(0, 1), (1, 2), (2, 3), (3, 4)]);
}

#[test]
fn a_paused_node_stops_its_tasks_and_timers_and_resumes_afterwards() {
    let ticks = Arc::new(Mutex::new(Vec::<SimTime>::new()));
    let observed = ticks.clone();
    let outcome = world().build().unwrap().run(|sim| async move {
        let record = observed.clone();
        let network = sim.datagram_network::<u32>();
        let endpoint = network.endpoint(S1);
        let received = Arc::new(Mutex::new(Vec::new()));
        let inbox = received.clone();
        sim.start(S1, move |context| {
            let (record, endpoint, inbox) = (record.clone(), endpoint.clone(), inbox.clone());
            async move {
                let sim = context.sim().clone();
                sim::task::spawn_local(async move {
                    loop {
                        let datagram = endpoint.recv().await;
                        inbox.lock().unwrap().push((sim.now(), datagram.message));
                    }
                });
                loop {
                    context.clock().sleep(Duration::from_millis(100)).await;
                    record.lock().unwrap().push(context.sim().now());
                }
            }
        });
        let sender = network.endpoint(S1);
        sim.sleep(Duration::from_millis(1_050)).await;
        sim.nemesis().pause(S1);
        sender.send(S1, 42); // queued for the paused node
        sim.sleep(Duration::from_secs(2)).await;
        assert!(
            received.lock().unwrap().is_empty(),
            "a paused node received"
        );
        sim.nemesis().resume(S1);
        sim.sleep(Duration::from_millis(550)).await;
        let inbox = received.lock().unwrap().clone();
        assert_eq!(inbox.len(), 1);
        assert!(
            inbox[0].0 >= SimTime::from_millis(3_050),
            "delivered during the pause: {inbox:?}"
        );
    });
    let ticks = ticks.lock().unwrap().clone();
    let paused = SimTime::from_millis(1_050)..SimTime::from_millis(3_050);
    assert!(
        ticks.iter().all(|t| !paused.contains(t)),
        "ticked while paused: {ticks:?}"
    );
    let before = ticks.iter().filter(|t| **t < paused.start).count();
    let after = ticks.iter().filter(|t| **t >= paused.end).count();
    assert_eq!(before, 10, "{ticks:?}");
    assert!(after >= 5, "did not resume: {ticks:?}");
    assert_eq!(
        (outcome.fault_counts.pauses, outcome.fault_counts.resumes),
        (1, 1)
    );
}

/// Runs one local-clock sleep of 1 s on a node and reports when (global) it fired.
fn sleep_one_local_second(
    setup: impl FnOnce(&sim::Sim) + 'static,
    during: Option<(Duration, i64)>,
) -> SimTime {
    let fired = Arc::new(Mutex::new(None));
    let observed = fired.clone();
    world().build().unwrap().run(move |sim| async move {
        setup(&sim);
        let clock = sim.clock(S1);
        let observer = sim.clone();
        let waiter = sim.spawn(S1, async move {
            clock.sleep(Duration::from_secs(1)).await;
            observer.now()
        });
        if let Some((at, delta_ms)) = during {
            sim.sleep(at).await;
            sim.nemesis().step_clock(S1, delta_ms);
        }
        *observed.lock().unwrap() = Some(waiter.await.unwrap());
    });

    fired.lock().unwrap().expect("the timer fired")
}

#[test]
fn a_skewed_clock_fires_its_timers_at_the_skewed_time() {
    let millis = |t: SimTime| t.as_millis();
    // No skew: one second.
    assert_eq!(millis(sleep_one_local_second(|_| {}, None)), 1_000);
    // 25% fast: a local second passes in 0.8 global seconds.
    let fast = sleep_one_local_second(|sim| drop(sim.nemesis().set_drift(S1, 250_000)), None);
    assert_eq!(millis(fast), 800);
    // 20% slow: 1.25 global seconds.
    let slow = sleep_one_local_second(|sim| drop(sim.nemesis().set_drift(S1, -200_000)), None);
    assert_eq!(millis(slow), 1_250);
    // A step forward of 600 ms at 200 ms: the timer fires at once.
    let stepped = sleep_one_local_second(|_| {}, Some((Duration::from_millis(200), 600)));
    assert_eq!(millis(stepped), 400);
    // A step backwards of 300 ms at 500 ms: the timer fires 300 ms late.
    let back = sleep_one_local_second(|_| {}, Some((Duration::from_millis(500), -300)));
    assert_eq!(millis(back), 1_300);
}

#[test]
fn local_clocks_start_apart_and_drift_apart() {
    World::builder()
        .seed(Seed::new(3))
        .servers(3)
        .clock_skew(Duration::from_secs(5), 1_000)
        .build()
        .unwrap()
        .run(|sim| async move {
            let readings: Vec<_> = sim.servers().iter().map(|&s| sim.clock(s).now()).collect();
            assert!(readings.windows(2).any(|w| w[0] != w[1]), "{readings:?}");
            let drifts: Vec<_> = sim
                .servers()
                .iter()
                .map(|&s| sim.clock(s).drift_ppm())
                .collect();
            assert!(drifts.iter().all(|d| d.abs() <= 1_000), "{drifts:?}");
        });
}

#[test]
fn a_reset_local_sleep_fires_at_its_new_deadline_earlier_or_later() {
    world().build().unwrap().run(|sim| async move {
        let clock = sim.clock(S1);
        let start = clock.now();
        let mut sleep = clock.sleep(Duration::from_millis(50));
        // Polled once so that it has armed a timer for the first deadline.
        assert!(futures_util::poll!(&mut sleep).is_pending());
        sleep.reset(start + Duration::from_millis(20));
        assert_eq!(sleep.deadline(), start + Duration::from_millis(20));
        (&mut sleep).await;
        // madsim steps simulated time on by tens of nanoseconds per scheduling round.
        let fired_after = |millis| {
            let elapsed = clock.now() - start;
            elapsed >= Duration::from_millis(millis) && elapsed < Duration::from_millis(millis + 1)
        };
        assert!(
            fired_after(20),
            "fired {:?} after the start",
            clock.now() - start
        );
        // Reset after it fired, and later than its first deadline.
        sleep.reset(start + Duration::from_millis(80));
        (&mut sleep).await;
        assert!(
            fired_after(80),
            "fired {:?} after the start",
            clock.now() - start
        );
    });
}

#[test]
fn a_world_is_freed_when_its_run_ends_even_with_tasks_still_pending() {
    assert_eq!(sim::live_worlds(), 0, "no world before the first run");
    sim::report::for_each_seed(
        0..3,
        sim::this_test!("a_world_is_freed_when_its_run_ends_even_with_tasks_still_pending"),
        |seed| {
            World::builder()
                .seed(seed)
                .servers(1)
                .clients(1)
                .build()
                .unwrap()
                .run(|sim| async move {
                    let network = sim.datagram_network::<u32>();
                    let inbox = network.endpoint(S1);
                    // A node program and a one-off task, both still waiting when the run ends:
                    // one on a timer, one on a receive that nothing will ever satisfy.
                    sim.start(S1, |context| async move {
                        let _holds_the_world = context;
                        loop {
                            sim::time::sleep(Duration::from_secs(3600)).await;
                        }
                    });
                    sim.spawn(NodeId::client(0), async move {
                        let _ = inbox.recv().await;
                    });
                    sim.sleep(Duration::from_secs(1)).await;
                    assert_eq!(sim::live_worlds(), 1, "the running world is counted");
                });
            assert_eq!(
                sim::live_worlds(),
                0,
                "the world of seed {seed} outlived its run"
            );
        },
    );
}

/// A store the scenario provides to the drop-in clients holds its networks, and each
/// network holds the world: the world must still be freed when the run ends.
#[test]
fn a_world_is_freed_when_its_run_ends_even_with_a_service_that_holds_it() {
    struct StoreHandle {
        _network: sim::net::DatagramNetwork<u32>,
    }
    sim::report::for_each_seed(
        0..3,
        sim::this_test!("a_world_is_freed_when_its_run_ends_even_with_a_service_that_holds_it"),
        |seed| {
            World::builder()
                .seed(seed)
                .servers(1)
                .build()
                .unwrap()
                .run(|sim| async move {
                    sim.provide(StoreHandle {
                        _network: sim.datagram_network::<u32>(),
                    });
                    sim.sleep(Duration::from_secs(1)).await;
                    assert!(sim.service::<StoreHandle>().is_some(), "provided");
                });
            assert_eq!(
                sim::live_worlds(),
                0,
                "the world of seed {seed} outlived its run, held by its service"
            );
        },
    );
}
