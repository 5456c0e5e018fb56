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
    pub(crate) use loom::thread::{spawn, yield_now, JoinHandle};
    #[cfg(not(loom))]
    #[allow(unused_imports)]
    pub(crate) use std::thread::{spawn, yield_now, JoinHandle};
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

/// `UnsafeCell` with loom's checked-access API: `std` normally, `loom`'s under
/// `cfg(loom)`, where every access through a [`cell::MutPtr`] or
/// [`cell::ConstPtr`] is checked against concurrent ones for as long as the
/// pointer lives.
pub(crate) mod cell {
    #[cfg(loom)]
    pub(crate) use loom::cell::{ConstPtr, MutPtr, UnsafeCell};

    #[cfg(not(loom))]
    pub(crate) use self::std_cell::{ConstPtr, MutPtr, UnsafeCell};

    #[cfg(not(loom))]
    mod std_cell {
        /// `std::cell::UnsafeCell` with the subset of loom's API goro uses.
        #[derive(Debug, Default)]
        pub(crate) struct UnsafeCell<T: ?Sized>(std::cell::UnsafeCell<T>);

        impl<T> UnsafeCell<T> {
            pub(crate) const fn new(value: T) -> UnsafeCell<T> {
                UnsafeCell(std::cell::UnsafeCell::new(value))
            }

            pub(crate) fn into_inner(self) -> T {
                self.0.into_inner()
            }
        }

        impl<T: ?Sized> UnsafeCell<T> {
            /// A pointer for shared access (checked by loom while it lives).
            pub(crate) fn get(&self) -> ConstPtr<T> {
                ConstPtr(self.0.get())
            }

            /// A pointer for exclusive access (checked by loom while it lives).
            pub(crate) fn get_mut(&self) -> MutPtr<T> {
                MutPtr(self.0.get())
            }

            /// Runs `f` with a raw pointer for shared access.
            pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
                f(self.0.get())
            }

            /// Runs `f` with a raw pointer for exclusive access.
            pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
                f(self.0.get())
            }
        }

        /// A raw `*const T` standing in for loom's tracked pointer.
        #[derive(Debug)]
        pub(crate) struct ConstPtr<T: ?Sized>(*const T);

        impl<T: ?Sized> ConstPtr<T> {
            /// # Safety
            /// As for dereferencing a `*const T`.
            pub(crate) unsafe fn deref(&self) -> &T {
                // SAFETY: the caller upholds the raw-pointer contract.
                unsafe { &*self.0 }
            }
        }

        /// A raw `*mut T` standing in for loom's tracked pointer.
        #[derive(Debug)]
        pub(crate) struct MutPtr<T: ?Sized>(*mut T);

        impl<T: ?Sized> MutPtr<T> {
            /// # Safety
            /// As for dereferencing a `*mut T`.
            #[allow(clippy::mut_from_ref)]
            pub(crate) unsafe fn deref(&self) -> &mut T {
                // SAFETY: the caller upholds the raw-pointer contract.
                unsafe { &mut *self.0 }
            }
        }
    }
}
