#![cfg(madsim)]
//! Every ZooKeeper check judges the nodes user code creates through the drop-in. The
//! drop-in's `create` is ZooKeeper's `create2`, whose reply carries the new node's stat
//! besides its path; a check that read only a plain `create` reply judged none of them
//! (`zk.sequential_names` judged 0 in the zk-lock example's runs).

mod common;

use common::{connect, judged, violations};
use scenarios::{
    Scenario, driver,
    scenario::Store,
    workload::{UserCode, UserNode},
};
use sim::{report::for_each_seed, this_test};
use zookeeper_client::{Acls, Client, CreateMode, LockPrefix};

/// The checks that read a create's reply, each of which must judge this code's runs.
const CHECKS: [&str; 7] = [
    "zk.linearizable",
    "zk.sequential_names",
    "zk.ephemeral_lifetime",
    "zk.session_consistency",
    "zk.sync_then_read",
    "zk.watch_delivery",
    "recipe.no_lost_wakeup",
];

/// A service's member node, ephemeral-sequential, read back after a `sync`.
async fn register_and_read_back(client: &Client) {
    let member = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    if let Ok((_, sequence)) = client.create("/members/m-", b"up", &member).await {
        let _ = client.sync("/members").await;
        let _ = client.get_data(&format!("/members/m-{sequence}")).await;
    }
}

/// One term of zookeeper-client's own lock, its beliefs recorded as the session's process
/// (the checks join a waiter's beliefs with its calls by process).
async fn take_the_lock_once(client: &Client, node: &UserNode) {
    let process = zookeeper_client::coordsim::history_process(client);
    let beliefs = node.lock_as("job", process);
    beliefs.requested();
    let prefix = LockPrefix::new_curator("/lock", "lock-").expect("a valid prefix");
    let Ok(lock) = client.lock(prefix, b"", Acls::anyone_all()).await else {
        return;
    };
    let path = lock.lock_path().to_string();
    let Ok(Some(stat)) = client.check_stat(&path).await else {
        return;
    };
    let token = stat.czxid as u64;
    beliefs.acquired(token);
    common::sleep_ms(30).await;
    beliefs.released(token);
    let _ = client.delete(&path, None).await;
}

async fn members_and_lockers(node: UserNode) {
    let client = connect().await;
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for dir in ["/members", "/lock"] {
        let _ = client.create(dir, b"", &open).await;
    }
    loop {
        register_and_read_back(&client).await;
        take_the_lock_once(&client, &node).await;
        common::sleep_ms(20).await;
    }
}

#[test]
fn every_zookeeper_check_judges_the_drop_ins_creates() {
    for_each_seed(
        [1, 2],
        this_test!("every_zookeeper_check_judges_the_drop_ins_creates"),
        |seed| {
            let code = UserCode::new("zk-dropin-creates", Store::Zab, |node| {
                members_and_lockers(node)
            })
            .with_check("recipe.no_lost_wakeup");
            let scenario = Scenario::of_user_code(code, 3, 3);
            let outcome = driver::run(&scenario, seed);
            assert!(outcome.is_clean(), "seed {seed}: {outcome:?}");
            let counts: Vec<(&str, u64)> = CHECKS
                .iter()
                .map(|check| (*check, judged(&outcome, check)))
                .collect();
            eprintln!("seed {seed}: judged {counts:?}");
            for (check, judged) in counts {
                assert!(judged > 0, "seed {seed}: {check} judged 0");
                assert_eq!(violations(&outcome, check), 0, "seed {seed}: {check}");
            }
        },
    );
}
