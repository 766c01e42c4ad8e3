#![cfg(madsim)]
//! zookeeper-client's `LockClient::{create, set_data, delete, new_check_writer, into_owned}`
//! and `OwnedLockClient`: writes applied only while the lock node exists (a check on the
//! lock path in one multi). Through a live lock they apply; through a lock whose node was
//! deleted they fail with `RuntimeInconsistent` and change nothing; through a lock whose
//! session expired they fail with `SessionExpired`, as the real ones do.

mod common;

use common::{CLUSTER, connect, judged, note, run_once, sleep_ms};
use scenarios::{Scenario, driver, scenario::Store, workload::UserCode};
use sim::fault::{Fault, FaultPlan, FaultSource, PartitionShape, ScheduledFault, Target};
use sim::{NodeId, Seed};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zookeeper_client::{Acls, CheckWriteError, Client, CreateMode, LockOptions, LockPrefix};

fn options() -> LockOptions<'static> {
    LockOptions::new(Acls::anyone_all())
        .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .unwrap()
}

#[test]
fn writes_through_a_live_lock_apply_and_through_a_deleted_lock_node_fail() {
    let notes = run_once(|notes| async move {
        let client = connect().await;
        let other = connect().await;
        let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
        let prefix = LockPrefix::new_shared("/locks/lock-").unwrap();
        let lock = client.lock(prefix, b"", options()).await.unwrap();
        let (stat, sequence) = lock.create("/data", b"a", &open).await.unwrap();
        note(&notes, format!("create {} {sequence:?}", stat.is_invalid()));
        let sequential = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
        let (_, sequence) = lock.create("/data-", b"", &sequential).await.unwrap();
        note(&notes, format!("sequential {}", sequence.into_i64() >= 0));
        let stat = lock.set_data("/data", b"b", Some(0)).await.unwrap();
        note(&notes, format!("set v{}", stat.version));
        note(
            &notes,
            format!(
                "bad version {:?}",
                lock.set_data("/data", b"c", Some(0)).await
            ),
        );
        let mut writer = lock.new_check_writer();
        writer.add_create("/data/x", b"", &open).unwrap();
        note(
            &notes,
            format!("writer {:?}", writer.commit().await.map(|r| r.len())),
        );
        note(
            &notes,
            format!("delete {:?}", lock.delete("/data/x", None).await),
        );
        // The lock is lost: someone else deletes its node.
        other.delete(lock.lock_path(), None).await.unwrap();
        note(
            &notes,
            format!("lost create {:?}", lock.create("/y", b"", &open).await),
        );
        note(
            &notes,
            format!("lost set {:?}", lock.set_data("/data", b"z", None).await),
        );
        note(
            &notes,
            format!("lost delete {:?}", lock.delete("/data", None).await),
        );
        let mut writer = lock.new_check_writer();
        writer.add_set_data("/data", b"z", None).unwrap();
        let failed: Result<_, CheckWriteError> = writer.commit().await;
        note(&notes, format!("lost writer {failed:?}"));
        let (data, _) = other.get_data("/data").await.unwrap();
        note(
            &notes,
            format!("unchanged {}", String::from_utf8(data).unwrap()),
        );
        note(&notes, format!("absent {:?}", other.check_stat("/y").await));
    });
    assert_eq!(
        notes,
        [
            "create true CreateSequence(-1)",
            "sequential true",
            "set v1",
            "bad version Err(BadVersion)",
            "writer Ok(1)",
            "delete Ok(())",
            "lost create Err(RuntimeInconsistent)",
            "lost set Err(RuntimeInconsistent)",
            "lost delete Err(RuntimeInconsistent)",
            "lost writer Err(CheckFailed { source: NoNode })",
            "unchanged b",
            "absent Ok(None)",
        ]
    );
}

#[test]
fn an_owned_lock_client_writes_while_its_node_lives_and_deletes_it_when_dropped() {
    let notes = run_once(|notes| async move {
        let client = connect().await;
        let other = connect().await;
        let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
        let prefix = LockPrefix::new_shared("/locks/lock-").unwrap();
        let lock = client.lock(prefix, b"", options()).await.unwrap();
        let path = lock.lock_path().to_string();
        let owned = lock.into_owned();
        sleep_ms(500).await;
        // into_owned did not delete the node, as dropping the LockClient would.
        note(
            &notes,
            format!("kept {}", other.check_stat(&path).await.unwrap().is_some()),
        );
        note(&notes, format!("same path {}", owned.lock_path() == path));
        note(
            &notes,
            format!(
                "create {:?}",
                owned.create("/o", b"1", &open).await.map(|(_, s)| s)
            ),
        );
        note(
            &notes,
            format!(
                "set v{}",
                owned.set_data("/o", b"2", None).await.unwrap().version
            ),
        );
        let mut writer = owned.new_check_writer();
        writer.add_delete("/o", Some(1)).unwrap();
        note(
            &notes,
            format!("writer {:?}", writer.commit().await.map(|r| r.len())),
        );
        note(
            &notes,
            format!("delete gone {:?}", owned.delete("/o", None).await),
        );
        note(
            &notes,
            format!(
                "session {}",
                owned.client().session_id() == client.session_id()
            ),
        );
        drop(owned);
        sleep_ms(500).await;
        note(
            &notes,
            format!("dropped {:?}", other.check_stat(&path).await),
        );
    });
    assert_eq!(
        notes,
        [
            "kept true",
            "same path true",
            "create Ok(CreateSequence(-1))",
            "set v1",
            "writer Ok(1)",
            "delete gone Err(NoNode)",
            "session true",
            "dropped Ok(None)",
        ]
    );
}

/// Takes the lock, is cut off past its 2 s session (at 2 s, for 8 s), then writes through
/// the lock once it knows its session expired.
#[test]
fn a_write_through_a_lock_whose_session_expired_fails_and_changes_nothing() {
    let notes: Arc<Mutex<Vec<String>>> = Arc::default();
    let code = {
        let notes = notes.clone();
        UserCode::new("zk-dropin-lock-writes", Store::Zab, move |_node| {
            let notes = notes.clone();
            async move {
                let client = Client::connector()
                    .with_session_timeout(Duration::from_secs(2))
                    .connect(CLUSTER)
                    .await
                    .unwrap();
                let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
                let prefix = LockPrefix::new_shared("/locks/lock-").unwrap();
                let lock = client.lock(prefix, b"", options()).await.unwrap();
                lock.create("/fenced", b"a", &open).await.unwrap();
                let mut state = client.state_watcher();
                while !state.changed().await.is_terminated() {}
                note(&notes, format!("state {}", client.state()));
                let written = lock.set_data("/fenced", b"late", None).await;
                note(&notes, format!("late set {written:?}"));
                // The client may give its session up while still cut off: look once the
                // partition (2 s to 10 s) has healed.
                sleep_ms(10_000).await;
                let fresh = connect().await;
                let (data, _) = fresh.get_data("/fenced").await.unwrap();
                note(&notes, format!("data {}", String::from_utf8(data).unwrap()));
                let gone = fresh.check_stat(lock.lock_path()).await.unwrap();
                note(&notes, format!("lock node {gone:?}"));
                std::future::pending::<()>().await;
            }
        })
    };
    let mut scenario = Scenario::of_user_code(code, 3, 1);
    scenario.fault_phase_ms = 16_000;
    let isolate = Fault::Partition {
        shape: PartitionShape::IsolateNode {
            node: Target::Node(NodeId::client(0)),
        },
    };
    scenario.faults = FaultSource::Plan(FaultPlan::new(vec![
        ScheduledFault::at(2_000, isolate).lasting(8_000),
    ]));
    let outcome = driver::run(&scenario, Seed::new(1));
    assert!(outcome.is_clean(), "{outcome:?}");
    assert!(
        outcome.fault_counts.faults_fired() > 0,
        "the partition fired"
    );
    assert!(
        judged(&outcome, "zk.session_consistency") > 0,
        "{outcome:?}"
    );
    assert_eq!(
        *notes.lock().unwrap(),
        [
            "state Expired",
            "late set Err(SessionExpired)",
            "data a",
            "lock node None",
        ]
    );
}
