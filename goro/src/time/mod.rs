//! Time: sleeping, timeouts, timers and tickers, on per-P timer heaps.
//!
//! The API is Go's `time` package in async Rust: [`sleep`], [`sleep_until`],
//! [`timeout`], [`after`], [`Timer`] (with a channel, or [`after_func`]'s
//! callback) and [`Ticker`]. A timer lives on a per-P 4-ary heap and is
//! fired by the scheduler loop of that P (seed 001; see `timer.rs` for the
//! state machine and `sched/timer/check.rs` for how the scheduler runs them);
//! a timer with a channel is on a heap only while a task waits on the
//! channel, and is otherwise run by its receivers (Go 1.23).
//!
//! Go's rules hold:
//!
//! * a zero or past duration fires at once; a duration too large to
//!   represent saturates to "never" instead of panicking;
//! * after [`Timer::stop`] or [`Timer::reset`] returns, no stale value is
//!   received from the timer's channel (Go 1.23);
//! * a [`Ticker`] drops ticks for a slow reader instead of queueing them,
//!   and `Ticker::new(Duration::ZERO)` panics;
//! * dropping an [`after_func`] timer's handle does not stop it (stop it,
//!   or let it fire); a channel timer or ticker stops once its handle and
//!   every clone of its receiver are gone (nobody could see it fire), and
//!   dropping a [`Sleep`] stops its timer.
//!
//! Everything here needs a goro runtime: call it from a task or inside
//! `Runtime::block_on`; elsewhere it panics with a message saying so.

mod ticker;
// loom models of the timer state machine with a timer channel (`sched/timer/`
// cannot name `chan`, so they live here, above both).
#[cfg(all(test, loom))]
mod loom_timer;

pub use crate::sched::timer::sleep::{sleep, sleep_until, timeout, Elapsed, Sleep, Timeout};
pub use ticker::Ticker;

use crate::chan::{self, Receiver};
use crate::sched::timer::check::arm_timer;
use crate::sched::timer::clock;
use crate::sched::timer::sleep::with_runtime;
use crate::sched::timer::{Action, Callback, TimerInner};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The current time (Go's `time.Now`): `Instant::now()`, except inside a
/// `goro::sim` bubble, where it is the bubble's virtual clock.
///
/// ```
/// use std::time::Duration;
/// let r = goro::sim::Builder::new().seed(3).run(async {
///     let t0 = goro::time::now();
///     goro::time::sleep(Duration::from_secs(60)).await;
///     goro::time::now() - t0
/// });
/// assert_eq!(r.unwrap(), Duration::from_secs(60));
/// ```
pub fn now() -> Instant {
    clock::instant_of(clock::now())
}

/// A single event in the future: a value on [`Timer::rx`] (or a call of
/// [`after_func`]'s function) when it fires. Go's `time.Timer`.
///
/// ```
/// use std::time::Duration;
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let t = goro::time::Timer::new(Duration::from_millis(1));
///     let fired_at = t.rx().recv().await.unwrap();
///     assert!(fired_at.elapsed() < Duration::from_secs(5));
///     assert!(!t.stop(), "already fired");
/// });
/// ```
pub struct Timer {
    inner: Arc<TimerInner>,
    /// The channel (Go's `C`); for `after_func` timers made on first use, a
    /// channel nothing is ever sent on (Go's nil `C` blocks forever).
    rx: OnceLock<Receiver<Instant>>,
}

impl Timer {
    /// A timer that sends the current time on [`Timer::rx`] after `d`.
    ///
    /// Until a task waits on [`Timer::rx`] the timer is just a deadline
    /// (Go 1.23): it takes no place in any timer heap.
    ///
    /// # Panics
    /// Outside a goro runtime.
    #[must_use = "a channel timer stops when its handle and receivers are dropped; wait on `rx()`"]
    pub fn new(d: Duration) -> Timer {
        with_runtime("Timer::new", |s| {
            let inner = TimerInner::for_chan(s.arm_queue().0.clone());
            let rx = chan::timer_receiver(Some(inner.clone()));
            s.arm_timer(&inner, clock::when_after(d), 0);
            Timer {
                inner,
                rx: OnceLock::from(rx),
            }
        })
    }

    /// The channel on which the timer delivers its fire time (Go's `C`).
    /// For [`after_func`] timers it never receives anything.
    pub fn rx(&self) -> &Receiver<Instant> {
        self.rx.get_or_init(|| chan::timer_receiver(None))
    }

    /// Prevents the timer from firing. Returns `true` if the call stopped
    /// it, `false` if it had already fired (and its value was received, or
    /// its callback started) or been stopped. As in Go 1.23, a deadline that
    /// passed with nobody receiving counts as not yet delivered: `stop`
    /// discards it and returns `true`. After it returns, no stale value is
    /// received from [`Timer::rx`].
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = goro::Runtime::builder().procs(1).build().unwrap();
    /// rt.block_on(async {
    ///     let t = goro::time::Timer::new(Duration::from_millis(1));
    ///     goro::time::sleep(Duration::from_millis(5)).await;
    ///     assert!(t.stop(), "the undelivered value is discarded");
    ///     assert!(t.rx().try_recv().is_err());
    /// });
    /// ```
    pub fn stop(&self) -> bool {
        arm_timer(&self.inner, 0, 0)
    }

    /// Re-arms the timer to fire `d` from now. Returns whether it was
    /// pending before the call (as [`Timer::stop`] counts it). After it
    /// returns, no value from the previous arming is received.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = goro::Runtime::builder().procs(1).build().unwrap();
    /// rt.block_on(async {
    ///     let t = goro::time::Timer::new(Duration::from_secs(3600));
    ///     assert!(t.reset(Duration::from_millis(1)));
    ///     t.rx().recv().await.unwrap();
    /// });
    /// ```
    pub fn reset(&self, d: Duration) -> bool {
        arm_timer(&self.inner, clock::when_after(d), 0)
    }
}

impl std::fmt::Debug for Timer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timer")
            .field("armed", &self.inner.is_armed())
            .finish()
    }
}

/// Waits `d`, then sends the current time on the returned channel (Go's
/// `time.After`). The timer cannot be stopped; use [`Timer`] for that.
///
/// ```
/// use std::time::Duration;
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let (_tx, never) = goro::chan::bounded::<u8>(0);
///     let timed_out = goro::select! {
///         recv(never) -> _ => false,
///         recv(goro::time::after(Duration::from_millis(1))) -> _ => true,
///     };
///     assert!(timed_out);
/// });
/// ```
#[must_use = "the timer stops when its channel is dropped; receive from it (e.g. in `select!`)"]
pub fn after(d: Duration) -> Receiver<Instant> {
    Timer::new(d)
        .rx
        .into_inner()
        .expect("a channel timer has its channel")
}

/// Calls `f` in its own task after `d` (Go's `time.AfterFunc`). The returned
/// timer's `stop` prevents the call; `reset` schedules another one.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// let fired = Arc::new(AtomicBool::new(false));
/// let f = fired.clone();
/// rt.block_on(async move {
///     let t = goro::time::after_func(Duration::from_secs(3600), move || f.store(true, Ordering::SeqCst));
///     assert!(t.stop(), "stopped before firing");
/// });
/// assert!(!fired.load(Ordering::SeqCst));
/// ```
pub fn after_func<F>(d: Duration, f: F) -> Timer
where
    F: Fn() + Send + Sync + 'static,
{
    with_runtime("after_func", |s| {
        let inner = TimerInner::new(
            Action::Func { spawn: true },
            Callback::Boxed(Box::new(f)),
            s.arm_queue().0.clone(),
        );
        s.arm_timer(&inner, clock::when_after(d), 0);
        Timer {
            inner,
            rx: OnceLock::new(),
        }
    })
}
