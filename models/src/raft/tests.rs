//! Core tests: each input's exact output list.

use super::*;
use sim::{NodeId, clock::LocalTime};
use std::time::Duration;

type Core = RaftCore<&'static str, &'static str>;

const S1: NodeId = NodeId::server(0);
const S2: NodeId = NodeId::server(1);
const S3: NodeId = NodeId::server(2);

fn ms(millis: u64) -> LocalTime {
    LocalTime::from_millis(millis)
}

fn core(id: NodeId, voters: &[NodeId], bugs: &[RaftBug]) -> Core {
    let config = RaftConfig::new(id, voters.to_vec()).with_bugs(bugs.iter().copied());
    let jitter = ScriptedTimeouts::new([], Duration::from_millis(400));
    let mut core = RaftCore::new(config, Box::new(jitter), ms(0));
    assert_eq!(core.take_effects(), vec![Effect::SetTimer { at: ms(400) }]);
    core
}

fn noop(index: u64, term: u64) -> Entry<&'static str> {
    Entry {
        index,
        term,
        payload: EntryPayload::Noop,
    }
}

fn command(index: u64, term: u64, text: &'static str) -> Entry<&'static str> {
    Entry {
        index,
        term,
        payload: EntryPayload::Command(text),
    }
}

fn hard_state(term: u64, voted_for: Option<NodeId>) -> DurableWrite<&'static str, &'static str> {
    DurableWrite {
        hard_state: Some(HardState { term, voted_for }),
        ..DurableWrite::default()
    }
}

fn append(entries: Vec<Entry<&'static str>>) -> DurableWrite<&'static str, &'static str> {
    DurableWrite {
        append: entries,
        ..DurableWrite::default()
    }
}

/// s1 of {s1, s2, s3}, elected in term 1 with s2's vote, its no-op durable but not yet
/// acknowledged by anyone.
fn leader_of_three(bugs: &[RaftBug]) -> Core {
    let mut leader = core(S1, &[S1, S2, S3], bugs);
    leader.tick(ms(400));
    leader.step(
        ms(401),
        S2,
        Message::PreVoteResponse {
            term: 1,
            granted: true,
        },
    );
    leader.on_persisted(ms(402), PersistId(1));
    leader.step(
        ms(403),
        S2,
        Message::RequestVoteResponse {
            term: 1,
            granted: true,
        },
    );
    leader.on_persisted(ms(404), PersistId(2));
    assert!(leader.is_leader());
    leader.take_effects();
    leader
}

#[test]
fn a_single_voter_elects_itself_once_its_vote_is_durable_and_commits_after_fsync() {
    let mut solo = core(S1, &[S1], &[]);
    solo.tick(ms(400));
    assert_eq!(
        solo.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(1),
                write: hard_state(1, Some(S1)),
            },
            // The vote-request retry comes before the next election timeout.
            Effect::SetTimer { at: ms(450) },
        ]
    );
    assert_eq!(solo.role(), RoleName::Candidate);
    solo.on_persisted(ms(401), PersistId(1));
    assert_eq!(
        solo.take_effects(),
        vec![
            Effect::Observe(Observation::BecameLeader { term: 1 }),
            Effect::Persist {
                id: PersistId(2),
                write: append(vec![noop(1, 1)]),
            },
            Effect::Observe(Observation::TermPersisted { term: 1 }),
            Effect::SetTimer { at: ms(451) },
        ]
    );
    solo.on_persisted(ms(402), PersistId(2));
    assert_eq!(
        solo.take_effects(),
        vec![Effect::Apply { entry: noop(1, 1) }]
    );
    assert_eq!(
        solo.propose(ms(403), "x=1"),
        Ok(ProposalSlot { index: 2, term: 1 })
    );
    // Not applied (acknowledged) before it is durable.
    assert_eq!(
        solo.take_effects(),
        vec![Effect::Persist {
            id: PersistId(3),
            write: append(vec![command(2, 1, "x=1")]),
        }]
    );
    solo.on_persisted(ms(404), PersistId(3));
    assert_eq!(
        solo.take_effects(),
        vec![Effect::Apply {
            entry: command(2, 1, "x=1")
        }]
    );
}

#[test]
fn ack_before_fsync_applies_a_single_voter_write_before_it_is_durable() {
    let mut solo = core(S1, &[S1], &[RaftBug::AckBeforeFsync]);
    solo.tick(ms(400));
    solo.on_persisted(ms(401), PersistId(1));
    // The no-op is applied in the same step it is written, before its fsync.
    assert!(
        solo.take_effects()
            .contains(&Effect::Apply { entry: noop(1, 1) })
    );
    solo.propose(ms(403), "x=1").unwrap();
    assert_eq!(
        solo.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(3),
                write: append(vec![command(2, 1, "x=1")]),
            },
            Effect::Apply {
                entry: command(2, 1, "x=1")
            },
        ]
    );
}

#[test]
fn a_vote_is_sent_only_after_it_is_durable() {
    let mut follower = core(S2, &[S1, S2, S3], &[]);
    follower.step(
        ms(10),
        S1,
        Message::RequestVote {
            term: 1,
            last_log_index: 0,
            last_log_term: 0,
        },
    );
    assert_eq!(
        follower.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(1),
                write: hard_state(1, Some(S1)),
            },
            Effect::SendAfterPersist {
                after: PersistId(1),
                to: S1,
                message: Message::RequestVoteResponse {
                    term: 1,
                    granted: true
                },
            },
            Effect::SetTimer { at: ms(410) },
        ]
    );
    // A second candidate of the same term is refused.
    follower.step(
        ms(11),
        S3,
        Message::RequestVote {
            term: 1,
            last_log_index: 0,
            last_log_term: 0,
        },
    );
    assert_eq!(
        follower.take_effects(),
        vec![Effect::SendAfterPersist {
            after: PersistId(1),
            to: S3,
            message: Message::RequestVoteResponse {
                term: 1,
                granted: false
            },
        }]
    );
}

#[test]
fn volatile_vote_answers_at_once_and_never_writes_the_vote() {
    let mut follower = core(S2, &[S1, S2, S3], &[RaftBug::VolatileVote]);
    follower.step(
        ms(10),
        S1,
        Message::RequestVote {
            term: 1,
            last_log_index: 0,
            last_log_term: 0,
        },
    );
    assert_eq!(
        follower.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(1),
                write: hard_state(1, None),
            },
            Effect::Send {
                to: S1,
                message: Message::RequestVoteResponse {
                    term: 1,
                    granted: true
                },
            },
            Effect::SetTimer { at: ms(410) },
        ]
    );
}

#[test]
fn pre_vote_does_not_raise_the_term_and_a_leader_lease_ignores_it() {
    let mut follower = core(S2, &[S1, S2, S3], &[]);
    follower.step(
        ms(10),
        S3,
        Message::PreVote {
            term: 1,
            last_log_index: 0,
            last_log_term: 0,
        },
    );
    assert_eq!(
        follower.take_effects(),
        vec![Effect::Send {
            to: S3,
            message: Message::PreVoteResponse {
                term: 1,
                granted: true
            },
        }]
    );
    assert_eq!(follower.term(), 0);
    // s1 leads term 1; within the lease a disruptive candidate gets no answer at all.
    follower.step(
        ms(20),
        S1,
        Message::Heartbeat {
            term: 1,
            commit: 0,
            read_round: 0,
        },
    );
    follower.take_effects();
    for message in [
        Message::PreVote {
            term: 2,
            last_log_index: 5,
            last_log_term: 1,
        },
        Message::RequestVote {
            term: 2,
            last_log_index: 5,
            last_log_term: 1,
        },
    ] {
        follower.step(ms(30), S3, message);
        assert_eq!(follower.take_effects(), vec![]);
    }
    assert_eq!(follower.term(), 1);
}

#[test]
fn without_prevote_and_checkquorum_a_disruptive_candidate_raises_the_term() {
    let mut follower = core(S2, &[S1, S2, S3], &[RaftBug::NoPreVoteNoCheckQuorum]);
    follower.step(
        ms(20),
        S1,
        Message::Heartbeat {
            term: 1,
            commit: 0,
            read_round: 0,
        },
    );
    follower.take_effects();
    follower.step(
        ms(30),
        S3,
        Message::RequestVote {
            term: 7,
            last_log_index: 0,
            last_log_term: 0,
        },
    );
    assert_eq!(follower.term(), 7);
    assert_eq!(follower.leader(), None);
}

#[test]
fn a_follower_truncates_only_on_a_conflict() {
    let log = vec![noop(1, 1), command(2, 1, "a"), command(3, 1, "b")];
    for bug in [None, Some(RaftBug::TruncateOnStaleAppend)] {
        let config = RaftConfig::new(S2, vec![S1, S2, S3]).with_bugs(bug);
        let jitter = ScriptedTimeouts::new([], Duration::from_millis(400));
        let hard = HardState {
            term: 1,
            voted_for: Some(S1),
        };
        let mut follower: Core =
            RaftCore::restore(config, Box::new(jitter), ms(0), hard, None, log.clone());
        follower.take_effects();
        // A stale request: its one entry is already here, and more after it.
        follower.step(
            ms(5),
            S1,
            Message::AppendEntries {
                term: 1,
                prev_log_index: 1,
                prev_log_term: 1,
                entries: vec![command(2, 1, "a")],
                leader_commit: 1,
            },
        );
        let response = Message::AppendEntriesResponse {
            term: 1,
            outcome: AppendOutcome::Accepted { match_index: 2 },
        };
        let expected = match bug {
            None => vec![
                Effect::Send {
                    to: S1,
                    message: response,
                },
                Effect::Apply { entry: noop(1, 1) },
                Effect::SetTimer { at: ms(405) },
            ],
            Some(_) => vec![
                Effect::Persist {
                    id: PersistId(1),
                    write: DurableWrite {
                        hard_state: None,
                        snapshot: None,
                        truncate_after: Some(1),
                        append: vec![command(2, 1, "a")],
                    },
                },
                Effect::SendAfterPersist {
                    after: PersistId(1),
                    to: S1,
                    message: response,
                },
                Effect::Apply { entry: noop(1, 1) },
                Effect::SetTimer { at: ms(405) },
            ],
        };
        assert_eq!(follower.take_effects(), expected, "bug: {bug:?}");
        let kept = if bug.is_none() { 3 } else { 2 };
        assert_eq!(follower.log().last_index(), kept);
    }
}

#[test]
fn a_conflicting_entry_and_all_after_it_are_replaced() {
    let config = RaftConfig::new(S2, vec![S1, S2, S3]);
    let jitter = ScriptedTimeouts::new([], Duration::from_millis(400));
    let log = vec![noop(1, 1), command(2, 1, "a"), command(3, 1, "b")];
    let mut follower: Core = RaftCore::restore(
        config,
        Box::new(jitter),
        ms(0),
        HardState::default(),
        None,
        log,
    );
    follower.take_effects();
    follower.step(
        ms(5),
        S3,
        Message::AppendEntries {
            term: 2,
            prev_log_index: 1,
            prev_log_term: 1,
            entries: vec![noop(2, 2)],
            leader_commit: 0,
        },
    );
    assert_eq!(
        follower.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(1),
                write: DurableWrite {
                    hard_state: Some(HardState {
                        term: 2,
                        voted_for: None
                    }),
                    snapshot: None,
                    truncate_after: Some(1),
                    append: vec![noop(2, 2)],
                },
            },
            Effect::SendAfterPersist {
                after: PersistId(1),
                to: S3,
                message: Message::AppendEntriesResponse {
                    term: 2,
                    outcome: AppendOutcome::Accepted { match_index: 2 },
                },
            },
            Effect::SetTimer { at: ms(405) },
        ]
    );
    // A request whose previous entry conflicts is rejected with a hint before that term
    // (once term 2, written in p1, is durable).
    follower.step(
        ms(6),
        S3,
        Message::AppendEntries {
            term: 2,
            prev_log_index: 2,
            prev_log_term: 7,
            entries: vec![],
            leader_commit: 0,
        },
    );
    assert_eq!(
        follower.take_effects(),
        vec![
            Effect::SendAfterPersist {
                after: PersistId(1),
                to: S3,
                message: Message::AppendEntriesResponse {
                    term: 2,
                    outcome: AppendOutcome::Rejected {
                        rejected_prev_index: 2,
                        retry_hint: 1,
                    },
                },
            },
            Effect::SetTimer { at: ms(406) },
        ]
    );
}

/// A reply that follows a term change goes out only once the new term is durable (etcd
/// sends a `Ready`'s messages only after its `HardState` is saved): a crash must not take
/// back a term a leader has already been told about.
#[test]
fn replies_after_a_term_change_wait_until_the_term_is_durable() {
    let mut follower = core(S2, &[S1, S2, S3], &[]);
    let probe = |term, read_round| Message::Heartbeat {
        term,
        commit: 0,
        read_round,
    };
    let missing_prev = Message::AppendEntries {
        term: 2,
        prev_log_index: 3,
        prev_log_term: 1,
        entries: vec![],
        leader_commit: 3,
    };
    let rejection = Message::AppendEntriesResponse {
        term: 2,
        outcome: AppendOutcome::Rejected {
            rejected_prev_index: 3,
            retry_hint: 0,
        },
    };
    // An AppendEntries of a newer term that does not match: the term is written first and
    // the rejection waits for that write.
    follower.step(ms(10), S1, missing_prev.clone());
    assert_eq!(
        follower.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(1),
                write: hard_state(2, None),
            },
            Effect::SendAfterPersist {
                after: PersistId(1),
                to: S1,
                message: rejection.clone(),
            },
            Effect::SetTimer { at: ms(410) },
        ]
    );
    // Term 2 is still not durable: the next rejection waits for the same write.
    follower.step(ms(11), S1, missing_prev);
    assert_eq!(
        follower.take_effects(),
        vec![
            Effect::SendAfterPersist {
                after: PersistId(1),
                to: S1,
                message: rejection,
            },
            Effect::SetTimer { at: ms(411) },
        ]
    );
    follower.on_persisted(ms(12), PersistId(1));
    assert_eq!(
        follower.take_effects(),
        vec![Effect::Observe(Observation::TermPersisted { term: 2 })]
    );
    // Durable: a heartbeat is answered at once.
    follower.step(ms(13), S1, probe(2, 4));
    assert_eq!(
        follower.take_effects(),
        vec![
            Effect::Send {
                to: S1,
                message: Message::HeartbeatResponse {
                    term: 2,
                    read_round: 4
                },
            },
            Effect::SetTimer { at: ms(413) },
        ]
    );
    // A heartbeat of a newer term: its answer waits for term 3.
    follower.step(ms(14), S3, probe(3, 1));
    assert_eq!(
        follower.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(2),
                write: hard_state(3, None),
            },
            Effect::SendAfterPersist {
                after: PersistId(2),
                to: S3,
                message: Message::HeartbeatResponse {
                    term: 3,
                    read_round: 1
                },
            },
            Effect::SetTimer { at: ms(414) },
        ]
    );
    // The deposed leader is told about term 3, too, only once term 3 is durable.
    follower.step(ms(15), S1, probe(2, 5));
    assert_eq!(
        follower.take_effects(),
        vec![Effect::SendAfterPersist {
            after: PersistId(2),
            to: S1,
            message: Message::HeartbeatResponse {
                term: 3,
                read_round: 5
            },
        }]
    );
    follower.on_persisted(ms(16), PersistId(2));
    follower.take_effects();
    follower.step(ms(17), S1, probe(2, 6));
    assert_eq!(
        follower.take_effects(),
        vec![Effect::Send {
            to: S1,
            message: Message::HeartbeatResponse {
                term: 3,
                read_round: 6
            },
        }]
    );
}

#[test]
fn match_index_comes_from_the_acknowledged_request() {
    let mut leader = leader_of_three(&[]);
    // s2 acknowledges the no-op: it streams from now on.
    leader.step(
        ms(410),
        S2,
        Message::AppendEntriesResponse {
            term: 1,
            outcome: AppendOutcome::Accepted { match_index: 1 },
        },
    );
    assert_eq!(
        leader.take_effects(),
        vec![Effect::Apply { entry: noop(1, 1) }]
    );
    leader.propose(ms(411), "a").unwrap();
    leader.propose(ms(412), "b").unwrap();
    leader.take_effects();
    let super::core::Role::Leader(state) = &leader.role else {
        panic!("leads");
    };
    assert_eq!(state.progress[&S2].next_index, 4, "advanced optimistically");
    // An acknowledgement of the first of the two requests proves only index 2.
    leader.on_persisted(ms(413), PersistId(4));
    leader.step(
        ms(414),
        S2,
        Message::AppendEntriesResponse {
            term: 1,
            outcome: AppendOutcome::Accepted { match_index: 2 },
        },
    );
    let super::core::Role::Leader(state) = &leader.role else {
        panic!("leads");
    };
    assert_eq!(state.progress[&S2].match_index, 2);
    assert_eq!(leader.commit_index(), 2);
}

#[test]
fn read_index_waits_for_the_term_commit_and_a_quorum_round() {
    let mut leader = leader_of_three(&[]);
    leader.read_index(ms(405), ReadRequestId(1));
    assert_eq!(
        leader.take_effects(),
        vec![],
        "waits for the no-op to commit"
    );
    leader.step(
        ms(406),
        S3,
        Message::AppendEntriesResponse {
            term: 1,
            outcome: AppendOutcome::Accepted { match_index: 1 },
        },
    );
    assert_eq!(
        leader.take_effects(),
        vec![
            Effect::Apply { entry: noop(1, 1) },
            Effect::Send {
                to: S2,
                message: Message::Heartbeat {
                    term: 1,
                    commit: 0,
                    read_round: 1
                },
            },
            Effect::Send {
                to: S3,
                message: Message::Heartbeat {
                    term: 1,
                    commit: 1,
                    read_round: 1
                },
            },
        ]
    );
    // An answer to an older round does not confirm the read.
    leader.step(
        ms(407),
        S2,
        Message::HeartbeatResponse {
            term: 1,
            read_round: 0,
        },
    );
    assert!(
        !leader
            .take_effects()
            .iter()
            .any(|e| matches!(e, Effect::ReadReady { .. }))
    );
    leader.step(
        ms(408),
        S3,
        Message::HeartbeatResponse {
            term: 1,
            read_round: 1,
        },
    );
    assert_eq!(
        leader.take_effects(),
        vec![Effect::ReadReady {
            request: ReadRequestId(1),
            read_index: 1
        }]
    );
}

/// s1 of {s1, s2, s3} leading term 1 with its no-op committed (acknowledged by s2, which
/// streams from now on; s3 never answered).
fn leader_with_committed_noop() -> Core {
    let mut leader = leader_of_three(&[]);
    leader.step(
        ms(404),
        S2,
        Message::AppendEntriesResponse {
            term: 1,
            outcome: AppendOutcome::Accepted { match_index: 1 },
        },
    );
    assert_eq!(leader.commit_index(), 1);
    leader.take_effects();
    leader
}

fn heartbeats(
    commit_s2: u64,
    commit_s3: u64,
    read_round: u64,
) -> Vec<Effect<&'static str, &'static str>> {
    vec![
        Effect::Send {
            to: S2,
            message: Message::Heartbeat {
                term: 1,
                commit: commit_s2,
                read_round,
            },
        },
        Effect::Send {
            to: S3,
            message: Message::Heartbeat {
                term: 1,
                commit: commit_s3,
                read_round,
            },
        },
    ]
}

fn heartbeat_answer(read_round: u64) -> Message<&'static str, &'static str> {
    Message::HeartbeatResponse {
        term: 1,
        read_round,
    }
}

/// Reads that arrive while a ReadIndex round is in flight do not start rounds of their own:
/// they wait, and one round started once the round in flight is acknowledged confirms them
/// all. An answer to the older round confirms none of them.
#[test]
fn reads_during_a_round_share_the_next_round() {
    let mut leader = leader_with_committed_noop();
    leader.read_index(ms(405), ReadRequestId(1));
    assert_eq!(leader.take_effects(), heartbeats(1, 0, 1));
    leader.read_index(ms(406), ReadRequestId(2));
    leader.read_index(ms(407), ReadRequestId(3));
    assert_eq!(leader.take_effects(), vec![], "round 1 is in flight");
    // Round 1 is confirmed (s1 and s2): read 1 is served and round 2 starts for 2 and 3.
    leader.step(ms(408), S2, heartbeat_answer(1));
    let mut expected = heartbeats(1, 0, 2);
    expected.push(Effect::ReadReady {
        request: ReadRequestId(1),
        read_index: 1,
    });
    assert_eq!(leader.take_effects(), expected);
    // Round 1 again: reads 2 and 3 came after it started, it cannot serve them.
    leader.step(ms(409), S2, heartbeat_answer(1));
    assert_eq!(leader.take_effects(), vec![]);
    leader.step(ms(410), S2, heartbeat_answer(2));
    assert_eq!(
        leader.take_effects(),
        vec![
            Effect::ReadReady {
                request: ReadRequestId(2),
                read_index: 1,
            },
            Effect::ReadReady {
                request: ReadRequestId(3),
                read_index: 1,
            },
        ]
    );
    // Nothing in flight: the next read starts a round at once.
    leader.read_index(ms(411), ReadRequestId(4));
    assert_eq!(leader.take_effects(), heartbeats(1, 0, 3));
}

/// A streaming follower is sent every entry it has not acknowledged: a request that
/// overtakes an earlier one on the wire (datagrams are reordered) still matches the
/// follower's log, and so does the repeat that a heartbeat answer from a lagging follower
/// triggers (etcd's `sendAppend` on `MsgHeartbeatResp`).
#[test]
fn a_streaming_follower_is_sent_every_unacknowledged_entry() {
    let mut leader = leader_with_committed_noop();
    let stream = |entries| Effect::Send {
        to: S2,
        message: Message::AppendEntries {
            term: 1,
            prev_log_index: 1,
            prev_log_term: 1,
            entries,
            leader_commit: 1,
        },
    };
    leader.propose(ms(410), "x").unwrap();
    assert_eq!(
        leader.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(3),
                write: append(vec![command(2, 1, "x")]),
            },
            stream(vec![command(2, 1, "x")]),
        ]
    );
    leader.propose(ms(411), "y").unwrap();
    assert_eq!(
        leader.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(4),
                write: append(vec![command(3, 1, "y")]),
            },
            stream(vec![command(2, 1, "x"), command(3, 1, "y")]),
        ]
    );
    leader.step(ms(412), S2, heartbeat_answer(0));
    assert_eq!(
        leader.take_effects(),
        vec![stream(vec![command(2, 1, "x"), command(3, 1, "y")])]
    );
    // s2 stored x: the next request starts after it.
    leader.step(
        ms(413),
        S2,
        Message::AppendEntriesResponse {
            term: 1,
            outcome: AppendOutcome::Accepted { match_index: 2 },
        },
    );
    leader.take_effects();
    leader.propose(ms(414), "z").unwrap();
    let effects = leader.take_effects();
    assert_eq!(
        effects.last(),
        Some(&Effect::Send {
            to: S2,
            message: Message::AppendEntries {
                term: 1,
                prev_log_index: 2,
                prev_log_term: 1,
                entries: vec![command(3, 1, "y"), command(4, 1, "z")],
                leader_commit: 1,
            },
        })
    );
}

#[test]
fn readindex_before_term_commit_reads_at_a_stale_commit_index() {
    let mut leader = leader_of_three(&[RaftBug::ReadIndexBeforeTermCommit]);
    leader.read_index(ms(405), ReadRequestId(1));
    leader.step(
        ms(406),
        S2,
        Message::HeartbeatResponse {
            term: 1,
            read_round: 1,
        },
    );
    let effects = leader.take_effects();
    assert!(
        effects.contains(&Effect::ReadReady {
            request: ReadRequestId(1),
            read_index: 0
        }),
        "{effects:?}"
    );
}

#[test]
fn read_without_readindex_is_served_at_once() {
    let mut leader = leader_of_three(&[RaftBug::ReadWithoutReadIndex]);
    leader.read_index(ms(405), ReadRequestId(9));
    assert_eq!(
        leader.take_effects(),
        vec![Effect::ReadReady {
            request: ReadRequestId(9),
            read_index: 0
        }]
    );
}

#[test]
fn a_read_on_a_follower_is_rejected_with_the_leader() {
    let mut follower = core(S2, &[S1, S2, S3], &[]);
    follower.step(
        ms(1),
        S1,
        Message::Heartbeat {
            term: 1,
            commit: 0,
            read_round: 0,
        },
    );
    follower.take_effects();
    follower.read_index(ms(2), ReadRequestId(3));
    assert_eq!(
        follower.take_effects(),
        vec![Effect::ReadRejected {
            request: ReadRequestId(3),
            leader_hint: Some(S1)
        }]
    );
}

#[test]
fn check_quorum_deposes_a_leader_that_hears_from_nobody() {
    let mut leader = leader_of_three(&[]);
    leader.read_index(ms(405), ReadRequestId(1));
    // Heartbeats go out but nobody answers; at the check-quorum deadline it steps down.
    leader.tick(ms(404 + 300));
    let effects = leader.take_effects();
    assert_eq!(
        effects,
        vec![
            Effect::Observe(Observation::SteppedDown { term: 1 }),
            Effect::ReadRejected {
                request: ReadRequestId(1),
                leader_hint: None
            },
            Effect::SetTimer { at: ms(1104) },
        ]
    );
    assert_eq!(leader.role(), RoleName::Follower);
    let mut without = leader_of_three(&[RaftBug::NoPreVoteNoCheckQuorum]);
    without.tick(ms(404 + 300));
    assert!(without.is_leader(), "no CheckQuorum: leads on alone");
}

#[test]
fn a_stale_leader_learns_the_new_term_and_steps_down() {
    let mut leader = leader_of_three(&[]);
    leader.step(
        ms(410),
        S2,
        Message::AppendEntriesResponse {
            term: 5,
            outcome: AppendOutcome::Rejected {
                rejected_prev_index: 0,
                retry_hint: 0,
            },
        },
    );
    assert_eq!(
        leader.take_effects(),
        vec![
            Effect::Observe(Observation::SteppedDown { term: 1 }),
            Effect::Persist {
                id: PersistId(3),
                write: hard_state(5, None),
            },
            Effect::SetTimer { at: ms(810) },
        ]
    );
    leader.on_persisted(ms(411), PersistId(3));
    assert_eq!(
        leader.take_effects(),
        vec![Effect::Observe(Observation::TermPersisted { term: 5 })]
    );
}

#[test]
fn bug_names_round_trip() {
    for bug in RaftBug::ALL {
        assert_eq!(bug.name().parse::<RaftBug>(), Ok(bug));
    }
    assert!("raft.nope".parse::<RaftBug>().is_err());
}

// ----- snapshots and InstallSnapshot ------------------------------------------------------

fn snapshot(index: u64, term: u64, data: &'static str) -> Snapshot<&'static str> {
    Snapshot { index, term, data }
}

fn snapshot_write(snapshot: Snapshot<&'static str>) -> DurableWrite<&'static str, &'static str> {
    DurableWrite {
        snapshot: Some(snapshot),
        ..DurableWrite::default()
    }
}

/// s2 or s3 of {s1, s2, s3}, a follower in term 1 (s1's vote), restarted from `snapshot`
/// and `log`.
fn follower_from(
    id: NodeId,
    snapshot: Option<Snapshot<&'static str>>,
    log: Vec<Entry<&'static str>>,
) -> Core {
    let config = RaftConfig::new(id, vec![S1, S2, S3]);
    let jitter = ScriptedTimeouts::new([], Duration::from_millis(400));
    let hard = HardState {
        term: 1,
        voted_for: Some(S1),
    };
    let mut follower = RaftCore::restore(config, Box::new(jitter), ms(0), hard, snapshot, log);
    follower.take_effects();
    follower
}

#[test]
fn a_server_snapshots_once_the_threshold_is_applied_and_drops_the_log_prefix() {
    let mut leader = leader_with_committed_noop();
    leader.config.snapshot_threshold = Some(2);
    // One entry applied since the (empty) snapshot: not yet due.
    leader.propose(ms(410), "a").unwrap();
    leader.on_persisted(ms(411), PersistId(3));
    leader.take_effects();
    leader.step(
        ms(412),
        S2,
        Message::AppendEntriesResponse {
            term: 1,
            outcome: AppendOutcome::Accepted { match_index: 2 },
        },
    );
    assert_eq!(
        leader.take_effects(),
        vec![
            Effect::Apply {
                entry: command(2, 1, "a")
            },
            Effect::SnapshotDue { index: 2 },
        ]
    );
    // Not due twice while the application has not answered.
    leader.propose(ms(413), "b").unwrap();
    leader.on_persisted(ms(414), PersistId(4));
    leader.step(
        ms(415),
        S2,
        Message::AppendEntriesResponse {
            term: 1,
            outcome: AppendOutcome::Accepted { match_index: 3 },
        },
    );
    assert!(
        !leader
            .take_effects()
            .iter()
            .any(|effect| matches!(effect, Effect::SnapshotDue { .. }))
    );
    // A snapshot of what is not applied yet is refused.
    leader.compact(ms(416), 4, "too new");
    assert_eq!(leader.take_effects(), vec![]);
    assert_eq!(leader.log().snapshot_index(), 0);
    leader.compact(ms(417), 2, "a@2");
    assert_eq!(
        leader.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(5),
                write: snapshot_write(snapshot(2, 1, "a@2")),
            },
            Effect::Observe(Observation::SnapshotTaken { index: 2, term: 1 }),
        ]
    );
    assert_eq!(leader.log().snapshot_index(), 2);
    assert_eq!(leader.log().first_index(), 3);
    assert_eq!(leader.log().get(2), None, "compacted");
    assert_eq!(leader.log().get(3), Some(&command(3, 1, "b")));
    assert_eq!(leader.log().term_at(2), Some(1));
    assert_eq!(leader.snapshot(), Some(&snapshot(2, 1, "a@2")));
    // An older snapshot than the one held is ignored.
    leader.compact(ms(418), 1, "old");
    assert_eq!(leader.take_effects(), vec![]);
}

#[test]
fn a_restart_before_or_after_the_snapshot_write_is_durable_finds_a_whole_state() {
    // The snapshot write was lost in the crash: the old (empty) snapshot and the whole log.
    let log = vec![noop(1, 1), command(2, 1, "a"), command(3, 1, "b")];
    let before = follower_from(S2, None, log);
    assert_eq!(
        (before.log().snapshot_index(), before.log().last_index()),
        (0, 3)
    );
    assert_eq!((before.commit_index(), before.applied_index()), (0, 0));
    // It was durable: the snapshot and the entries after it; the state machine starts at the
    // snapshot (the driver hands it over), commit and apply from there.
    let mut after = follower_from(S2, Some(snapshot(2, 1, "a@2")), vec![command(3, 1, "b")]);
    assert_eq!(
        (after.log().snapshot_index(), after.log().last_index()),
        (2, 3)
    );
    assert_eq!((after.commit_index(), after.applied_index()), (2, 2));
    after.step(
        ms(5),
        S1,
        Message::Heartbeat {
            term: 1,
            commit: 3,
            read_round: 0,
        },
    );
    assert_eq!(
        after.take_effects(),
        vec![
            Effect::Send {
                to: S1,
                message: heartbeat_answer(0),
            },
            Effect::Apply {
                entry: command(3, 1, "b")
            },
            Effect::SetTimer { at: ms(405) },
        ]
    );
}

#[test]
fn a_leader_sends_its_snapshot_to_a_follower_behind_it_then_entries_after_it() {
    let mut leader = leader_with_committed_noop();
    leader.config.snapshot_threshold = Some(1);
    leader.propose(ms(410), "a").unwrap();
    leader.on_persisted(ms(411), PersistId(3));
    leader.step(
        ms(412),
        S2,
        Message::AppendEntriesResponse {
            term: 1,
            outcome: AppendOutcome::Accepted { match_index: 2 },
        },
    );
    leader.take_effects();
    leader.compact(ms(413), 2, "a@2");
    leader.take_effects();
    // s3 never answered; its next probe starts before the snapshot: it gets the snapshot.
    leader.step(ms(414), S3, heartbeat_answer(0));
    assert_eq!(
        leader.take_effects(),
        vec![Effect::Send {
            to: S3,
            message: Message::InstallSnapshot {
                term: 1,
                snapshot: snapshot(2, 1, "a@2"),
            },
        }]
    );
    // Installed: s3 matches through the snapshot and is streamed what follows it.
    leader.step(
        ms(415),
        S3,
        Message::AppendEntriesResponse {
            term: 1,
            outcome: AppendOutcome::Accepted { match_index: 2 },
        },
    );
    assert_eq!(leader.take_effects(), vec![]);
    leader.propose(ms(416), "b").unwrap();
    let sends: Vec<_> = leader
        .take_effects()
        .into_iter()
        .filter(|effect| matches!(effect, Effect::Send { to, .. } if *to == S3))
        .collect();
    assert_eq!(
        sends,
        vec![Effect::Send {
            to: S3,
            message: Message::AppendEntries {
                term: 1,
                prev_log_index: 2,
                prev_log_term: 1,
                entries: vec![command(3, 1, "b")],
                leader_commit: 2,
            },
        }]
    );
}

#[test]
fn a_follower_installs_a_snapshot_and_acknowledges_it_only_once_durable() {
    let mut follower = follower_from(S3, None, vec![noop(1, 1)]);
    let install = Message::InstallSnapshot {
        term: 1,
        snapshot: snapshot(3, 1, "c@3"),
    };
    follower.step(ms(5), S1, install.clone());
    let acknowledged = Message::AppendEntriesResponse {
        term: 1,
        outcome: AppendOutcome::Accepted { match_index: 3 },
    };
    assert_eq!(
        follower.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(1),
                write: snapshot_write(snapshot(3, 1, "c@3")),
            },
            Effect::RestoreSnapshot {
                snapshot: snapshot(3, 1, "c@3"),
            },
            Effect::SendAfterPersist {
                after: PersistId(1),
                to: S1,
                message: acknowledged.clone(),
            },
            Effect::SetTimer { at: ms(405) },
        ]
    );
    assert_eq!(
        (follower.log().snapshot_index(), follower.log().last_index()),
        (3, 3)
    );
    assert_eq!((follower.commit_index(), follower.applied_index()), (3, 3));
    // A crash before the write is durable: the acknowledgement was never sent, and the
    // restarted follower has its old log; the leader sends the snapshot again.
    let mut restarted = follower_from(S3, None, vec![noop(1, 1)]);
    assert_eq!(restarted.log().last_index(), 1);
    restarted.step(ms(5), S1, install.clone());
    assert!(
        restarted
            .take_effects()
            .contains(&Effect::SendAfterPersist {
                after: PersistId(1),
                to: S1,
                message: acknowledged.clone(),
            })
    );
    // Once durable, a restart finds the snapshot; a copy of it arriving again is only
    // acknowledged, and entries after it are appended.
    let mut durable = follower_from(S3, Some(snapshot(3, 1, "c@3")), vec![]);
    durable.step(ms(6), S1, install);
    assert_eq!(
        durable.take_effects(),
        vec![
            Effect::Send {
                to: S1,
                message: acknowledged,
            },
            Effect::SetTimer { at: ms(406) },
        ]
    );
    durable.step(
        ms(7),
        S1,
        Message::AppendEntries {
            term: 1,
            prev_log_index: 3,
            prev_log_term: 1,
            entries: vec![command(4, 1, "d")],
            leader_commit: 4,
        },
    );
    assert_eq!(
        durable.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(1),
                write: append(vec![command(4, 1, "d")]),
            },
            Effect::SendAfterPersist {
                after: PersistId(1),
                to: S1,
                message: Message::AppendEntriesResponse {
                    term: 1,
                    outcome: AppendOutcome::Accepted { match_index: 4 },
                },
            },
            Effect::Apply {
                entry: command(4, 1, "d")
            },
            Effect::SetTimer { at: ms(407) },
        ]
    );
}

#[test]
fn a_snapshot_keeps_the_entries_after_it_only_if_the_log_holds_its_entry() {
    let log = vec![noop(1, 1), command(2, 1, "a"), command(3, 1, "b")];
    // The log holds the snapshot's entry (2/1): entry 3 stays.
    let mut holds = follower_from(S2, None, log.clone());
    holds.step(
        ms(5),
        S1,
        Message::InstallSnapshot {
            term: 1,
            snapshot: snapshot(2, 1, "a@2"),
        },
    );
    assert_eq!(
        (holds.log().snapshot_index(), holds.log().last_index()),
        (2, 3)
    );
    assert_eq!(holds.log().get(3), Some(&command(3, 1, "b")));
    // A leader of term 2 whose entry 2 is of term 2: the whole log goes.
    let mut conflicts = follower_from(S2, None, log);
    conflicts.step(
        ms(5),
        S1,
        Message::InstallSnapshot {
            term: 2,
            snapshot: snapshot(2, 2, "x@2"),
        },
    );
    assert_eq!(
        (
            conflicts.log().snapshot_index(),
            conflicts.log().last_index()
        ),
        (2, 2)
    );
    assert_eq!(conflicts.log().last_term(), 2);
}

#[test]
fn an_append_that_starts_inside_the_snapshot_is_accepted_from_after_it() {
    let mut follower = follower_from(S2, Some(snapshot(3, 1, "c@3")), vec![]);
    follower.step(
        ms(5),
        S1,
        Message::AppendEntries {
            term: 1,
            prev_log_index: 1,
            prev_log_term: 1,
            entries: vec![command(2, 1, "a"), command(3, 1, "b"), command(4, 1, "d")],
            leader_commit: 3,
        },
    );
    assert_eq!(
        follower.take_effects(),
        vec![
            Effect::Persist {
                id: PersistId(1),
                write: append(vec![command(4, 1, "d")]),
            },
            Effect::SendAfterPersist {
                after: PersistId(1),
                to: S1,
                message: Message::AppendEntriesResponse {
                    term: 1,
                    outcome: AppendOutcome::Accepted { match_index: 4 },
                },
            },
            Effect::SetTimer { at: ms(405) },
        ]
    );
    assert_eq!(follower.log().last_index(), 4);
}

/// A restarted server learning the commit index hands out its whole log in one input: the
/// effects that follow the entries (the reply, the timer) fit in the room kept for them,
/// rather than doubling the buffer and copying every entry's effect once more.
#[test]
fn a_restarted_server_hands_out_its_log_without_regrowing_the_effects() {
    let config = RaftConfig::new(S2, vec![S1, S2, S3]);
    let jitter = ScriptedTimeouts::new([], Duration::from_millis(400));
    let log: Vec<_> = (1..=100).map(|index| command(index, 1, "x")).collect();
    let mut follower: Core = RaftCore::restore(
        config,
        Box::new(jitter),
        ms(0),
        HardState::default(),
        None,
        log,
    );
    follower.take_effects();
    follower.step(
        ms(5),
        S1,
        Message::AppendEntries {
            term: 1,
            prev_log_index: 100,
            prev_log_term: 1,
            entries: Vec::new(),
            leader_commit: 100,
        },
    );
    let effects = follower.take_effects();
    let applied = effects
        .iter()
        .filter(|effect| matches!(effect, Effect::Apply { .. }))
        .count();
    assert_eq!(applied, 100);
    assert!(effects.len() > applied, "a reply and a timer follow");
    assert!(
        effects.capacity() <= effects.len() + super::core::EFFECTS_AFTER_APPLIES,
        "{} effects in a buffer of {}",
        effects.len(),
        effects.capacity()
    );
}
