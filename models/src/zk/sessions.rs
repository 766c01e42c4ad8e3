//! The leader's session tracker (ZooKeeper's `SessionTrackerImpl`), on the leader's local
//! clock.
//!
//! A new leader starts from the committed sessions with a fresh full timeout each
//! (ZooKeeper does the same): a session is never expired earlier than its timeout after
//! the leader took over, so a client that kept pinging another server is not cut off by a
//! leader change.

use super::txn::SessionId;
use sim::clock::LocalTime;
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
            tracker.add(session, timeout_ms, now);
        }
        tracker
    }

    /// Starts tracking a session.
    pub fn add(&mut self, session: SessionId, timeout_ms: u64, now: LocalTime) {
        let timeout = Duration::from_millis(timeout_ms);
        self.sessions.insert(
            session,
            Tracked {
                timeout,
                expires_at: now + timeout,
                state: SessionState::Live,
            },
        );
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
        tracker.add(7, 1_000, LocalTime::from_millis(0));
        tracker.add(9, 1_000, LocalTime::from_millis(0));
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
}
