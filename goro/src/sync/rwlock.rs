//! [`RwLock`]: a writer-preferring reader-writer lock for tasks, built on
//! the FIFO [`Semaphore`].
//!
//! The lock is a semaphore of [`MAX_READERS`] permits: a reader takes one, a
//! writer takes all of them. Because the semaphore admits strictly in arrival
//! order, and a queued writer holds (as a partial assignment) every permit
//! released while it waits:
//!
//! - a waiting writer blocks new readers, which queue behind it, as in Go's
//!   `sync.RWMutex` ("a blocked Lock call excludes new readers");
//! - a writer is never starved: it waits only for the readers already in;
//! - readers are not starved either: those queued before the next writer are
//!   all admitted, in one release, when the current writer unlocks.
//!
//! Read lock and unlock are one CAS each while nobody waits.
//!
//! Rejected: Go's `RWMutex` word pair (`readerCount`, which a writer drives
//! negative by `rwmutexMaxReaders`, and `readerWait`) with two semaphores. A
//! reader that arrives behind a writer adds itself to `readerCount` before it
//! sleeps, and the writer's unlock releases that many reader tokens; when such
//! a reader's future is dropped, its token is released anyway and waits in the
//! reader semaphore for someone else: the next reader that arrives behind a
//! later writer would take it and enter while that writer holds the lock.
//! Fixing that needs the counts and the queues under one lock, which is what
//! the semaphore already is (tokio's `RwLock` is built the same way).

use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::semaphore::{Acquire, Semaphore};
use crate::loom::cell::{ConstPtr, MutPtr, UnsafeCell};
use crate::sched::task::meta::Reason;

/// Readers that may hold the lock at once; a writer acquires all of them.
const MAX_READERS: usize = Semaphore::MAX_PERMITS;

/// A reader-writer lock for tasks: many readers or one writer, writers
/// preferred.
///
/// Waiters are admitted in arrival order, so a writer that waits blocks the
/// readers that arrive after it (as Go's `sync.RWMutex` does) and is never
/// starved; the readers queued before the next writer are admitted together.
/// A task must not take a second read lock while holding one: with a writer
/// queued in between, that deadlocks (as in Go).
///
/// ```
/// use goro::sync::RwLock;
/// let lock = RwLock::new(1);
/// futures::executor::block_on(async {
///     {
///         let a = lock.read().await;
///         let b = lock.read().await;
///         assert_eq!(*a + *b, 2);
///     }
///     *lock.write().await += 1;
/// });
/// assert_eq!(lock.into_inner(), 2);
/// ```
pub struct RwLock<T: ?Sized> {
    sem: Semaphore,
    data: UnsafeCell<T>,
}

// SAFETY: a writer may get `&mut T` on another thread (needs `T: Send`), and
// readers on several threads share `&T` (needs `T: Sync`).
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}

impl<T> RwLock<T> {
    /// Creates an unlocked lock holding `value`.
    ///
    /// ```
    /// static CONFIG: goro::sync::RwLock<u32> = goro::sync::RwLock::new(7);
    /// assert_eq!(*CONFIG.read_blocking(), 7);
    /// ```
    #[cfg(not(loom))]
    pub const fn new(value: T) -> RwLock<T> {
        RwLock {
            sem: Semaphore::new(MAX_READERS),
            data: UnsafeCell::new(value),
        }
    }

    /// Creates an unlocked lock holding `value`.
    #[cfg(loom)]
    pub fn new(value: T) -> RwLock<T> {
        RwLock {
            sem: Semaphore::new(MAX_READERS),
            data: UnsafeCell::new(value),
        }
    }

    /// Consumes the lock and returns the value.
    ///
    /// ```
    /// assert_eq!(goro::sync::RwLock::new(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Locks for reading, waiting while a writer holds the lock or is queued
    /// ahead. Cancel-safe.
    ///
    /// ```
    /// let lock = goro::sync::RwLock::new("hi");
    /// let g = futures::executor::block_on(lock.read());
    /// assert_eq!(*g, "hi");
    /// ```
    pub fn read(&self) -> ReadFuture<'_, T> {
        ReadFuture {
            lock: self,
            raw: Acquire::new(&self.sem, 1, Reason::RwLock),
        }
    }

    /// Locks for writing, waiting for the readers and writer ahead. While it
    /// waits, new readers queue behind it. Cancel-safe.
    ///
    /// ```
    /// let lock = goro::sync::RwLock::new(vec![1]);
    /// futures::executor::block_on(async { lock.write().await.push(2) });
    /// assert_eq!(*lock.read_blocking(), [1, 2]);
    /// ```
    pub fn write(&self) -> WriteFuture<'_, T> {
        WriteFuture {
            lock: self,
            raw: Acquire::new(&self.sem, MAX_READERS, Reason::RwLock),
        }
    }

    /// Locks for reading, blocking the calling thread. For plain threads.
    ///
    /// ```
    /// let lock = goro::sync::RwLock::new(5);
    /// assert_eq!(*lock.read_blocking(), 5);
    /// ```
    pub fn read_blocking(&self) -> RwLockReadGuard<'_, T> {
        crate::sched::machine::block_on::block_on(self.read())
    }

    /// Locks for writing, blocking the calling thread. For plain threads.
    ///
    /// ```
    /// let lock = goro::sync::RwLock::new(5);
    /// *lock.write_blocking() = 6;
    /// assert_eq!(*lock.read_blocking(), 6);
    /// ```
    pub fn write_blocking(&self) -> RwLockWriteGuard<'_, T> {
        crate::sched::machine::block_on::block_on(self.write())
    }

    /// Locks for reading if that is possible now: no writer holds the lock
    /// and nobody is queued.
    ///
    /// ```
    /// let lock = goro::sync::RwLock::new(0);
    /// let r = lock.try_read().unwrap();
    /// assert!(lock.try_read().is_some());
    /// assert!(lock.try_write().is_none());
    /// drop(r);
    /// ```
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        crate::sched::task::coop::spend();
        self.sem.try_acquire_raw(1).then(|| self.read_guard())
    }

    /// Locks for writing if the lock is free now and nobody is queued.
    ///
    /// ```
    /// let lock = goro::sync::RwLock::new(0);
    /// let w = lock.try_write().unwrap();
    /// assert!(lock.try_read().is_none());
    /// drop(w);
    /// assert!(lock.try_write().is_some());
    /// ```
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        crate::sched::task::coop::spend();
        self.sem
            .try_acquire_raw(MAX_READERS)
            .then(|| self.write_guard())
    }

    /// Returns a mutable reference to the value; `&mut self` proves no guard
    /// exists.
    ///
    /// ```
    /// let mut lock = goro::sync::RwLock::new(1);
    /// *lock.get_mut() += 1;
    /// assert_eq!(*lock.read_blocking(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: `&mut self` excludes every guard and every other access.
        self.data.with_mut(|p| unsafe { &mut *p })
    }

    fn read_guard(&self) -> RwLockReadGuard<'_, T> {
        RwLockReadGuard {
            lock: self,
            data: ManuallyDrop::new(self.data.get()),
        }
    }

    fn write_guard(&self) -> RwLockWriteGuard<'_, T> {
        RwLockWriteGuard {
            lock: self,
            data: ManuallyDrop::new(self.data.get_mut()),
        }
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T> From<T> for RwLock<T> {
    fn from(value: T) -> Self {
        RwLock::new(value)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.try_read() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish_non_exhaustive()
    }
}

/// The future returned by [`RwLock::read`].
///
/// ```
/// let lock = goro::sync::RwLock::new(1);
/// let fut: goro::sync::ReadFuture<'_, i32> = lock.read();
/// assert_eq!(*futures::executor::block_on(fut), 1);
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct ReadFuture<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    raw: Acquire<'a>,
}

impl<'a, T: ?Sized> Future for ReadFuture<'a, T> {
    type Output = RwLockReadGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RwLockReadGuard<'a, T>> {
        let this = self.get_mut();
        this.raw.poll_acquire(cx).map(|()| this.lock.read_guard())
    }
}

impl<T: ?Sized> fmt::Debug for ReadFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadFuture").finish_non_exhaustive()
    }
}

/// The future returned by [`RwLock::write`].
///
/// ```
/// let lock = goro::sync::RwLock::new(1);
/// let fut: goro::sync::WriteFuture<'_, i32> = lock.write();
/// *futures::executor::block_on(fut) = 2;
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct WriteFuture<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    raw: Acquire<'a>,
}

impl<'a, T: ?Sized> Future for WriteFuture<'a, T> {
    type Output = RwLockWriteGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RwLockWriteGuard<'a, T>> {
        let this = self.get_mut();
        this.raw.poll_acquire(cx).map(|()| this.lock.write_guard())
    }
}

impl<T: ?Sized> fmt::Debug for WriteFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteFuture").finish_non_exhaustive()
    }
}

/// Shared access to an [`RwLock`]'s value; releases the read lock on drop.
///
/// ```
/// let lock = goro::sync::RwLock::new(String::from("go"));
/// let g = lock.read_blocking();
/// assert_eq!(g.len(), 2);
/// ```
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    /// Checked shared access (a raw pointer outside loom), ended before the
    /// permit is returned.
    data: ManuallyDrop<ConstPtr<T>>,
}

// SAFETY: a read guard is a `&T` with a permit: it may move or be shared across
// threads when `T: Sync`.
unsafe impl<T: ?Sized + Sync> Send for RwLockReadGuard<'_, T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Sync> Sync for RwLockReadGuard<'_, T> {}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds a read permit, so no writer exists until it is
        // dropped; the pointer came from the live lock it borrows.
        unsafe { ConstPtr::deref(&self.data) }
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: `data` is dropped exactly once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.data) };
        self.lock.sem.release(1);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Exclusive access to an [`RwLock`]'s value; releases the write lock on
/// drop.
///
/// ```
/// let lock = goro::sync::RwLock::new(0);
/// let mut g = lock.write_blocking();
/// *g = 1;
/// drop(g);
/// assert_eq!(*lock.read_blocking(), 1);
/// ```
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    /// Checked exclusive access (a raw pointer outside loom), ended before
    /// the permits are returned.
    data: ManuallyDrop<MutPtr<T>>,
}

// SAFETY: a write guard is a `&mut T` with all permits: moving it needs
// `T: Send`; the lock it borrows is shared, which needs `T: Sync` too.
unsafe impl<T: ?Sized + Send + Sync> Send for RwLockWriteGuard<'_, T> {}
// SAFETY: `&RwLockWriteGuard` only yields `&T`.
unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds every permit, so no other guard exists until it
        // is dropped; the pointer came from the live lock it borrows.
        unsafe { MutPtr::deref(&self.data) }
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference
        // the guard hands out.
        unsafe { MutPtr::deref(&self.data) }
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: `data` is dropped exactly once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.data) };
        self.lock.sem.release(MAX_READERS);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
