//! A restarted etcd server resumes from its durable backend (its applied state and
//! consistent index, committed every batch interval), re-applying only what the last commit
//! missed, and its state is whole afterwards.

use models::etcd::{EtcdClient, EtcdCluster, EtcdConfig, kv_response};
use sim::{
    NodeId, Seed, World,
    history::{Event, FaultOutcome, ProtocolEvent, kv::KvResponse},
};
use std::time::Duration;

/// How long the single server runs before it is crashed, after its last write.
#[derive(Clone, Copy, Debug)]
enum CrashAfterWrites {
    /// At once: the backend's last batch may not be committed yet.
    AtOnce,
    /// After several batch intervals: the backend holds every applied entry.
    Idle,
}

/// What the server applied, by incarnation, and what it recorded it resumed from.
struct Applied {
    /// (index, term) of each entry applied before the crash.
    before_crash: Vec<(u64, u64)>,
    /// The index and term of the state it recorded it resumed from, first thing after the
    /// restart (`SnapshotInstalled`).
    resumed: Option<(u64, u64)>,
    /// The indexes applied after the restart.
    after_restart: Vec<u64>,
}

impl Applied {
    /// The index applied last before the crash.
    fn last_before_crash(&self) -> u64 {
        self.before_crash
            .last()
            .expect("applied before the crash")
            .0
    }

    /// Checks that the restart recorded the state it resumed from, first, that this is a state
    /// the server held (an entry it applied, with that entry's term), and that its first apply
    /// follows it.
    fn assert_resumed_from_held_state(&self) {
        let (index, term) = self
            .resumed
            .expect("the restart records what it resumed from");
        assert!(
            self.before_crash.contains(&(index, term)),
            "resumed from ({index}, {term}), applied {:?}",
            self.before_crash
        );
        assert_eq!(self.after_restart.first(), Some(&(index + 1)));
    }
}

/// One server, 20 puts of `k`, a crash and restart, then a read and one more put; checks the
/// answers show the whole state and returns what the server applied.
fn run(crash: CrashAfterWrites, snapshot_threshold: Option<u64>) -> Applied {
    let server = NodeId::server(0);
    let outcome = World::builder()
        .seed(Seed::new(3))
        .servers(1)
        .clients(1)
        .time_limit(Duration::from_secs(60))
        .build()
        .unwrap()
        .run(move |sim| async move {
            let mut config = EtcdConfig::new(&sim.servers());
            config.raft.snapshot_threshold = snapshot_threshold;
            let cluster = EtcdCluster::start(&sim, config);
            let client_node = NodeId::client(0);
            let context = sim.node(client_node);
            let mut client = EtcdClient::new(&cluster, context, 0);
            for i in 0..20 {
                let put = client.put("k", &format!("v{i}")).await;
                assert!(kv_response(&put).is_some(), "put {i}: {put:?}");
            }
            if let CrashAfterWrites::Idle = crash {
                sim::time::sleep(Duration::from_millis(1_000)).await;
            }
            let crashed = sim.nemesis().crash(server);
            assert!(
                matches!(crashed, FaultOutcome::Applied { .. }),
                "{crashed:?}"
            );
            sim::time::sleep(Duration::from_millis(100)).await;
            let restarted = sim.nemesis().restart(server);
            assert!(
                matches!(restarted, FaultOutcome::Applied { .. }),
                "{restarted:?}"
            );
            let got = client.get("k").await;
            let Some(KvResponse::Get { kvs, .. }) = kv_response(&got) else {
                panic!("get after the restart failed: {got:?}");
            };
            // Every put is in the state once: none lost, none applied twice.
            assert_eq!((kvs[0].value.as_str(), kvs[0].version), ("v19", 20));
            let put = client.put("k", "after").await;
            let Some(KvResponse::Put { revision, .. }) = kv_response(&put) else {
                panic!("put after the restart failed: {put:?}");
            };
            assert_eq!(*revision, 22, "the store's revision continues");
        });
    let mut applied = Applied {
        before_crash: Vec::new(),
        resumed: None,
        after_restart: Vec::new(),
    };
    let mut restarted = false;
    for record in outcome.history.records() {
        match &record.event {
            Event::Fault(fault) if fault.crashed() == Some(server) => restarted = true,
            Event::Protocol(ProtocolEvent::SnapshotInstalled { index, term }) => {
                assert!(restarted && applied.after_restart.is_empty(), "{record:?}");
                applied.resumed = Some((*index, *term));
            }
            Event::Protocol(ProtocolEvent::Applied { index, term, .. }) => {
                if restarted {
                    applied.after_restart.push(*index);
                } else {
                    applied.before_crash.push((*index, *term));
                }
            }
            _ => {}
        }
    }
    assert!(restarted, "{outcome}");
    applied
}

/// The indexes are consecutive.
fn consecutive(indexes: &[u64]) -> bool {
    indexes.windows(2).all(|pair| pair[1] == pair[0] + 1)
}

#[test]
fn an_idle_server_restarts_without_applying_anything_again() {
    let applied = run(CrashAfterWrites::Idle, None);
    let last = applied.last_before_crash();
    assert!(
        last >= 21,
        "a no-op and 20 puts: {:?}",
        applied.before_crash
    );
    // The backend held everything: the first entry applied after the restart is new.
    assert_eq!(applied.resumed.map(|(index, _)| index), Some(last));
    applied.assert_resumed_from_held_state();
    assert!(consecutive(&applied.after_restart));
}

#[test]
fn a_server_crashed_mid_batch_applies_again_only_the_uncommitted_entries() {
    let applied = run(CrashAfterWrites::AtOnce, None);
    let last = applied.last_before_crash();
    applied.assert_resumed_from_held_state();
    let first = *applied
        .after_restart
        .first()
        .expect("applied after the restart");
    // It resumes at its last commit: not from the start, and not past what it applied.
    assert!(first > 1 && first <= last + 1, "{first} after {last}");
    assert!(
        first <= last,
        "this seed crashes it before its last batch is committed"
    );
    assert!(consecutive(&applied.after_restart));
}

/// With a snapshot every 5 entries, the durable snapshot is older than the backend: the
/// server keeps the backend (restoring the snapshot would lose the entries after it, which
/// it does not apply again), and its state is whole (checked in `run`).
#[test]
fn a_backend_newer_than_the_snapshot_is_kept() {
    let applied = run(CrashAfterWrites::Idle, Some(5));
    let last = applied.last_before_crash();
    assert_eq!(applied.resumed.map(|(index, _)| index), Some(last));
    applied.assert_resumed_from_held_state();
}
