#![cfg(madsim)]
//! Code written against etcd-client's KV API runs unchanged in a coordsim world: connect,
//! put, get with options, delete; every call is an operation the store's checks judge.

mod kv_support;

use etcd_client::{
    Client, DeleteOptions, Error, GetOptions, KeyValue, PutOptions, SortOrder, SortTarget,
};
use scenarios::{
    Scenario, driver,
    scenario::Store,
    workload::{UserCode, UserNode},
};
use sim::fault::FaultSource;
use sim::{Seed, report::for_each_seed, this_test};
use std::sync::{Arc, Mutex};

/// What a user's service does with etcd: nothing here is coordsim's API.
async fn register(client: &mut Client, name: &str) -> Result<(i64, usize), etcd_client::Error> {
    let put = client
        .put(format!("services/{name}"), "up", Some(PutOptions::new()))
        .await?;
    let listed = client
        .get("services/", Some(GetOptions::new().with_prefix()))
        .await?;
    Ok((put.header().map_or(0, |h| h.revision()), listed.kvs().len()))
}

#[test]
fn etcd_client_code_runs_against_the_raft_store_and_is_judged() {
    let seen: Arc<Mutex<Vec<(i64, usize)>>> = Arc::default();
    let code = {
        let seen = seen.clone();
        UserCode::new("dropin-kv", Store::Raft, move |node: UserNode| {
            let seen = seen.clone();
            async move {
                let mut client = Client::connect(["s1:2379", "s2:2379", "s3:2379"], None)
                    .await
                    .expect("connects inside a run");
                if let Ok(answer) = register(&mut client, &format!("c{}", node.index())).await {
                    seen.lock().unwrap().push(answer);
                }
                loop {
                    let _ = client.get("services/", None).await;
                    node.context()
                        .sim()
                        .sleep(std::time::Duration::from_millis(100))
                        .await;
                }
            }
        })
    };
    let scenario = Scenario::of_user_code(code, 3, 3);
    let outcome = driver::run(&scenario, Seed::new(3));
    assert!(outcome.is_clean(), "{outcome:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "every client registered: {seen:?}");
    assert!(
        seen.iter()
            .all(|(revision, listed)| *revision > 1 && *listed >= 1)
    );
    let judged = outcome
        .checks
        .iter()
        .find(|tally| tally.check == "etcd.linearizable")
        .map_or(0, |tally| tally.judged);
    assert!(judged > 10, "etcd.linearizable judged the calls: {judged}");
}

#[test]
fn connect_outside_a_run_is_an_error_not_a_panic() {
    let runtime = madsim::runtime::Runtime::new();
    let error = runtime
        .block_on(Client::connect(["s1:2379"], None))
        .err()
        .expect("no run, no store");
    assert!(error.to_string().contains("no coordsim run"), "{error}");
}

fn keys(kvs: &[KeyValue]) -> Vec<&str> {
    kvs.iter().map(|kv| kv.key_str().unwrap()).collect()
}

/// Puts `a1..a5` and `b` (one revision each), and answers their put revisions.
async fn six_keys(client: &mut Client) -> Result<Vec<i64>, Error> {
    let mut revisions = Vec::new();
    for (key, value) in [
        ("a1", "1"),
        ("a2", "2"),
        ("a3", "3"),
        ("a4", "4"),
        ("a5", "5"),
    ] {
        let put = client.put(key, value, None).await?;
        revisions.push(put.header().unwrap().revision());
    }
    let put = client.put("b", "x", None).await?;
    revisions.push(put.header().unwrap().revision());
    Ok(revisions)
}

#[test]
fn every_get_option_reads_as_etcd_reads_it() {
    let ran = kv_support::run(1, 5, FaultSource::None, |mut client, _| async move {
        let revisions = six_keys(&mut client).await?;
        let rewrite = client.put("a1", "1b", None).await?;
        let get = |options: GetOptions| options;
        let mut seen = Vec::new();
        for (name, key, options) in [
            ("prefix", "a", get(GetOptions::new().with_prefix())),
            ("range", "a2", get(GetOptions::new().with_range("a4"))),
            ("from_key", "a4", get(GetOptions::new().with_from_key())),
            ("all_keys", "zzz", get(GetOptions::new().with_all_keys())),
            (
                "limit",
                "a",
                get(GetOptions::new().with_prefix().with_limit(2)),
            ),
            (
                "sort_key_descend",
                "a",
                get(GetOptions::new()
                    .with_prefix()
                    .with_sort(SortTarget::Key, SortOrder::Descend)),
            ),
            (
                "sort_mod_descend",
                "a",
                get(GetOptions::new()
                    .with_prefix()
                    .with_sort(SortTarget::Mod, SortOrder::Descend)),
            ),
            (
                "serializable",
                "a",
                get(GetOptions::new().with_prefix().with_serializable()),
            ),
            (
                "keys_only",
                "a",
                get(GetOptions::new().with_prefix().with_keys_only()),
            ),
            (
                "count_only",
                "a",
                get(GetOptions::new().with_prefix().with_count_only()),
            ),
            (
                "min_mod",
                "a",
                get(GetOptions::new()
                    .with_prefix()
                    .with_min_mod_revision(revisions[3])),
            ),
            (
                "max_mod",
                "a",
                get(GetOptions::new()
                    .with_prefix()
                    .with_max_mod_revision(revisions[1])),
            ),
            (
                "min_create",
                "a",
                get(GetOptions::new()
                    .with_prefix()
                    .with_min_create_revision(revisions[4])),
            ),
            (
                "max_create",
                "a",
                get(GetOptions::new()
                    .with_prefix()
                    .with_max_create_revision(revisions[0])),
            ),
            (
                "old_revision",
                "a1",
                get(GetOptions::new().with_revision(revisions[0])),
            ),
        ] {
            let mut answer = client.get(key, Some(options)).await?;
            let values: Vec<String> = answer
                .kvs()
                .iter()
                .map(|kv| kv.value_str().unwrap().to_string())
                .collect();
            let taken = answer.take_kvs();
            assert!(answer.kvs().is_empty(), "take_kvs leaves none");
            seen.push((
                name,
                keys(&taken).join(","),
                values.join(","),
                answer.count(),
                answer.more(),
            ));
        }
        Ok::<_, Error>((rewrite.header().unwrap().revision(), seen))
    });
    assert!(ran.outcome.is_clean(), "{:?}", ran.outcome);
    assert!(ran.judged("etcd.linearizable") > 15);
    let (rewrite_revision, seen) = ran.only().expect("every call succeeded");
    assert!(rewrite_revision > 7);
    let expected = [
        ("prefix", "a1,a2,a3,a4,a5", "1b,2,3,4,5", 5, false),
        ("range", "a2,a3", "2,3", 2, false),
        ("from_key", "a4,a5,b", "4,5,x", 3, false),
        ("all_keys", "a1,a2,a3,a4,a5,b", "1b,2,3,4,5,x", 6, false),
        ("limit", "a1,a2", "1b,2", 5, true),
        ("sort_key_descend", "a5,a4,a3,a2,a1", "5,4,3,2,1b", 5, false),
        // a1 was rewritten last: highest mod revision first.
        ("sort_mod_descend", "a1,a5,a4,a3,a2", "1b,5,4,3,2", 5, false),
        ("serializable", "a1,a2,a3,a4,a5", "1b,2,3,4,5", 5, false),
        ("keys_only", "a1,a2,a3,a4,a5", ",,,,", 5, false),
        ("count_only", "", "", 5, false),
        ("min_mod", "a1,a4,a5", "1b,4,5", 5, false),
        ("max_mod", "a2", "2", 5, false),
        ("min_create", "a5", "5", 5, false),
        ("max_create", "a1", "1b", 5, false),
        ("old_revision", "a1", "1", 1, false),
    ];
    for (got, want) in seen.iter().zip(expected) {
        assert_eq!(
            (got.0, got.1.as_str(), got.2.as_str(), got.3, got.4),
            want,
            "{}",
            got.0
        );
    }
    assert_eq!(seen.len(), expected.len());
}

#[test]
fn put_and_delete_options_answer_previous_values() {
    let ran = kv_support::run(1, 6, FaultSource::None, |mut client, _| async move {
        six_keys(&mut client).await?;
        let mut put = client
            .put("a1", "again", Some(PutOptions::new().with_prev_key()))
            .await?;
        let prev = put
            .take_prev_key()
            .map(|kv| (kv.value_str().unwrap().to_string(), kv.version()));
        let fresh = client
            .put("c", "new", Some(PutOptions::new().with_prev_key()))
            .await?;
        let mut deleted = Vec::new();
        for (key, options) in [
            ("a4", DeleteOptions::new().with_range("a6").with_prev_key()),
            ("a2", DeleteOptions::new().with_prefix()),
            ("b", DeleteOptions::new().with_from_key().with_prev_key()),
            (
                "nothing",
                DeleteOptions::new().with_all_keys().with_prev_key(),
            ),
        ] {
            let answer = client.delete(key, Some(options)).await?;
            deleted.push((answer.deleted(), keys(answer.prev_kvs()).join(",")));
        }
        let left = client
            .get("a", Some(GetOptions::new().with_prefix()))
            .await?;
        Ok::<_, Error>((prev, fresh.prev_key().is_none(), deleted, left.count()))
    });
    assert!(ran.outcome.is_clean(), "{:?}", ran.outcome);
    assert!(ran.judged("etcd.linearizable") > 10);
    let (prev, fresh_has_none, deleted, left) = ran.only().expect("every call succeeded");
    assert_eq!(prev, Some(("1".to_string(), 1)));
    assert!(fresh_has_none, "a new key has no previous value");
    assert_eq!(
        deleted,
        vec![
            (2, "a4,a5".to_string()),
            // Without prev_kv, none answered.
            (1, String::new()),
            (2, "b,c".to_string()),
            (2, "a1,a3".to_string()),
        ]
    );
    assert_eq!(left, 0);
}

#[test]
fn kv_calls_under_partitions_are_judged_linearizable() {
    for_each_seed(
        [1, 2, 3],
        this_test!("kv_calls_under_partitions_are_judged_linearizable"),
        |seed| {
            let faults = FaultSource::CutOffLeader(sim::fault::CutOffLeader::default());
            let ran = kv_support::run(3, seed.value(), faults, |mut client, node| async move {
                let key = format!("counter/{}", node.index() % 2);
                let mut succeeded = 0;
                for round in 0..20 {
                    let put = client
                        .put(
                            key.as_str(),
                            format!("{round}"),
                            Some(PutOptions::new().with_prev_key()),
                        )
                        .await;
                    let get = client
                        .get(
                            "counter/",
                            Some(GetOptions::new().with_prefix().with_limit(1)),
                        )
                        .await;
                    let delete = match round % 5 {
                        4 => client.delete(key.as_str(), None).await.map(|_| ()),
                        _ => Ok(()),
                    };
                    succeeded += [put.is_ok(), get.is_ok(), delete.is_ok()]
                        .iter()
                        .filter(|ok| **ok)
                        .count();
                    // Spread the calls over the fault phase, so that cuts land among them.
                    node.context()
                        .sim()
                        .sleep(std::time::Duration::from_millis(50))
                        .await;
                }
                succeeded
            });
            assert!(ran.outcome.is_clean(), "seed {seed}: {:?}", ran.outcome);
            assert!(
                ran.outcome.fault_counts.partitions > 0,
                "seed {seed}: the leader was cut off"
            );
            let succeeded: usize = ran.results.iter().map(|(_, n)| n).sum();
            assert_eq!(ran.results.len(), 3, "seed {seed}: every client finished");
            assert!(succeeded > 60, "seed {seed}: {succeeded} calls succeeded");
            assert!(ran.judged("etcd.linearizable") > 60, "seed {seed}");
        },
    );
}

/// Clones call concurrently, so each is a process of its own: the checker judges each
/// process's calls in order, and one process with overlapping calls would be misjudged.
#[test]
fn clones_are_processes_of_their_own_and_may_call_concurrently() {
    let ran = kv_support::run(1, 4, FaultSource::None, |client, _| async move {
        let (mut first, mut second, mut kv) = (client.clone(), client.clone(), client.kv_client());
        let mut third = kv.clone();
        let (a, b, c, d) = futures_util::join!(
            first.put("k", "1", None),
            second.put("k", "2", None),
            kv.put("j", "3", None),
            third.get("k", None),
        );
        [a.is_ok(), b.is_ok(), c.is_ok(), d.is_ok()]
    });
    assert!(ran.outcome.is_clean(), "{:?}", ran.outcome);
    assert_eq!(ran.judged("etcd.linearizable"), 4);
    let history = ran.outcome.history.as_ref().expect("a history");
    let processes: std::collections::BTreeSet<u32> = history
        .records()
        .iter()
        .filter_map(|record| match &record.event {
            sim::history::Event::Invoke { process, .. } => Some(*process),
            _ => None,
        })
        .collect();
    assert_eq!(processes.len(), 4, "one process per handle: {processes:?}");
    assert_eq!(ran.only(), [true; 4]);
}
