#![cfg(madsim)]
//! Each handle is one history process (each clone, each `lock_client()`, another), and
//! `coordsim::history_process` names it, as the zookeeper-client drop-in's does for a
//! session: a test harness records its beliefs as the process of the handle that acts.

mod common;

use common::connect;
use etcd_client::coordsim::history_process;
use scenarios::{Scenario, driver, scenario::Store, workload::UserCode};
use sim::{
    Seed,
    history::{Event, Operation, kv::KvOperation},
};
use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
};

#[test]
fn history_process_names_the_process_each_handle_is_recorded_as() {
    let named: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
    let code = {
        let named = named.clone();
        UserCode::new("dropin-processes", Store::Raft, move |_node| {
            let named = named.clone();
            async move {
                let mut client = connect().await;
                let mut kv = client.kv_client();
                let mut clone = kv.clone();
                let mut locks = client.lock_client();
                let _ = client.put("via-client", "v", None).await;
                let _ = kv.put("via-kv", "v", None).await;
                let _ = clone.put("via-clone", "v", None).await;
                let _ = locks.lock("job", None).await;
                *named.lock().unwrap() = BTreeMap::from([
                    ("via-client".to_string(), history_process(&client)),
                    ("via-kv".to_string(), history_process(&kv)),
                    ("via-clone".to_string(), history_process(&clone)),
                    ("lock".to_string(), history_process(&locks)),
                ]);
                std::future::pending::<()>().await;
            }
        })
    };
    let outcome = driver::run(&Scenario::of_user_code(code, 3, 1), Seed::new(1));
    assert!(outcome.is_clean(), "{outcome:?}");
    let named = named.lock().unwrap().clone();
    assert_eq!(named.len(), 4, "the code ran to its end: {named:?}");
    let distinct: BTreeSet<u32> = named.values().copied().collect();
    assert_eq!(distinct.len(), 4, "one process per handle: {named:?}");
    // Every call as recorded: the puts by key, the lock's steps (lease, txn, reads) as the
    // lock handle's.
    let mut recorded: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    let history = outcome.history.as_ref().expect("the run kept its history");
    for record in history.records() {
        if let Event::Invoke {
            process, operation, ..
        } = &record.event
        {
            let caller = match operation {
                Operation::Kv(KvOperation::Put { key, .. }) if key.starts_with("via-") => {
                    key.clone()
                }
                _ => "lock".to_string(),
            };
            recorded.entry(caller).or_default().insert(*process);
        }
    }
    for (caller, process) in &named {
        assert_eq!(
            recorded.get(caller),
            Some(&BTreeSet::from([*process])),
            "{caller}: recorded {recorded:?}, named {named:?}"
        );
    }
}
