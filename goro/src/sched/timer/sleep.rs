//! `sleep`, `sleep_until` and `timeout`: futures woken by a timer.
//!
//! A [`Sleep`] arms its timer on first poll (on the polling P's heap) and
//! stops it when dropped early, which is O(1): the heap entry is left as a
//! zombie and swept later (see `timer.rs`). A deadline already passed is
//! ready at once without touching any heap.

use super::clock;
use super::{Action, TimerInner, NEVER};
use crate::sched::context::with_current_sched;
use crate::sched::task::meta::{blocked_on, Reason};
use crate::sched::timer::check::{arm_timer, release_sleep_timer};
use crate::sched::Sched;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Runs `f` with the runtime of the calling thread, or panics naming `what`.
pub(crate) fn with_runtime<R>(what: &str, f: impl FnOnce(&Sched) -> R) -> R {
    with_current_sched(f).unwrap_or_else(|| {
        panic!("goro::time::{what} called outside a goro runtime: call it from a goro task or inside Runtime::block_on")
    })
}

/// Waits until `d` has passed (Go's `time.Sleep`). Zero waits not at all.
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let t0 = Instant::now();
///     goro::time::sleep(Duration::from_millis(2)).await;
///     assert!(t0.elapsed() >= Duration::from_millis(2));
/// });
/// ```
///
/// # Panics
/// Outside a goro runtime.
pub fn sleep(d: Duration) -> Sleep {
    with_runtime("sleep", |_| ());
    Sleep {
        when: clock::when_after(d),
        check_clock: d.is_zero(),
        timer: None,
    }
}

/// Waits until `deadline`. A deadline in the past is ready at once.
///
/// # Panics
/// Outside a goro runtime.
pub fn sleep_until(deadline: Instant) -> Sleep {
    with_runtime("sleep_until", |_| ());
    Sleep {
        when: clock::when_of(deadline),
        check_clock: true,
        timer: None,
    }
}

/// The future of [`sleep`] and [`sleep_until`].
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Sleep {
    /// Timer clock; `NEVER` for a deadline beyond representation.
    when: u64,
    /// Whether the deadline may already have passed when first polled
    /// (`sleep_until`, zero sleeps): then the clock is read first, and a
    /// passed deadline is ready without touching any heap. A `sleep(d)`
    /// polled right after it was made skips that read.
    check_clock: bool,
    timer: Option<Arc<TimerInner>>,
}

impl Sleep {
    /// The instant this sleep ends (`None`: never).
    pub fn deadline(&self) -> Option<Instant> {
        (self.when != NEVER).then(|| clock::instant_of(self.when))
    }

    /// Moves the end of this sleep to `deadline`, whether or not it has
    /// ended (tokio's `Sleep::reset`; Go's `Timer.Reset`). The armed timer
    /// is reused: a later deadline only moves it (the lazy reset of
    /// `timer.rs`), an earlier one re-arms it, and a deadline already
    /// passed stops it, so the next poll is ready without touching a heap.
    /// Poll the sleep again to wait for the new deadline.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let mut s = goro::time::sleep(Duration::from_secs(3600));
    /// let soon = Instant::now() + Duration::from_millis(1);
    /// s.reset(soon);
    /// s.await; // an hour early
    /// assert!(Instant::now() >= soon);
    /// # });
    /// ```
    pub fn reset(&mut self, deadline: Instant) {
        self.when = clock::when_of(deadline);
        self.check_clock = true;
        if let Some(t) = &self.timer {
            if self.when == NEVER || self.when <= clock::now() {
                arm_timer(t, 0, 0);
                self.timer = None;
            } else {
                arm_timer(t, self.when, 0);
            }
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &self.timer {
            None => {
                if self.check_clock && self.when <= clock::now() {
                    // A safe point (`coop.rs`): `sleep(0)` in a loop yields
                    // once the budget is spent.
                    return crate::sched::task::coop::poll_proceed(cx);
                }
                if self.when == NEVER {
                    blocked_on(Reason::Sleep, 0);
                    return Poll::Pending; // no timer can fire; nothing to arm
                }
                let when = self.when;
                let t = with_runtime("sleep", |s| s.start_sleep(cx.waker().clone(), when));
                self.timer = Some(t);
            }
            Some(t) => {
                let mut st = t.lock();
                if st.when == 0 {
                    drop(st);
                    // Fired: not kept as a spare, which saves an allocation
                    // but costs two lock round trips; the spare pays off by
                    // saving the push of a sleep dropped before it fires.
                    self.timer = None;
                    return Poll::Ready(());
                }
                if let Action::Wake(w) = &mut st.action {
                    match w {
                        Some(w) if w.will_wake(cx.waker()) => {}
                        _ => *w = Some(cx.waker().clone()),
                    }
                }
            }
        }
        blocked_on(Reason::Sleep, self.when);
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(t) = self.timer.take() {
            release_sleep_timer(t);
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .finish()
    }
}

/// The error of a [`timeout`] whose deadline passed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// Runs `fut` with a time limit: its output, or [`Elapsed`] if `d` passes
/// first (the future is then dropped). The future is polled before the
/// clock is checked, so a ready future wins even with a zero limit.
///
/// ```
/// use std::time::Duration;
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let r = goro::time::timeout(Duration::from_millis(1), std::future::pending::<()>()).await;
///     assert!(r.is_err());
///     assert_eq!(goro::time::timeout(Duration::from_secs(1), async { 5 }).await, Ok(5));
/// });
/// ```
pub fn timeout<F: Future>(d: Duration, fut: F) -> Timeout<F> {
    Timeout {
        fut,
        sleep: sleep(d),
    }
}

/// The future of [`timeout`].
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Timeout<F> {
    fut: F,
    sleep: Sleep,
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `fut` is structurally pinned (never moved out of the pinned
        // `Timeout`); `sleep` is Unpin and accessed by `&mut` only.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: see above; `this.fut` lives as long as the pinned `Timeout`.
        let fut = unsafe { Pin::new_unchecked(&mut this.fut) };
        if let Poll::Ready(v) = fut.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(&mut this.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}
