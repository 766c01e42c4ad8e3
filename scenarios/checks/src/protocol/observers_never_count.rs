//! An observer never leads and is never counted in a quorum (ZAB with observers).
//!
//! ZooKeeper's observers "do not take part in the vote"; "only the voting members … are
//! counted in a quorum" (ZooKeeper Observers Guide; `QuorumMaj.containsQuorum` counts voting
//! members only, `FastLeaderElection` ignores votes from and for non-voters, and `Leader`
//! adds a learner to an epoch, NEWLEADER or commit quorum only if `isParticipant`). An
//! observer counted in a quorum lets a minority of the voters decide, and an observer that
//! leads was elected by nobody: either breaks ZAB's quorum intersection.
//!
//! **Reads:** `ProtocolEvent::StartedObserving`, which an observer records each time it
//! starts, `BecameLeader`, and `QuorumCounted`, which an ensemble's leader records (when the
//! ensemble has observers) with every server it counted for a new epoch, the epoch's
//! acknowledgement, NEWLEADER and each commit. Each is a server's own claim about itself or
//! about the servers it counted, which is what the property is about: a leader that counted an
//! observer says so in its own record. A model that counted an observer without recording it
//! would hide from this check, which is why the ZAB safety sweeps judge the same runs with
//! the client-side checks too (linearizability, durability of acknowledged writes), which a
//! quorum without intersection breaks whatever was recorded.

use crate::{Checked, Violation};
use sim::{
    NodeId,
    history::{Event, History, ProtocolEvent, QuorumStage},
    time::SimTime,
};
use std::{collections::BTreeSet, fmt};

/// How an observer was treated as a voter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountedAs {
    /// It became leader of `term`.
    Leader {
        /// The term or epoch.
        term: u64,
    },
    /// `leader` counted it in a quorum of `term`.
    InQuorum {
        /// The server that counted it.
        leader: NodeId,
        /// The term or epoch.
        term: u64,
        /// What the quorum was for.
        stage: QuorumStage,
        /// The zxid committed, or the leader's last logged one (see `QuorumCounted`).
        index: u64,
    },
}

/// An observer led, or was counted in a quorum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObserverCounted {
    /// The observer.
    pub observer: NodeId,
    /// How.
    pub counted_as: CountedAs,
    /// When it was recorded.
    pub at: SimTime,
}

impl fmt::Display for ObserverCounted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.counted_as {
            CountedAs::Leader { term } => write!(
                f,
                "observer {} became leader of epoch {term} at {}",
                self.observer, self.at
            ),
            CountedAs::InQuorum {
                leader,
                term,
                stage,
                index,
            } => write!(
                f,
                "{leader} counted observer {} in its {stage:?} quorum of epoch {term} \
                 (zxid {index:#x}) at {}",
                self.observer, self.at
            ),
        }
    }
}

impl Violation for ObserverCounted {
    fn property(&self) -> &'static str {
        "observers never vote"
    }

    fn reference(&self) -> &'static str {
        "ZooKeeper Observers Guide; QuorumMaj counts voting members only; Leader.isParticipant"
    }

    fn at(&self) -> Option<SimTime> {
        Some(self.at)
    }
}

/// Every leadership of, and every quorum count including, a server that recorded
/// `StartedObserving` at any time in the run (a server's role is fixed by the ensemble's
/// configuration, so an observer's record covers the records before it too).
pub fn check(history: &History) -> Checked<ObserverCounted> {
    let observers: BTreeSet<NodeId> = history
        .records()
        .iter()
        .filter(|record| {
            matches!(
                record.event,
                Event::Protocol(ProtocolEvent::StartedObserving)
            )
        })
        .filter_map(|record| record.node)
        .collect();
    // Without observers there is nothing to judge: the check is vacuous, not passed.
    if observers.is_empty() {
        return Checked::new(Vec::new(), 0);
    }
    let mut violations = Vec::new();
    let mut judged = 0;
    for record in history.records() {
        let (Some(node), Event::Protocol(event)) = (record.node, &record.event) else {
            continue;
        };
        if matches!(
            event,
            ProtocolEvent::BecameLeader { .. } | ProtocolEvent::QuorumCounted { .. }
        ) {
            judged += 1;
        }
        match event {
            ProtocolEvent::BecameLeader { term } if observers.contains(&node) => {
                violations.push(ObserverCounted {
                    observer: node,
                    counted_as: CountedAs::Leader { term: *term },
                    at: record.at,
                });
            }
            ProtocolEvent::QuorumCounted {
                term,
                stage,
                index,
                servers,
            } => {
                for &server in servers.iter().filter(|s| observers.contains(s)) {
                    violations.push(ObserverCounted {
                        observer: server,
                        counted_as: CountedAs::InQuorum {
                            leader: node,
                            term: *term,
                            stage: *stage,
                            index: *index,
                        },
                        at: record.at,
                    });
                }
            }
            _ => {}
        }
    }
    Checked::new(violations, judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_history::record;

    const S1: NodeId = NodeId::server(0);
    const S2: NodeId = NodeId::server(1);
    const S3: NodeId = NodeId::server(2);
    const S4: NodeId = NodeId::server(3);

    fn protocol(ms: u64, node: NodeId, event: ProtocolEvent) -> sim::history::Record {
        record(ms, node, Event::Protocol(event))
    }

    fn counted(
        ms: u64,
        leader: NodeId,
        stage: QuorumStage,
        servers: &[NodeId],
    ) -> sim::history::Record {
        protocol(
            ms,
            leader,
            ProtocolEvent::QuorumCounted {
                term: 1,
                stage,
                index: 1 << 32 | 1,
                servers: servers.to_vec(),
            },
        )
    }

    /// s4 observes; s3 leads and counts voters only: clean.
    #[test]
    fn quorums_of_voters_pass() {
        let history = History::from_records(vec![
            protocol(0, S4, ProtocolEvent::StartedObserving),
            counted(10, S3, QuorumStage::NewEpoch, &[S1, S3]),
            counted(11, S3, QuorumStage::NewLeader, &[S2, S3]),
            protocol(12, S3, ProtocolEvent::BecameLeader { term: 1 }),
            counted(20, S3, QuorumStage::Commit, &[S1, S2, S3]),
        ]);
        assert_eq!(check(&history), vec![]);
    }

    /// A hand-built bad history: s3 counts observer s4 towards a commit, and later s4 leads.
    #[test]
    fn an_observer_counted_or_leading_is_a_violation() {
        let history = History::from_records(vec![
            protocol(0, S4, ProtocolEvent::StartedObserving),
            counted(20, S3, QuorumStage::Commit, &[S3, S4]),
            protocol(30, S4, ProtocolEvent::BecameLeader { term: 2 }),
        ]);
        let violations = check(&history);
        assert_eq!(
            violations,
            vec![
                ObserverCounted {
                    observer: S4,
                    counted_as: CountedAs::InQuorum {
                        leader: S3,
                        term: 1,
                        stage: QuorumStage::Commit,
                        index: 1 << 32 | 1,
                    },
                    at: SimTime::from_millis(20),
                },
                ObserverCounted {
                    observer: S4,
                    counted_as: CountedAs::Leader { term: 2 },
                    at: SimTime::from_millis(30),
                },
            ]
        );
        assert_eq!(violations[0].at(), Some(SimTime::from_millis(20)));
        assert!(
            violations[1]
                .to_string()
                .contains("observer s4 became leader")
        );
    }

    /// Without any observer, nothing is judged (a voter's leadership is no violation).
    #[test]
    fn voters_only_history_has_nothing_to_judge() {
        let history = History::from_records(vec![
            counted(10, S3, QuorumStage::AckEpoch, &[S3, S4]),
            protocol(12, S4, ProtocolEvent::BecameLeader { term: 1 }),
        ]);
        assert_eq!(check(&history), vec![]);
    }
}
