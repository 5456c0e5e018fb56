//! Latency and load metrics: how long a ready task waits before it runs,
//! how long a task holds its P per poll, how deep the run queues are.
//!
//! These are the numbers that explain a slow service: a wake-to-run delay
//! that grows means Ps are too busy (or too few); a long poll is a task that
//! blocks or computes without a safe point and holds up every task queued
//! behind it; deep queues mean work arrives faster than it runs. Go keeps
//! the first as `/sched/latencies:seconds`; tokio's equivalents (poll time
//! histogram, queue depths) are behind `tokio_unstable`. goro keeps all
//! three, always on, in stable Rust.
//!
//! **Sampling, as Go does.** A clock read costs a ring hop a third of its
//! time, so goro times one poll in [`SAMPLE_EVERY`] on each P (two clock
//! reads) and one wake in [`SAMPLE_EVERY`] on each thread (one read at the
//! wake, one when the task runs). The histograms are therefore samples:
//! their shape and quantiles are what they measure, their counts are about
//! 1/`SAMPLE_EVERY` of the events (Go samples scheduling latency one
//! goroutine transition in eight, for the same reason). A poll long enough
//! to matter is also seen unsampled: the monitor counts every poll that
//! outlasts a slice with work queued behind it (`Stats::retakes`). Queue
//! depths are read by the monitor at each of its ticks while any P is busy
//! (every 20 µs to 10 ms), which costs the Ps nothing.
//!
//! Buckets are powers of two (a value `v` lands in the bucket `[2^k,
//! 2^(k+1))` holding it), one relaxed `fetch_add` per sample into the
//! recording P's own histogram; [`Runtime::metrics`](crate::Runtime::metrics)
//! sums them.
//!
//! With the `metrics` feature, the monitor also publishes everything
//! through the [`metrics`](https://docs.rs/metrics) facade once a second
//! while the runtime is busy (see [`publish`]), so any recorder
//! (Prometheus, StatsD, ...) picks them up.

use crate::stats::Stats;
use std::fmt;

use crate::sched::processor::sampling::BUCKETS;
pub use crate::sched::processor::sampling::SAMPLE_EVERY;

/// A snapshot of a histogram in power-of-two buckets.
///
/// ```
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     for _ in 0..1000 {
///         goro::spawn(async {}).await.unwrap();
///     }
/// });
/// let m = rt.metrics();
/// assert!(m.poll_duration.count() > 0, "one poll in 64 is timed");
/// let p99 = m.poll_duration.quantile(0.99);
/// assert!(p99 < std::time::Duration::from_secs(1).as_nanos() as u64);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: [u64; BUCKETS],
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram {
            counts: [0; BUCKETS],
        }
    }
}

impl Histogram {
    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Non-empty buckets as `(low, high, count)`: `count` samples were in
    /// `[low, high)` (`high` is `u64::MAX` for the last bucket).
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(k, &c)| (bucket_low(k), bucket_high(k), c))
    }

    /// An upper bound of the `q` quantile (`0.0..=1.0`): the high end of
    /// the bucket that holds it; 0 for an empty histogram.
    pub fn quantile(&self, q: f64) -> u64 {
        let total = self.count();
        if total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (k, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_high(k);
            }
        }
        u64::MAX
    }

    fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
    }
}

fn bucket_low(k: usize) -> u64 {
    if k == 0 {
        0
    } else {
        1 << k
    }
}

fn bucket_high(k: usize) -> u64 {
    if k == BUCKETS - 1 {
        u64::MAX
    } else {
        1 << (k + 1)
    }
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(
                self.buckets()
                    .map(|(lo, hi, c)| (format!("[{lo}, {hi})"), c)),
            )
            .finish()
    }
}

/// Latency and load metrics of a runtime (see the module docs).
///
/// Durations are in nanoseconds, depths in tasks. The histograms are
/// samples (one event in [`SAMPLE_EVERY`]); `stats` are exact counts.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Metrics {
    /// From a task being made ready (woken or spawned) to its poll starting
    /// (Go's `/sched/latencies:seconds`).
    pub wake_to_run: Histogram,
    /// How long one poll held its P.
    pub poll_duration: Histogram,
    /// Local run-queue length, per P, as the monitor saw it at its ticks.
    pub queue_depth: Vec<Histogram>,
    /// Every counter ([`Runtime::stats`](crate::Runtime::stats)).
    pub stats: Stats,
    /// Live tasks.
    pub tasks: usize,
    /// Ps.
    pub procs: usize,
}

impl Metrics {
    pub(crate) fn take(sched: &crate::sched::Sched, stats: Stats) -> Metrics {
        let mut m = Metrics {
            stats,
            procs: sched.procs(),
            ..Metrics::default()
        };
        // Every P ever made for the latencies (a removed P's past counts);
        // the active ones for queue depths.
        for (i, p) in sched.all_ps().iter().enumerate() {
            p.metrics.wake_to_run.add_to(&mut m.wake_to_run.counts);
            p.metrics.poll.add_to(&mut m.poll_duration.counts);
            if i < m.procs {
                let mut q = Histogram::default();
                p.metrics.queue_depth.add_to(&mut q.counts);
                m.queue_depth.push(q);
            }
        }
        sched.tasks().for_each(|_| m.tasks += 1);
        m
    }

    /// Every P's queue depths in one histogram.
    pub fn queue_depth_all(&self) -> Histogram {
        let mut h = Histogram::default();
        for q in &self.queue_depth {
            h.merge(q);
        }
        h
    }
}

/// [`publish`] for the monitor: the runtime's metrics, labelled with its
/// thread-name prefix.
#[cfg(feature = "metrics")]
pub(crate) fn publish_sched(sched: &crate::sched::Sched) {
    let mut stats = sched.stats();
    stats.pool_cycles = crate::sync::pool::cycles();
    publish(&Metrics::take(sched, stats), sched.thread_name());
}

/// Publishes `m` through the `metrics` facade: every counter of `Stats` as
/// `goro_<name>_total`, `goro_procs` and `goro_tasks` as gauges, and each
/// histogram as Prometheus-style cumulative buckets, a counter
/// `goro_<name>_bucket` per upper bound (label `le`, in seconds for
/// durations) plus `goro_<name>_count`. Every series carries the label
/// `runtime` (the runtime's thread-name prefix). The monitor calls this once
/// a second while the runtime is busy; call it yourself for other rates.
#[cfg(feature = "metrics")]
pub fn publish(m: &Metrics, runtime: &str) {
    let rt = runtime.to_owned();
    m.stats.for_each(|name, v| {
        metrics::counter!(format!("goro_{name}_total"), "runtime" => rt.clone()).absolute(v);
    });
    metrics::gauge!("goro_procs", "runtime" => rt.clone()).set(m.procs as f64);
    metrics::gauge!("goro_tasks", "runtime" => rt.clone()).set(m.tasks as f64);
    let hists = [
        ("wake_to_run_seconds", &m.wake_to_run, 1e-9),
        ("poll_duration_seconds", &m.poll_duration, 1e-9),
        ("queue_depth", &m.queue_depth_all(), 1.0),
    ];
    for (name, h, scale) in hists {
        let mut cum = 0;
        for (k, &c) in h.counts.iter().enumerate() {
            cum += c;
            let le = if k == BUCKETS - 1 {
                "+Inf".to_owned()
            } else {
                format!("{}", bucket_high(k) as f64 * scale)
            };
            metrics::counter!(format!("goro_{name}_bucket"), "runtime" => rt.clone(), "le" => le)
                .absolute(cum);
        }
        metrics::counter!(format!("goro_{name}_count"), "runtime" => rt.clone()).absolute(cum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::processor::sampling::Hist;

    #[test]
    fn buckets_and_quantiles() {
        let h = Hist::new();
        for v in [0, 1, 2, 3, 1000, 1023, 1024, u64::MAX] {
            h.record(v);
        }
        let mut s = Histogram::default();
        h.add_to(&mut s.counts);
        assert_eq!(s.count(), 8);
        let b: Vec<_> = s.buckets().collect();
        assert_eq!(
            b,
            vec![
                (0, 2, 2),
                (2, 4, 2),
                (512, 1024, 2),
                (1024, 2048, 1),
                (1 << 40, u64::MAX, 1)
            ]
        );
        assert_eq!(s.quantile(0.5), 4);
        assert_eq!(s.quantile(0.75), 1024);
        assert_eq!(s.quantile(1.0), u64::MAX);
        assert_eq!(Histogram::default().quantile(0.5), 0);
    }
}
