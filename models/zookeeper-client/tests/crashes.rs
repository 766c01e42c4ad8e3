#![cfg(madsim)]
//! User code written against zookeeper-client keeps going while leaders crash: a counter
//! bumped with compare-and-set on the node's version, every call judged by
//! `zk.linearizable` (writes) and `zk.session_consistency` (reads).

mod common;

use common::{connect, judged, violations};
use scenarios::{
    Scenario, driver,
    scenario::Store,
    workload::{UserCode, UserNode},
};
use sim::fault::{FaultSource, LeaderKiller};
use sim::{report::for_each_seed, this_test};
use std::sync::{Arc, Mutex};
use zookeeper_client::{Acls, Client, CreateMode, Error};

/// Bumps `/counter` once: read, then write back one more, fenced on the version read.
async fn bump(client: &Client) -> Result<u64, Error> {
    let (data, stat) = client.get_data("/counter").await?;
    let count: u64 = String::from_utf8_lossy(&data).parse().unwrap_or(0);
    client
        .set_data(
            "/counter",
            (count + 1).to_string().as_bytes(),
            Some(stat.version),
        )
        .await?;
    Ok(count + 1)
}

async fn counter_user(node: UserNode, bumped: Arc<Mutex<Vec<u64>>>) {
    let client = connect().await;
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let _ = client.create("/counter", b"0", &open).await;
    let _ = node;
    loop {
        if let Ok(count) = bump(&client).await {
            bumped.lock().unwrap().push(count);
        }
        common::sleep_ms(50).await;
    }
}

#[test]
fn a_cas_counter_survives_leader_crashes_and_is_judged_clean() {
    for_each_seed(
        1..=3,
        this_test!("a_cas_counter_survives_leader_crashes_and_is_judged_clean"),
        |seed| {
            let bumped: Arc<Mutex<Vec<u64>>> = Arc::default();
            let code = {
                let bumped = bumped.clone();
                UserCode::new("zk-dropin-crashes", Store::Zab, move |node| {
                    counter_user(node, bumped.clone())
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
            assert!(
                judged(&outcome, "zk.session_consistency") > 0,
                "{outcome:?}"
            );
            assert_eq!(violations(&outcome, "zk.linearizable"), 0);
            // A compare-and-set counter never hands out the same value twice.
            let mut bumped = bumped.lock().unwrap().clone();
            let acknowledged = bumped.len();
            bumped.sort();
            bumped.dedup();
            assert_eq!(bumped.len(), acknowledged, "seed {seed}: no value twice");
            assert!(
                acknowledged >= 10,
                "seed {seed}: progress, {acknowledged} bumps"
            );
        },
    );
}
