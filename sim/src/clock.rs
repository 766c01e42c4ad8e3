//! Local clocks: every node reads simulated time through its own offset and drift.
//!
//! `local = anchor_local + (global - anchor_global) × (1 + drift_ppm / 10⁶)`.
//!
//! A clock step or drift change re-anchors the clock at the current instant and wakes every
//! timer sleeping on it, so that a timer set for local time T fires when the *local* clock
//! reaches T, however the clock was moved in between. Timers of a paused node do not run
//! while it is paused (madsim parks its tasks) and fire as soon as it resumes.

use crate::{shared::Shared, time::duration_nanos};
use madsim::time::{Sleep, TimeHandle};
use serde::{Deserialize, Serialize};
use std::{
    collections::BTreeMap,
    fmt,
    future::Future,
    ops::{Add, Sub},
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, Waker},
    time::Duration,
};

/// A reading of a node's local clock: nanoseconds since that clock's epoch.
///
/// Readings of different nodes are not comparable; that is the point.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LocalTime(u64);

impl LocalTime {
    /// A reading of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: u64) -> Self {
        Self(nanos)
    }

    /// A reading of `millis` milliseconds.
    pub const fn from_millis(millis: u64) -> Self {
        Self(millis * 1_000_000)
    }

    /// Nanoseconds since the clock's epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// How long after `earlier` this is (zero if it is not later).
    pub fn saturating_duration_since(self, earlier: LocalTime) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for LocalTime {
    type Output = LocalTime;

    fn add(self, duration: Duration) -> LocalTime {
        LocalTime(self.0.saturating_add(duration_nanos(duration)))
    }
}

impl Sub<LocalTime> for LocalTime {
    type Output = Duration;

    /// Saturating: a reading before `earlier` gives zero.
    fn sub(self, earlier: LocalTime) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl fmt::Display for LocalTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:06}s(local)",
            self.0 / 1_000_000_000,
            (self.0 / 1_000) % 1_000_000
        )
    }
}

impl fmt::Debug for LocalTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The largest drift a clock may be given: ±50%.
pub const MAX_DRIFT_PPM: i32 = 500_000;

/// A node's local clock. Cloning gives another handle to the same clock.
#[derive(Clone)]
pub struct Clock {
    state: Arc<Shared<ClockState>>,
    time: TimeHandle,
}

struct ClockState {
    anchor_global_nanos: u64,
    anchor_local_nanos: u64,
    drift_ppm: i32,
    /// Bumped on every step or drift change; sleepers recompute their deadline.
    generation: u64,
    next_sleeper_id: u64,
    sleepers: BTreeMap<u64, Waker>,
}

impl ClockState {
    /// Local nanoseconds per million global ones, if positive (always, within
    /// `MAX_DRIFT_PPM`; otherwise the 128-bit arithmetic below decides, as it always did).
    fn rate(&self) -> Option<u64> {
        u64::try_from(1_000_000 + i64::from(self.drift_ppm))
            .ok()
            .filter(|rate| *rate > 0)
    }

    /// The local reading at `global_nanos`.
    ///
    /// Every node reads its clock on every message, so the common cases avoid 128-bit
    /// division (a library call): no drift at all, or a product that fits in 64 bits. Each
    /// gives exactly the 128-bit result (the rate is positive, so the quotient is a floor in
    /// both).
    fn local_at(&self, global_nanos: u64) -> u64 {
        let elapsed = global_nanos.saturating_sub(self.anchor_global_nanos);
        if self.drift_ppm == 0 {
            return self.anchor_local_nanos.saturating_add(elapsed);
        }
        if let Some(product) = self.rate().and_then(|rate| elapsed.checked_mul(rate)) {
            return self.anchor_local_nanos.saturating_add(product / 1_000_000);
        }
        let scaled = i128::from(elapsed) * i128::from(1_000_000 + self.drift_ppm) / 1_000_000;
        (i128::from(self.anchor_local_nanos) + scaled).clamp(0, i128::from(u64::MAX)) as u64
    }

    /// The earliest global time at which the local clock reads at least `local_nanos`.
    ///
    /// As in [`Self::local_at`], the common cases stay in 64 bits with the same result.
    fn global_for(&self, local_nanos: u64) -> u64 {
        if local_nanos <= self.anchor_local_nanos {
            return self.anchor_global_nanos;
        }
        let local_elapsed = local_nanos - self.anchor_local_nanos;
        if self.drift_ppm == 0 {
            // ⌈x·10⁶ / 10⁶⌉ = x.
            return self.anchor_global_nanos.saturating_add(local_elapsed);
        }
        if let Some(rate) = self.rate()
            && let Some(numerator) = local_elapsed
                .checked_mul(1_000_000)
                .and_then(|product| product.checked_add(rate - 1))
        {
            return self.anchor_global_nanos.saturating_add(numerator / rate);
        }
        let rate = i128::from(1_000_000 + self.drift_ppm);
        let global_elapsed = (i128::from(local_elapsed) * 1_000_000 + rate - 1) / rate;
        (i128::from(self.anchor_global_nanos) + global_elapsed).min(i128::from(u64::MAX)) as u64
    }

    fn reanchor(&mut self, global_nanos: u64) {
        self.anchor_local_nanos = self.local_at(global_nanos);
        self.anchor_global_nanos = global_nanos;
    }
}

impl Clock {
    /// A clock that reads `initial_offset` ahead of global time and drifts by `drift_ppm`.
    pub(crate) fn new(initial_offset: Duration, drift_ppm: i32) -> Self {
        let time = TimeHandle::current();
        let global = duration_nanos(time.elapsed());
        Self {
            state: Arc::new(Shared::new(ClockState {
                anchor_global_nanos: global,
                anchor_local_nanos: global.saturating_add(duration_nanos(initial_offset)),
                drift_ppm,
                generation: 0,
                next_sleeper_id: 0,
                sleepers: BTreeMap::new(),
            })),
            time,
        }
    }

    fn global_nanos(&self) -> u64 {
        duration_nanos(self.time.elapsed())
    }

    /// The local time now.
    pub fn now(&self) -> LocalTime {
        let global = self.global_nanos();
        LocalTime(self.state.lock().local_at(global))
    }

    /// The current drift, in parts per million (positive: the clock runs fast).
    pub fn drift_ppm(&self) -> i32 {
        self.state.lock().drift_ppm
    }

    /// Sleeps until the local clock reads at least `deadline`.
    pub fn sleep_until(&self, deadline: LocalTime) -> LocalSleep {
        let id = {
            let mut state = self.state.lock();
            state.next_sleeper_id += 1;
            state.next_sleeper_id
        };
        LocalSleep {
            clock: self.clone(),
            deadline,
            id,
            armed: None,
            sleep: None,
        }
    }

    /// Sleeps for `duration` of local time.
    pub fn sleep(&self, duration: Duration) -> LocalSleep {
        self.sleep_until(self.now() + duration)
    }

    /// Runs `future` with a deadline `duration` away on the local clock.
    pub async fn timeout<F: Future>(
        &self,
        duration: Duration,
        future: F,
    ) -> Result<F::Output, Elapsed> {
        use futures_util::future::{Either, select};
        let sleep = self.sleep(duration);
        let future = std::pin::pin!(future);
        match select(future, sleep).await {
            Either::Left((output, _)) => Ok(output),
            Either::Right(((), _)) => Err(Elapsed),
        }
    }

    /// Moves the clock by `delta_nanos` (negative: backwards; saturates at zero).
    pub(crate) fn step(&self, delta_nanos: i64) {
        let global = self.global_nanos();
        let sleepers = {
            let mut state = self.state.lock();
            state.reanchor(global);
            state.anchor_local_nanos = state.anchor_local_nanos.saturating_add_signed(delta_nanos);
            state.generation += 1;
            std::mem::take(&mut state.sleepers)
        };
        sleepers.into_values().for_each(Waker::wake);
    }

    /// Sets the drift rate from now on.
    pub(crate) fn set_drift(&self, drift_ppm: i32) {
        let global = self.global_nanos();
        let sleepers = {
            let mut state = self.state.lock();
            state.reanchor(global);
            state.drift_ppm = drift_ppm;
            state.generation += 1;
            std::mem::take(&mut state.sleepers)
        };
        sleepers.into_values().for_each(Waker::wake);
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Clock")
            .field("now", &self.now())
            .field("drift_ppm", &self.drift_ppm())
            .finish()
    }
}

/// A local-clock deadline passed before the future completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed;

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// Future returned by [`Clock::sleep_until`] and [`Clock::sleep`].
pub struct LocalSleep {
    clock: Clock,
    deadline: LocalTime,
    id: u64,
    /// The clock generation and the task of the madsim timer entry added last; `None` until
    /// the first poll and again after [`LocalSleep::reset`].
    armed: Option<(u64, Waker)>,
    /// Reset to each global deadline and polled to add its timer entry (created at the
    /// first), rather than a new madsim sleep per deadline.
    sleep: Option<Sleep>,
}

impl LocalSleep {
    /// The local time this sleep waits for.
    pub fn deadline(&self) -> LocalTime {
        self.deadline
    }

    /// Waits for `deadline` instead, as a new [`Clock::sleep_until`] would.
    ///
    /// It behaves exactly like dropping this sleep and creating a new one (the timer entry
    /// already added still fires, as madsim cannot take it back; the next poll adds one for
    /// the new deadline; a clock step wakes it in the order of a new sleep), without the
    /// clock handle that a new one clones.
    pub fn reset(&mut self, deadline: LocalTime) {
        let mut state = self.clock.state.lock();
        state.sleepers.remove(&self.id);
        state.next_sleeper_id += 1;
        self.id = state.next_sleeper_id;
        self.deadline = deadline;
        self.armed = None;
    }
}

impl Future for LocalSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let global = this.clock.global_nanos();
        let mut state = this.clock.state.lock();
        if state.local_at(global) >= this.deadline.0 {
            state.sleepers.remove(&this.id);
            return Poll::Ready(());
        }
        // Re-arm only if the clock moved or the task changed: madsim adds a timer entry on
        // every poll of its `Sleep`, and a server loop polls its timer on every message.
        let rearm = match &this.armed {
            Some((generation, waker)) => {
                *generation != state.generation || !waker.will_wake(cx.waker())
            }
            None => true,
        };
        if rearm {
            let deadline_nanos = state.global_for(this.deadline.0);
            let deadline = this.clock.time.now_instant()
                + Duration::from_nanos(deadline_nanos.saturating_sub(global));
            let sleep = this
                .sleep
                .get_or_insert_with(|| this.clock.time.sleep_until(deadline));
            let mut sleep = Pin::new(sleep);
            // Exact: madsim's `sleep_until` rounds a deadline up to at least 1 ms from now.
            sleep.as_mut().reset(deadline);
            // Adds the madsim timer entry with this task's waker.
            let _ = sleep.poll(cx);
            this.armed = Some((state.generation, cx.waker().clone()));
            state.sleepers.insert(this.id, cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for LocalSleep {
    fn drop(&mut self) {
        self.clock.state.lock().sleepers.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The conversions as they were written first, all in 128 bits: the 64-bit shortcuts
    /// must give the same readings, or runs would change.
    fn local_at_128(state: &ClockState, global_nanos: u64) -> u64 {
        let elapsed = i128::from(global_nanos.saturating_sub(state.anchor_global_nanos));
        let scaled = elapsed * i128::from(1_000_000 + state.drift_ppm) / 1_000_000;
        (i128::from(state.anchor_local_nanos) + scaled).clamp(0, i128::from(u64::MAX)) as u64
    }

    fn global_for_128(state: &ClockState, local_nanos: u64) -> u64 {
        if local_nanos <= state.anchor_local_nanos {
            return state.anchor_global_nanos;
        }
        let rate = i128::from(1_000_000 + state.drift_ppm);
        let local_elapsed = i128::from(local_nanos - state.anchor_local_nanos);
        let global_elapsed = (local_elapsed * 1_000_000 + rate - 1) / rate;
        (i128::from(state.anchor_global_nanos) + global_elapsed).min(i128::from(u64::MAX)) as u64
    }

    fn state(anchor_global_nanos: u64, anchor_local_nanos: u64, drift_ppm: i32) -> ClockState {
        ClockState {
            anchor_global_nanos,
            anchor_local_nanos,
            drift_ppm,
            generation: 0,
            next_sleeper_id: 0,
            sleepers: BTreeMap::new(),
        }
    }

    /// Anchors and readings near zero, in the range runs use, and near `u64::MAX`, where
    /// the 64-bit products overflow and saturation decides.
    fn nanos() -> impl Strategy<Value = u64> {
        prop_oneof![
            0..1_000_000_000u64,
            0..10_000_000_000_000u64,
            u64::MAX - 10_000_000_000_000..=u64::MAX,
            any::<u64>(),
        ]
    }

    fn drift() -> impl Strategy<Value = i32> {
        prop_oneof![
            Just(0),
            Just(MAX_DRIFT_PPM),
            Just(-MAX_DRIFT_PPM),
            -MAX_DRIFT_PPM..=MAX_DRIFT_PPM,
        ]
    }

    proptest! {
        #[test]
        fn readings_are_those_of_128_bit_arithmetic(
            anchor_global in nanos(),
            anchor_local in nanos(),
            drift_ppm in drift(),
            at in nanos(),
        ) {
            let state = state(anchor_global, anchor_local, drift_ppm);
            prop_assert_eq!(state.local_at(at), local_at_128(&state, at));
            prop_assert_eq!(state.global_for(at), global_for_128(&state, at));
        }
    }
}
