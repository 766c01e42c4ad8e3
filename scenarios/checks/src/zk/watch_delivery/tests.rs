//! Each judgement of `zk.watch_delivery` passes a good history and fires on a bad one.
use super::*;
use crate::test_history::*;

#[test]
fn once_passes_twice_fails_and_a_missed_change_fails() {
    let setup = vec![
        registered(10, C1, 1, "/w", WatchKind::Data),
        invoke(20, C2, 2, set_data("/w", "x")),
        ok(
            21,
            C2,
            2,
            ZkResponse::Stat {
                stat: stat(5, 1, 0),
            },
        ),
    ];
    let settle = Duration::from_millis(5);
    let mut once = setup.clone();
    once.push(delivered(22, C1, 1, "/w", 5));
    once.push(record(
        100,
        C1,
        sim::history::Event::Note { text: "end".into() },
    ));
    assert!(check(&History::from_records(once.clone()), settle).is_empty());
    let mut twice = once.clone();
    twice.insert(4, delivered(23, C1, 1, "/w", 5));
    assert!(matches!(
        check(&History::from_records(twice), settle)[..],
        [WatchDeliveryViolation::FiredTwice { .. }]
    ));
    let mut never = setup;
    never.push(record(
        100,
        C1,
        sim::history::Event::Note { text: "end".into() },
    ));
    assert!(matches!(
        check(&History::from_records(never), settle)[..],
        [WatchDeliveryViolation::NeverFired {
            change: OpId(2),
            ..
        }]
    ));
}
#[test]
fn an_exists_watch_may_miss_a_create_while_disconnected() {
    use sim::history::zk::CreateMode;
    let settle = Duration::from_millis(5);
    let mut history = vec![
        registered(10, C1, 1, "/x", WatchKind::Exists),
        invoke(20, C2, 2, create("/x", CreateMode::Persistent)),
        ok(21, C2, 2, ZkResponse::Created { path: "/x".into() }),
        record(100, C1, Event::Note { text: "end".into() }),
    ];
    assert_eq!(
        check(&History::from_records(history.clone()), settle).len(),
        1
    );
    history.insert(
        1,
        record(
            15,
            C1,
            Event::Zk(ZkEvent::Disconnected {
                process: 0,
                session: 7,
                server: NodeId::server(0),
            }),
        ),
    );
    assert!(check(&History::from_records(history), settle).is_empty());
}

#[test]
fn an_exists_watch_missing_a_create2_fails() {
    // The zookeeper-client drop-in's create is create2: its reply carries the stat.
    use sim::history::zk::CreateMode;
    let history = vec![
        registered(10, C1, 1, "/x", WatchKind::Exists),
        invoke(20, C2, 2, create("/x", CreateMode::Persistent)),
        ok(21, C2, 2, created2("/x", 0)),
        record(100, C1, Event::Note { text: "end".into() }),
    ];
    assert!(matches!(
        check(&History::from_records(history), Duration::from_millis(5))[..],
        [WatchDeliveryViolation::NeverFired {
            change: OpId(2),
            ..
        }]
    ));
}

fn end(ms: u64) -> sim::history::Record {
    record(ms, C1, Event::Note { text: "end".into() })
}

fn set(ms: u64, op: u64, path: &str, mzxid: u64) -> [sim::history::Record; 2] {
    [
        invoke(ms, C2, op, set_data(path, "x")),
        ok(
            ms + 1,
            C2,
            op,
            ZkResponse::Stat {
                stat: stat(mzxid, 1, 0),
            },
        ),
    ]
}

#[test]
fn a_persistent_watch_that_went_quiet_after_its_first_event_fails() {
    let settle = Duration::from_millis(5);
    let data_changed = (WatchKind::Persistent, WatchEventType::NodeDataChanged, "/w");
    let mut history = vec![registered(10, C1, 1, "/w", WatchKind::Persistent)];
    history.extend(set(20, 2, "/w", 5));
    history.push(delivered_event(22, C1, 1, data_changed, 5));
    history.extend(set(30, 3, "/w", 6));
    let mut quiet = history.clone();
    quiet.push(end(100));
    assert!(matches!(
        check(&History::from_records(quiet), settle)[..],
        [WatchDeliveryViolation::MissedChange {
            change: OpId(3),
            ..
        }]
    ));
    // Both delivered: a persistent watch may fire twice.
    history.push(delivered_event(32, C1, 1, data_changed, 6));
    history.push(end(100));
    assert!(check(&History::from_records(history), settle).is_empty());
}

#[test]
fn a_recursive_watch_that_missed_a_grandchild_fails() {
    use sim::history::zk::CreateMode;
    let settle = Duration::from_millis(5);
    let mut history = vec![
        registered(10, C1, 1, "/r", WatchKind::PersistentRecursive),
        // Not below /r: owed nothing.
        invoke(15, C2, 2, create("/rx", CreateMode::Persistent)),
        ok(16, C2, 2, ZkResponse::Created { path: "/rx".into() }),
        invoke(20, C2, 3, create("/r/c/g", CreateMode::Persistent)),
        ok(
            21,
            C2,
            3,
            ZkResponse::Created {
                path: "/r/c/g".into(),
            },
        ),
    ];
    let mut missed = history.clone();
    missed.push(end(100));
    assert!(matches!(
        &check(&History::from_records(missed), settle)[..],
        [WatchDeliveryViolation::MissedChange {
            change: OpId(3),
            event: WatchEventType::NodeCreated,
            node,
            ..
        }] if node == "/r/c/g"
    ));
    let created = (
        WatchKind::PersistentRecursive,
        WatchEventType::NodeCreated,
        "/r/c/g",
    );
    history.push(delivered_event(21, C1, 1, created, 4));
    history.push(end(100));
    assert!(check(&History::from_records(history), settle).is_empty());
}

#[test]
fn a_removed_watch_owes_nothing_and_must_deliver_nothing() {
    let settle = Duration::from_millis(5);
    let mut history = vec![
        registered(10, C1, 1, "/w", WatchKind::Persistent),
        removed(15, C1, 1, "/w", WatchKind::Persistent),
    ];
    history.extend(set(20, 2, "/w", 5));
    let mut quiet = history.clone();
    quiet.push(end(100));
    assert!(check(&History::from_records(quiet), settle).is_empty());
    let data_changed = (WatchKind::Persistent, WatchEventType::NodeDataChanged, "/w");
    history.push(delivered_event(22, C1, 1, data_changed, 5));
    history.push(end(100));
    assert!(matches!(
        check(&History::from_records(history), settle)[..],
        [WatchDeliveryViolation::DeliveredAfterRemoval {
            registration: OpId(1),
            ..
        }]
    ));
}
