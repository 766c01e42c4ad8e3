//! Global simulated time: the ground truth that histories are stamped with.
//!
//! Node programs should not read it: they see their own [`crate::clock::Clock`], which
//! may be offset and drifting. Checkers use global time to decide what happened when
//! (for example, whether two lock holders overlapped).

use madsim::time::{Instant, Sleep, TimeHandle};
use serde::{Deserialize, Serialize};
use std::{fmt, ops::Add, pin::Pin, time::Duration};

/// Nanoseconds of simulated time since the world started.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SimTime(u64);

impl SimTime {
    /// The world's start.
    pub const ZERO: SimTime = SimTime(0);

    /// A time `nanos` nanoseconds after the start.
    pub const fn from_nanos(nanos: u64) -> Self {
        Self(nanos)
    }

    /// A time `millis` milliseconds after the start.
    pub const fn from_millis(millis: u64) -> Self {
        Self(millis * 1_000_000)
    }

    /// Nanoseconds since the start.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Milliseconds since the start (truncated).
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }

    /// How long after `earlier` this is (zero if it is not later).
    pub fn saturating_duration_since(self, earlier: SimTime) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for SimTime {
    type Output = SimTime;

    fn add(self, duration: Duration) -> SimTime {
        SimTime(self.0.saturating_add(duration_nanos(duration)))
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:06}s",
            self.0 / 1_000_000_000,
            (self.0 / 1_000) % 1_000_000
        )
    }
}

impl fmt::Debug for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The current global simulated time. Only valid inside a running world.
pub fn now() -> SimTime {
    SimTime(duration_nanos(TimeHandle::current().elapsed()))
}

/// Sleeps for `duration` of global simulated time (no 1 ms minimum, unlike madsim's `sleep`).
pub fn sleep(duration: Duration) -> Sleep {
    let handle = TimeHandle::current();
    let deadline = handle.now_instant() + duration;
    exact_sleep_until(&handle, deadline)
}

/// madsim's `sleep_until` rounds deadlines up to at least 1 ms from now; network latencies
/// and disk syncs can be shorter, so reset the deadline to the exact instant.
pub(crate) fn exact_sleep_until(handle: &TimeHandle, deadline: Instant) -> Sleep {
    let mut sleep = handle.sleep_until(deadline);
    Pin::new(&mut sleep).reset(deadline);
    sleep
}

/// Nanoseconds of simulated time since the world started, as `handle` reads them.
pub(crate) fn now_nanos(handle: &TimeHandle) -> u64 {
    duration_nanos(handle.elapsed())
}

/// `duration` in nanoseconds, saturating (in 64 bits: it runs on every message).
pub(crate) fn duration_nanos(duration: Duration) -> u64 {
    duration
        .as_secs()
        .checked_mul(1_000_000_000)
        .and_then(|nanos| nanos.checked_add(u64::from(duration.subsec_nanos())))
        .unwrap_or(u64::MAX)
}

/// Runs `future` for at most `limit` of global simulated time; `Err` if the limit passed
/// first (the future is dropped).
pub async fn timeout<F: std::future::Future>(
    limit: Duration,
    future: F,
) -> Result<F::Output, madsim::time::error::Elapsed> {
    madsim::time::timeout(limit, future).await
}
