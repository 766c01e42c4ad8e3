//! Where the ZAB core snapshots, as ZooKeeper does, and what a restart loads: traced in
//! tests/testdata/zab/snapshot_restart.txt (see its header for the story).
//!
//! - A leader snapshots its state once established (`Leader.lead` → `ZooKeeperServer.loadData`
//!   → `takeSnapshot`), leaving its log as it is.
//! - A follower snapshots after a SNAP (and a TRUNC) sync, not after a DIFF
//!   (`Learner.syncWithLeader`, `snapshotNeeded`).
//! - A restart loads the newest snapshot, records it as `SnapshotInstalled` (as a SNAP is
//!   recorded), and applies only the log after it (`FileTxnSnapLog.restore`).

mod script_runner;
mod zab_interaction;
mod zab_sequence;

use zab_interaction::{Transcript, run_script};

fn script() -> Transcript {
    run_script("tests/testdata/zab/snapshot_restart.txt")
}

/// The position of the last line equal to `line`, panicking if there is none.
fn last_line_index(transcript: &Transcript, line: &str) -> usize {
    transcript
        .lines()
        .enumerate()
        .filter(|(_, (_, text))| *text == line)
        .map(|(index, _)| index)
        .last()
        .unwrap_or_else(|| panic!("no line `{line}`"))
}

/// The block of the last line equal to `line`, panicking if there is none.
fn last_block_of(transcript: &Transcript, line: &str) -> usize {
    transcript
        .lines()
        .filter(|(_, text)| *text == line)
        .map(|(block, _)| block)
        .last()
        .unwrap_or_else(|| panic!("no line `{line}`"))
}

/// The transactions `node` applied after the block that printed `line` (its last one).
fn applied_after(transcript: &Transcript, node: &str, line: &str) -> Vec<u64> {
    let block = last_block_of(transcript, line);
    transcript
        .applied()
        .into_iter()
        .filter(|applied| applied.node == node && applied.block > block)
        .map(|applied| applied.txn)
        .collect()
}

/// s3 snapshots [10, 20] when it establishes epoch 2, without emptying its log; restarted,
/// it loads that snapshot, records it, and applies only 30 when it leads epoch 3.
#[test]
fn a_restarted_leader_applies_only_the_log_after_its_election_snapshot() {
    let transcript = script();
    assert_eq!(transcript.leaders_of_epoch(2), ["s3"]);
    assert_eq!(transcript.leaders_of_epoch(3), ["s3"]);
    // Written once the history it leads with is applied, before UPTODATE.
    let snapshot_written = last_line_index(
        &transcript,
        "s3 write: snapshot 0x100000002=[10, 20] (log left as it is)",
    );
    assert!(snapshot_written > last_line_index(&transcript, "s3 applied 0x100000002 txn=20"));
    assert!(
        snapshot_written < last_line_index(&transcript, "s3->s1 UPTODATE committed=0x100000002")
    );
    let disk = "s3 disk: accepted_epoch=2 current_epoch=2 snapshot=0x100000002=[10, 20] \
                log=[0x100000001:10, 0x100000002:20]";
    last_block_of(&transcript, disk);
    let restarted = "s3 restarted from disk: accepted_epoch=2 current_epoch=2 \
                     snapshot=0x100000002=[10, 20] \
                     log=[0x100000001:10, 0x100000002:20, 0x200000001:30]";
    assert_eq!(applied_after(&transcript, "s3", restarted), [30]);
    assert!(
        last_block_of(&transcript, "s3 installed a snapshot at 0x100000002")
            > last_block_of(&transcript, restarted)
    );
    assert!(transcript.last_status("s3").ends_with("state=[10, 20, 30]"));
}

/// s1, one entry behind the restarted leader, is synced by SNAP at 0x100000002; after its
/// own restart it loads that snapshot and applies only 30 again.
#[test]
fn a_follower_restarted_after_a_snap_applies_only_the_log_after_the_snapshot() {
    let transcript = script();
    assert_eq!(
        transcript.sent("s3", "s1", "SNAP"),
        ["zxid=0x100000002 state=[10, 20] entries=[0x200000001:30]"]
    );
    let restarted = "s1 restarted from disk: accepted_epoch=3 current_epoch=3 \
                     snapshot=0x100000002=[10, 20] log=[0x200000001:30]";
    assert_eq!(applied_after(&transcript, "s1", restarted), [30]);
    assert!(
        last_block_of(&transcript, "s1 installed a snapshot at 0x100000002")
            > last_block_of(&transcript, restarted)
    );
    assert!(transcript.last_status("s1").ends_with("state=[10, 20, 30]"));
}

/// s2 was only ever synced by DIFF, so it never snapshotted: restarted, it records no
/// snapshot and replays its whole log from its older base (the empty state).
#[test]
fn a_diff_synced_follower_still_replays_from_its_older_base() {
    let transcript = script();
    assert!(transcript.sent("s3", "s2", "SNAP").is_empty());
    assert!(
        !transcript
            .lines()
            .any(|(_, line)| line.starts_with("s2 installed a snapshot")
                || line.starts_with("s2 write: snapshot"))
    );
    let restarted = "s2 restarted from disk: accepted_epoch=2 current_epoch=2 snapshot=none \
                     log=[0x100000001:10, 0x100000002:20, 0x200000001:30]";
    assert_eq!(applied_after(&transcript, "s2", restarted), [10, 20, 30]);
    // And so at every restart: epoch 1, then 2 (and 30), then 3.
    assert_eq!(
        transcript.applied_by("s2"),
        [10, 20, 10, 20, 30, 10, 20, 30]
    );
    assert!(transcript.divergent_applies().is_empty());
}

/// s1 restarts from its snapshot at 0x200000001 (its summary starts in epoch 2) and rejoins
/// s3, whose log starts in epoch 1 and holds 0x200000001 and one entry more: a DIFF of that
/// entry, and s3 leads epoch 4. Without trusting the snapshot's zxid the leader would send a TRUNC to 0x0, which s1
/// cannot do inside its snapshot, and no leader would ever establish.
#[test]
fn a_follower_restarted_from_a_snapshot_rejoins_a_leader_with_an_older_log() {
    let transcript = run_script("tests/testdata/zab/snapshot_rejoin.txt");
    assert_eq!(transcript.leaders_of_epoch(3), ["s1"]);
    last_block_of(
        &transcript,
        "s1 write: snapshot 0x200000001=[10, 20] (log left as it is)",
    );
    last_block_of(
        &transcript,
        "s1->s3 ACKEPOCH current_epoch=3 last=0x300000001 \
         epoch_ends=[0x200000001, 0x300000001]",
    );
    assert!(transcript.sent("s3", "s1", "TRUNC").is_empty());
    assert_eq!(
        transcript.sent("s3", "s1", "DIFF").last().unwrap(),
        "entries=[0x300000002:40]"
    );
    assert_eq!(transcript.leaders_of_epoch(4), ["s3"]);
    assert!(
        transcript
            .last_status("s1")
            .ends_with("state=[10, 20, 30, 40]")
    );
}

/// s3, restarted from its snapshot at 0x100000002 with 30 and 666 after it, is truncated to
/// 0x200000001: its disk keeps the records below the snapshot and 30 (a truncation counted
/// in the in-memory log alone would drop 30 on disk and lose it at the next restart).
#[test]
fn a_truncation_after_a_restart_from_a_snapshot_keeps_the_log_below_it() {
    let transcript = run_script("tests/testdata/zab/snapshot_trunc.txt");
    assert_eq!(
        transcript.sent("s2", "s3", "TRUNC"),
        ["to=0x200000001 entries=[0x300000001:99]"]
    );
    last_block_of(
        &transcript,
        "s3 disk: accepted_epoch=3 current_epoch=3 snapshot=0x100000002=[10, 20] \
         log=[0x100000001:10, 0x100000002:20, 0x200000001:30, 0x300000001:99]",
    );
    for node in ["s1", "s2", "s3"] {
        assert!(
            transcript
                .last_status(node)
                .ends_with("state=[10, 20, 30, 99]"),
            "{node}"
        );
    }
    assert!(transcript.divergent_applies().is_empty());
}
