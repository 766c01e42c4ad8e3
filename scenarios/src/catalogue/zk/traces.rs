//! Exact traces of the ZAB known bugs (`scenarios/known-bugs.md`) and of the session
//! guarantee `zab.reconnect_ignores_last_zxid` breaks, as scripted plans: the faults are a
//! plan, the clients a `zk_script`, both at set simulated times, so each trace prints, saves
//! and replays like any scenario. Each is the correct model's run; a test switches the bug
//! on and names the check that must catch it. The known-bug table finds the same bugs by
//! seeds in generated plans; these are the shortest readable account of each.
//!
//! A fresh ensemble elects its highest server, s3 (votes tie on epoch and zxid); the
//! scripts pin clients to servers by that, and the tests check that it held.

use crate::catalogue::{
    scenario,
    zk::steps::{connect, create, get, set, sync},
};
use crate::{
    scenario::Scenario,
    store::Store,
    workload::{Wait, Workload, ZkScript, ZkStep, ZkStepOp},
};
use sim::{
    NodeId,
    fault::{Fault, FaultPlan, FaultSource, PartitionShape, ScheduledFault, Target},
    history::zk::CreateMode,
};

const S1: NodeId = NodeId::server(0);
const S2: NodeId = NodeId::server(1);
const S3: NodeId = NodeId::server(2);
const C1: NodeId = NodeId::client(0);
const C2: NodeId = NodeId::client(1);
const C3: NodeId = NodeId::client(2);

/// The traces.
pub(in crate::catalogue) fn scenarios() -> Vec<Scenario> {
    vec![
        epoch_not_persisted(),
        diff_without_trunc(),
        last_processed_zxid_on_diff(),
        ack_newleader_before_persist(),
        sync_not_quorum(),
        reconnect_ignores_last_zxid(),
        fle_nontransitive_order(),
        snap_zxid_below_log_tail(),
    ]
}

/// A trace on three servers: `steps` and `faults`; the fault phase ends with the plan's
/// last fault, or at `heal_at_ms` if that is later (a node left down comes back then).
fn trace(
    name: &str,
    description: &str,
    clients: usize,
    steps: Vec<ZkStep>,
    faults: Vec<ScheduledFault>,
    heal_at_ms: u64,
) -> Scenario {
    let plan = FaultPlan::new(faults);
    Scenario {
        workload: Workload::ZkScript(ZkScript { steps }),
        fault_phase_ms: plan.end_ms().max(heal_at_ms),
        faults: FaultSource::Plan(plan),
        recovery_ms: 2_000,
        ..scenario(name, description, Store::Zab, 3, clients)
    }
}

fn crash(node: impl Into<Target>) -> Fault {
    Fault::Crash { node: node.into() }
}

fn pause(node: impl Into<Target>) -> Fault {
    Fault::Pause { node: node.into() }
}

fn partition(shape: PartitionShape) -> Fault {
    Fault::Partition { shape }
}

/// ZOOKEEPER-335: the leader establishes epoch 1 with nothing logged and crashes with the
/// others; the two followers come back without it, re-derive the epoch from their empty
/// logs, and hand epoch 1 to a second leader. The client connects only after that (a
/// session is a transaction: it would log something in epoch 1).
fn epoch_not_persisted() -> Scenario {
    trace(
        "zab_trace_epoch_not_persisted",
        "every server crashes 1 s in, before anything is logged; the two followers restart \
         0.2 s later without the leader (back at the heal) and elect a leader of their own",
        1,
        vec![
            connect(1_500, C1, &[], 2_000),
            create(1_500, C1, "/x", "after the restart", CreateMode::Persistent),
        ],
        vec![
            ScheduledFault::at(1_000, crash(Target::Leader)),
            ScheduledFault::at(1_000, crash(Target::Follower)).lasting(200),
            ScheduledFault::at(1_000, crash(Target::Follower)).lasting(200),
        ],
        3_000,
    )
}

/// ZOOKEEPER-1154: the leader, stranded with its one client, logs a write nobody else gets
/// and crashes; the others move on to epoch 2 and commit writes; when the old leader
/// rejoins, its last zxid lies inside the new leader's history, and a DIFF without TRUNC
/// lets it keep (and apply) the dead write.
fn diff_without_trunc() -> Scenario {
    trace(
        "zab_trace_diff_without_trunc",
        "the leader s3, stranded with its client c1, logs c1's write and crashes before \
         anyone else sees it; s1 and s2 commit two writes in epoch 2; s3 rejoins 1.5 s \
         later and is synced by DIFF; one more write",
        2,
        vec![
            connect(1_000, C1, &[S3], 2_000),
            create(1_000, C1, "/x", "0", CreateMode::Persistent),
            set(1_000, C1, "/x", "1").waiting(Wait::Answer),
            set(1_300, C1, "/x", "ghost").waiting(Wait::Nothing),
            connect(1_400, C2, &[S1, S2], 2_000),
            set(1_400, C2, "/x", "after-1").waiting(Wait::Answer),
            set(1_400, C2, "/x", "after-2").waiting(Wait::Answer),
            set(4_000, C2, "/x", "after-3").waiting(Wait::Answer),
        ],
        vec![
            ScheduledFault::at(
                1_290,
                partition(PartitionShape::Strand {
                    node: Target::Leader,
                    with: vec![C1],
                }),
            )
            .lasting(100)
            .named("stranded"),
            ScheduledFault::at(1_340, crash(Target::Label("stranded".into()))).lasting(1_500),
        ],
        0,
    )
}

/// ZOOKEEPER-2355: a follower is cut off while a session with an ephemeral node expires;
/// when it rejoins, the session's close reaches it in a DIFF that the buggy follower marks
/// processed without applying, and the dead session's node lives on there.
fn last_processed_zxid_on_diff() -> Scenario {
    trace(
        "zab_trace_last_processed_zxid_on_diff",
        "c1 holds an ephemeral node through s2 or s3; s1 is cut off and c1 paused, so c1's \
         1 s session expires while s1 is away; c2 writes; s1 rejoins and c3 reads through \
         s1 after a sync; c1 wakes last",
        3,
        vec![
            connect(1_000, C1, &[S2, S3], 1_000),
            create(1_000, C1, "/e", "mine", CreateMode::Ephemeral),
            create(1_000, C1, "/data", "0", CreateMode::Persistent),
            connect(1_300, C2, &[S2, S3], 2_000),
            set(1_300, C2, "/data", "1").waiting(Wait::Answer),
            set(3_800, C2, "/data", "2").waiting(Wait::Answer),
            connect(5_800, C3, &[S1], 2_000),
            sync(5_800, C3),
            ZkStep::at(5_800, C3, ZkStepOp::Exists { path: "/e".into() }),
            get(6_100, C1, "/data"),
        ],
        vec![
            ScheduledFault::at(
                1_300,
                partition(PartitionShape::IsolateNode { node: S1.into() }),
            )
            .lasting(3_500),
            ScheduledFault::at(1_300, pause(C1)).lasting(4_700),
        ],
        0,
    )
}

/// When s1, crashed from the start, restarts in `ack_newleader_before_persist`.
const REJOIN_AT_MS: u64 = 5_000;
/// How long after s1's restart the write, the stall of s2 (and the crashes) come.
const WRITE_AFTER_REJOIN_MS: u64 = 60;
/// When the leader and the rejoining follower crash, after the write.
const CRASH_AFTER_WRITE_MS: u64 = 400;

/// ZOOKEEPER-3911: a follower rejoins while a write is in flight and the other follower
/// is stalled; it ACKs NEWLEADER before the synced history (which holds the write) is
/// durable, so the write commits and is acknowledged; the leader and the rejoiner crash,
/// and the survivors elect a leader without the write. Slow disks (0.1 to 0.4 s a sync)
/// make the gap; whether the crash falls inside it depends on the seed's sync times.
fn ack_newleader_before_persist() -> Scenario {
    let write_at = REJOIN_AT_MS + WRITE_AFTER_REJOIN_MS;
    let crash_at = write_at + CRASH_AFTER_WRITE_MS;
    let mut rejoin = trace(
        "zab_trace_ack_newleader_before_persist",
        "s1 is down from the start; c1 writes through the leader s3; s1 restarts, s2 stalls \
         60 ms later as c1 writes again, and 0.4 s after that s3 and s1 crash (s2 wakes); \
         s1 comes back 0.1 s later and c2 writes through s1 or s2; slow disks",
        2,
        vec![
            connect(3_000, C1, &[S3], 4_000),
            create(3_000, C1, "/x", "0", CreateMode::Persistent),
            set(3_000, C1, "/x", "1").waiting(Wait::Answer),
            set(write_at, C1, "/x", "w"),
            connect(crash_at + 200, C2, &[S1, S2], 4_000),
            set(crash_at + 200, C2, "/x", "after").waiting(Wait::Answer),
        ],
        vec![
            ScheduledFault::at(0, crash(S1)).lasting(REJOIN_AT_MS),
            ScheduledFault::at(write_at, pause(S2)).lasting(CRASH_AFTER_WRITE_MS),
            ScheduledFault::at(crash_at, crash(Target::Leader)),
            ScheduledFault::at(crash_at, crash(S1)).lasting(100),
        ],
        // The leader stays down until the heal.
        crash_at + 1_000,
    );
    rejoin.tuning.sync_limit_ticks = Some(20);
    (
        rejoin.world.disk.sync_latency_min_us,
        rejoin.world.disk.sync_latency_max_us,
    ) = (100_000, 400_000);
    rejoin
}

/// ZOOKEEPER-1675: a partition leaves the old leader with one client; the others elect a
/// new leader and acknowledge a write; the client's `sync` is answered by the deposed
/// leader (it has not noticed yet, and does not ask a quorum), so the read after it is
/// stale.
fn sync_not_quorum() -> Scenario {
    let mut cut_off = trace(
        "zab_trace_sync_not_quorum",
        "the leader s3 stranded with its client c1 for 2.5 s (it leads on for 1 s); c2 \
         writes through s1 or s2; 0.6 s into the cut c1 syncs and reads through s3",
        2,
        vec![
            connect(1_000, C1, &[S3], 4_000),
            create(1_000, C1, "/x", "old", CreateMode::Persistent),
            connect(1_000, C2, &[S1, S2], 4_000),
            set(1_300, C2, "/x", "new").waiting(Wait::Answer),
            sync(1_900, C1),
            get(1_900, C1, "/x"),
        ],
        vec![
            ScheduledFault::at(
                1_300,
                partition(PartitionShape::Strand {
                    node: Target::Leader,
                    with: vec![C1],
                }),
            )
            .lasting(2_500),
        ],
        0,
    );
    cut_off.tuning.sync_limit_ticks = Some(10);
    cut_off
}

/// `zab.reconnect_ignores_last_zxid` against `zk.session_consistency`: the client writes in
/// epoch 2 after the old leader was cut off; the servers with the write crash, and the only
/// one the client can reach is the deposed leader, which leads epoch 1 for 3 s after losing
/// its followers (and serves its state). The correct server refuses the client, which has
/// seen a later zxid (`ZooKeeperServer.processConnectRequest`); the client waits for the
/// others and reads its write. With the bug the deposed leader takes the client back, and
/// its read goes back in time.
///
/// (A follower cut off from its leader is no such server: in this model, as in ZooKeeper,
/// it stops serving at once. And a follower connected to its leader cannot be behind a
/// session that reconnects to it: the leader's answer to the session's revalidation reaches
/// it after every commit the session could have seen.)
fn reconnect_ignores_last_zxid() -> Scenario {
    let mut deposed = trace(
        "zab_trace_reconnect_ignores_last_zxid",
        "c1 writes; the leader s3 is cut off and c1 writes again in epoch 2; at 3.5 s s1 \
         and s2 crash as the partition heals, leaving c1 only s3 (leading epoch 1 until \
         4.3 s); c1 reads; s1 and s2 are back 1 s later",
        1,
        vec![
            connect(1_000, C1, &[], 4_000),
            create(1_000, C1, "/x", "old", CreateMode::Persistent),
            set(1_300, C1, "/x", "new").waiting(Wait::Answer),
            get(3_550, C1, "/x").waiting(Wait::Answer),
        ],
        vec![
            ScheduledFault::at(
                1_300,
                partition(PartitionShape::IsolateNode {
                    node: Target::Leader,
                }),
            )
            // Time for c1 to find s1 or s2 and write (a connect to the cut-off s3 takes a
            // third of its session timeout to fail).
            .lasting(2_200),
            ScheduledFault::at(3_500, crash(S1)).lasting(1_000),
            ScheduledFault::at(3_500, crash(S2)).lasting(1_000),
        ],
        0,
    );
    deposed.tuning.sync_limit_ticks = Some(30);
    deposed
}

/// When the two servers of epoch 2 crash in `fle_nontransitive_order`.
const EPOCH_TWO_CRASH_AT_MS: u64 = 2_500;
/// When all three restart in `fle_nontransitive_order`.
const ALL_RESTART_AT_MS: u64 = 2_700;

/// ZOOKEEPER-1419: the first leader s3 crashes before anything is logged; s1 and s2
/// establish epoch 2, log nothing in it, and crash too; all three restart together, s1 and
/// s2 with current epoch 2, s3 with epoch 1, every log empty (equal zxids). The correct
/// order elects s2 (the newest epoch, then the higher id). With the bug s3's vote beats
/// both others' by the id tie-break and is beaten by them by epoch, so the votes keep
/// changing hands and, within the liveness bound, no leader is elected: the client's
/// session, opened only after the restart, never gets a server.
fn fle_nontransitive_order() -> Scenario {
    let mut mixed = trace(
        "zab_trace_fle_nontransitive_order",
        "the first leader s3 crashes 1 s in with nothing logged; s1 and s2 establish \
         epoch 2 and crash at 2.5 s with nothing logged in it; all three restart at 2.7 s \
         (epochs 2, 2 and 1, empty logs); c1 connects at 3.5 s and writes",
        1,
        vec![
            connect(3_500, C1, &[], 4_000),
            create(3_500, C1, "/x", "after the restart", CreateMode::Persistent),
        ],
        vec![
            ScheduledFault::at(1_000, crash(S3)).lasting(ALL_RESTART_AT_MS - 1_000),
            ScheduledFault::at(EPOCH_TWO_CRASH_AT_MS, crash(S1))
                .lasting(ALL_RESTART_AT_MS - EPOCH_TWO_CRASH_AT_MS),
            ScheduledFault::at(EPOCH_TWO_CRASH_AT_MS, crash(S2))
                .lasting(ALL_RESTART_AT_MS - EPOCH_TWO_CRASH_AT_MS),
        ],
        0,
    );
    // A stalled run broadcasts every vote change, at a cost of seconds per simulated second:
    // the bounds are short (the correct model elects a leader within 0.1 s of the restart
    // and answers the client's write, sent at 3.5 s, at once), so that a sweep of hundreds of bug-on seeds
    // takes minutes, not hours (0.5 s a run in a test build, 25 s with 2 s and 5 s).
    mixed.recovery_ms = 1_000;
    mixed.liveness_bound_ms = 500;
    mixed
}

/// When every server crashes (and 0.2 s later restarts) in `snap_zxid_below_log_tail`: s3,
/// down since its ghost write, comes back with the others.
const FIRST_CHANGE_AT_MS: u64 = 3_500;
/// When the leader of the third epoch and s3, synced by it, crash (0.3 s).
const SECOND_CHANGE_AT_MS: u64 = 5_500;

/// ZOOKEEPER-2832: the leader s3, stranded with its client, logs a write nobody else gets
/// and crashes; s1 and s2 commit writes in epoch 2. Every server restarts: s2 leads epoch
/// 3 from its disk, having applied nothing yet, and s3, whose history holds the dead write
/// and is too far behind for a DIFF (the DIFF window is one transaction), gets a SNAP at
/// zxid 0 with the whole history after it. Then s2 and s3 crash and restart; s3, the
/// highest server with the longest history, leads epoch 4. The correct s3 dropped its old
/// log with the SNAP; with the bug the dead write was still on its disk, back in its
/// history after the restart, and s3 commits it: replicas apply different sequences.
fn snap_zxid_below_log_tail() -> Scenario {
    let mut snapped = trace(
        "zab_trace_snap_zxid_below_log_tail",
        "the leader s3, stranded with c1, logs c1's write and crashes before anyone else sees \
         it; s1 and s2 commit two writes in epoch 2; at 3.5 s every server crashes and 0.2 s \
         later restarts (s2 leads, s3 is synced by SNAP); at 5.5 s s2 and s3 crash and 0.3 s \
         later restart (s3 leads); one more write; a DIFF window of one transaction",
        2,
        vec![
            connect(1_000, C1, &[S3], 2_000),
            create(1_000, C1, "/x", "0", CreateMode::Persistent),
            set(1_000, C1, "/x", "1").waiting(Wait::Answer),
            set(1_300, C1, "/x", "ghost").waiting(Wait::Nothing),
            connect(1_400, C2, &[S1, S2], 4_000),
            set(1_400, C2, "/x", "after-1").waiting(Wait::Answer),
            set(1_400, C2, "/x", "after-2").waiting(Wait::Answer),
            set(SECOND_CHANGE_AT_MS + 1_000, C2, "/x", "after-3").waiting(Wait::Answer),
        ],
        vec![
            ScheduledFault::at(
                1_290,
                partition(PartitionShape::Strand {
                    node: Target::Leader,
                    with: vec![C1],
                }),
            )
            .lasting(100),
            ScheduledFault::at(1_340, crash(S3)).lasting(FIRST_CHANGE_AT_MS + 200 - 1_340),
            ScheduledFault::at(FIRST_CHANGE_AT_MS, crash(S1)).lasting(200),
            ScheduledFault::at(FIRST_CHANGE_AT_MS, crash(S2)).lasting(200),
            ScheduledFault::at(SECOND_CHANGE_AT_MS, crash(S2)).lasting(300),
            ScheduledFault::at(SECOND_CHANGE_AT_MS, crash(S3)).lasting(300),
        ],
        0,
    );
    snapped.tuning.diff_window = Some(1);
    snapped
}
