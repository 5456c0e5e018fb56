//! Parked operations (Go's `sudog`), the per-thread cache of their heap
//! blocks, and the queues that hold them (Go's `waitq`). Who may touch a
//! waiter's slot and waker when is the protocol in `chan.rs`'s module docs.
//!
//! A queue is a doubly linked list threaded through its waiters, as Go's
//! `waitq` is through its sudogs: the links live in the waiter's block,
//! touched only under the lock of the channel whose queue holds it, so a
//! queue is two pointers, a park allocates nothing but the waiter, and a
//! cancelled waiter leaves in O(1). Before, a queue was a `VecDeque` of
//! (id, pointer) entries sorted by id: 40 bytes per queue in the channel,
//! a 32-byte buffer at its first park, and an id in every parked future;
//! the links cost the waiter 16 bytes, so a parked task's bill fell by 64
//! (docs/ARCHITECTURE.md, "What a parked task costs").

use std::ptr::NonNull;
use std::task::Waker;

use super::signal::{Signal, WakerId, WAITING};
use crate::loom::cell::UnsafeCell;
use crate::loom::{Arc, Ordering};

pub(super) enum SignalRef {
    /// A plain send/recv: one allocation holds waiter and signal.
    Own(Signal),
    /// One case of a `select`: the signal is shared by all its cases.
    Shared(Arc<Signal>),
}

/// One parked operation on one channel.
pub(crate) struct Waiter<T> {
    pub(super) signal: SignalRef,
    /// The `select` case this waiter stands for (0 for plain operations).
    pub(super) case: usize,
    /// A parked sender's value, or the value handed to a parked receiver;
    /// see the module docs for who may touch it when.
    pub(super) slot: UnsafeCell<Option<T>>,
    /// Its place in a queue; touched only under that channel's lock.
    links: UnsafeCell<Links<T>>,
}

/// A waiter's neighbours in the queue that holds it; both `None` when no
/// queue does (or when it is a queue's only waiter: see
/// [`WaitQueue::holds`]).
struct Links<T> {
    prev: Option<NonNull<Waiter<T>>>,
    next: Option<NonNull<Waiter<T>>>,
}

impl<T> Clone for Links<T> {
    fn clone(&self) -> Links<T> {
        *self
    }
}

impl<T> Copy for Links<T> {}

impl<T> Links<T> {
    const NONE: Links<T> = Links {
        prev: None,
        next: None,
    };
}

impl<T> Waiter<T> {
    pub(crate) fn plain(waker: Waker, value: Option<T>) -> Waiter<T> {
        Waiter {
            signal: SignalRef::Own(Signal::new(waker)),
            case: 0,
            slot: UnsafeCell::new(value),
            links: UnsafeCell::new(Links::NONE),
        }
    }

    pub(crate) fn for_select(signal: Arc<Signal>, case: usize, value: Option<T>) -> Waiter<T> {
        Waiter {
            signal: SignalRef::Shared(signal),
            case,
            slot: UnsafeCell::new(value),
            links: UnsafeCell::new(Links::NONE),
        }
    }

    pub(crate) fn signal(&self) -> &Signal {
        match &self.signal {
            SignalRef::Own(s) => s,
            SignalRef::Shared(s) => s,
        }
    }

    /// Claims this waiter for its case; the caller holds the lock of the
    /// channel it is queued on and must [`Claimed::finish`] under it.
    #[inline]
    pub(super) fn try_claim(&self) -> bool {
        match &self.signal {
            // A plain waiter's state changes only under the lock of its one
            // channel, which the caller holds, so a load decides the claim
            // and no CLAIMED store is needed: nobody can look at the state
            // between now and our DONE except under this lock (the owner
            // reads it unlocked only to look for DONE). Relaxed: the lock
            // orders it after the owner's set-up and any abort. (An owner
            // aborts and removes its entry in one critical section, so a
            // queued plain waiter is always WAITING; the check is cheap.)
            SignalRef::Own(s) => s.state.load(Ordering::Relaxed) == WAITING,
            SignalRef::Shared(s) => s.try_claim(self.case),
        }
    }

    /// Takes the slot's value.
    ///
    /// # Safety
    ///
    /// No completer may be between its claim of this waiter and its `DONE`:
    /// the caller either holds the lock of the channel this waiter is or was
    /// queued on, or is its owner and has seen this waiter's case `DONE`.
    pub(super) unsafe fn take_slot(&self) -> Option<T> {
        // SAFETY: completers touch the slot only between claim and DONE,
        // under that channel's lock; the caller's lock excludes that window,
        // and a DONE seen with Acquire orders the completer's write before
        // this read. The owner is the only other accessor, and it is us.
        self.slot.with_mut(|s| unsafe { (*s).take() })
    }
}

/// A waiter this thread dequeued and claimed, under its channel's lock.
/// Ends with [`Claimed::finish`], still under that lock.
pub(super) struct Claimed<T> {
    pub(super) waiter: NonNull<Waiter<T>>,
}

impl<T> Claimed<T> {
    pub(super) fn waiter(&self) -> &Waiter<T> {
        // SAFETY: the waiter was queued (so alive) when we dequeued it under
        // the lock we still hold; its owner frees it only after removing its
        // entry under this lock (which waits for us) or after seeing DONE,
        // which only `finish` stores.
        unsafe { self.waiter.as_ref() }
    }

    /// Hands `v` to a claimed receiver.
    pub(super) fn put(&self, v: T) {
        // SAFETY: between our claim and our DONE no one else touches the
        // slot (see `Waiter::take_slot`'s contract, which owners obey).
        let old = self.waiter().slot.with_mut(|s| unsafe { (*s).replace(v) });
        debug_assert!(old.is_none(), "a receiver slot was filled twice");
    }

    /// Takes a claimed sender's value.
    pub(super) fn take(&self) -> T {
        // SAFETY: as in `put`.
        let v = self.waiter().slot.with_mut(|s| unsafe { (*s).take() });
        v.expect("a parked sender holds its value")
    }

    /// Publishes `DONE` and returns the waker to call once unlocked. The
    /// waiter may be freed as soon as `DONE` is stored.
    pub(super) fn finish(self) -> Option<Waker> {
        let w = self.waiter();
        let signal = w.signal();
        // SAFETY: we won the claim (that is what made this a `Claimed`) and
        // have not finished.
        let waker = unsafe { signal.take_waker() };
        signal.finish(w.case);
        waker
    }
}

/// A parked operation as its owner sees it: its waiter, and which waker it
/// registered.
///
/// Owns the waiter's heap block. Dropping a `Parked` leaks the block (never
/// frees it under a queue's feet); it is freed by [`Parked::take_done`] or
/// by [`Chan::unpark_send`] / [`Chan::unpark_recv`].
pub(crate) struct Parked<T> {
    pub(super) waiter: NonNull<Waiter<T>>,
    pub(super) waker: WakerId,
}

// SAFETY: a `Parked` is the owner's handle on its waiter. Moving it to another
// thread moves the owner role (the waiter's value is a `T: Send` and its waker
// is `Send`); `&Parked` only reads the immutable `case` and the atomic state.
unsafe impl<T: Send> Send for Parked<T> {}
// SAFETY: see `Send`: `&Parked` exposes no access to the cells.
unsafe impl<T: Send> Sync for Parked<T> {}

impl<T> Parked<T> {
    pub(crate) fn waiter(&self) -> &Waiter<T> {
        // SAFETY: only the consuming methods of `Parked` free the waiter, so
        // it is alive as long as `self`.
        unsafe { self.waiter.as_ref() }
    }

    /// Whether the waiter's own case is `DONE` (with `Acquire`).
    pub(crate) fn is_done(&self) -> bool {
        let w = self.waiter();
        w.signal().done_case() == Some(w.case)
    }

    /// The completed operation's slot; frees the waiter.
    ///
    /// Panics unless [`Parked::is_done`] (a misuse that would otherwise free
    /// a queued waiter).
    pub(crate) fn take_done(self) -> Option<T> {
        assert!(
            self.is_done(),
            "a parked operation read before it completed"
        );
        // SAFETY: its case is DONE, seen with Acquire.
        let v = unsafe { self.waiter().take_slot() };
        // SAFETY: a completer dequeued it before claiming, and DONE was its
        // last access; no queue holds it.
        unsafe { self.free() };
        v
    }

    /// Frees the waiter (dropping its leftover waker after any lock is gone).
    ///
    /// # Safety
    ///
    /// No queue holds the waiter and no completer will touch it again.
    pub(super) unsafe fn free(self) {
        // SAFETY: the block came from `blocks::new` in `WaitQueue::push`
        // and the caller guarantees this is the last access.
        unsafe { blocks::free(self.waiter) };
    }
}

/// Heap blocks for waiters, with Go's sudog cache: a park allocates one and
/// the owner frees it, a few hundred nanoseconds apart and usually on the
/// same thread, so the block comes from, and goes back to, the thread's
/// free lists that tasks use too (`sched/task/memory.rs`: size classes,
/// 64 blocks per class per thread, a bounded process-wide spill). A waiter
/// of a `u64` (72 bytes, the commonest wait a Go-style program holds, a
/// million at a time) takes the 72-byte class: 80 bytes of heap. Under
/// loom the lists are off (model threads share one OS thread's
/// thread-locals).
mod blocks {
    use crate::sched::task::memory::{alloc, free as dealloc};
    use std::ptr::NonNull;

    /// Moves `w` to the heap.
    #[inline]
    pub(super) fn new<W>(w: W) -> NonNull<W> {
        let p = alloc::<W>();
        // SAFETY: `p` is a live, unaliased allocation for a `W`.
        unsafe { p.as_ptr().write(w) };
        p
    }

    /// Drops and frees a block made by [`new`].
    ///
    /// # Safety
    ///
    /// `p` came from `new::<W>` and is not used again.
    #[inline]
    pub(super) unsafe fn free<W>(p: NonNull<W>) {
        // SAFETY: `new` wrote a `W` there; the caller's last use.
        unsafe { std::ptr::drop_in_place(p.as_ptr()) };
        // SAFETY: from `alloc::<W>`, now holding nothing.
        unsafe { dealloc(p) };
    }
}

/// A FIFO of parked operations (Go's `waitq`): a list linked through the
/// waiters (module docs). Every waiter it holds is live: its owner frees
/// it only after taking it out under this queue's channel lock, or after
/// a DONE that a completer stores only once it has dequeued it.
pub(super) struct WaitQueue<T> {
    head: Option<NonNull<Waiter<T>>>,
    tail: Option<NonNull<Waiter<T>>>,
}

// SAFETY: the queue is a list of pointers to waiters that completers on
// other threads reach only as the protocol allows (under the channel lock,
// after winning the claim); the values they may carry are `T: Send`.
unsafe impl<T: Send> Send for WaitQueue<T> {}

impl<T> WaitQueue<T> {
    pub(super) fn new() -> WaitQueue<T> {
        WaitQueue {
            head: None,
            tail: None,
        }
    }

    /// The links of `w`, a live waiter this queue holds or is about to.
    /// The lock is held: our `&mut self` says so, and only a holder of the
    /// lock of the queue that holds a waiter touches its links.
    #[inline(always)]
    fn get(&mut self, w: NonNull<Waiter<T>>) -> Links<T> {
        // SAFETY: `w` is live (the queue's invariant, or the caller's new
        // block); no one else touches its links without this lock.
        unsafe { w.as_ref() }.links.with(|l| unsafe { *l })
    }

    /// Changes the links of `w` (as [`WaitQueue::get`]).
    #[inline(always)]
    fn set(&mut self, w: NonNull<Waiter<T>>, f: impl FnOnce(&mut Links<T>)) {
        // SAFETY: as in `get`.
        unsafe { w.as_ref() }
            .links
            .with_mut(|l| f(unsafe { &mut *l }));
    }

    // Always: the park path's hottest step.
    #[inline(always)]
    pub(super) fn push(&mut self, waiter: Waiter<T>, waker: WakerId) -> Parked<T> {
        let w = blocks::new(waiter);
        let tail = self.tail;
        self.set(w, |l| l.prev = tail);
        match tail {
            Some(t) => self.set(t, |l| l.next = Some(w)),
            None => self.head = Some(w),
        }
        self.tail = Some(w);
        Parked { waiter: w, waker }
    }

    /// Whether this queue holds `w`, a live waiter that is in this queue
    /// or in none: a waiter with a neighbour is in a queue, and one
    /// without is in this one only as its sole waiter.
    fn holds(&mut self, w: NonNull<Waiter<T>>) -> bool {
        let l = self.get(w);
        l.prev.is_some() || l.next.is_some() || self.head == Some(w)
    }

    /// Takes `w`, which this queue holds, out of it.
    fn unlink(&mut self, w: NonNull<Waiter<T>>) {
        let Links { prev, next } = self.get(w);
        self.set(w, |l| *l = Links::NONE);
        match prev {
            Some(p) => self.set(p, |l| l.next = next),
            None => self.head = next,
        }
        match next {
            Some(n) => self.set(n, |l| l.prev = prev),
            None => self.tail = prev,
        }
    }

    /// Takes the parked operation `p` out if this queue still holds it (a
    /// completer or a dead-entry sweep may have taken it out already).
    pub(super) fn remove(&mut self, p: &Parked<T>) {
        if self.holds(p.waiter) {
            self.unlink(p.waiter);
        }
    }

    /// Dequeues the first waiter, live or dead.
    pub(super) fn pop(&mut self) -> Option<NonNull<Waiter<T>>> {
        let w = self.head?;
        self.unlink(w);
        Some(w)
    }

    /// Dequeues and claims the first live waiter that is not part of `me`
    /// (a `select` never completes against its own other cases). Dead
    /// waiters met on the way are taken out (their owners free them).
    pub(super) fn claim_first(&mut self, me: Option<&Signal>) -> Option<Claimed<T>> {
        if me.is_none() {
            // Plain operations: the common case, nothing to skip.
            while let Some(w) = self.pop() {
                // SAFETY: dequeued under the lock: live until our DONE (or,
                // dead, until its owner takes this lock).
                if unsafe { w.as_ref() }.try_claim() {
                    return Some(Claimed { waiter: w });
                }
            }
            return None;
        }
        let mut at = self.head;
        while let Some(w) = at {
            at = self.get(w).next;
            // SAFETY: a queued waiter is live; the lock is held.
            let waiter = unsafe { w.as_ref() };
            if is_mine(waiter, me) {
                continue;
            }
            self.unlink(w);
            if waiter.try_claim() {
                return Some(Claimed { waiter: w });
            }
        }
        None
    }

    /// Whether a live waiter other than `me`'s is queued, taking out dead
    /// waiters met on the way.
    pub(super) fn has_live(&mut self, me: &Signal) -> bool {
        let mut at = self.head;
        while let Some(w) = at {
            at = self.get(w).next;
            // SAFETY: a queued waiter is live; the lock is held.
            let waiter = unsafe { w.as_ref() };
            if is_mine(waiter, Some(me)) {
                continue;
            }
            if waiter.signal().is_waiting() {
                // Only a hint; the real decision is a later claim.
                return true;
            }
            self.unlink(w);
        }
        false
    }
}

pub(super) fn is_mine<T>(w: &Waiter<T>, me: Option<&Signal>) -> bool {
    me.is_some_and(|me| std::ptr::eq(w.signal(), me))
}

/// The waker of an operation completed under the lock, to be woken once it
/// is released.
pub(crate) type Woken = Option<Waker>;

/// Wakes the owner of a completed waiter; call with no lock held.
pub(crate) fn wake(w: Woken) {
    if let Some(w) = w {
        w.wake();
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod size_tests {
    /// A parked receive of a small value is 72 bytes, a class of its own
    /// in `sched/task/memory.rs` (whose tests hold that): 80 bytes of heap
    /// (docs/ARCHITECTURE.md, "What a parked task costs").
    #[test]
    fn a_small_values_waiter_takes_its_own_class() {
        assert_eq!(std::mem::size_of::<super::Waiter<u64>>(), 72);
    }

    /// The channel and a parked receive, in the same table.
    #[test]
    fn a_channel_and_a_parked_receive_keep_their_size() {
        use std::mem::size_of;
        assert_eq!(size_of::<super::super::chan::Chan<u64>>(), 88);
        assert_eq!(size_of::<crate::chan::RecvFuture<'_, u64>>(), 32);
    }
}
