//! Exact traces of the ZAB known bugs (`scenarios/known-bugs.md`): for each bug, a scripted fault
//! schedule that triggers it step by step, the checker that must catch it, and the correct
//! model passing every check on the same schedule. Each schedule runs over a few seeds
//! (`COORDSIM_SEEDS`).
//!
//! These scripts inject their faults from code, between client steps, so they cannot be
//! replayed from a plan file or shrunk. The zoo's test is the known-bug table
//! (`scenarios::known_bug_table`, run by `known_bugs.rs`), where every `zab.*` variant is
//! caught by seeds in a catalogue scenario whose faults are plan data; these remain as
//! the shortest readable account of each bug.

use checks::Violation;
use models::{
    zab::{KnownBugs, ZabBug},
    zk::{ZkClient, ZkEnsemble, ZkEnsembleConfig},
};
use sim::{
    NodeId, RunOutcome, Seed, Sim, World, fault::PartitionShape, history::zk::CreateMode,
    report::FailureReport,
};
use std::{future::Future, time::Duration};

const S1: NodeId = NodeId::server(0);
const S2: NodeId = NodeId::server(1);
const S3: NodeId = NodeId::server(2);
const C1: NodeId = NodeId::client(0);
const C2: NodeId = NodeId::client(1);
const C3: NodeId = NodeId::client(2);

/// A scripted world: 3 servers, 3 clients, the given bugs and timing.
struct Script {
    bugs: KnownBugs,
    sync_limit_ticks: u32,
    disk_sync: std::ops::RangeInclusive<Duration>,
}

impl Script {
    fn new(bugs: KnownBugs) -> Self {
        Self {
            bugs,
            sync_limit_ticks: 5,
            disk_sync: Duration::from_micros(100)..=Duration::from_millis(2),
        }
    }

    fn run<F, Fut>(&self, seed: Seed, scenario: F) -> RunOutcome
    where
        F: FnOnce(Sim, ZkEnsemble) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let mut config = ZkEnsembleConfig::new(vec![S1, S2, S3]);
        config.bugs = self.bugs.clone();
        config.sync_limit_ticks = self.sync_limit_ticks;
        World::builder()
            .seed(seed)
            .servers(3)
            .clients(3)
            .disk_sync_latency(self.disk_sync.clone())
            .time_limit(Duration::from_secs(60))
            .build()
            .expect("a valid world")
            .run(move |sim| async move {
                let ensemble = ZkEnsemble::new(&sim, config).expect("a valid ensemble");
                ensemble.start(&sim);
                scenario(sim, ensemble).await;
            })
    }
}

fn all_checks(outcome: &RunOutcome) -> Vec<Box<dyn Violation>> {
    // ZAB's indexes are zxids (protocol.applied_in_order needs to know).
    let context = checks::CheckContext {
        index_kind: checks::IndexKind::Zxid,
        ..Default::default()
    };
    let mut violations = checks::run(checks::protocol::CHECKS, &outcome.history, &context);
    violations.extend(checks::run(checks::zk::CHECKS, &outcome.history, &context));
    violations
}

/// Runs the schedule with the bug on and off over the sweep's seeds: the bug must break
/// each of `properties` on at least one seed (reported with its replay command), and the correct
/// model must pass every check on every seed.
fn shows_bug<F, Fut>(
    test: &str,
    bug: ZabBug,
    properties: &[&str],
    default_seeds: u64,
    script: impl Fn(KnownBugs) -> Script,
    scenario: F,
) where
    F: Fn(Sim, ZkEnsemble) -> Fut + Clone + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let mut caught = vec![0; properties.len()];
    let seeds = sim::env::test_seeds(default_seeds);
    for &seed in &seeds {
        let report = FailureReport::for_test(seed, "scenarios", "zab_known_bugs", test);
        let correct = script(KnownBugs::none()).run(seed, scenario.clone());
        let violations = all_checks(&correct);
        assert!(
            violations.is_empty(),
            "the correct model broke on the {} schedule:\n{report}\n{}",
            bug.name(),
            violations
                .iter()
                .map(|v| format!("  {}: {v}", v.property()))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let buggy = script(KnownBugs::only(bug)).run(seed, scenario.clone());
        let violations = all_checks(&buggy);
        for (count, property) in caught.iter_mut().zip(properties) {
            let Some(first) = violations.iter().find(|v| v.property() == *property) else {
                continue;
            };
            *count += 1;
            println!(
                "{} caught by `{property}` ({}):\n  {first}\n  replay: {}",
                bug.name(),
                first.reference(),
                report.command.as_deref().unwrap_or("")
            );
        }
    }
    for (count, property) in caught.iter().zip(properties) {
        assert!(
            *count > 0,
            "{} was never caught by `{property}` in {} seeds",
            bug.name(),
            seeds.len()
        );
    }
}

/// Opens a session on client node `node` through `servers` only.
async fn client(
    sim: &Sim,
    ensemble: &ZkEnsemble,
    node: NodeId,
    process: u32,
    servers: Vec<NodeId>,
    timeout: Duration,
) -> ZkClient {
    let (ensemble, context) = (ensemble.clone(), sim.node(node));
    let mut config = ensemble.client_config(process);
    config.servers = servers;
    config.session_timeout = timeout;
    sim.spawn(node, async move {
        ensemble
            .connect(&context, config)
            .await
            .expect("the client connects")
    })
    .await
    .expect("client task")
}

/// Runs `operation` on the client's node and waits for it.
async fn on<T: Send + 'static>(
    sim: &Sim,
    node: NodeId,
    operation: impl Future<Output = T> + Send + 'static,
) -> T {
    sim.spawn(node, operation).await.expect("client task")
}

/// Retries a write until it is acknowledged (connection losses happen during failover).
async fn set_until_ok(sim: &Sim, zk: &ZkClient, node: NodeId, path: &str, data: &str) {
    for _ in 0..50 {
        let (zk, path, data) = (zk.clone(), path.to_string(), data.to_string());
        if on(
            sim,
            node,
            async move { zk.set_data(&path, &data, None).await },
        )
        .await
        .is_ok()
        {
            return;
        }
        sim.sleep(Duration::from_millis(100)).await;
    }
    panic!("{path} was never written");
}

/// ZOOKEEPER-335: a leader establishes epoch 1 with nothing logged; a quorum restarts
/// without it; the restarted servers re-derive epoch 0 from their (empty) logs and hand
/// epoch 1 to a second leader. (In the table: `zab_quorum_restart`.)
#[test]
fn epoch_not_persisted_gives_one_epoch_two_leaders() {
    shows_bug(
        "epoch_not_persisted_gives_one_epoch_two_leaders",
        ZabBug::EpochNotPersisted,
        &["leader uniqueness"],
        4,
        Script::new,
        |sim: Sim, _ensemble| async move {
            sim.sleep(Duration::from_secs(1)).await;
            let nemesis = sim.nemesis();
            for server in [S1, S2, S3] {
                nemesis.crash(server);
            }
            sim.sleep(Duration::from_millis(200)).await;
            nemesis.restart(S1);
            nemesis.restart(S2);
            sim.sleep(Duration::from_secs(2)).await;
        },
    );
}

/// ZOOKEEPER-1154: the leader logs a proposal nobody else gets and crashes; the others move
/// on in epoch 2; when the old leader rejoins, its last zxid lies inside the new leader's
/// history, and a DIFF without TRUNC lets it keep (and apply) the dead proposal. (In the
/// table: `zab_leader_killer_diffs`.)
#[test]
fn diff_without_trunc_keeps_a_dead_proposal() {
    shows_bug(
        "diff_without_trunc_keeps_a_dead_proposal",
        ZabBug::DiffWithoutTrunc,
        &["replica prefix agreement"],
        4,
        Script::new,
        |sim: Sim, ensemble| async move {
            sim.sleep(Duration::from_secs(1)).await;
            let timeout = Duration::from_secs(2);
            let first = client(&sim, &ensemble, C1, 0, vec![S3], timeout).await;
            let zk = first.clone();
            on(&sim, C1, async move {
                zk.create("/x", "0", CreateMode::Persistent).await.unwrap();
                zk.set_data("/x", "1", None).await.unwrap();
            })
            .await;
            let nemesis = sim.nemesis();
            nemesis.pause(S1);
            nemesis.pause(S2);
            // The leader logs this, but its followers never see it.
            let zk = first.clone();
            let _doomed = sim.spawn(C1, async move { zk.set_data("/x", "ghost", None).await });
            sim.sleep(Duration::from_millis(50)).await;
            nemesis.crash(S3);
            sim.sleep(Duration::from_millis(50)).await;
            nemesis.resume(S1);
            nemesis.resume(S2);
            let second = client(&sim, &ensemble, C2, 1, vec![S1, S2], timeout).await;
            set_until_ok(&sim, &second, C2, "/x", "after-1").await;
            set_until_ok(&sim, &second, C2, "/x", "after-2").await;
            sim.sleep(Duration::from_millis(500)).await;
            nemesis.restart(S3);
            sim.sleep(Duration::from_secs(2)).await;
            set_until_ok(&sim, &second, C2, "/x", "after-3").await;
            sim.sleep(Duration::from_secs(1)).await;
        },
    );
}

/// ZOOKEEPER-2355: a follower is cut off while a session with an ephemeral node expires;
/// when it rejoins, the session close arrives in a DIFF that the buggy follower marks as
/// processed without applying: the dead session's ephemeral node stays on it forever. (In
/// the table: `zab_leader_killer_diffs`.)
#[test]
fn last_processed_zxid_on_diff_leaves_a_dead_ephemeral() {
    shows_bug(
        "last_processed_zxid_on_diff_leaves_a_dead_ephemeral",
        ZabBug::LastProcessedZxidOnDiff,
        &["ephemeral exists iff session alive"],
        4,
        Script::new,
        |sim: Sim, ensemble| async move {
            sim.sleep(Duration::from_secs(1)).await;
            let owner = client(&sim, &ensemble, C1, 0, vec![S2, S3], Duration::from_secs(1)).await;
            let zk = owner.clone();
            on(&sim, C1, async move {
                zk.create("/e", "mine", CreateMode::Ephemeral)
                    .await
                    .unwrap();
                zk.create("/data", "0", CreateMode::Persistent)
                    .await
                    .unwrap();
            })
            .await;
            sim.sleep(Duration::from_millis(300)).await;
            let nemesis = sim.nemesis();
            nemesis.partition(PartitionShape::Groups {
                groups: vec![vec![S1], vec![S2, S3, C1, C2, C3]],
            });
            // The owner stops pinging: the leader expires its session.
            nemesis.pause(C1);
            let writer = client(&sim, &ensemble, C2, 1, vec![S2, S3], Duration::from_secs(2)).await;
            set_until_ok(&sim, &writer, C2, "/data", "1").await;
            sim.sleep(Duration::from_millis(2_500)).await;
            set_until_ok(&sim, &writer, C2, "/data", "2").await;
            nemesis.heal();
            sim.sleep(Duration::from_secs(1)).await;
            // A client of the rejoined follower syncs and looks.
            let reader = client(&sim, &ensemble, C3, 2, vec![S1], Duration::from_secs(2)).await;
            let zk = reader.clone();
            let seen = on(&sim, C3, async move {
                zk.sync("/").await?;
                zk.exists("/e").await
            })
            .await;
            println!("after the expiry, s1 shows /e: {seen:?}");
            nemesis.resume(C1);
            sim.sleep(Duration::from_secs(1)).await;
        },
    );
}

/// ZOOKEEPER-3911: a follower joins while a write is in flight and the other follower is
/// stalled; it ACKs NEWLEADER before the synced history (which holds the write) is durable,
/// so the write commits and is acknowledged; the leader and the joiner then crash, and the
/// survivors elect a leader without the write. (In the table: `zab_rejoin_crash`.)
#[test]
fn ack_newleader_before_persist_loses_an_acknowledged_write() {
    shows_bug(
        "ack_newleader_before_persist_loses_an_acknowledged_write",
        ZabBug::AckNewLeaderBeforePersist,
        &["acknowledged write durability", "linearizability"],
        4,
        |bugs| Script {
            sync_limit_ticks: 20,
            disk_sync: Duration::from_millis(100)..=Duration::from_millis(400),
            ..Script::new(bugs)
        },
        |sim: Sim, ensemble| async move {
            let nemesis = sim.nemesis();
            nemesis.crash(S1);
            sim.sleep(Duration::from_secs(3)).await;
            let timeout = Duration::from_secs(4);
            let writer = client(&sim, &ensemble, C1, 0, vec![S3], timeout).await;
            let zk = writer.clone();
            on(&sim, C1, async move {
                zk.create("/x", "0", CreateMode::Persistent).await.unwrap();
                zk.set_data("/x", "1", None).await.unwrap();
            })
            .await;
            // s1 comes back and joins; once it has decided to follow, s2 stalls.
            nemesis.restart(S1);
            sim.sleep(Duration::from_millis(60)).await;
            nemesis.pause(S2);
            let zk = writer.clone();
            let written = on(&sim, C1, async move { zk.set_data("/x", "w", None).await }).await;
            println!("the write in flight during the join: {written:?}");
            // Right after the acknowledgement, the leader and the joiner crash.
            nemesis.crash(S3);
            nemesis.crash(S1);
            nemesis.resume(S2);
            sim.sleep(Duration::from_millis(100)).await;
            nemesis.restart(S1);
            let survivor = client(&sim, &ensemble, C2, 1, vec![S1, S2], timeout).await;
            set_until_ok(&sim, &survivor, C2, "/x", "after").await;
            sim.sleep(Duration::from_secs(1)).await;
        },
    );
}

/// ZOOKEEPER-1675: a partition leaves the old leader with one client; the majority elects a
/// new leader and acknowledges a write; the client's `sync` is answered by the deposed
/// leader (it has not yet noticed, and does not check), so the read after it is stale. (In
/// the table: `zab_cut_off_leader_reader`.)
#[test]
fn sync_not_quorum_lets_sync_then_read_miss_a_write() {
    shows_bug(
        "sync_not_quorum_lets_sync_then_read_miss_a_write",
        ZabBug::SyncNotQuorum,
        &[
            "sync then read sees prior acknowledged writes",
            "linearizability",
        ],
        4,
        |bugs| Script {
            sync_limit_ticks: 10,
            ..Script::new(bugs)
        },
        |sim: Sim, ensemble| async move {
            sim.sleep(Duration::from_secs(1)).await;
            let timeout = Duration::from_secs(4);
            let old_side = client(&sim, &ensemble, C1, 0, vec![S3], timeout).await;
            let zk = old_side.clone();
            on(&sim, C1, async move {
                zk.create("/x", "old", CreateMode::Persistent)
                    .await
                    .unwrap();
            })
            .await;
            let new_side = client(&sim, &ensemble, C2, 1, vec![S1, S2], timeout).await;
            sim.nemesis().partition(PartitionShape::Groups {
                groups: vec![vec![S3, C1], vec![S1, S2, C2, C3]],
            });
            set_until_ok(&sim, &new_side, C2, "/x", "new").await;
            let zk = old_side.clone();
            let read = on(&sim, C1, async move {
                zk.sync("/").await?;
                zk.get_data("/x").await
            })
            .await;
            println!("sync then read on the old leader's side: {read:?}");
            sim.nemesis().heal();
            sim.sleep(Duration::from_secs(2)).await;
        },
    );
}
