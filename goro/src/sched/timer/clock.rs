//! The timer clock: nanoseconds since one process-wide epoch (Go's
//! `nanotime`).
//!
//! Every deadline in the timer heaps is a `u64` on this clock, not an
//! `Instant`: it is one word to compare and store, and `0` and `u64::MAX`
//! are free to mean "not armed" and "never". The epoch is shared by every
//! runtime in the process, so a timer needs no reference to its runtime to
//! know whether it is due (a channel timer checks that on the receiver's
//! thread, see `timer.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// "Never": a deadline too far to represent, or no timer at all.
pub(crate) const NEVER: u64 = u64::MAX;

/// The clock's zero: an `Instant`, for conversions, and the raw monotonic
/// reading (nanoseconds) of the same moment or a few nanoseconds after it.
struct Epoch {
    instant: Instant,
    raw: u64,
}

fn epoch() -> &'static Epoch {
    static EPOCH: OnceLock<Epoch> = OnceLock::new();
    EPOCH.get_or_init(|| {
        // The raw reading second: it is at or after the instant's, so the
        // clock reads a few nanoseconds behind `Instant` at worst, and a
        // deadline converted from an `Instant` (`when_of`) is reached only
        // once `Instant::now()` has passed it, never before.
        let instant = Instant::now();
        Epoch {
            instant,
            raw: monotonic_ns(),
        }
    })
}

/// `CLOCK_MONOTONIC` in nanoseconds: the clock `Instant` reads on Linux,
/// without `Instant::elapsed`'s checked subtraction of two timespecs (a
/// third of the instructions of a timer reset, measured with callgrind).
#[cfg(target_os = "linux")]
#[inline]
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec`, which `ts` is; it
    // cannot fail for `CLOCK_MONOTONIC` with a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Elsewhere: through `Instant`, from a process-wide base.
#[cfg(not(target_os = "linux"))]
fn monotonic_ns() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Nanoseconds now (never 0, which means "not armed"): on the thread
/// that drives a sim bubble, the bubble's virtual clock.
#[inline]
pub(crate) fn now() -> u64 {
    // One load of a process-wide count while no bubble runs anywhere, and
    // the thread-local read only while one does.
    #[cfg(not(loom))]
    if crate::sched::sim::run::any_driven() {
        let virtual_now = crate::sched::context::sim_now();
        if virtual_now != 0 {
            return virtual_now;
        }
    }
    real_now()
}

/// Nanoseconds now on the real clock, in a bubble too.
#[inline]
pub(crate) fn real_now() -> u64 {
    monotonic_ns().saturating_sub(epoch().raw).max(1)
}

/// The clock a moment ago, for records that need milliseconds, not
/// nanoseconds (a task's "parked since"): one shared load instead of a
/// clock read. The monitor of every runtime refreshes it while any of its
/// Ps is busy (at most every 10 ms), and a thread refreshes it when it
/// starts running tasks after a sleep, so a task that changes state reads
/// a value at most one monitor period old.
#[inline]
pub(crate) fn coarse() -> u64 {
    // Relaxed: a time hint; nothing is published through it.
    COARSE.load(Ordering::Relaxed)
}

/// Reads the clock and publishes it as [`coarse`]; returns it.
pub(crate) fn refresh_coarse() -> u64 {
    let n = real_now();
    // fetch_max: two refreshers racing never move the clock back.
    COARSE.fetch_max(n, Ordering::Relaxed);
    n
}

static COARSE: AtomicU64 = AtomicU64::new(1);

/// The clock value of `t`: 1 for anything before the epoch, `NEVER` past
/// `u64`.
pub(crate) fn when_of(t: Instant) -> u64 {
    match t.checked_duration_since(epoch().instant) {
        None => 1,
        Some(d) => u64::try_from(d.as_nanos()).map_or(NEVER, |n| n.clamp(1, NEVER - 1)),
    }
}

/// The clock value `d` from now, saturating to `NEVER`.
pub(crate) fn when_after(d: Duration) -> u64 {
    match u64::try_from(d.as_nanos()) {
        Ok(n) => now().checked_add(n).map_or(NEVER, |w| w.min(NEVER - 1)),
        Err(_) => NEVER,
    }
}

/// `t + d`, or for a sum too large for `Instant`, an instant centuries
/// away ("never"): `Instant + Duration` panics on overflow, and a huge
/// interval from the user (`Builder::pool_cycle`, `GORO_SCHEDTRACE`)
/// must not kill the thread that computes it.
pub(crate) fn instant_after(t: Instant, d: Duration) -> Instant {
    t.checked_add(d).unwrap_or_else(|| instant_of(NEVER).max(t))
}

/// The instant of clock value `when`.
pub(crate) fn instant_of(when: u64) -> Instant {
    epoch().instant + Duration::from_nanos(when)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_round_trip_through_the_clock() {
        let t = Instant::now() + Duration::from_millis(5);
        let back = instant_of(when_of(t));
        let diff = if back > t { back - t } else { t - back };
        assert!(diff < Duration::from_micros(1), "{diff:?}");
    }

    #[test]
    fn far_deadlines_saturate_to_never() {
        assert_eq!(when_after(Duration::MAX), NEVER);
        assert_eq!(when_after(Duration::from_secs(u64::MAX / 2)), NEVER);
        assert!(when_after(Duration::ZERO) >= 1);
    }
}
