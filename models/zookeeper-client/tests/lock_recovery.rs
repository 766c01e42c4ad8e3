#![cfg(madsim)]
//! `Client::lock` while leaders crash: a create whose reply is lost is looked for with one
//! multi-read of the candidates' owners (zookeeper-client's `find_lock`), recorded as a
//! `multiRead` in the history, and the holders' guarded writes are judged clean. When it is
//! found, `lock` fails with `UnexpectedError`, as zookeeper-client 0.11.2's does for a
//! non-Curator prefix (it parses the found node's full path against the bare name).

mod common;

use common::{connect, judged, sleep_ms};
use scenarios::{Scenario, driver, scenario::Store, workload::UserCode};
use sim::fault::{FaultSource, LeaderKiller};
use sim::history::{Event, Operation, zk::ZkOperation};
use sim::{report::for_each_seed, this_test};
use std::sync::{Arc, Mutex};
use zookeeper_client::{Acls, CreateMode, Error, LockOptions, LockPrefix};

/// How the lock attempts of a run went.
#[derive(Default)]
struct Tally {
    /// Held, and a write through the lock applied.
    held: u64,
    /// Failed with `UnexpectedError`: a lost create found again.
    unexpected: u64,
}

/// Takes the lock again and again; while holding, bumps `/held` through the lock.
async fn lock_user(tally: Arc<Mutex<Tally>>) {
    let client = connect().await;
    let options = || {
        LockOptions::new(Acls::anyone_all())
            .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))
            .expect("valid ancestor options")
    };
    loop {
        let prefix = LockPrefix::new_shared("/locks/lock-").expect("a valid prefix");
        match client.lock(prefix, b"", options()).await {
            Ok(lock) => {
                if lock.set_data("/locks", b"held", None).await.is_ok() {
                    tally.lock().unwrap().held += 1;
                }
            }
            Err(Error::UnexpectedError(_)) => tally.lock().unwrap().unexpected += 1,
            Err(_) => {}
        }
        sleep_ms(20).await;
    }
}

#[test]
fn a_lost_lock_create_is_found_with_one_multi_read_and_fails_as_the_crates_does() {
    let (mut multi_reads, mut unexpected) = (0, 0);
    for_each_seed(
        1..=6,
        this_test!("a_lost_lock_create_is_found_with_one_multi_read_and_fails_as_the_crates_does"),
        |seed| {
            let tally: Arc<Mutex<Tally>> = Arc::default();
            let code = {
                let tally = tally.clone();
                UserCode::new("zk-dropin-lock-recovery", Store::Zab, move |_node| {
                    lock_user(tally.clone())
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
            let tally = tally.lock().unwrap();
            assert!(tally.held >= 5, "seed {seed}: progress");
            unexpected += tally.unexpected;
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
    println!(
        "multi-reads by find_lock and its clean-up in 6 seeds: {multi_reads}; lost creates \
         found again, failing with UnexpectedError: {unexpected}"
    );
    assert!(multi_reads > 0, "a lost create was looked for");
    assert!(
        unexpected > 0,
        "a lost create was found, and failed as the real crate's does"
    );
}
