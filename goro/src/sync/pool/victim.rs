//! Pool cycles and the victim cache (seed 003): the registry of live pools,
//! [`cycle_all`], and the monitor's schedule for it.
//!
//! Go rotates every pool at the start of each garbage collection: the
//! primary cache becomes the victim cache and the old victim is dropped, so a
//! value survives one GC unused and dies at the second (before the seed every
//! pool was emptied at every GC, and the burst of `New` calls that followed
//! showed up as latency: PoolExpensiveNew called `New` 40 times per op
//! before, 12.4 after). goro has no GC; a runtime's monitor thread plays its
//! part, rotating all pools every [`crate::Builder::pool_cycle`] (1 s by
//! default) while some pool may hold values, and [`crate::sync::pool_cycle`]
//! forces a rotation.
//!
//! # A cycle does not stop the world
//!
//! Go's `poolCleanup` runs with the world stopped. Here a cycle costs
//! O(number of pools), whatever the number of pooled values:
//!
//! 1. Under one global lock (which only cycles take), each live pool's
//!    storage is rotated by pointer swaps (`PoolCore::rotate`): no value
//!    touched. Gets and puts on other threads keep running; the ones that
//!    start after the swap use the new (empty) generation.
//! 2. What went out (the old victim, or everything with the victim cache
//!    off) is handed to the reclaimer thread (`reclaim.rs`) in one batch,
//!    and the cycle returns. There, one grace period (`pin::synchronize`:
//!    one `membarrier` call plus a scan of the pin records) waits for the
//!    operations that were already running, and then the values are
//!    dropped, running their `Drop`, outside every lock (a `Drop` may even
//!    use the pool or call `pool_cycle`).
//!
//! So a cycle does no work per value (what its time still grows with is
//! cold caches: see `mod.rs`). Rejected: dropping the values and their
//! rings on the calling thread, which makes the cycle's time grow with
//! the number of values, by an order of magnitude at 100,000
//! (BENCH_RESULTS.md, "`pool` group after the reclaimer").
//!
//! A pool whose last handle is dropped while a cycle holds it is dropped by
//! that cycle's reference: its storage goes to the reclaimer too
//! ([`Rotate::release`]), so even that race costs the cycle nothing per value.
//!
//! # Which policy
//!
//! Pools are global but [`crate::Policy::pool_victim`] belongs to a runtime. A
//! cycle started by a runtime's monitor uses that runtime's policy; one
//! started by `pool_cycle` uses the caller's runtime's policy, or the default
//! (victim cache on) on a thread outside every runtime.
//!
//! # When the monitor cycles
//!
//! Only while some pool may hold values ([`any_values`]: a flag set when a
//! pool gets storage and recomputed by every cycle), so a process whose pools
//! are empty never wakes for them. While every P of a runtime is idle its
//! monitor cycles at most twice more (enough to empty primary and victim of
//! what its tasks left) and then sleeps until a P is busy again. Several
//! runtimes share one schedule: a monitor skips its cycle if any cycle
//! (another runtime's, or `pool_cycle`) happened within its interval.
//!
//! Rejected: rotating each P's storage lazily, the next time its owner uses
//! the pool (no grace period needed). A P that never uses the pool again
//! would keep its values forever, and the "dropped by the second cycle"
//! promise would depend on traffic.

use crate::loom::Unpoison;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// A pool as the registry sees it.
pub(crate) trait Rotate: Send + Sync {
    /// Rotates the pool's storage, returning what went out (type-erased),
    /// or None if nothing did.
    ///
    /// # Safety
    /// As for `PoolCore::rotate`: drop the result only after a grace period.
    unsafe fn rotate(&self, keep_victim: bool) -> Option<Box<dyn Send>>;

    /// Whether the pool may hold values.
    fn may_hold_values(&self) -> bool;

    /// Gives up this reference. If it was the last one, returns the pool
    /// itself (type-erased) instead of dropping it here, so that the caller
    /// can have its values dropped elsewhere.
    fn release(self: Arc<Self>) -> Option<Box<dyn Send>>;
}

/// Every pool ever made that may still be alive.
static POOLS: Mutex<Vec<Weak<dyn Rotate>>> = Mutex::new(Vec::new());

/// Serializes rotations; holds the time of the last cycle.
static CYCLE: Mutex<Option<Instant>> = Mutex::new(None);

/// Some pool may hold values (see `note_values`).
static MAYBE_VALUES: AtomicBool = AtomicBool::new(false);

/// Cycles since the process started.
static CYCLES: AtomicU64 = AtomicU64::new(0);

fn lock<T>(m: &'static Mutex<T>) -> std::sync::MutexGuard<'static, T> {
    m.lock().unpoison()
}

/// Adds a new pool to the registry.
pub(crate) fn register(pool: Weak<dyn Rotate>) {
    let mut pools = lock(&POOLS);
    // Drop dead entries now and then, so a program that makes and drops
    // pools without ever cycling does not grow the list forever.
    if pools.len() >= 64 && pools.len().is_power_of_two() {
        pools.retain(|w| w.strong_count() > 0);
    }
    pools.push(pool);
}

/// Records that some pool may now hold values. Called after a pool gets a
/// new generation or a list value.
///
/// Protocol: a cycle clears the flag, *then* asks every pool; a pool that
/// gains storage publishes it, *then* sets the flag (all `SeqCst`). Either
/// the cycle's question sees the new storage, or the flag is set after the
/// cycle cleared it; the flag is never left false while values exist.
pub(crate) fn note_values() {
    if !MAYBE_VALUES.load(Ordering::SeqCst) {
        MAYBE_VALUES.store(true, Ordering::SeqCst);
    }
}

/// Whether some pool may hold values: the monitor cycles only then.
pub(crate) fn any_values() -> bool {
    MAYBE_VALUES.load(Ordering::SeqCst)
}

/// Cycles completed since the process started.
pub(crate) fn cycles() -> u64 {
    CYCLES.load(Ordering::Relaxed)
}

/// Rotates every live pool: primary → victim, old victim retired (with
/// `keep_victim` false, everything retired). Returns as soon as the
/// rotation is done; the retired values are dropped by the reclaimer thread
/// shortly after (see the module docs).
pub(crate) fn cycle_all(keep_victim: bool) {
    // Without a due time the cycle always runs.
    let _ = cycle(keep_victim, None);
}

/// Called by a runtime's monitor when its cycle is due: cycles unless any
/// cycle happened within `interval`. Returns when the next one is due.
pub(crate) fn monitor_cycle(interval: Duration, keep_victim: bool) -> Instant {
    match cycle(keep_victim, Some(interval)) {
        Ok(()) => crate::sched::timer::clock::instant_after(Instant::now(), interval),
        Err(last) => crate::sched::timer::clock::instant_after(last, interval),
    }
}

/// One cycle; with `due_after`, only if the last cycle is at least that old
/// (else returns its time).
fn cycle(keep_victim: bool, due_after: Option<Duration>) -> Result<(), Instant> {
    let mut last = lock(&CYCLE);
    if let (Some(iv), Some(t)) = (due_after, *last) {
        if t.elapsed() < iv {
            return Err(t);
        }
    }
    let pools: Vec<Arc<dyn Rotate>> = {
        let mut reg = lock(&POOLS);
        reg.retain(|w| w.strong_count() > 0);
        reg.iter().filter_map(Weak::upgrade).collect()
    };
    MAYBE_VALUES.store(false, Ordering::SeqCst);
    let mut retired: super::reclaim::Garbage = pools
        .iter()
        // SAFETY: handed to the reclaimer, which drops it after a grace
        // period that starts after the hand-over, so after every rotation.
        .filter_map(|p| unsafe { p.rotate(keep_victim) })
        .collect();
    if pools.iter().any(|p| p.may_hold_values()) {
        MAYBE_VALUES.store(true, Ordering::SeqCst);
    }
    CYCLES.fetch_add(1, Ordering::Relaxed);
    *last = Some(Instant::now());
    drop(last);
    // A pool whose last handle was dropped meanwhile goes with the batch.
    retired.extend(pools.into_iter().filter_map(Rotate::release));
    super::reclaim::defer(retired);
    Ok(())
}
