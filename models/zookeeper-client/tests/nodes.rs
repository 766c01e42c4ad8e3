#![cfg(madsim)]
//! Code written against zookeeper-client's node API runs unchanged in a coordsim world:
//! connect, create, read, write, list, delete; every call is an operation the store's
//! checks judge, and each error path answers the real client's error.

mod common;

use common::{connect, judged, note, run_once, violations};
use scenarios::{
    Scenario, driver,
    scenario::Store,
    workload::{UserCode, UserNode},
};
use sim::{report::for_each_seed, this_test};
use std::sync::{Arc, Mutex};
use zookeeper_client::{Acls, Client, CreateMode, CreateSequence, Error, Stat};

/// What a user's service does with ZooKeeper: nothing here is coordsim's API.
async fn register(client: &Client, name: &str) -> Result<(CreateSequence, usize), Error> {
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    match client.create("/services", b"", &open).await {
        Ok(_) | Err(Error::NodeExists) => {}
        Err(error) => return Err(error),
    }
    let member = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (_, sequence) = client
        .create("/services/member-", name.as_bytes(), &member)
        .await?;
    let listed = client.list_children("/services").await?;
    Ok((sequence, listed.len()))
}

#[test]
fn zookeeper_client_code_runs_against_the_zab_store_and_is_judged() {
    for_each_seed(
        [1, 2, 3],
        this_test!("zookeeper_client_code_runs_against_the_zab_store_and_is_judged"),
        |seed| {
            let seen: Arc<Mutex<Vec<(CreateSequence, usize)>>> = Arc::default();
            let code = {
                let seen = seen.clone();
                UserCode::new("zk-dropin-nodes", Store::Zab, move |node: UserNode| {
                    let seen = seen.clone();
                    async move {
                        let client = connect().await;
                        if let Ok(answer) = register(&client, &format!("c{}", node.index())).await {
                            seen.lock().unwrap().push(answer);
                        }
                        loop {
                            let _ = client.get_children("/services").await;
                            common::sleep_ms(100).await;
                        }
                    }
                })
            };
            let scenario = Scenario::of_user_code(code, 3, 3);
            let outcome = driver::run(&scenario, seed);
            assert!(outcome.is_clean(), "seed {seed}: {outcome:?}");
            assert!(
                judged(&outcome, "zk.linearizable") > 0,
                "seed {seed}: {outcome:?}"
            );
            assert_eq!(violations(&outcome, "zk.linearizable"), 0);
            let seen = seen.lock().unwrap().clone();
            assert_eq!(
                seen.len(),
                3,
                "seed {seed}: every client registered: {seen:?}"
            );
            let mut sequences: Vec<_> = seen.iter().map(|(sequence, _)| *sequence).collect();
            sequences.sort();
            sequences.dedup();
            assert_eq!(
                sequences.len(),
                3,
                "seed {seed}: distinct sequences {seen:?}"
            );
        },
    );
}

#[test]
fn create_get_set_delete_answer_as_the_real_client() {
    let notes = run_once(|notes| async move {
        let client = connect().await;
        let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
        let (created, sequence) = client.create("/a", b"one", &open).await.unwrap();
        note(
            &notes,
            format!("created v{} seq {}", created.version, sequence.into_i64()),
        );
        let (data, stat) = client.get_data("/a").await.unwrap();
        note(
            &notes,
            format!(
                "{} v{} len {}",
                String::from_utf8(data).unwrap(),
                stat.version,
                stat.data_length
            ),
        );
        let stat: Stat = client.set_data("/a", b"two", Some(0)).await.unwrap();
        note(&notes, format!("set v{}", stat.version));
        let checked = client
            .check_stat("/a")
            .await
            .unwrap()
            .map(|stat| stat.version);
        note(&notes, format!("check {checked:?}"));
        client.delete("/a", Some(1)).await.unwrap();
        note(
            &notes,
            format!("after delete {:?}", client.check_stat("/a").await.unwrap()),
        );
        let sequential = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
        let (_, first) = client.create("/q-", b"", &sequential).await.unwrap();
        let (_, second) = client.create("/q-", b"", &sequential).await.unwrap();
        note(&notes, format!("seq {first} {second}"));
        let (children, parent) = client.get_children("/").await.unwrap();
        note(
            &notes,
            format!("children {} of {}", children.len(), parent.num_children),
        );
    });
    assert_eq!(
        notes,
        [
            "created v0 seq -1",
            "one v0 len 3",
            "set v1",
            "check Some(1)",
            "after delete None",
            "seq 0000000001 0000000002",
            "children 3 of 3",
        ]
    );
}

#[test]
fn each_error_path_is_the_real_clients_error() {
    let notes = run_once(|notes| async move {
        let client = connect().await;
        let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
        let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        client.create("/p", b"", &open).await.unwrap();
        client.create("/p/c", b"", &open).await.unwrap();
        client.create("/e", b"", &ephemeral).await.unwrap();
        let outcomes: Vec<Result<(), Error>> = vec![
            client.get_data("/missing").await.map(drop),
            client.create("/p", b"", &open).await.map(drop),
            client.create("/missing/child", b"", &open).await.map(drop),
            client.set_data("/p", b"x", Some(7)).await.map(drop),
            client.delete("/p", None).await,
            client.create("/e/child", b"", &open).await.map(drop),
            client.create("/bad/", b"", &open).await.map(drop),
            client.create("/p/d", &[0xff], &open).await.map(drop),
            client
                .create(
                    "/p/acl",
                    b"",
                    &CreateMode::Persistent.with_acls(Acls::new(&[])),
                )
                .await
                .map(drop),
        ];
        for outcome in outcomes {
            note(&notes, format!("{outcome:?}"));
        }
    });
    assert_eq!(
        notes[..7],
        [
            "Err(NoNode)",
            "Err(NodeExists)",
            "Err(NoNode)",
            "Err(BadVersion)",
            "Err(NotEmpty)",
            "Err(NoChildrenForEphemerals)",
            "Err(BadArguments(\"invalid path (ZooKeeper's path rules: absolute, no empty, `.` or `..` segment, no trailing slash)\"))",
        ]
    );
    assert!(notes[7].contains("data is not UTF-8"), "{notes:?}");
    assert_eq!(notes[8], "Err(InvalidAcl)");
}

#[test]
fn connect_outside_a_run_and_with_a_chroot_are_errors_naming_why() {
    let outside = futures_lite_block_on(Client::connect(common::CLUSTER));
    assert!(
        matches!(&outside, Err(Error::UnexpectedError(reason)) if reason.contains("Store::Zab")),
        "{outside:?}"
    );
    let notes = run_once(|notes| async move {
        let chrooted = Client::connect("s1:2181/app").await.map(drop);
        note(&notes, format!("{chrooted:?}"));
        let empty = Client::connect("").await.map(drop);
        note(&notes, format!("{empty:?}"));
        // The run must see progress: a good connect afterwards works.
        let listed = connect().await.list_children("/").await;
        note(&notes, format!("{listed:?}"));
    });
    assert!(notes[0].contains("chroot"), "{notes:?}");
    assert!(notes[1].contains("empty connect string"), "{notes:?}");
    assert_eq!(notes[2], "Ok([\"zookeeper\"])");
}

/// Polls `future` to completion on this thread (it never waits: it fails at once).
fn futures_lite_block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = std::task::Waker::noop();
    let mut context = std::task::Context::from_waker(waker);
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => panic!("connect outside a run waited"),
    }
}

#[test]
fn mkdir_ephemerals_and_descendants_answer_as_the_real_client() {
    let notes = run_once(|notes| async move {
        let client = connect().await;
        let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
        client.mkdir("/d/e/f", &open).await.unwrap();
        client.mkdir("/d/e/f", &open).await.unwrap();
        note(
            &notes,
            format!(
                "descendants {:?}",
                client.count_descendants_number("/d").await
            ),
        );
        let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        client.create("/d/e/x", b"", &ephemeral).await.unwrap();
        client.create("/d/y", b"", &ephemeral).await.unwrap();
        note(
            &notes,
            format!("{:?}", client.list_ephemerals("/d/e").await),
        );
        note(
            &notes,
            format!("{:?}", client.list_ephemerals("/nothing").await),
        );
        note(
            &notes,
            format!("{:?}", client.count_descendants_number("/nothing").await),
        );
        note(
            &notes,
            format!("{:?}", client.mkdir("/z", &ephemeral).await),
        );
        let sequential = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
        note(
            &notes,
            format!("{:?}", client.mkdir("/z", &sequential).await),
        );
    });
    assert_eq!(
        notes,
        [
            "descendants Ok(2)",
            "Ok([\"/d/e/x\"])",
            "Ok([])",
            "Err(NoNode)",
            "Err(BadArguments(\"directory node must not be ephemeral\"))",
            "Err(BadArguments(\"directory node must not be sequential\"))",
        ]
    );
}

#[test]
fn a_connectors_debug_shows_no_credentials() {
    let connector = Client::connector()
        .with_session_timeout(std::time::Duration::from_secs(3))
        .with_auth("digest", b"alice:secret");
    let shown = format!("{connector:?}");
    assert!(shown.contains("3s"), "{shown}");
    assert!(!shown.contains("secret"), "{shown}");
}
