//! The leader's session tracker (ZooKeeper's `SessionTrackerImpl`), on the leader's local
//! clock.
//!
//! A new leader starts from the committed sessions with a fresh full timeout each
//! (ZooKeeper does the same): a session is never expired earlier than its timeout after
//! the leader took over, so a client that kept pinging another server is not cut off by a
//! leader change.
//!
//! It also knows which server each session is attached to (ZooKeeper's session owner), so
//! that a request forwarded by a server the client has since left is refused.

use super::txn::SessionId;
use sim::{NodeId, clock::LocalTime};
use std::{collections::BTreeMap, time::Duration};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SessionState {
    Live,
    /// A close (requested or expiry) is proposed; further requests are refused.
    Closing,
}

#[derive(Clone, Copy, Debug)]
struct Tracked {
    timeout: Duration,
    expires_at: LocalTime,
    state: SessionState,
    /// The server the session last attached through; `None` until one claims it (a new
    /// leader does not know where its sessions are attached).
    owner: Option<NodeId>,
}

/// What the leader knows of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionStatus {
    /// Live.
    Live,
    /// Its close is proposed but not committed: the session is not gone yet, and may not
    /// be (this leader may have been deposed without knowing).
    Closing,
    /// Not tracked: its close is committed (or it never existed).
    Gone,
}

/// Live sessions and when each expires unless touched.
#[derive(Clone, Debug, Default)]
pub struct SessionTracker {
    sessions: BTreeMap<SessionId, Tracked>,
}

impl SessionTracker {
    /// Tracks the committed sessions (id → timeout in ms), each with a full timeout from now.
    pub fn from_committed<'a>(
        sessions: impl IntoIterator<Item = (&'a SessionId, &'a u64)>,
        now: LocalTime,
    ) -> Self {
        let mut tracker = Self::default();
        for (&session, &timeout_ms) in sessions {
            tracker.add(session, timeout_ms, None, now);
        }
        tracker
    }

    /// Starts tracking a session, attached through `owner` if known.
    pub fn add(
        &mut self,
        session: SessionId,
        timeout_ms: u64,
        owner: Option<NodeId>,
        now: LocalTime,
    ) {
        let timeout = Duration::from_millis(timeout_ms);
        self.sessions.insert(
            session,
            Tracked {
                timeout,
                expires_at: now + timeout,
                state: SessionState::Live,
                owner,
            },
        );
    }

    /// The session (re)attached through `server` (ZooKeeper's `setOwner` on revalidation).
    pub fn set_owner(&mut self, session: SessionId, server: NodeId) {
        if let Some(tracked) = self.sessions.get_mut(&session) {
            tracked.owner = Some(server);
        }
    }

    /// Whether `server` may submit requests for the session: it owns it, or nobody does yet
    /// and it claims it (ZooKeeper's `checkSession(id, owner)`; a `false` here is its
    /// `SessionMovedException`). An unknown session is not refused here.
    pub fn check_owner(&mut self, session: SessionId, server: NodeId) -> bool {
        match self.sessions.get_mut(&session) {
            Some(tracked) => *tracked.owner.get_or_insert(server) == server,
            None => true,
        }
    }

    /// What the leader knows of a session.
    pub fn status(&self, session: SessionId) -> SessionStatus {
        match self.sessions.get(&session) {
            Some(tracked) if tracked.state == SessionState::Live => SessionStatus::Live,
            Some(_) => SessionStatus::Closing,
            None => SessionStatus::Gone,
        }
    }

    /// Whether the session is live (known and not closing).
    pub fn is_live(&self, session: SessionId) -> bool {
        self.sessions
            .get(&session)
            .is_some_and(|tracked| tracked.state == SessionState::Live)
    }

    /// Extends a live session's deadline; false if it is not live.
    pub fn touch(&mut self, session: SessionId, now: LocalTime) -> bool {
        match self.sessions.get_mut(&session) {
            Some(tracked) if tracked.state == SessionState::Live => {
                tracked.expires_at = tracked.expires_at.max(now + tracked.timeout);
                true
            }
            _ => false,
        }
    }

    /// Marks a session closing (its close is proposed).
    pub fn mark_closing(&mut self, session: SessionId) {
        if let Some(tracked) = self.sessions.get_mut(&session) {
            tracked.state = SessionState::Closing;
        }
    }

    /// Forgets a session (its close is committed).
    pub fn remove(&mut self, session: SessionId) {
        self.sessions.remove(&session);
    }

    /// Live sessions whose deadline has passed, in id order.
    pub fn expired(&self, now: LocalTime) -> Vec<SessionId> {
        self.sessions
            .iter()
            .filter(|(_, tracked)| tracked.state == SessionState::Live && now >= tracked.expires_at)
            .map(|(session, _)| *session)
            .collect()
    }

    /// The earliest deadline of a live session.
    pub fn next_expiry(&self) -> Option<LocalTime> {
        self.sessions
            .values()
            .filter(|tracked| tracked.state == SessionState::Live)
            .map(|tracked| tracked.expires_at)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_expire_unless_touched_and_a_new_tracker_starts_afresh() {
        let mut tracker = SessionTracker::default();
        tracker.add(7, 1_000, None, LocalTime::from_millis(0));
        tracker.add(9, 1_000, None, LocalTime::from_millis(0));
        assert!(tracker.touch(9, LocalTime::from_millis(900)));
        assert_eq!(
            tracker.expired(LocalTime::from_millis(999)),
            Vec::<u64>::new()
        );
        assert_eq!(tracker.expired(LocalTime::from_millis(1_000)), vec![7]);
        tracker.mark_closing(7);
        assert!(!tracker.is_live(7));
        assert_eq!(tracker.status(7), SessionStatus::Closing);
        assert_eq!(tracker.status(8), SessionStatus::Gone);
        assert!(!tracker.touch(7, LocalTime::from_millis(1_001)));
        assert_eq!(tracker.expired(LocalTime::from_millis(1_900)), vec![9]);
        // A new leader at local time 5 s: full timeouts from then.
        let committed = BTreeMap::from([(7u64, 1_000u64), (9, 2_000)]);
        let fresh = SessionTracker::from_committed(&committed, LocalTime::from_millis(5_000));
        assert_eq!(
            fresh.expired(LocalTime::from_millis(5_999)),
            Vec::<u64>::new()
        );
        assert_eq!(fresh.expired(LocalTime::from_millis(6_000)), vec![7]);
    }

    #[test]
    fn only_the_owning_server_may_submit_and_a_revalidation_moves_the_session() {
        let (s1, s2) = (NodeId::server(0), NodeId::server(1));
        let now = LocalTime::from_millis(0);
        let mut tracker = SessionTracker::default();
        tracker.add(7, 1_000, Some(s2), now);
        assert!(tracker.check_owner(7, s2));
        assert!(!tracker.check_owner(7, s1));
        // The client resumed its session through s1: s2's requests are refused from now on.
        tracker.set_owner(7, s1);
        assert!(tracker.check_owner(7, s1));
        assert!(!tracker.check_owner(7, s2));
        // A new leader knows no owners: the first server to submit claims the session.
        let committed = BTreeMap::from([(9u64, 1_000u64)]);
        let mut fresh = SessionTracker::from_committed(&committed, now);
        assert!(fresh.check_owner(9, s2));
        assert!(!fresh.check_owner(9, s1));
    }
}
