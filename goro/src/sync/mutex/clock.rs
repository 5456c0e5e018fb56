//! How long a queued lock call has waited: the input of the switch to
//! starvation mode.
//!
//! Under loom, time is not part of the model and must not make runs
//! diverge, so every wake-up counts as a long wait: the model then reaches
//! starvation mode as soon as a woken waiter loses a race.

/// How long a waiter may wait before it switches the mutex to starvation
/// mode (Go's `starvationThresholdNs`).
#[cfg_attr(loom, allow(dead_code))]
pub(super) const STARVATION_THRESHOLD: std::time::Duration = std::time::Duration::from_millis(1);

/// When a lock call first queued.
#[cfg(not(loom))]
pub(super) type Stamp = std::time::Instant;

#[cfg(not(loom))]
pub(super) fn now() -> Stamp {
    std::time::Instant::now()
}

#[cfg(not(loom))]
pub(super) fn waited_too_long(since: Stamp) -> bool {
    since.elapsed() > STARVATION_THRESHOLD
}

/// When a lock call first queued: nothing, under loom.
#[cfg(loom)]
#[derive(Clone, Copy, Debug)]
pub(super) struct Stamp;

#[cfg(loom)]
pub(super) fn now() -> Stamp {
    Stamp
}

#[cfg(loom)]
pub(super) fn waited_too_long(_since: Stamp) -> bool {
    true
}
