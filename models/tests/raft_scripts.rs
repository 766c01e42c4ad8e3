//! Scripted interaction tests of the Raft core: exact traces in tests/testdata/, plus checks
//! of what the traces mean.

mod interaction;

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
