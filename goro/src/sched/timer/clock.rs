//! The timer clock: nanoseconds since one process-wide epoch (Go's
//! `nanotime`).
//!
//! Every deadline in the timer heaps is a `u64` on this clock, not an
//! `Instant`: it is one word to compare and store, and `0` and `u64::MAX`
//! are free to mean "not armed" and "never". The epoch is shared by every
//! runtime in the process, so a timer needs no reference to its runtime to
//! know whether it is due (a channel timer checks that on the receiver's
//! thread, see `timer.rs`).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// "Never": a deadline too far to represent, or no timer at all.
pub(crate) const NEVER: u64 = u64::MAX;

/// The clock's state, read once per clock read: the epoch not taken yet,
/// taken with no bubble being driven (the fast path: the real clock), or
/// taken while some thread drives a sim bubble (that thread reads its
/// virtual clock). One word for both facts, so that outside a bubble a
/// clock read checks one thing, as the `OnceLock` of the epoch alone did.
static MODE: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = 0;
const REAL: u8 = 1;
const SIMULATED: u8 = 2;

/// The epoch, written once (under `SETUP`) before `MODE` leaves `UNSET`.
struct EpochCell(std::cell::UnsafeCell<std::mem::MaybeUninit<Instant>>);

// SAFETY: written once, under `SETUP`, before the Release store that
// takes `MODE` out of `UNSET`; read only after an Acquire load of `MODE`
// has seen it out of `UNSET`. After that it never changes.
unsafe impl Sync for EpochCell {}

static EPOCH: EpochCell = EpochCell(std::cell::UnsafeCell::new(std::mem::MaybeUninit::uninit()));

/// Bubbles being driven in the process; its lock orders the writes of
/// `MODE` and of the epoch.
static SETUP: Mutex<usize> = Mutex::new(0);

/// The epoch, once `MODE` says it is set.
#[inline(always)]
fn epoch_set() -> Instant {
    // SAFETY: the caller saw `MODE` out of `UNSET` with an Acquire load,
    // which follows the epoch's write (`EpochCell`'s contract).
    unsafe { (*EPOCH.0.get()).assume_init() }
}

/// The epoch, taken now if nobody took it yet.
#[inline]
fn epoch() -> Instant {
    if MODE.load(Ordering::Acquire) == UNSET {
        take_epoch();
    }
    epoch_set()
}

/// Takes the epoch (the first clock read of the process).
#[cold]
#[inline(never)]
fn take_epoch() {
    let driven = SETUP
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if MODE.load(Ordering::Relaxed) == UNSET {
        // SAFETY: under `SETUP` while `MODE` is `UNSET`: no reader reads
        // the cell yet, and no other writer runs.
        unsafe { (*EPOCH.0.get()).write(Instant::now()) };
        let mode = if *driven > 0 { SIMULATED } else { REAL };
        MODE.store(mode, Ordering::Release);
    }
}

/// A thread starts (`+1`) or stops (`-1`) driving a sim bubble: while any
/// does, clock reads look at their thread's virtual clock
/// (`sched/sim/run.rs`).
pub(crate) fn bubble_driven(delta: isize) {
    let _ = epoch();
    let mut driven = SETUP
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *driven = driven.checked_add_signed(delta).expect("bubbles driven");
    let mode = if *driven > 0 { SIMULATED } else { REAL };
    MODE.store(mode, Ordering::Release);
}

/// Nanoseconds now (never 0, which means "not armed"): on the thread
/// that drives a sim bubble, the bubble's virtual clock.
#[inline]
pub(crate) fn now() -> u64 {
    if MODE.load(Ordering::Acquire) == REAL {
        return since(epoch_set());
    }
    now_slow()
}

/// [`now`] before the epoch is taken, or while a bubble runs somewhere.
#[cold]
#[inline(never)]
fn now_slow() -> u64 {
    let e = epoch();
    #[cfg(not(loom))]
    {
        let virtual_now = crate::sched::context::sim_now();
        if virtual_now != 0 {
            return virtual_now;
        }
    }
    since(e)
}

/// Nanoseconds now on the real clock, in a bubble too.
pub(crate) fn real_now() -> u64 {
    since(epoch())
}

#[inline(always)]
fn since(epoch: Instant) -> u64 {
    (epoch.elapsed().as_nanos() as u64).max(1)
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
    match t.checked_duration_since(epoch()) {
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
    epoch() + Duration::from_nanos(when)
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
