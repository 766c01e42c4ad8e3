//! Scripted interaction tests of the ZAB core: exact traces in tests/testdata/zab/, plus
//! checks of what the traces mean. Each known-bug script has a correct counterpart with the
//! same commands; the tests assert the difference.

mod script_runner;
mod zab_interaction;
mod zab_sequence;

use zab_interaction::{Transcript, run_script};

fn script(name: &str) -> Transcript {
    run_script(&format!("tests/testdata/zab/{name}.txt"))
}

/// Whether `node` applied `txn` at `zxid` anywhere in the transcript.
fn applied(transcript: &Transcript, node: &str, zxid: u64, txn: u64) -> bool {
    transcript
        .applied()
        .iter()
        .any(|a| a.node == node && a.zxid == zxid && a.txn == txn)
}

/// Index of the first line equal to `line`, panicking if there is none.
fn line_index(transcript: &Transcript, line: &str) -> usize {
    transcript
        .lines()
        .position(|(_, text)| text == line)
        .unwrap_or_else(|| panic!("no line `{line}`"))
}

/// s3 is elected and establishes epoch 1 only after its own current epoch is durable; the
/// first proposal is committed only once the leader's copy is durable as well as s1's, and
/// every server applies it.
#[test]
fn fresh_ensemble_elects_discovers_syncs_and_broadcasts() {
    let transcript = script("fresh_ensemble");
    assert_eq!(transcript.leaders_of_epoch(1), ["s3"]);
    assert!(
        line_index(&transcript, "s3 entered epoch 1")
            < line_index(&transcript, "s3 became leader of epoch 1")
    );
    // s1's ACK arrives while the leader's own copy is pending: nothing is committed then.
    let ack = line_index(&transcript, "s1->s3 ACK zxid=0x100000001");
    let durable = line_index(&transcript, "s3 durable through t3");
    let commit = line_index(&transcript, "s3->s1 COMMIT 0x100000001");
    assert!(ack < durable && durable < commit);
    for node in ["s1", "s2", "s3"] {
        assert_eq!(transcript.applied_by(node), [7], "{node}");
    }
    assert!(transcript.divergent_applies().is_empty());
}

/// The rejoining s1 gets exactly the two entries it lacks by DIFF, and then holds and has
/// applied the same history as the leader.
#[test]
fn diff_sends_the_entries_a_follower_lacks() {
    let transcript = script("sync_diff");
    assert_eq!(
        transcript.sent("s3", "s1", "DIFF"),
        ["entries=[]", "entries=[0x100000002:20, 0x100000003:30]"]
    );
    assert_eq!(transcript.last_status("s1"), transcript.last_status("s2"));
    assert!(
        transcript
            .last_status("s1")
            .ends_with("state=[10, 20, 30, 40]")
    );
    assert!(transcript.divergent_applies().is_empty());
}

/// With `zab.last_processed_zxid_on_diff` s1 logs the DIFF but never applies it: after its
/// restart it applies only 40, while the correct core (sync_diff) applies 10, 20 and 30
/// again before it.
#[test]
fn last_processed_zxid_on_diff_skips_the_diff() {
    let correct = script("sync_diff");
    let buggy = script("last_processed_zxid_on_diff_bug");
    assert_eq!(
        buggy.sent("s3", "s1", "DIFF"),
        correct.sent("s3", "s1", "DIFF"),
        "the same DIFF"
    );
    // Before its crash s1 applied 10 in both; after the restart:
    assert_eq!(correct.applied_by("s1"), [10, 10, 20, 30, 40]);
    assert_eq!(buggy.applied_by("s1"), [10, 40]);
    assert!(buggy.last_status("s1").ends_with("state=[40]"));
    assert!(
        buggy
            .last_status("s1")
            .contains("log=[0x100000001:10, 0x100000002:20, 0x100000003:30, 0x100000004:40]"),
        "logged, but not applied"
    );
}

/// The rejoining s1 holds 666 at 0x100000003, never committed: s3 truncates it to the last
/// shared zxid before sending the epoch-2 entry, and nobody ever applies 666.
#[test]
fn trunc_drops_an_uncommitted_proposal_of_an_old_epoch() {
    let transcript = script("sync_trunc");
    assert_eq!(
        transcript.sent("s3", "s1", "TRUNC"),
        ["to=0x100000002 entries=[0x200000001:99]"]
    );
    assert!(transcript.applied().iter().all(|a| a.txn != 666));
    assert_eq!(transcript.last_status("s1"), transcript.last_status("s2"));
    // `Learner.syncWithLeader` snapshots after a TRUNC (of what s1 had applied: nothing
    // since its restart), never after a DIFF (s2).
    let truncated = "s1 write: truncate log to 2 entries, snapshot 0x0=[] (log left as it is), \
                     append 0x200000001:99";
    assert!(transcript.lines().any(|(_, line)| line == truncated));
    assert!(
        !transcript
            .lines()
            .any(|(_, line)| line.starts_with("s2 ") && line.contains("snapshot 0x"))
    );
}

/// With `zab.diff_without_trunc` the same histories get a DIFF from 0x100000003: s1 keeps
/// and applies 666, which the leader never had.
#[test]
fn diff_without_trunc_keeps_the_stale_proposal() {
    let correct = script("sync_trunc");
    let buggy = script("diff_without_trunc_bug");
    assert!(buggy.sent("s3", "s1", "TRUNC").is_empty());
    assert_eq!(
        buggy.sent("s3", "s1", "DIFF").last().unwrap(),
        "entries=[0x200000001:99]"
    );
    assert!(applied(&buggy, "s1", 0x1_0000_0003, 666));
    assert!(!applied(&correct, "s1", 0x1_0000_0003, 666));
    assert!(buggy.last_status("s1").ends_with("state=[10, 20, 666, 99]"));
    assert!(buggy.last_status("s3").ends_with("state=[10, 20, 99]"));
}

/// s1, further behind than the DIFF window, gets the leader's state by SNAP, and then the
/// next proposal by broadcast: all three hold the same state.
#[test]
fn late_follower_beyond_the_diff_window_is_snapped_and_then_broadcast_to() {
    let transcript = script("sync_snap");
    assert_eq!(
        transcript.sent("s3", "s1", "SNAP"),
        ["zxid=0x100000005 state=[1, 2, 3, 4, 5] entries=[]"]
    );
    assert_eq!(
        transcript.sent("s3", "s1", "DIFF"),
        ["entries=[]"],
        "only epoch 1's empty DIFF"
    );
    assert_eq!(
        transcript.applied_by("s1"),
        [6],
        "1..5 came in the snapshot"
    );
    for node in ["s1", "s2", "s3"] {
        assert!(
            transcript
                .last_status(node)
                .ends_with("state=[1, 2, 3, 4, 5, 6]"),
            "{node}"
        );
    }
}

/// With `zab.snap_zxid_below_log_tail` the dead 666 comes back into s1's history when it
/// restarts after a SNAP; the correct core's SNAP empties the log, so it does not.
#[test]
fn snap_zxid_below_log_tail_brings_a_dead_entry_back() {
    let correct = script("snap_zxid_below_log_tail_correct");
    let buggy = script("snap_zxid_below_log_tail_bug");
    // The leader's snapshot is the one it took when it established epoch 2.
    let snap = ["zxid=0x100000002 state=[10, 20] entries=[0x200000001:99]"];
    assert_eq!(correct.sent("s3", "s1", "SNAP"), snap);
    assert_eq!(buggy.sent("s3", "s1", "SNAP"), snap);
    let history_without = "log=[0x200000001:99] state=[10, 20]";
    let history_with = "log=[0x100000003:666, 0x200000001:99] state=[10, 20]";
    assert!(correct.last_status("s1").contains(history_without));
    assert!(buggy.last_status("s1").contains(history_with));
}

/// The correct core: s1 and s2 restart with their durable epoch and move to epoch 2; s3's
/// uncommitted 7 is truncated and every apply agrees.
#[test]
fn epoch_not_persisted_correct_core_moves_to_a_new_epoch() {
    let transcript = script("epoch_not_persisted_correct");
    assert_eq!(transcript.leaders_of_epoch(1), ["s3"]);
    assert_eq!(transcript.leaders_of_epoch(2), ["s2"]);
    assert_eq!(
        transcript.sent("s2", "s3", "TRUNC"),
        ["to=0x0 entries=[0x200000001:8]"]
    );
    assert!(transcript.divergent_applies().is_empty());
}

/// With `zab.epoch_not_persisted` epoch 1 has two leaders, and 0x100000001 is applied as 8
/// by s1 and s2 and as 7 by s3.
#[test]
fn epoch_not_persisted_reuses_an_epoch_and_replicas_diverge() {
    let transcript = script("epoch_not_persisted_bug");
    assert_eq!(transcript.leaders_of_epoch(1), ["s3", "s2"]);
    let divergent = transcript.divergent_applies();
    assert!(
        divergent
            .iter()
            .any(|(first, later)| first.zxid == 0x1_0000_0001
                && first.txn == 8
                && later.node == "s3"
                && later.txn == 7),
        "{divergent:?}"
    );
}

/// The correct core: s1 crashes before its synced history is durable, so it never ACKed
/// NEWLEADER; s3 is never established in epoch 2 and 10 is applied nowhere.
#[test]
fn ack_newleader_after_persist_keeps_an_unsynced_follower_out_of_the_quorum() {
    let transcript = script("ack_newleader_before_persist_correct");
    assert!(transcript.leaders_of_epoch(2).is_empty());
    assert!(
        !transcript
            .lines()
            .any(|(_, line)| line == "s1->s3 ACK newleader zxid=0x100000001")
    );
    assert!(transcript.applied().iter().all(|a| a.txn != 10));
    assert_eq!(transcript.leaders_of_epoch(3), ["s2"]);
}

/// With `zab.ack_newleader_before_persist` s3 is established on s1's early ACK and applies
/// 10; s1's crash loses 10, and the epoch-3 leader truncates s3: a committed transaction is
/// gone from every replica.
#[test]
fn ack_newleader_before_persist_loses_a_committed_transaction() {
    let transcript = script("ack_newleader_before_persist_bug");
    assert_eq!(transcript.leaders_of_epoch(2), ["s3"]);
    assert!(applied(&transcript, "s3", 0x1_0000_0001, 10));
    let ack = line_index(&transcript, "s1->s3 ACK newleader zxid=0x100000001");
    assert_eq!(
        transcript.lines().nth(ack + 1).unwrap().1,
        "s1 persist t2",
        "acknowledged before the sync was even asked for"
    );
    assert_eq!(
        transcript.sent("s2", "s3", "TRUNC"),
        ["to=0x0 entries=[0x300000001:20]"]
    );
    for node in ["s1", "s2", "s3"] {
        assert!(!transcript.last_status(node).contains(":10"), "{node}");
    }
}

/// The correct core: s1 restarts with epoch 1 and the committed 7, wins the election and
/// brings 7 to s2.
#[test]
fn setcurrentepoch_before_ack_keeps_the_committed_transaction() {
    let transcript = script("setcurrentepoch_on_uptodate_correct");
    assert!(applied(&transcript, "s3", 0x1_0000_0001, 7));
    assert_eq!(transcript.leaders_of_epoch(2), ["s1"]);
    assert!(applied(&transcript, "s2", 0x1_0000_0001, 7));
}

/// With `zab.setcurrentepoch_on_uptodate` s1 restarts without a current epoch, s2 (with
/// nothing) wins, and s1's copy of the committed 7 is truncated.
#[test]
fn setcurrentepoch_on_uptodate_loses_the_committed_transaction() {
    let transcript = script("setcurrentepoch_on_uptodate_bug");
    assert!(applied(&transcript, "s3", 0x1_0000_0001, 7));
    assert!(
        line_index(&transcript, "s1->s3 ACK newleader zxid=0x0")
            < line_index(&transcript, "s1 persist t4: current_epoch=1"),
        "acknowledged before the new epoch was written"
    );
    assert_eq!(transcript.leaders_of_epoch(2), ["s2"]);
    assert_eq!(transcript.sent("s2", "s1", "TRUNC"), ["to=0x0 entries=[]"]);
    assert!(transcript.last_status("s1").contains("log=[]"));
}

/// The notifications sent after the restart (the last `start` block and the four
/// `deliver` blocks after it), by block.
fn votes_after_restart(transcript: &Transcript) -> Vec<Vec<String>> {
    let start = transcript
        .blocks
        .iter()
        .rposition(|block| block.contains(" entered epoch 1\ns3->s1 NOTIFY"))
        .expect("the restart's start block");
    transcript.blocks[start..start + 5]
        .iter()
        .map(|block| {
            block
                .lines()
                .filter(|line| line.contains(" NOTIFY "))
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// The correct core: votes settle on s2 (epoch 2) within two rounds — the last two
/// deliveries send nothing — s2 never votes for s3 (epoch 1), and s2 leads.
#[test]
fn fle_correct_order_settles_on_the_newest_epoch() {
    let transcript = script("fle_nontransitive_order_correct");
    let rounds = votes_after_restart(&transcript);
    assert!(rounds[3].is_empty() && rounds[4].is_empty(), "{rounds:?}");
    assert!(
        rounds
            .iter()
            .flatten()
            .all(|line| !line.starts_with("s2->") || !line.contains("vote=(s3 epoch=1"))
    );
    assert!(transcript.last_status("s2").starts_with("leading"));
    for node in ["s1", "s3"] {
        assert!(
            transcript.last_status(node).starts_with("following"),
            "{node}"
        );
    }
}

/// With `zab.fle_nontransitive_order` s2 adopts s3's older-epoch vote and s3 adopts s2's:
/// every round of deliveries changes votes again; s3, elected with the oldest epoch, gives
/// up at its followers' ACKEPOCH, and all three are looking again, still changing votes.
#[test]
fn fle_nontransitive_order_keeps_changing_votes() {
    let transcript = script("fle_nontransitive_order_bug");
    let rounds = votes_after_restart(&transcript);
    assert!(rounds.iter().all(|round| !round.is_empty()), "{rounds:?}");
    let sent = |prefix: &str, vote: &str| {
        rounds
            .iter()
            .flatten()
            .any(|line| line.starts_with(prefix) && line.contains(vote))
    };
    assert!(sent("s2->", "vote=(s3 epoch=1"));
    assert!(sent("s3->", "vote=(s2 epoch=2"));
    assert!(transcript.leaders_of_epoch(3).is_empty());
    let last_deliver = &transcript.blocks[transcript.blocks.len() - 2];
    assert!(
        last_deliver.contains(" NOTIFY round=2 looking"),
        "{last_deliver}"
    );
    for node in ["s1", "s2", "s3"] {
        assert!(
            transcript.last_status(node).starts_with("looking"),
            "{node}"
        );
    }
}

/// With only the leader's copy of 1 durable nothing is committed; the leader keeps leading
/// while its crashed followers are within sync_limit (at 300 ms) and steps down after (at
/// 600 ms).
#[test]
fn no_commit_without_a_quorum_and_the_leader_steps_down() {
    let transcript = script("leader_without_quorum");
    assert!(transcript.applied().is_empty());
    assert!(transcript.sent("s3", "s1", "COMMIT").is_empty());
    let status = transcript
        .lines()
        .find(|(_, line)| line.starts_with("s3 leading"));
    assert!(status.unwrap().1.contains(" committed=0x0 "), "{status:?}");
    let stepped_down: Vec<usize> = transcript
        .lines()
        .filter(|(_, line)| *line == "s3 stepped down from epoch 1")
        .map(|(block, _)| block)
        .collect();
    let second_tick = transcript.blocks.len() - 2;
    assert_eq!(
        stepped_down,
        [second_tick],
        "not at the first tick, at the second"
    );
    assert!(transcript.last_status("s3").starts_with("looking"));
}

/// The observer s4 is counted in no quorum, is sent INFORM (after the commit) and never
/// PROPOSAL or COMMIT, acknowledges no proposal, never leads, and applies what the voters
/// apply.
#[test]
fn observer_learns_committed_transactions_and_counts_in_no_quorum() {
    let transcript = script("observer");
    let quorums: Vec<&str> = transcript
        .lines()
        .map(|(_, line)| line)
        .filter(|line| line.starts_with("s3 counted a quorum"))
        .collect();
    assert_eq!(quorums.len(), 4, "{quorums:?}");
    assert!(
        quorums.iter().all(|line| !line.contains("s4")),
        "{quorums:?}"
    );
    assert_eq!(transcript.sent("s3", "s4", "INFORM"), ["0x100000001 txn=7"]);
    assert!(transcript.sent("s3", "s4", "PROPOSAL").is_empty());
    assert!(transcript.sent("s3", "s4", "COMMIT").is_empty());
    assert!(transcript.sent("s4", "s3", "ACK zxid").is_empty());
    assert!(
        line_index(&transcript, "s3->s1 COMMIT 0x100000001")
            < line_index(&transcript, "s3->s4 INFORM 0x100000001 txn=7"),
        "informed once committed"
    );
    assert!(
        transcript
            .lines()
            .any(|(_, line)| line == "s4 serves as observer of s3 in epoch 1")
    );
    assert_eq!(transcript.leaders_of_epoch(1), ["s3"]);
    assert_eq!(transcript.applied_by("s4"), transcript.applied_by("s1"));
    assert_eq!(transcript.applied_by("s4"), [7]);
}
