//! The channel lock: one waiter spins, the others sleep (Go's spin bit).
//!
//! A channel's state sits behind a short critical section (a buffer push
//! or pop, a waiter claimed). Under contention the question is what the
//! threads that find it held do meanwhile. The first version used the
//! standard mutex behind a short back-off: every waiter spins (four rounds
//! of 30 `PAUSE`s here, then the standard mutex's own 100 polls) before it
//! sleeps. With 16 Ms sending on one channel that kept 13 cores busy for
//! one core's worth of work: `chan_contended` at procs 16 on 16 cores took
//! 403 ns and 5,370 ns of CPU per operation, Go 107 and 233
//! (`bench/results/2026-11-27-scale-a2d5e40-quick/`), and the spinners
//! pulled the lock's cache line away from the holder on every poll.
//!
//! Go 1.24's runtime lock (`lock_spinbit.go`) lets one waiter spin and puts
//! the others to sleep at once. This lock does the same with three bits in
//! one futex word:
//!
//! - `LOCKED`: held.
//! - `SPINNING`: a waiter is spinning; any other waiter sleeps instead.
//! - `SLEEPING`: a waiter may be asleep on the futex. Only an unlock that
//!   finds `SLEEPING` and no spinner wakes one (the spinner will take the
//!   lock anyway, and waking a sleeper then buys a thread that only goes
//!   back to sleep). The unlock clears the bit with the wake; a woken
//!   thread sets it again when it takes the lock, because it cannot know
//!   whether others still sleep (the standard futex mutex does the same;
//!   it costs one spare wake when none do).
//!
//! No wake is lost: a waiter sets `SLEEPING` only on a word that is
//! `LOCKED` (one atomic step, so the holder's unlock sees it), and a
//! spinner that stops spinning does so in the same step as it sets
//! `SLEEPING`, while the lock is held; so whenever a sleeper exists there
//! is a holder that will unlock, or a spinner that will take the lock and
//! then unlock. The loom models in `chan/loom_lock.rs` check this and fail
//! on the planted bugs listed there.
//!
//! The lock does not poison: no code that can panic runs under it with the
//! channel half-updated (user values are never dropped under it), and a
//! panic that unwinds through a guard still unlocks.

use crate::loom::cell::{MutPtr, UnsafeCell};
use crate::loom::{AtomicU32, Ordering};
use std::mem::ManuallyDrop;

const LOCKED: u32 = 1;
const SPINNING: u32 = 2;
const SLEEPING: u32 = 4;

/// Rounds the one spinner waits before it sleeps, reading the word after
/// each `PAUSE` (Go: 4 rounds of 30 `PAUSE`s; see the module docs for
/// why this lock polls finer and longer).
#[cfg(not(loom))]
const SPIN_ROUNDS: u32 = 200;
#[cfg(loom)]
const SPIN_ROUNDS: u32 = 1;
/// `PAUSE`s per round.
const SPIN_PAUSES: u32 = 1;

/// A mutex whose contended waiters spin one at a time (module docs).
pub(crate) struct ChanLock<T> {
    state: AtomicU32,
    #[cfg(loom)]
    futex: loom_futex::Futex,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out the value to one guard at a time, so sharing
// the lock between threads moves `T` between them but never shares it.
unsafe impl<T: Send> Sync for ChanLock<T> {}
// SAFETY: as above: the lock owns its `T`.
unsafe impl<T: Send> Send for ChanLock<T> {}

/// The held lock; unlocks when dropped.
pub(crate) struct ChanGuard<'a, T> {
    lock: &'a ChanLock<T>,
    /// Dropped before the unlock: under loom the pointer marks the access
    /// as live for as long as it exists.
    value: ManuallyDrop<MutPtr<T>>,
}

impl<T> ChanLock<T> {
    pub(crate) fn new(value: T) -> ChanLock<T> {
        ChanLock {
            state: AtomicU32::new(0),
            #[cfg(loom)]
            futex: loom_futex::Futex::new(),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock: at once when it is free, else as the one spinner or
    /// asleep until an unlock wakes this thread.
    #[inline]
    pub(crate) fn lock(&self) -> ChanGuard<'_, T> {
        if self
            .state
            .compare_exchange_weak(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        ChanGuard {
            lock: self,
            value: ManuallyDrop::new(self.value.get_mut()),
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let mut spinner = false;
        let mut rounds = 0;
        // A thread woken from the futex takes the lock with `SLEEPING` set
        // again (module docs).
        let mut woken = 0;
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if s & LOCKED == 0 {
                let mut new = s | LOCKED | woken;
                if spinner {
                    new &= !SPINNING;
                }
                match self
                    .state
                    .compare_exchange_weak(s, new, Ordering::Acquire, Ordering::Relaxed)
                {
                    Ok(_) => return,
                    Err(now) => s = now,
                }
                continue;
            }
            if !spinner && s & SPINNING == 0 {
                match self.state.compare_exchange_weak(
                    s,
                    s | SPINNING,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        spinner = true;
                        rounds = 0;
                        s |= SPINNING;
                    }
                    Err(now) => s = now,
                }
                continue;
            }
            if spinner && rounds < SPIN_ROUNDS {
                rounds += 1;
                for _ in 0..SPIN_PAUSES {
                    crate::loom::spin_loop();
                }
                s = self.state.load(Ordering::Relaxed);
                continue;
            }
            // Held, and someone else spins or our spinning is over: sleep.
            // Setting `SLEEPING` (and giving up `SPINNING`) on a held word
            // in one step is what makes the holder's unlock wake us.
            let mut asleep = s | SLEEPING;
            if spinner {
                asleep &= !SPINNING;
            }
            match self
                .state
                .compare_exchange_weak(s, asleep, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    spinner = false;
                    self.futex_wait(asleep);
                    woken = SLEEPING;
                    s = self.state.load(Ordering::Relaxed);
                }
                Err(now) => s = now,
            }
        }
    }

    fn unlock(&self) {
        if self
            .state
            .compare_exchange(LOCKED, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.unlock_contended();
        }
    }

    #[cold]
    #[inline(never)]
    fn unlock_contended(&self) {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            let wake = s & SLEEPING != 0 && s & SPINNING == 0;
            let new = if wake {
                s & !(LOCKED | SLEEPING)
            } else {
                s & !LOCKED
            };
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => {
                    if wake {
                        self.futex_wake_one();
                    }
                    return;
                }
                Err(now) => s = now,
            }
        }
    }

    /// Sleeps while the word still reads `expected` (or until a spurious
    /// wake: the caller looks again either way).
    #[cfg(not(loom))]
    fn futex_wait(&self, expected: u32) {
        // SAFETY: FUTEX_WAIT reads the aligned u32 the atomic owns for as
        // long as `self` lives (we hold `&self` throughout), with no
        // timeout pointer; the kernel compares and sleeps atomically.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.state.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                std::ptr::null::<libc::timespec>(),
            );
        }
    }

    #[cfg(not(loom))]
    fn futex_wake_one(&self) {
        // SAFETY: FUTEX_WAKE only uses the address as a key; the atomic
        // outlives the call.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.state.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                1,
            );
        }
    }

    #[cfg(loom)]
    fn futex_wait(&self, expected: u32) {
        self.futex.wait(&self.state, expected);
    }

    #[cfg(loom)]
    fn futex_wake_one(&self) {
        self.futex.wake_one();
    }
}

impl<T> std::ops::Deref for ChanGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the
        // value exists while it lives.
        unsafe { MutPtr::deref(&self.value) }
    }
}

impl<T> std::ops::DerefMut for ChanGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`, and `&mut self` makes this the only
        // reference through the guard.
        unsafe { MutPtr::deref(&self.value) }
    }
}

impl<T> Drop for ChanGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.value) };
        self.lock.unlock();
    }
}

/// A futex for loom: the compare and the sleep under one mutex, as the
/// kernel does them under its hash-bucket lock.
#[cfg(loom)]
mod loom_futex {
    use crate::loom::{AtomicU32, Condvar, Mutex, Ordering, Unpoison};

    pub(super) struct Futex {
        bucket: Mutex<()>,
        sleepers: Condvar,
    }

    impl Futex {
        pub(super) fn new() -> Futex {
            Futex {
                bucket: Mutex::new(()),
                sleepers: Condvar::new(),
            }
        }

        pub(super) fn wait(&self, word: &AtomicU32, expected: u32) {
            let g = self.bucket.lock().unpoison();
            if word.load(Ordering::SeqCst) == expected {
                drop(self.sleepers.wait(g).unpoison());
            }
        }

        pub(super) fn wake_one(&self) {
            let _g = self.bucket.lock().unpoison();
            self.sleepers.notify_one();
        }
    }
}
