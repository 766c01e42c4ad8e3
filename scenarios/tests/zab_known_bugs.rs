//! Exact traces of the ZAB known bugs (`scenarios/known-bugs.md`), as the catalogue's
//! scripted plans `zab_trace_*` (a fault plan and a `zk_script`, both at set simulated
//! times), run through the one driver. For each trace, over its seeds: the correct model
//! runs it clean (the driver also requires progress) with every fault kind of the plan
//! fired; the interleaving the bug needs happened, read from the history; and with the bug
//! switched on, the check that must catch it fires, by name.
//!
//! The zoo's test is the known-bug table (`known_bugs.rs`), which finds the same bugs by
//! seeds in generated plans; these traces are the shortest readable account of each.

use checks::history::{
    faults::{FiredFault, fired_faults},
    leaders::leaderships,
    sessions::{attachments, committed_expiries},
    zk::{ZkOp, zk_operations},
};
use scenarios::{KnownBug, Outcome, catalogue, sweep::Sweep};
use sim::{
    NodeId,
    fault::{Fault, PartitionShape, Target},
    history::{
        Event, History, ProtocolEvent,
        zk::{ZkOperation, ZkResponse},
    },
    time::SimTime,
};

mod common;

use common::assert_rate;

const TARGET: &str = "zab_known_bugs";
const S1: NodeId = NodeId::server(0);
const S3: NodeId = NodeId::server(2);
const C1: NodeId = NodeId::client(0);
const C2: NodeId = NodeId::client(1);
const C3: NodeId = NodeId::client(2);

/// Whether a run followed its trace: `Err` says where it left it.
type Interleaving = fn(&History) -> Result<(), String>;

/// Whether a bug-on run shows what the bug does, beyond the check's verdict.
type Effect = fn(&History) -> bool;

/// What a trace's two sweeps (correct model, bug on) found.
struct TraceRuns {
    seeds: usize,
    /// Runs, of both sweeps, whose history followed the trace.
    interleaved: usize,
    /// Bug-on runs in which the named check fired.
    caught: usize,
    /// Of those, the runs that show the bug's effect.
    caught_with_effect: usize,
    /// Bug-on runs in which each of the other checks asked about fired.
    also_caught: Vec<usize>,
    /// Bug-on runs that followed the trace and were not caught.
    missed: Vec<u64>,
}

/// Sweeps the trace `scenario` with the correct model (which must run clean and fire every
/// fault kind of its plan) and with `bug` on; counts the runs that followed the trace
/// (`interleaving`), the bug-on runs in which `check` fired, of those the ones that show
/// `effect`, and the bug-on runs in which each of the checks `also` fired.
fn run_trace(
    test: &str,
    scenario: &str,
    (bug, check, also): (&str, &str, &[&str]),
    seeds: u64,
    interleaving: Interleaving,
    effect: Option<Effect>,
) -> TraceRuns {
    let scenario = catalogue::get(scenario).expect("a catalogue trace");
    let bug: KnownBug = bug.parse().expect("a known bug");
    let mut interleaved = 0;
    let mut follows = |outcome: &Outcome| match interleaving(history(outcome)) {
        Ok(()) => {
            interleaved += 1;
            true
        }
        Err(left) => {
            println!("seed {} left the trace: {left}", outcome.seed);
            false
        }
    };
    let correct =
        Sweep::new(scenario.clone(), "scenarios", TARGET, test, seeds).run_inspecting(|outcome| {
            follows(outcome);
        });
    correct.assert_clean();
    correct.assert_faults_fired();
    let (mut caught, mut caught_with_effect, mut missed) = (0, 0, Vec::new());
    let mut also_caught = vec![0; also.len()];
    let buggy = Sweep::new(scenario.with_bugs([bug]), "scenarios", TARGET, test, seeds)
        .run_inspecting(|outcome| {
            let followed = follows(outcome);
            for (count, other) in also_caught.iter_mut().zip(also) {
                *count += usize::from(outcome.violations.iter().any(|v| v.check == *other));
            }
            if let Some(first) = outcome.violations.iter().find(|v| v.check == check) {
                caught += 1;
                caught_with_effect +=
                    usize::from(effect.is_some_and(|effect| effect(history(outcome))));
                if caught == 1 {
                    println!(
                        "{bug} caught by `{check}` at seed {}:\n  {}",
                        outcome.seed, first.evidence
                    );
                }
            } else if followed {
                missed.push(outcome.seed.value());
            }
        });
    let runs = TraceRuns {
        seeds: buggy.seeds.len(),
        interleaved,
        caught,
        caught_with_effect,
        also_caught,
        missed,
    };
    println!(
        "{bug}: the trace followed in {} of {} runs; `{check}` fired in {} of {} bug-on runs",
        runs.interleaved,
        2 * runs.seeds,
        runs.caught,
        runs.seeds
    );
    for (other, count) in also.iter().zip(&runs.also_caught) {
        println!("  `{other}` fired in {count} of {} bug-on runs", runs.seeds);
    }
    runs
}

fn history(outcome: &Outcome) -> &History {
    outcome
        .history
        .as_ref()
        .expect("an inspected run's history")
}

/// The trace is exact: every run follows it, and every bug-on run is caught.
fn assert_exact(runs: &TraceRuns) {
    assert_eq!(runs.interleaved, 2 * runs.seeds, "some runs left the trace");
    assert_eq!(runs.caught, runs.seeds, "missed on seeds {:?}", runs.missed);
}

/// The faults of the plan that fired, in order, for the interleaving checks.
fn fired<'a>(history: &'a History, what: impl Fn(&Fault) -> bool) -> Vec<FiredFault<'a>> {
    fired_faults(history)
        .into_iter()
        .filter(|fault| what(fault.fault))
        .collect()
}

/// The one fault matching `what` that fired.
fn fired_once<'a>(
    history: &'a History,
    name: &str,
    what: impl Fn(&Fault) -> bool,
) -> Result<FiredFault<'a>, String> {
    match fired(history, what).as_slice() {
        [only] => Ok(only.clone()),
        other => Err(format!("{name} fired {} times", other.len())),
    }
}

/// `client`'s operation on `path` writing or creating `data`.
fn write_of<'a>(ops: &'a [ZkOp<'a>], client: NodeId, data: &str) -> Result<&'a ZkOp<'a>, String> {
    ops.iter()
        .filter(|op| op.client == client)
        .find(|op| match op.operation {
            ZkOperation::SetData { data: written, .. }
            | ZkOperation::Create { data: written, .. } => written == data,
            _ => false,
        })
        .ok_or_else(|| format!("{client} never wrote {data:?}"))
}

/// When `client`'s write of `data` was acknowledged (its last attempt's).
fn acknowledged(ops: &[ZkOp<'_>], client: NodeId, data: &str) -> Result<SimTime, String> {
    ops.iter()
        .filter(|op| op.client == client)
        .filter(|op| matches!(op.operation, ZkOperation::SetData { data: d, .. } | ZkOperation::Create { data: d, .. } if d == data))
        .find_map(ZkOp::ok_at)
        .ok_or_else(|| format!("{client}'s write of {data:?} was never acknowledged"))
}

/// Whether `node` led at `at`, by its own account.
fn leading(history: &History, node: NodeId, at: SimTime) -> bool {
    leaderships(history)
        .iter()
        .any(|leadership| leadership.node == node && leadership.covers(at))
}

/// ZOOKEEPER-335: the first leader crashes with every server before anything commits;
/// while it is down, another server becomes leader.
fn quorum_elects_without_the_first_leader(history: &History) -> Result<(), String> {
    let crash = fired_once(history, "the leader's crash", |fault| {
        *fault
            == Fault::Crash {
                node: Target::Leader,
            }
    })?;
    let first = crash
        .target
        .ok_or("the leader's crash resolved to no node")?;
    let crashes = fired(history, |fault| matches!(fault, Fault::Crash { .. }));
    if crashes.len() != 3
        || crashes
            .iter()
            .any(|other| other.at.as_millis() != crash.at.as_millis())
    {
        return Err(format!(
            "not every server crashed with {first}: {crashes:?}"
        ));
    }
    if let Some(entry) = checks::history::applied_runs::applied_runs(history)
        .iter()
        .flat_map(|run| &run.entries)
        .find(|entry| entry.at < crash.at)
    {
        return Err(format!("something committed before the crash: {entry:?}"));
    }
    let back = checks::history::healed_at(history).ok_or("never healed")?;
    leaderships(history)
        .iter()
        .find(|l| l.node != first && crash.at < l.from && l.from < back)
        .map(drop)
        .ok_or_else(|| format!("no leader was elected while {first} was down"))
}

#[test]
fn epoch_not_persisted_gives_one_epoch_two_leaders() {
    let runs = run_trace(
        "epoch_not_persisted_gives_one_epoch_two_leaders",
        "zab_trace_epoch_not_persisted",
        ("zab.epoch_not_persisted", "protocol.leader_uniqueness", &[]),
        50,
        quorum_elects_without_the_first_leader,
        None,
    );
    assert_exact(&runs);
}

/// ZOOKEEPER-1154: s3, leading, is stranded with c1; c1's ghost write goes out while it is
/// and is never acknowledged; s3 crashes after it; c2's writes commit through another
/// leader before s3 restarts.
fn ghost_write_then_new_epoch(history: &History) -> Result<(), String> {
    let strand = fired_once(history, "the strand", |fault| {
        matches!(
            fault,
            Fault::Partition {
                shape: PartitionShape::Strand { .. }
            }
        )
    })?;
    if strand.target != Some(S3) || !leading(history, S3, strand.at) {
        return Err(format!(
            "the strand cut off {:?}, not the leader s3",
            strand.target
        ));
    }
    let crash = fired_once(history, "the crash", |fault| {
        matches!(fault, Fault::Crash { .. })
    })?;
    let restart = fired_once(history, "the restart", |fault| {
        matches!(fault, Fault::Restart { .. })
    })?;
    let ops = zk_operations(history);
    let ghost = write_of(&ops, C1, "ghost")?;
    if !(strand.at <= ghost.invoked_at && ghost.invoked_at < crash.at) || ghost.ok().is_some() {
        return Err(format!(
            "the ghost write was not sent while s3 was stranded, unanswered: {ghost:?}"
        ));
    }
    for data in ["after-1", "after-2"] {
        if acknowledged(&ops, C2, data)? > restart.at {
            return Err(format!("{data} was acknowledged after s3 restarted"));
        }
    }
    Ok(())
}

#[test]
fn diff_without_trunc_keeps_a_dead_proposal() {
    let runs = run_trace(
        "diff_without_trunc_keeps_a_dead_proposal",
        "zab_trace_diff_without_trunc",
        ("zab.diff_without_trunc", "protocol.replica_prefix", &[]),
        50,
        ghost_write_then_new_epoch,
        None,
    );
    assert_exact(&runs);
}

/// ZOOKEEPER-2355: the leader expires c1's session (owner of `/e`) while the follower s1 is
/// cut off; after s1 is back, c3 syncs and looks for `/e` through s1.
fn session_expires_while_a_follower_is_away(history: &History) -> Result<(), String> {
    let isolation = fired_once(history, "s1's isolation", |fault| {
        matches!(fault, Fault::Partition { .. })
    })?;
    if isolation.target != Some(S1) || leading(history, S1, isolation.at) {
        return Err("the isolated server was not the follower s1".into());
    }
    let back = fired_once(history, "the heal", |fault| *fault == Fault::Heal)?.at;
    let owner = attachments(history)
        .into_iter()
        .find(|attachment| attachment.client == C1)
        .ok_or("c1 never had a session")?
        .session;
    let expired = committed_expiries(history);
    if !expired
        .iter()
        .any(|&(at, session)| session == owner && isolation.at < at && at < back)
    {
        return Err(format!(
            "c1's session did not expire while s1 was away: {expired:?}"
        ));
    }
    let ops = zk_operations(history);
    let on_s1 = attachments(history)
        .iter()
        .any(|attachment| attachment.client == C3 && attachment.server == S1);
    let looked = ops.iter().any(|op| {
        op.client == C3
            && op.invoked_at > back
            && matches!(op.operation, ZkOperation::Exists { path } if path == "/e")
            && op.ok().is_some()
    });
    if !(on_s1 && looked) {
        return Err("c3 did not look for /e through s1 after the heal".into());
    }
    Ok(())
}

/// c3, through s1 after a sync, found the expired session's `/e`.
fn dead_ephemeral_seen_through_s1(history: &History) -> bool {
    zk_operations(history).iter().any(|op| {
        op.client == C3
            && matches!(op.operation, ZkOperation::Exists { path } if path == "/e")
            && matches!(op.ok(), Some(ZkResponse::Exists { stat: Some(_) }))
    })
}

#[test]
fn last_processed_zxid_on_diff_leaves_a_dead_ephemeral() {
    let runs = run_trace(
        "last_processed_zxid_on_diff_leaves_a_dead_ephemeral",
        "zab_trace_last_processed_zxid_on_diff",
        (
            "zab.last_processed_zxid_on_diff",
            "zk.ephemeral_lifetime",
            &[],
        ),
        50,
        session_expires_while_a_follower_is_away,
        Some(dead_ephemeral_seen_through_s1),
    );
    assert_exact(&runs);
    assert_eq!(
        runs.caught_with_effect, runs.caught,
        "a catch without the dead node seen"
    );
}

/// ZOOKEEPER-3911: c1 sends its write `w` as s2 stalls (after s1's restart), and while it
/// is in flight or after it, the leader s3 and the rejoining s1 crash together. Whether `w`
/// is acknowledged first depends on the model and the disks: see [`acknowledged_then_lost`].
fn write_in_flight_as_the_rejoiner_syncs(history: &History) -> Result<(), String> {
    let stall = fired_once(history, "s2's stall", |fault| {
        matches!(fault, Fault::Pause { .. })
    })?;
    let rejoin = fired(history, |fault| {
        *fault == Fault::Restart { node: S1.into() }
    })
    .first()
    .map(|restart| restart.at)
    .ok_or("s1 never restarted")?;
    let leader_crash = fired_once(history, "the leader's crash", |fault| {
        *fault
            == Fault::Crash {
                node: Target::Leader,
            }
    })?;
    if leader_crash.target != Some(S3) {
        return Err(format!("the leader was {:?}, not s3", leader_crash.target));
    }
    // Faults and steps of one plan millisecond may be some nanoseconds apart (the
    // simulator charges each poll a little time): compare them by the millisecond.
    let ms = SimTime::as_millis;
    let rejoiner_crashed = fired(history, |fault| *fault == Fault::Crash { node: S1.into() })
        .iter()
        .any(|crash| ms(crash.at) == ms(leader_crash.at));
    let ops = zk_operations(history);
    let sent = write_of(&ops, C1, "w")?.invoked_at;
    if !(rejoiner_crashed
        && rejoin <= stall.at
        && ms(stall.at) <= ms(sent)
        && sent < leader_crash.at)
    {
        return Err(format!(
            "s1 back at {rejoin}, s2 stalled at {}, w sent at {sent}, s3 and s1 crashed at {}",
            stall.at, leader_crash.at
        ));
    }
    Ok(())
}

/// Whether `w` was acknowledged (by s3 and s1, s2 being stalled) before they crashed: with
/// the bug, s1 acknowledged the synced history holding `w` before making it durable.
fn acknowledged_then_lost(history: &History) -> bool {
    let ops = zk_operations(history);
    let crash = fired(history, |fault| {
        *fault
            == Fault::Crash {
                node: Target::Leader,
            }
    });
    match (acknowledged(&ops, C1, "w"), crash.first()) {
        (Ok(acked), Some(crash)) => acked < crash.at,
        _ => false,
    }
}

/// The crash falls 0.4 s after the write: inside the gap between s1's early NEWLEADER ack
/// and the sync of the synced history to its disk only when the seed's disk syncs are slow
/// on s1 and quick on s3: over 2,000 seeds (1,000 from 0 and 1,000 from 9100000) the check
/// fired on 1,398 (69.9%; 704 and 694), every catch with `w` acknowledged before the crash.
/// The trace itself was followed in 3,984 of the 4,000 runs (99.6%): on seed 23, say, the
/// slow disks cost s3 its two-server quorum before s1 came back, and no one led when the
/// crash came. The test asserts rates of 65% and 98%, as far as the seeds it runs can show
/// them ([`common::fewest`]: on the 50 default seeds, 16 catches and 89 of 100 runs).
#[test]
fn ack_newleader_before_persist_loses_an_acknowledged_write() {
    let runs = run_trace(
        "ack_newleader_before_persist_loses_an_acknowledged_write",
        "zab_trace_ack_newleader_before_persist",
        (
            "zab.ack_newleader_before_persist",
            "zk.write_durability",
            &["zk.linearizable"],
        ),
        50,
        write_in_flight_as_the_rejoiner_syncs,
        Some(acknowledged_then_lost),
    );
    assert_rate(
        "the trace followed",
        runs.interleaved,
        2 * runs.seeds,
        0.98,
        "3,984 of 4,000",
    );
    assert_rate("caught", runs.caught, runs.seeds, 0.65, "1,398 of 2,000");
    assert_eq!(
        runs.caught_with_effect, runs.caught,
        "a catch without w acknowledged first"
    );
    // The lost write also makes the history non-linearizable (on most catches).
    assert!(runs.also_caught[0] > 0, "linearizability never fired");
}

/// ZOOKEEPER-1675: s3, leading, is stranded with c1; c2's write through the others is
/// acknowledged before c1 syncs, and c1 syncs through s3 while s3 still leads, cut off.
/// (The correct s3 answers the sync only once it can reach a quorum again; with the bug it
/// answers at once.)
fn new_epoch_write_before_a_stranded_sync(history: &History) -> Result<(), String> {
    let strand = fired_once(history, "the strand", |fault| {
        matches!(fault, Fault::Partition { .. })
    })?;
    if strand.target != Some(S3) || !leading(history, S3, strand.at) {
        return Err(format!(
            "the strand cut off {:?}, not the leader s3",
            strand.target
        ));
    }
    let ops = zk_operations(history);
    let written = acknowledged(&ops, C2, "new")?;
    let sync = ops
        .iter()
        .find(|op| op.client == C1 && matches!(op.operation, ZkOperation::Sync { .. }))
        .ok_or("c1 never synced")?;
    if !(written < sync.invoked_at && leading(history, S3, sync.invoked_at)) {
        return Err(format!(
            "c2's write acknowledged at {written}, c1's sync sent at {} (s3 leading: {})",
            sync.invoked_at,
            leading(history, S3, sync.invoked_at)
        ));
    }
    Ok(())
}

/// c1's read after its sync showed the value from before c2's acknowledged write.
fn synced_read_shows_the_old_value(history: &History) -> bool {
    zk_operations(history).iter().any(|op| {
        op.client == C1
            && matches!(op.operation, ZkOperation::GetData { path } if path == "/x")
            && matches!(op.ok(), Some(ZkResponse::Data { data, .. }) if data == "old")
    })
}

#[test]
fn sync_not_quorum_lets_sync_then_read_miss_a_write() {
    let runs = run_trace(
        "sync_not_quorum_lets_sync_then_read_miss_a_write",
        "zab_trace_sync_not_quorum",
        (
            "zab.sync_not_quorum",
            "zk.sync_then_read",
            &["zk.linearizable"],
        ),
        50,
        new_epoch_write_before_a_stranded_sync,
        Some(synced_read_shows_the_old_value),
    );
    assert_exact(&runs);
    assert_eq!(
        runs.caught_with_effect, runs.caught,
        "a catch without a stale read"
    );
    assert_eq!(
        runs.also_caught[0], runs.seeds,
        "a stale read after a sync is not linearizable"
    );
}

/// ZOOKEEPER-1282 on the same trace as ZOOKEEPER-3911: s1 rejoins and ACKs NEWLEADER (and
/// then `w`) after making the synced history durable, as it should, but with its current
/// epoch still 0 on disk, since it takes the new one only on UPTODATE. Crashing before that
/// epoch is durable, it restarts with epoch 0 and `w`; s2, of epoch 1 without `w`, wins the
/// election and truncates it. Whether the crash falls inside that window depends on the
/// seed's disk syncs: over 2,000 seeds (1,000 from 0 and 1,000 from 9100000),
/// `zk.write_durability` fired on 440 (22%; 225 and 215) and the replicas' sequences
/// diverged on 473 (240 and 233). The test asserts a rate of 18%, as far as the seeds it
/// runs can show it ([`common::fewest`]): on the 100 default seeds (200 runs, about a second), at
/// least 3 catches; on one pinned seed, none is promised. (Over the first 20 seeds it was
/// 7, and the test once asserted a quarter of any sweep: 19 of 100 from 7300000 failed it.)
#[test]
fn setcurrentepoch_on_uptodate_loses_an_acknowledged_write() {
    let runs = run_trace(
        "setcurrentepoch_on_uptodate_loses_an_acknowledged_write",
        "zab_trace_ack_newleader_before_persist",
        (
            "zab.setcurrentepoch_on_uptodate",
            "zk.write_durability",
            &["protocol.replica_prefix"],
        ),
        100,
        write_in_flight_as_the_rejoiner_syncs,
        Some(acknowledged_then_lost),
    );
    assert_rate("caught", runs.caught, runs.seeds, 0.18, "440 of 2,000");
    assert_eq!(
        runs.caught_with_effect, runs.caught,
        "a catch without w acknowledged first"
    );
    assert!(
        runs.also_caught[0] >= runs.caught,
        "a lost write without diverging replicas"
    );
}

/// When every server is back in `zab_trace_fle_nontransitive_order`, in milliseconds.
const ALL_RESTART_AT_MS: u64 = 2_700;

/// ZOOKEEPER-1419: after the restart s1 and s2 hold epoch 2 and s3 epoch 1, all with empty
/// logs. The correct election elects a leader and the client writes; with the bug the
/// votes keep changing hands (millions of notifications), no leader is elected after the
/// restart, and the run fails the liveness bound — with no safety violation: what catches
/// this bug is the liveness verdict, not a check.
///
/// Not on every seed: when the message order lets two servers agree before the third's
/// votes reach them, the buggy order elects a leader all the same (seed 7300002 runs clean
/// with the bug on). Over 1,000 seeds from 0, no leader was elected in the first 0.3 s after
/// the restart on 978 (97.8%; the correct model elects one within 0.1 s); the test
/// asserts a rate of 95% as far as the seeds it runs can show it ([`common::fewest`]: 4 of the 10
/// default seeds), and on every seed no safety violation.
///
/// A stalled run costs seconds per second of simulated time (every vote change is
/// broadcast), so the trace's recovery and liveness bound are short (1 s and 0.5 s): time
/// enough for the correct model, which elects a leader and writes by then on every seed
/// (the test asserts so).
#[test]
fn fle_nontransitive_order_elects_no_leader() {
    let scenario = catalogue::get("zab_trace_fle_nontransitive_order").expect("a trace");
    let test = "fle_nontransitive_order_elects_no_leader";
    let leaders_after_restart = |outcome: &Outcome| {
        leaderships(history(outcome))
            .iter()
            .filter(|l| l.from.as_millis() >= ALL_RESTART_AT_MS)
            .count()
    };
    let mut elected = Vec::new();
    let correct = Sweep::new(scenario.clone(), "scenarios", TARGET, test, 20)
        .run_inspecting(|outcome| elected.push(leaders_after_restart(outcome)));
    correct.assert_clean();
    correct.assert_faults_fired();
    assert!(
        elected.iter().all(|&count| count >= 1),
        "the correct model elected no leader after the restart: {elected:?}"
    );
    let bug: KnownBug = "zab.fle_nontransitive_order".parse().expect("a known bug");
    let mut runs = Vec::new();
    let buggy = Sweep::new(scenario.with_bugs([bug]), "scenarios", TARGET, test, 10)
        .run_inspecting(|outcome| {
            assert!(
                outcome.violations.is_empty(),
                "a safety violation: {:?}",
                outcome.violations
            );
            let stalled = matches!(outcome.failure, Some(scenarios::Failure::Liveness { .. }))
                && leaders_after_restart(outcome) == 0;
            runs.push((outcome.seed.value(), stalled, outcome.failure.clone()));
        });
    println!("{bug}: (seed, stalled, failure): {runs:?}");
    let stalled = runs.iter().filter(|(_, stalled, _)| *stalled).count();
    println!(
        "{bug}: no leader after the restart on {stalled} of {} seeds",
        runs.len()
    );
    assert_rate(
        "no leader after the restart",
        stalled,
        buggy.seeds.len(),
        0.95,
        "978 of 1,000",
    );
}

/// When every server crashes and restarts in `zab_trace_snap_zxid_below_log_tail`, and
/// when s2 and s3 do, in milliseconds.
const FIRST_CHANGE_AT_MS: u64 = 3_500;
const SECOND_CHANGE_AT_MS: u64 = 5_500;

/// ZOOKEEPER-2832: s3 led, was stranded with c1 (whose ghost write went out then and was
/// never answered) and crashed; s2 led after the first change (and synced s3 by SNAP) and
/// s3 after the second.
fn ghost_then_two_leader_changes(history: &History) -> Result<(), String> {
    ghost_write_before_the_crash(history)?;
    let led = leaderships(history);
    let ms = |at: SimTime| at.as_millis();
    let s2_between = led.iter().any(|l| {
        l.node == NodeId::server(1)
            && FIRST_CHANGE_AT_MS < ms(l.from)
            && ms(l.from) < SECOND_CHANGE_AT_MS
    });
    let s3_after = led
        .iter()
        .any(|l| l.node == S3 && SECOND_CHANGE_AT_MS < ms(l.from));
    if !(s2_between && s3_after) {
        return Err(format!("the leaders were not s2 then s3: {led:?}"));
    }
    // The SNAP must come while s2 syncs its quorum, from its restored state (epoch 1 or
    // less, below the ghost); one sent once s2 is established is at a zxid of epoch 2,
    // above the ghost, which a restart then skips, bug or no bug. A snapshot s3 loads as
    // it restarts is recorded the same way, as its first protocol record: no SNAP.
    let mut snaps: Vec<(u64, u64)> = Vec::new();
    let mut just_restarted = false;
    for record in history.records() {
        match &record.event {
            Event::Fault(fault)
                if matches!(fault.fault, Fault::Restart { .. }) && fault.target == Some(S3) =>
            {
                just_restarted = true;
            }
            Event::Protocol(event) if record.node == Some(S3) => {
                if let ProtocolEvent::SnapshotInstalled { index, term } = event
                    && !just_restarted
                {
                    snaps.push((*index, *term));
                }
                just_restarted = false;
            }
            _ => {}
        }
    }
    if !snaps.iter().any(|&(_, term)| term <= 1) {
        return Err(format!(
            "s3 got no SNAP below the ghost (index, epoch): {snaps:?}"
        ));
    }
    Ok(())
}

/// The stranded leader s3 sent c1's ghost write out, unanswered, before its crash.
fn ghost_write_before_the_crash(history: &History) -> Result<(), String> {
    let strand = fired_once(history, "the strand", |fault| {
        matches!(fault, Fault::Partition { .. })
    })?;
    if strand.target != Some(S3) || !leading(history, S3, strand.at) {
        return Err(format!(
            "the strand cut off {:?}, not the leader s3",
            strand.target
        ));
    }
    let ops = zk_operations(history);
    let ghost = write_of(&ops, C1, "ghost")?;
    if ghost.invoked_at < strand.at || ghost.ok().is_some() {
        return Err(format!("the ghost write was not stranded: {ghost:?}"));
    }
    Ok(())
}

/// Over the first 20 seeds the bug-on runs were caught on 18; on seeds 3 and 12 s3 was
/// synced only once s2 was established, by a SNAP at a zxid of epoch 2, above the ghost,
/// and the trace was not followed. Over 2,000 seeds (1,000 from 0 and 1,000 from 9100000)
/// the trace was followed in 3,704 of 4,000 runs (92.6%) and every bug-on run that followed
/// it was caught (1,852 of 2,000). The test asserts that every bug-on run that followed the
/// trace is caught, and a rate of 88% for following it, as far as the seeds it runs can
/// show it ([`common::fewest`]: 23 of the 40 default runs).
#[test]
fn snap_zxid_below_log_tail_brings_a_dead_write_back() {
    let runs = run_trace(
        "snap_zxid_below_log_tail_brings_a_dead_write_back",
        "zab_trace_snap_zxid_below_log_tail",
        (
            "zab.snap_zxid_below_log_tail",
            "protocol.replica_prefix",
            &[],
        ),
        20,
        ghost_then_two_leader_changes,
        None,
    );
    assert!(
        runs.missed.is_empty(),
        "followed the trace but not caught: seeds {:?}",
        runs.missed
    );
    assert_rate(
        "the trace followed",
        runs.interleaved,
        2 * runs.seeds,
        0.88,
        "3,704 of 4,000",
    );
}

#[test]
fn fewest_is_the_binomial_lower_bound() {
    common::check_fewest();
}
