//! The scheduler's sampled latency histograms (the data behind
//! `Runtime::metrics`, whose module docs explain the sampling): one poll
//! in [`SAMPLE_EVERY`] per P and one wake in [`SAMPLE_EVERY`] per thread
//! are timed into the recording P's histograms, in power-of-two buckets
//! with one relaxed `fetch_add` per sample.

use crate::sched::context::CTX;
use std::sync::atomic::{AtomicU64, Ordering};

/// One poll (per P) and one wake (per thread) in this many is timed.
pub const SAMPLE_EVERY: u64 = 64;

/// Buckets: `[0, 2)`, then `[2^k, 2^(k+1))` for k = 1..=40, the last one
/// open-ended (2^40 ns is about 18 minutes).
pub(crate) const BUCKETS: usize = 41;

/// A live histogram (per P), written with relaxed `fetch_add`s.
pub(crate) struct Hist {
    counts: [AtomicU64; BUCKETS],
}

impl Hist {
    pub(crate) fn new() -> Hist {
        Hist {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    #[inline]
    pub(crate) fn record(&self, v: u64) {
        let k = (64 - v.leading_zeros() as usize)
            .saturating_sub(1)
            .min(BUCKETS - 1);
        // Relaxed: a statistic; several writers (a P's owner, the monitor, a
        // thread that lost the P inside its poll) may add at once.
        self.counts[k].fetch_add(1, Ordering::Relaxed);
    }

    /// Adds this histogram's counts into `counts`.
    pub(crate) fn add_to(&self, counts: &mut [u64; BUCKETS]) {
        for (c, a) in counts.iter_mut().zip(&self.counts) {
            *c += a.load(Ordering::Relaxed);
        }
    }
}

/// A P's live histograms.
pub(crate) struct ProcMetrics {
    pub(crate) wake_to_run: Hist,
    pub(crate) poll: Hist,
    pub(crate) queue_depth: Hist,
}

impl ProcMetrics {
    pub(crate) fn new() -> ProcMetrics {
        ProcMetrics {
            wake_to_run: Hist::new(),
            poll: Hist::new(),
            queue_depth: Hist::new(),
        }
    }
}

/// Whether this thread's next wake is timed ([`SAMPLE_EVERY`]).
#[inline]
pub(crate) fn sample_wake() -> bool {
    CTX.try_with(|c| {
        let n = c.wakes.get().wrapping_add(1);
        c.wakes.set(n);
        n.is_multiple_of(SAMPLE_EVERY)
    })
    .unwrap_or(false)
}
