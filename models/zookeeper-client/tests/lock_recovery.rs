#![cfg(madsim)]
//! `Client::lock` while leaders crash: a create whose reply is lost is found again with one
//! multi-read of the candidates' owners (zookeeper-client's `find_lock`), recorded as a
//! `multiRead` in the history, and the holders' guarded writes are judged clean.

mod common;

use common::{connect, judged, sleep_ms};
use scenarios::{Scenario, driver, scenario::Store, workload::UserCode};
use sim::fault::{FaultSource, LeaderKiller};
use sim::history::{Event, Operation, zk::ZkOperation};
use sim::{report::for_each_seed, this_test};
use std::sync::{Arc, Mutex};
use zookeeper_client::{Acls, CreateMode, LockOptions, LockPrefix};

/// Takes the lock again and again; while holding, bumps `/held` through the lock.
async fn lock_user(held: Arc<Mutex<u64>>) {
    let client = connect().await;
    let options = || {
        LockOptions::new(Acls::anyone_all())
            .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))
            .expect("valid ancestor options")
    };
    loop {
        let prefix = LockPrefix::new_shared("/locks/lock-").expect("a valid prefix");
        if let Ok(lock) = client.lock(prefix, b"", options()).await
            && lock.set_data("/locks", b"held", None).await.is_ok()
        {
            *held.lock().unwrap() += 1;
        }
        sleep_ms(20).await;
    }
}

#[test]
fn a_lost_lock_create_is_found_with_one_multi_read() {
    let mut multi_reads = 0;
    for_each_seed(
        1..=6,
        this_test!("a_lost_lock_create_is_found_with_one_multi_read"),
        |seed| {
            let held: Arc<Mutex<u64>> = Arc::default();
            let code = {
                let held = held.clone();
                UserCode::new("zk-dropin-lock-recovery", Store::Zab, move |_node| {
                    lock_user(held.clone())
                })
            };
            let mut scenario = Scenario::of_user_code(code, 3, 3);
            scenario.faults = FaultSource::LeaderKiller(LeaderKiller::default());
            let outcome = driver::run(&scenario, seed);
            assert!(outcome.is_clean(), "seed {seed}: {outcome:?}");
            assert!(
                outcome.fault_counts.crashes > 0,
                "seed {seed}: leaders crashed"
            );
            assert!(judged(&outcome, "zk.linearizable") > 0, "{outcome:?}");
            assert!(*held.lock().unwrap() >= 5, "seed {seed}: progress");
            let history = outcome.history.expect("the run keeps its history");
            multi_reads += history
                .records()
                .iter()
                .filter(|record| {
                    matches!(
                        &record.event,
                        Event::Invoke {
                            operation: Operation::Zk(ZkOperation::MultiRead { .. }),
                            ..
                        }
                    )
                })
                .count();
        },
    );
    println!("multi-reads by find_lock and its clean-up in 6 seeds: {multi_reads}");
    assert!(multi_reads > 0, "a lost create was looked for");
}
