//! `Ticker`: a periodic timer whose ticks a slow reader drops, as in Go.

use crate::chan::{self, Receiver};
use crate::sched::timer::check::arm_timer;
use crate::sched::timer::clock;
use crate::sched::timer::sleep::with_runtime;
use crate::sched::timer::TimerInner;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Delivers the time on [`Ticker::rx`] every period (Go's `time.Ticker`).
/// The channel holds one tick; ticks arriving while it is full are dropped,
/// so a slow reader sees fewer ticks, never a backlog.
///
/// ```
/// use std::time::Duration;
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let t = goro::time::Ticker::new(Duration::from_millis(1));
///     for _ in 0..3 {
///         t.rx().recv().await.unwrap();
///     }
///     t.stop();
/// });
/// ```
pub struct Ticker {
    inner: Arc<TimerInner>,
    rx: Receiver<Instant>,
}

fn period_ns(d: Duration, what: &str) -> u64 {
    assert!(
        !d.is_zero(),
        "non-positive interval for goro::time::Ticker::{what} (Go panics the same way)"
    );
    u64::try_from(d.as_nanos())
        .unwrap_or(u64::MAX / 2)
        .min(u64::MAX / 2)
}

impl Ticker {
    /// A ticker with period `d`.
    ///
    /// # Panics
    /// If `d` is zero, or outside a goro runtime.
    #[must_use = "a ticker stops when it is dropped; receive from `rx()`"]
    pub fn new(d: Duration) -> Ticker {
        let period = period_ns(d, "new");
        with_runtime("Ticker::new", |s| {
            let inner = TimerInner::for_chan(s.arm_queue().0.clone());
            let rx = chan::timer_receiver(Some(inner.clone()));
            s.arm_timer(&inner, clock::when_after(d), period);
            Ticker { inner, rx }
        })
    }

    /// The channel of ticks (Go's `C`).
    pub fn rx(&self) -> &Receiver<Instant> {
        &self.rx
    }

    /// Turns the ticker off; no tick is received after it returns.
    pub fn stop(&self) {
        arm_timer(&self.inner, 0, 0);
    }

    /// Restarts the ticker with period `d`, the next tick `d` from now.
    ///
    /// # Panics
    /// If `d` is zero.
    pub fn reset(&self, d: Duration) {
        let period = period_ns(d, "reset");
        arm_timer(&self.inner, clock::when_after(d), period);
    }
}

impl std::fmt::Debug for Ticker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticker").finish_non_exhaustive()
    }
}
