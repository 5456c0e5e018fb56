//! The concurrency facade: `std` atomics, locks and threads normally, `loom`'s
//! under `cfg(loom)`.
//!
//! Every lock-free structure in goro (run queue, `runnext`, the spinning and
//! parking protocol, channel and timer state) reaches its atomics through this
//! module, so the same code runs under loom's model checker with loom-sized
//! constants (see `sched::runq::RING_SIZE`). Code outside the checked
//! structures may use `std` directly.

#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::{
    atomic::{fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering},
    Arc, Condvar, Mutex, MutexGuard,
};

#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::{
    atomic::{fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering},
    Arc, Condvar, Mutex, MutexGuard,
};

/// Thread spawning and yielding.
pub(crate) mod thread {
    #[cfg(loom)]
    #[allow(unused_imports)]
    pub(crate) use loom::thread::{spawn, yield_now};
    #[cfg(not(loom))]
    #[allow(unused_imports)]
    pub(crate) use std::thread::{spawn, yield_now};
}

/// A hint that we are in a spin loop; a yield under loom so the model
/// checker can schedule the thread we are waiting for.
#[inline]
pub(crate) fn spin_loop() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Takes a lock's guard whether or not the lock is poisoned: `lock()`,
/// `wait()`, `wait_timeout()` and `get_mut()` results alike
/// (`m.lock().unpoison()`).
///
/// A lock is poisoned when a thread panicked while holding it. goro's locks
/// guard only goro's own state, and no code that can panic (a user's
/// `Drop`, a waker) runs under them with that state half-updated, so a
/// poisoned lock's data is as good as a clean one's; propagating the
/// poison would turn one panic into a cascade through every thread that
/// touches the runtime afterwards.
pub(crate) trait Unpoison {
    /// The guard (or whatever the lock call returns on success).
    type Guard;
    /// The guard, poisoned or not.
    fn unpoison(self) -> Self::Guard;
}

impl<G> Unpoison for std::sync::LockResult<G> {
    type Guard = G;

    #[inline]
    fn unpoison(self) -> G {
        self.unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
