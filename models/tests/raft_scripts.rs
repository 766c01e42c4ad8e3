//! Scripted interaction tests of the Raft core: exact traces in tests/testdata/, plus checks
//! of what the traces mean.

mod interaction;
mod script_runner;

use interaction::run_script;

/// Figure 8 (c)–(d) with the correct core: the term-2 entry at index 2 is stored on a
/// majority in term 4 but never reported committed; s5 then overwrites it in term 5, and
/// every replica applies the same entry (2/3) at index 2.
#[test]
fn figure8_d_correct_core_never_commits_the_term2_entry_by_counting() {
    let transcript = run_script("tests/testdata/figure8_d.txt");
    assert!(transcript.divergent_applies().is_empty());
    let applied = transcript.applied();
    assert!(
        !applied.iter().any(|a| a.index == 2 && a.term == 2),
        "the term-2 entry was reported committed: {applied:?}"
    );
    assert!(
        applied
            .iter()
            .any(|a| a.node == "s5" && a.index == 2 && a.term == 3)
    );
}

/// Figure 8 (e): the term-2 entry is reported committed only together with (in the same
/// step as, and just before) the term-4 entry after it.
#[test]
fn figure8_e_correct_core_commits_the_term2_entry_with_the_term4_entry() {
    let transcript = run_script("tests/testdata/figure8_e.txt");
    assert!(transcript.divergent_applies().is_empty());
    let applied = transcript.applied();
    let term2 = applied
        .iter()
        .position(|a| a.node == "s1" && a.index == 2 && a.term == 2)
        .expect("s1 applies index 2");
    let next = &applied[term2 + 1];
    assert_eq!((next.node.as_str(), next.index, next.term), ("s1", 3, 4));
    assert_eq!(next.block, applied[term2].block, "applied in the same step");
}

/// Figure 8 with `raft.commit_prev_term_by_count`: s1 reports index 2 (term 2) committed in
/// term 4, and after s5 wins term 5 the replicas apply a different entry at index 2.
#[test]
fn figure8_commit_prev_term_by_count_commits_then_overwrites() {
    let transcript = run_script("tests/testdata/figure8_commit_prev_term_by_count.txt");
    let divergent = transcript.divergent_applies();
    assert!(
        divergent.iter().any(|(first, later)| first.node == "s1"
            && (first.index, first.term) == (2, 2)
            && later.term == 3),
        "expected s1's committed 2/2 to be overwritten by 2/3: {divergent:?}"
    );
}

fn leaders_of_term(transcript: &interaction::Transcript, term: u64) -> Vec<String> {
    let needle = format!("became leader of term {term}");
    transcript
        .blocks
        .iter()
        .flat_map(|block| block.lines())
        .filter(|line| line.ends_with(&needle))
        .map(|line| line.split_whitespace().next().unwrap().to_string())
        .collect()
}

fn read_ready_at(transcript: &interaction::Transcript) -> Vec<u64> {
    transcript
        .blocks
        .iter()
        .flat_map(|block| block.lines())
        .filter_map(|line| line.split_once(" ready at index "))
        .map(|(_, index)| index.parse().unwrap())
        .collect()
}

/// A restarted voter remembers its vote: s3 cannot win the term s1 won.
#[test]
fn volatile_vote_correct_core_votes_once_per_term() {
    let transcript = run_script("tests/testdata/volatile_vote_correct.txt");
    assert_eq!(leaders_of_term(&transcript, 1), ["s1"]);
}

/// With `raft.volatile_vote` the restarted voter votes again: two leaders in term 1.
#[test]
fn volatile_vote_elects_two_leaders_in_one_term() {
    let transcript = run_script("tests/testdata/volatile_vote_bug.txt");
    assert_eq!(leaders_of_term(&transcript, 1), ["s1", "s3"]);
}

/// The stale duplicate changes nothing; the new leader keeps the committed entry `b`.
#[test]
fn truncate_on_stale_append_correct_core_keeps_committed_entries() {
    let transcript = run_script("tests/testdata/truncate_on_stale_append_correct.txt");
    assert!(transcript.divergent_applies().is_empty());
    let applied = transcript.applied();
    assert!(
        applied
            .iter()
            .any(|a| a.node == "s2" && (a.index, a.term) == (3, 1))
    );
}

/// With `raft.truncate_on_stale_append` s2 drops the committed entry `b` (3/1) and, as
/// leader of term 2, commits a different entry at index 3.
#[test]
fn truncate_on_stale_append_loses_a_committed_entry() {
    let transcript = run_script("tests/testdata/truncate_on_stale_append_bug.txt");
    let divergent = transcript.divergent_applies();
    assert!(
        divergent.iter().any(|(first, later)| first.node == "s1"
            && (first.index, first.term) == (3, 1)
            && later.term == 2),
        "{divergent:?}"
    );
}

/// The read waits for the no-op of term 2 and is served at index 3, after x (index 2).
#[test]
fn readindex_correct_core_waits_for_its_term_commit() {
    let transcript = run_script("tests/testdata/readindex_before_term_commit_correct.txt");
    assert_eq!(read_ready_at(&transcript), [3]);
}

/// With `raft.readindex_before_term_commit` the read is served at index 1, missing the write
/// at index 2 that s1 had already committed and acknowledged.
#[test]
fn readindex_before_term_commit_serves_a_stale_read() {
    let transcript = run_script("tests/testdata/readindex_before_term_commit_bug.txt");
    let acknowledged = transcript
        .applied()
        .into_iter()
        .any(|a| a.node == "s1" && (a.index, a.term) == (2, 1));
    assert!(acknowledged, "s1 applied (acknowledged) x at index 2");
    assert_eq!(read_ready_at(&transcript), [1]);
}

/// The cut-off leader cannot confirm its leadership: the read is never served.
#[test]
fn read_index_correct_core_does_not_serve_a_deposed_leader() {
    let transcript = run_script("tests/testdata/read_without_readindex_correct.txt");
    assert!(read_ready_at(&transcript).is_empty());
}

/// With `raft.read_without_readindex` the cut-off s1 serves the read at index 2 although
/// s2 already committed y at index 4.
#[test]
fn read_without_readindex_serves_a_stale_read() {
    let transcript = run_script("tests/testdata/read_without_readindex_bug.txt");
    assert!(
        transcript
            .applied()
            .iter()
            .any(|a| a.node == "s2" && a.index == 4)
    );
    assert_eq!(read_ready_at(&transcript), [2]);
}
