#![cfg(madsim)]
//! Watches as zookeeper-client delivers them (each judged by `zk.watch_delivery`), and one
//! session shared by clones: their concurrent calls are one history process, judged by
//! `zk.linearizable` and `zk.session_consistency`.

mod common;

use common::{connect, judged, note, run_once, violations};
use scenarios::{
    Scenario, driver,
    scenario::Store,
    workload::{UserCode, UserNode},
};
use sim::history::Event;
use sim::{NodeId, report::for_each_seed, this_test};
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use zookeeper_client::{Acls, AddWatchMode, CreateMode, WatchedEvent};

/// `(type, path)` of a node event.
fn seen(event: &WatchedEvent) -> String {
    format!("{:?} {}", event.event_type, event.path)
}

#[test]
fn oneshot_watches_fire_once_with_the_real_event_types() {
    let notes = run_once(|notes| async move {
        let client = connect().await;
        let writer = client.clone();
        let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
        let (_, created) = client.check_and_watch_stat("/w").await.unwrap();
        writer.create("/w", b"0", &open).await.unwrap();
        note(&notes, seen(&created.changed().await));
        let (_, _, data) = client.get_and_watch_data("/w").await.unwrap();
        writer.set_data("/w", b"1", None).await.unwrap();
        let event = data.changed().await;
        note(
            &notes,
            format!("{} zxid>0 {}", seen(&event), event.zxid > 0),
        );
        let (children, child) = client.list_and_watch_children("/w").await.unwrap();
        note(&notes, format!("children {children:?}"));
        writer.create("/w/c", b"", &open).await.unwrap();
        note(&notes, seen(&child.changed().await));
        let (_, stat, gone) = client.get_and_watch_children("/w/c").await.unwrap();
        note(&notes, format!("leaf has {}", stat.num_children));
        writer.delete("/w/c", None).await.unwrap();
        note(&notes, seen(&gone.changed().await));
    });
    assert_eq!(
        notes,
        [
            "NodeCreated /w",
            "NodeDataChanged /w zxid>0 true",
            "children []",
            "NodeChildrenChanged /w",
            "leaf has 0",
            "NodeDeleted /w/c",
        ]
    );
}

#[test]
fn a_persistent_recursive_watch_delivers_every_change_below_it() {
    let notes = run_once(|notes| async move {
        let client = connect().await;
        let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
        let mut below = client
            .watch("/r", AddWatchMode::PersistentRecursive)
            .await
            .unwrap();
        let mut node = client.watch("/r", AddWatchMode::Persistent).await.unwrap();
        client.create("/r", b"", &open).await.unwrap();
        client.create("/r/a", b"", &open).await.unwrap();
        client.set_data("/r/a", b"x", None).await.unwrap();
        client.delete("/r/a", None).await.unwrap();
        for _ in 0..4 {
            note(
                &notes,
                format!("recursive {}", seen(&below.changed().await)),
            );
        }
        for _ in 0..3 {
            note(&notes, format!("node {}", seen(&node.changed().await)));
        }
    });
    assert_eq!(
        notes,
        [
            "recursive NodeCreated /r",
            "recursive NodeCreated /r/a",
            "recursive NodeDataChanged /r/a",
            "recursive NodeDeleted /r/a",
            "node NodeCreated /r",
            "node NodeChildrenChanged /r",
            "node NodeChildrenChanged /r",
        ]
    );
}

/// Polls two futures together until both are done (what `futures::join!` does).
async fn both<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (pin!(a), pin!(b));
    let (mut first, mut second) = (None, None);
    std::future::poll_fn(|cx| {
        if first.is_none() {
            if let Poll::Ready(output) = a.as_mut().poll(cx) {
                first = Some(output);
            }
        }
        if second.is_none() {
            if let Poll::Ready(output) = b.as_mut().poll(cx) {
                second = Some(output);
            }
        }
        match (first.is_some(), second.is_some()) {
            (true, true) => Poll::Ready((first.take().unwrap(), second.take().unwrap())),
            _ => Poll::Pending,
        }
    })
    .await
}

/// Two clones of one client write and sync-then-read concurrently, under partitions.
async fn clones_at_work(node: UserNode, rounds: Arc<Mutex<Vec<usize>>>) {
    let client = connect().await;
    let other = client.clone();
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let mine = format!("/k{}", node.index());
    let _ = client.create(&mine, b"0", &open).await;
    for round in 0..10u32 {
        let value = round.to_string();
        let (written, synced) = both(client.set_data(&mine, value.as_bytes(), None), async {
            other.sync("/").await?;
            other.get_data(&mine).await
        })
        .await;
        if written.is_ok() && synced.is_ok() {
            rounds.lock().unwrap().push(node.index());
        }
        common::sleep_ms(100).await;
    }
    std::future::pending::<()>().await;
}

#[test]
fn clones_share_one_session_and_their_concurrent_calls_are_judged_clean() {
    for_each_seed(
        1..=3,
        this_test!("clones_share_one_session_and_their_concurrent_calls_are_judged_clean"),
        |seed| {
            let rounds: Arc<Mutex<Vec<usize>>> = Arc::default();
            let code = {
                let rounds = rounds.clone();
                UserCode::new("zk-dropin-clones", Store::Zab, move |node| {
                    clones_at_work(node, rounds.clone())
                })
            };
            let mut scenario = Scenario::of_user_code(code, 3, 2);
            scenario.faults =
                sim::fault::FaultSource::CutOffLeader(sim::fault::CutOffLeader::default());
            let outcome = driver::run(&scenario, seed);
            assert!(outcome.is_clean(), "seed {seed}: {outcome:?}");
            assert!(
                outcome.fault_counts.faults_fired() > 0,
                "seed {seed}: faults fired"
            );
            assert!(judged(&outcome, "zk.linearizable") > 0, "{outcome:?}");
            assert!(
                judged(&outcome, "zk.session_consistency") > 0,
                "{outcome:?}"
            );
            assert_eq!(violations(&outcome, "zk.linearizable"), 0);
            let rounds = rounds.lock().unwrap().clone();
            for client in 0..2 {
                let done = rounds.iter().filter(|index| **index == client).count();
                assert!(done >= 3, "seed {seed}: client {client} did {done} rounds");
            }
            // One process per client node: the clones' calls are one session's.
            let history = outcome.history.as_ref().expect("kept");
            let mut processes: BTreeSet<(NodeId, u32)> = BTreeSet::new();
            let mut process_of = std::collections::BTreeMap::new();
            let mut open: std::collections::BTreeMap<u32, u32> = Default::default();
            let mut overlapping = 0;
            for record in history.records() {
                match &record.event {
                    Event::Invoke {
                        client,
                        process,
                        op_id,
                        ..
                    } => {
                        processes.insert((*client, *process));
                        process_of.insert(*op_id, *process);
                        let count = open.entry(*process).or_default();
                        *count += 1;
                        if *count > 1 {
                            overlapping += 1;
                        }
                    }
                    Event::Complete { op_id, .. } => {
                        if let Some(count) = process_of.get(op_id).and_then(|p| open.get_mut(p)) {
                            *count = count.saturating_sub(1);
                        }
                    }
                    _ => {}
                }
            }
            assert_eq!(processes.len(), 2, "seed {seed}: {processes:?}");
            assert!(overlapping > 0, "seed {seed}: the clones' calls overlapped");
        },
    );
}
