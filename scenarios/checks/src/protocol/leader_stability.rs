//! Liveness: a healthy leader is not deposed again and again.
//!
//! With PreVote and CheckQuorum, a server that was cut off and comes back cannot force an
//! election while the leader still has a quorum (Raft thesis §9.6). Without them, a
//! rejoining node with a higher term deposes a healthy leader every time a flapping link
//! lets it through (etcd-io/etcd#8499, #9333; Cloudflare's 2020-11-02 incident report).
//! The check counts elections (`BecameLeader`) in a window against a bound.
//!
//! **Reads:** `ProtocolEvent::BecameLeader`, recorded by each server's driver when it takes
//! leadership. The property is about elections happening, and a leader that does not announce
//! itself cannot serve clients (the client-side checks would see that); counting the
//! announcements is therefore a lower bound on disruption.

use crate::{Checked, Violation};
use sim::{
    NodeId,
    history::{Event, History, ProtocolEvent},
    time::SimTime,
};
use std::fmt;

/// Too many elections in the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderChurn {
    /// Window start.
    pub from: SimTime,
    /// Window end.
    pub to: SimTime,
    /// The bound.
    pub max_elections: usize,
    /// Every election in the window: who, which term, when.
    pub elections: Vec<(NodeId, u64, SimTime)>,
}

impl fmt::Display for LeaderChurn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} elections between {} and {} (at most {} allowed):",
            self.elections.len(),
            self.from,
            self.to,
            self.max_elections
        )?;
        for (node, term, at) in &self.elections {
            write!(f, " {node} term {term} at {at};")?;
        }
        Ok(())
    }
}

impl Violation for LeaderChurn {
    fn property(&self) -> &'static str {
        "leader stability"
    }

    fn reference(&self) -> &'static str {
        "Raft thesis §9.6 (PreVote, CheckQuorum); etcd-io/etcd#8499, #9333; Cloudflare 2020-11-02"
    }

    fn at(&self) -> Option<SimTime> {
        // The election past the bound.
        self.elections.get(self.max_elections).map(|(_, _, at)| *at)
    }
}

/// A violation if more than `max_elections` leaders were elected in `[from, to]`.
pub fn check(
    history: &History,
    from: SimTime,
    to: SimTime,
    max_elections: usize,
) -> Checked<LeaderChurn> {
    let elections: Vec<(NodeId, u64, SimTime)> = history
        .records()
        .iter()
        .filter(|record| record.at >= from && record.at <= to)
        .filter_map(|record| match (&record.event, record.node) {
            (Event::Protocol(ProtocolEvent::BecameLeader { term }), Some(node)) => {
                Some((node, *term, record.at))
            }
            _ => None,
        })
        .collect();
    // The window is judged once a leader was elected at all: a stable cluster has no
    // election in it and that is what passing means, not a lack of evidence.
    let judged = history
        .records()
        .iter()
        .filter(|record| {
            matches!(
                record.event,
                Event::Protocol(ProtocolEvent::BecameLeader { .. })
            )
        })
        .count() as u64;
    let churn = (elections.len() > max_elections).then_some(LeaderChurn {
        from,
        to,
        max_elections,
        elections,
    });
    Checked::new(churn.into_iter().collect(), judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::history::Record;

    #[test]
    fn elections_beyond_the_bound_are_churn() {
        let elected = |at_ms, term| Record {
            at: SimTime::from_millis(at_ms),
            node: Some(NodeId::server(0)),
            event: Event::Protocol(ProtocolEvent::BecameLeader { term }),
        };
        let history = History::from_records(vec![elected(10, 1), elected(500, 2), elected(900, 3)]);
        let window = |from, to| (SimTime::from_millis(from), SimTime::from_millis(to));
        let (from, to) = window(0, 1_000);
        assert_eq!(check(&history, from, to, 2)[0].elections.len(), 3);
        let (from, to) = window(100, 1_000);
        assert!(check(&history, from, to, 2).is_empty());
    }
}
