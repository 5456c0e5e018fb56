//! The channel itself: Go's `hchan`, one lock over a ring buffer and two
//! queues of parked operations.
//!
//! Everything a channel operation needs to decide lives behind one
//! [`Mutex`]: the buffer, the `closed` flag, the queue of parked senders
//! (`sendq`) and the queue of parked receivers (`recvq`). An operation takes
//! the lock, looks, acts, releases the lock, and only then wakes the task it
//! completed (Go's rule: never ready a goroutine under the channel lock).
//! A contended lock backs off before it queues, as Go's runtime lock does
//! ([`lock`]), so two Ps on one channel do not fight over its cache line.
//!
//! # Waiters (Go's `sudog`)
//!
//! A parked operation is a [`Waiter`]: the slot that carries the value (the
//! sender's value while it waits, the value handed to a receiver), the index
//! of its `select` case, and a [`Signal`]. A plain `send`/`recv` owns its
//! signal; the waiters of one `select` share theirs, one waiter per case, each
//! in its own channel's queue. The signal is the one-shot "who completed me"
//! word that Go keeps in `g.selectDone`, plus the owner's waker:
//!
//! ```text
//! WAITING --claim(case)--> CLAIMED(case) --finish--> DONE(case)
//!    \--abort (owner: cancelled, or select retrying)--> ABORTED
//! ```
//!
//! (A plain waiter goes from `WAITING` to `DONE(0)` in one store: its state
//! changes only under its one channel's lock, so the claim is a load.)
//!
//! Whoever moves a signal out of `WAITING` owns the operation. A completer
//! (the counterpart send or recv, or `close`) dequeues the waiter and claims
//! it *under the lock of the channel the waiter is queued on*, moves the
//! value through the slot, takes the waker, stores `DONE` with `Release` and
//! wakes the owner after unlocking. The owner sees `DONE` with `Acquire` and
//! reads the slot. A waiter found in a queue with a signal that is no longer
//! `WAITING` is dead (its owner aborted, or its `select` completed on another
//! channel); whoever meets it drops the entry, and the owner's own clean-up
//! tolerates finding its entry gone.
//!
//! A waiter is one heap block owned by its future (through [`Parked`]); a
//! queue entry is a pointer to it, valid for as long as the entry is queued.
//! The owner frees the block only when no queue holds it and no completer
//! will touch it again: after removing its entry under the lock (which also
//! waits out a completer that dequeued it a moment before), or after seeing
//! its own case `DONE` (a completer dequeues before claiming, and `DONE` is
//! its last access). A future that is leaked leaks its waiter, never frees
//! it early.
//!
//! The slot and the waker are plain cells (`UnsafeCell`), not locks: the
//! protocol above already gives each access a single owner.
//!
//! | cell | written / taken by | when |
//! |---|---|---|
//! | slot | the owner | before the waiter is queued; under the queue's lock after an abort; after its `DONE` |
//! | slot | the completer | between its claim and its `DONE`, under the queue's lock |
//! | waker | the owner | before the signal is shared; for a plain operation also under the queue's lock while the state is `WAITING` |
//! | waker | the completer | between its claim and its `DONE` (it takes it and wakes after unlocking) |
//!
//! A plain waiter's state changes only under its one channel's lock (claims,
//! `close`, and the owner's abort all happen there), which is what lets the
//! owner swap its waker under that lock. A `select`'s signal is shared by
//! several channels, so a `select` whose waker changed aborts and registers
//! again instead (see `select.rs`).
//!
//! # Invariants (under the lock)
//!
//! - `recvq` holds a live waiter only while `buf` is empty: a send hands its
//!   value straight to a parked receiver and never through the buffer.
//! - `sendq` holds a live waiter only while `buf.len() >= cap`: a receive
//!   from a full buffer takes the head and moves the first parked sender's
//!   value into the tail (Go's `recv` on a full buffer), so FIFO order holds.
//! - Every queued entry points to a live waiter.
//! - Nothing is dropped under the lock: values and wakers given back travel
//!   out of the critical section first (a value's `Drop` may touch this very
//!   channel).
//!
//! # Memory, and values that panic
//!
//! The buffer is a `VecDeque` that grows with the backlog, so a huge
//! capacity costs nothing up front, and gives memory back when the backlog
//! falls to a quarter of what it holds ([`shrink_if_sparse`]). When the
//! channel goes, the values left in its buffer are dropped one by one under
//! `catch_unwind` ([`drop_values`]): a `Drop` that panics does not stop the
//! others, and a second panic cannot abort the process.
//!
//! # Cancellation
//!
//! A future dropped while parked aborts its signal and removes its entry
//! under the lock, which also waits out any completer that claimed it a
//! moment before. If a receiver had already been handed a value, that value
//! goes to the next parked receiver or back to the *front* of the buffer,
//! even past `cap` (it was sent before anything still buffered). This is the
//! only way `len()` can exceed `capacity()`, and it is transient: receives
//! take from the buffer first.
//!
//! # Rejected
//!
//! - Lock-free queues (crossbeam's array/list flavours): faster under heavy
//!   contention, but `close`, `select` and hand-off each need their own
//!   protocol, and Go shows one short critical section is cheap because a
//!   contended channel parks its users anyway.
//! - A leaf mutex per slot and per waker, and an `Arc` per waiter shared by
//!   the queue and the owner (the first version): no `unsafe`, but five
//!   uncontended lock round trips and three reference-count updates per
//!   hand-off, about a third of a ring hop. The cells and the owned block
//!   need the `unsafe` reasoning above; loom checks every cell access
//!   (`goro/tests/loom_chan.rs`).
//! - The waiter inline in the future (tokio's intrusive lists): no
//!   allocation per park, but the futures are `Unpin` (public API), so they
//!   may move while parked.
//! - An intrusive linked list for the queues (Go's `waitq`, O(1) removal):
//!   a queue is a `VecDeque` sorted by entry id (ids only grow and entries
//!   are only appended), so removing a cancelled entry is a binary search
//!   plus a short shift, with no links to keep.

use std::collections::VecDeque;
use std::ptr::NonNull;
use std::sync::PoisonError;
use std::task::{Context, Poll, Waker};

use crate::loom::{Arc, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::sync::cell::UnsafeCell;

use super::{RecvError, SendError, TryRecvError, TrySendError};
use crate::time::timer::TimerInner;

// --------------------------------------------------------------------------
// Signal: the one-shot completion word of a parked operation
// --------------------------------------------------------------------------

/// Nobody has completed the operation yet; completers may claim it.
const WAITING: usize = 0;
/// The owner gave up (dropped, or a `select` retrying); never claimable again.
const ABORTED: usize = 1;

const fn claimed(case: usize) -> usize {
    2 + 2 * case
}

const fn done(case: usize) -> usize {
    3 + 2 * case
}

/// Case index of a claimed or done state.
const fn case_of(state: usize) -> usize {
    (state - 2) / 2
}

const fn is_done(state: usize) -> bool {
    state >= 2 && state % 2 == 1
}

/// The completion word shared by all waiters of one parked operation (a
/// plain send/recv, or every case of one `select`), plus the waker to call.
///
/// Public only because the `select!` macro's case trait mentions it; it is
/// not nameable outside the crate and has no public methods.
#[doc(hidden)]
pub struct Signal {
    /// `WAITING`, `ABORTED`, `claimed(case)` or `done(case)`.
    state: AtomicUsize,
    /// The owner's waker; see the module docs for who may touch it when.
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: `waker` is the only field that is not `Sync`. It is accessed by one
// thread at a time: by the owner before the signal is shared or (plain
// operations) under the queue's lock while `WAITING`, by the one completer
// whose claim won between that claim and `DONE`; the claim CAS, the channel
// lock and the Release/Acquire pair on `state` order these accesses.
// `Waker` itself is `Send + Sync`.
unsafe impl Sync for Signal {}

impl Signal {
    #[inline]
    pub(crate) fn new(waker: Waker) -> Signal {
        Signal {
            state: AtomicUsize::new(WAITING),
            waker: UnsafeCell::new(Some(waker)),
        }
    }

    /// Claims a waiting operation for `case`. Only one claim (or abort) ever
    /// succeeds. The caller holds the lock of the channel the waiter is queued
    /// on and must call [`Signal::finish`] before releasing it.
    #[inline]
    fn try_claim(&self, case: usize) -> bool {
        // AcqRel: Acquire makes the owner's set-up (the waker and slot
        // written before the waiter was queued or re-registered) visible to
        // the winner; the CAS decides the single winner among completers and
        // the owner's abort.
        self.state
            .compare_exchange(WAITING, claimed(case), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Takes the waker out.
    ///
    /// # Safety
    ///
    /// The caller won the claim ([`Waiter::try_claim`]) and has not yet
    /// called [`Signal::finish`].
    #[inline]
    unsafe fn take_waker(&self) -> Option<Waker> {
        // SAFETY: the won claim makes this thread the only one that may touch
        // the waker until `finish`: other completers lost the CAS (or, for a
        // plain waiter, wait for the channel lock we hold), and the owner
        // touches it only before the signal was shared (which happened-before
        // the claim's Acquire or the lock) or, for a plain waiter, under the
        // lock we hold.
        self.waker.with_mut(|w| unsafe { (*w).take() })
    }

    /// Replaces the owner's waker; returns the old one (to drop unlocked).
    ///
    /// # Safety
    ///
    /// The signal is a plain operation's (one channel only), the caller holds
    /// the lock of that channel and has seen the state `WAITING` under it.
    unsafe fn replace_waker(&self, waker: Waker) -> Option<Waker> {
        // SAFETY: a plain operation's state leaves `WAITING` only under the
        // channel lock the caller holds, so no completer has claimed it and
        // none can until the caller unlocks; the unlock publishes the new
        // waker to the next locker.
        self.waker.with_mut(|w| unsafe { (*w).replace(waker) })
    }

    /// Publishes the completion of a claimed operation. After this store the
    /// owner may free the waiter: the caller must not touch it again.
    #[inline]
    fn finish(&self, case: usize) {
        // Release: pairs with the Acquire load in `done_case`; the owner reads
        // the slot only after seeing DONE, so the slot write must precede it.
        self.state.store(done(case), Ordering::Release);
    }

    /// Stops further claims. `Ok` if the operation was still waiting;
    /// `Err(Some(case))` if a completer claimed it for `case` (it may not be
    /// `DONE` yet: that completer holds the lock of `case`'s channel until
    /// it is); `Err(None)` if it was already aborted.
    #[inline]
    pub(crate) fn abort(&self) -> Result<(), Option<usize>> {
        // AcqRel: symmetric with `try_claim`; exactly one of them wins. The
        // Acquire on failure pairs with `finish` when the state read is DONE.
        self.state
            .compare_exchange(WAITING, ABORTED, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(|s| (s != ABORTED).then(|| case_of(s)))
    }

    /// The case that completed the operation, once it is `DONE`.
    #[inline]
    pub(crate) fn done_case(&self) -> Option<usize> {
        // Acquire: pairs with the Release store in `finish`.
        let s = self.state.load(Ordering::Acquire);
        is_done(s).then(|| case_of(s))
    }

    /// Whether nobody has claimed or aborted the operation yet (a hint).
    #[inline]
    fn is_waiting(&self) -> bool {
        self.state.load(Ordering::Acquire) == WAITING
    }
}

/// Which waker a parked operation registered, compared as
/// [`Waker::will_wake`] does (same data pointer and vtable), so that the
/// owner can tell a changed waker without touching the signal's cell.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct WakerId(usize, usize);

impl WakerId {
    /// For a `select`'s waiters, whose `Select` tracks its waker itself.
    pub(crate) const UNUSED: WakerId = WakerId(0, 0);

    #[inline]
    pub(crate) fn of(w: &Waker) -> WakerId {
        WakerId(w.data() as usize, std::ptr::from_ref(w.vtable()) as usize)
    }
}

/// Locks, ignoring poisoning: no code that can panic runs under these locks
/// with a half-updated state (user values are never dropped under them).
///
/// A contended lock backs off before it queues (Go's runtime lock spins the
/// same way: a few rounds of 30 `PAUSE`s, then sleeps). The standard mutex
/// polls its word between single `PAUSE`s, so with two threads sending on
/// one channel the waiter kept pulling the line away from the holder and
/// every operation missed the cache; waiting politely lets the holder run
/// several operations with the line to itself.
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(not(loom))]
    return try_lock(m).unwrap_or_else(|| lock_contended(m));
    #[cfg(loom)]
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One attempt, ignoring poisoning as [`lock`] does.
#[cfg(not(loom))]
#[inline]
fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// [`lock`] when the lock is held: back off, then queue.
#[cfg(not(loom))]
#[cold]
#[inline(never)]
fn lock_contended<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    for _ in 0..LOCK_SPINS {
        for _ in 0..LOCK_SPIN_PAUSES {
            std::hint::spin_loop();
        }
        if let Some(g) = try_lock(m) {
            return g;
        }
    }
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Rounds of backing off before a contended lock queues (Go: 4).
#[cfg(not(loom))]
const LOCK_SPINS: u32 = 4;
/// `PAUSE`s per round (Go: 30).
#[cfg(not(loom))]
const LOCK_SPIN_PAUSES: u32 = 30;

// --------------------------------------------------------------------------
// Waiter (Go's sudog) and the wait queues
// --------------------------------------------------------------------------

enum SignalRef {
    /// A plain send/recv: one allocation holds waiter and signal.
    Own(Signal),
    /// One case of a `select`: the signal is shared by all its cases.
    Shared(Arc<Signal>),
}

/// One parked operation on one channel.
pub(crate) struct Waiter<T> {
    signal: SignalRef,
    /// The `select` case this waiter stands for (0 for plain operations).
    case: usize,
    /// A parked sender's value, or the value handed to a parked receiver;
    /// see the module docs for who may touch it when.
    slot: UnsafeCell<Option<T>>,
}

impl<T> Waiter<T> {
    pub(crate) fn plain(waker: Waker, value: Option<T>) -> Waiter<T> {
        Waiter {
            signal: SignalRef::Own(Signal::new(waker)),
            case: 0,
            slot: UnsafeCell::new(value),
        }
    }

    pub(crate) fn for_select(signal: Arc<Signal>, case: usize, value: Option<T>) -> Waiter<T> {
        Waiter {
            signal: SignalRef::Shared(signal),
            case,
            slot: UnsafeCell::new(value),
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
    fn try_claim(&self) -> bool {
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
    unsafe fn take_slot(&self) -> Option<T> {
        // SAFETY: completers touch the slot only between claim and DONE,
        // under that channel's lock; the caller's lock excludes that window,
        // and a DONE seen with Acquire orders the completer's write before
        // this read. The owner is the only other accessor, and it is us.
        self.slot.with_mut(|s| unsafe { (*s).take() })
    }
}

/// A waiter this thread dequeued and claimed, under its channel's lock.
/// Ends with [`Claimed::finish`], still under that lock.
struct Claimed<T> {
    waiter: NonNull<Waiter<T>>,
}

impl<T> Claimed<T> {
    fn waiter(&self) -> &Waiter<T> {
        // SAFETY: the waiter was queued (so alive) when we dequeued it under
        // the lock we still hold; its owner frees it only after removing its
        // entry under this lock (which waits for us) or after seeing DONE,
        // which only `finish` stores.
        unsafe { self.waiter.as_ref() }
    }

    /// Hands `v` to a claimed receiver.
    fn put(&self, v: T) {
        // SAFETY: between our claim and our DONE no one else touches the
        // slot (see `Waiter::take_slot`'s contract, which owners obey).
        let old = self.waiter().slot.with_mut(|s| unsafe { (*s).replace(v) });
        debug_assert!(old.is_none(), "a receiver slot was filled twice");
    }

    /// Takes a claimed sender's value.
    fn take(&self) -> T {
        // SAFETY: as in `put`.
        let v = self.waiter().slot.with_mut(|s| unsafe { (*s).take() });
        v.expect("a parked sender holds its value")
    }

    /// Publishes `DONE` and returns the waker to call once unlocked. The
    /// waiter may be freed as soon as `DONE` is stored.
    fn finish(self) -> Option<Waker> {
        let w = self.waiter();
        let signal = w.signal();
        // SAFETY: we won the claim (that is what made this a `Claimed`) and
        // have not finished.
        let waker = unsafe { signal.take_waker() };
        signal.finish(w.case);
        waker
    }
}

/// A parked operation as its owner sees it: its waiter, its entry id, and
/// which waker it registered.
///
/// Owns the waiter's heap block. Dropping a `Parked` leaks the block (never
/// frees it under a queue's feet); it is freed by [`Parked::take_done`] or
/// by [`Chan::unpark_send`] / [`Chan::unpark_recv`].
pub(crate) struct Parked<T> {
    waiter: NonNull<Waiter<T>>,
    id: u64,
    waker: WakerId,
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
    unsafe fn free(self) {
        // SAFETY: the block came from `blocks::new` in `WaitQueue::push`
        // and the caller guarantees this is the last access.
        unsafe { blocks::free(self.waiter) };
    }
}

/// Heap blocks for waiters, with Go's sudog cache: a park allocates one and
/// the owner frees it, a few hundred nanoseconds apart and usually on the
/// same thread, so each thread keeps a few freed blocks for its next parks.
/// Every waiter that fits in [`blocks::BLOCK`] is allocated with exactly that
/// layout (cached or not), so a block freed on another thread, into that
/// thread's cache or to the allocator, is always freed with the layout it
/// was allocated with. Bigger waiters are plain boxes. Under loom the cache
/// is off (model threads share one OS thread's thread-locals).
///
/// A cached block is the 16 most recently freed per thread at most; memory
/// held for nothing is at most 2 KiB per thread, freed when it exits.
mod blocks {
    use std::alloc::Layout;
    use std::ptr::NonNull;

    /// The layout of every cached block: the waiter of a value up to about
    /// 80 bytes (a waiter of a `u64` is 56).
    pub(super) const BLOCK: Layout = match Layout::from_size_align(128, 16) {
        Ok(l) => l,
        Err(_) => panic!("a valid layout"),
    };

    /// Whether `W`s live in `BLOCK`s.
    const fn fits<W>() -> bool {
        let l = Layout::new::<W>();
        l.size() <= BLOCK.size() && l.align() <= BLOCK.align() && l.size() > 0
    }

    /// Moves `w` to the heap.
    pub(super) fn new<W>(w: W) -> NonNull<W> {
        if !fits::<W>() {
            return NonNull::from(Box::leak(Box::new(w)));
        }
        let p = cache::take().cast::<W>();
        // SAFETY: `p` is a live, unaliased allocation of `BLOCK`, which is at
        // least as large and as aligned as `W` (`fits`).
        unsafe { p.as_ptr().write(w) };
        p
    }

    /// Drops and frees a block made by [`new`].
    ///
    /// # Safety
    ///
    /// `p` came from `new::<W>` and is not used again.
    pub(super) unsafe fn free<W>(p: NonNull<W>) {
        if !fits::<W>() {
            // SAFETY: made by `Box::leak` in `new`; the caller's last use.
            drop(unsafe { Box::from_raw(p.as_ptr()) });
            return;
        }
        // SAFETY: `new` wrote a `W` there; the caller's last use.
        unsafe { std::ptr::drop_in_place(p.as_ptr()) };
        // SAFETY: an allocation of `BLOCK`, now holding nothing.
        unsafe { cache::put(p.cast()) };
    }

    #[cfg(not(loom))]
    mod cache {
        use super::BLOCK;
        use std::cell::Cell;
        use std::ptr::NonNull;

        /// Freed blocks kept per thread.
        const KEPT: usize = 16;

        struct Cache {
            len: Cell<usize>,
            blocks: [Cell<*mut u8>; KEPT],
        }

        impl Drop for Cache {
            fn drop(&mut self) {
                for b in &self.blocks[..self.len.get()] {
                    // SAFETY: every cached block is an unused allocation of
                    // `BLOCK` owned by the cache.
                    unsafe { std::alloc::dealloc(b.get(), BLOCK) };
                }
            }
        }

        thread_local! {
            static CACHE: Cache = const {
                Cache {
                    len: Cell::new(0),
                    blocks: [const { Cell::new(std::ptr::null_mut()) }; KEPT],
                }
            };
        }

        /// A block of `BLOCK` layout: a cached one, else a new one.
        pub(super) fn take() -> NonNull<u8> {
            let cached = CACHE
                .try_with(|c| match c.len.get() {
                    0 => std::ptr::null_mut(),
                    n => {
                        c.len.set(n - 1);
                        c.blocks[n - 1].get()
                    }
                })
                .unwrap_or(std::ptr::null_mut());
            NonNull::new(cached).unwrap_or_else(|| {
                // SAFETY: `BLOCK` has a non-zero size.
                let p = unsafe { std::alloc::alloc(BLOCK) };
                NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(BLOCK))
            })
        }

        /// Keeps `b` for a later `take`, or frees it if the cache is full
        /// (or this thread's cache is already gone).
        ///
        /// # Safety
        ///
        /// `b` is an unused allocation of `BLOCK`, given up by the caller.
        pub(super) unsafe fn put(b: NonNull<u8>) {
            let kept = CACHE
                .try_with(|c| {
                    let n = c.len.get();
                    if n == KEPT {
                        return false;
                    }
                    c.blocks[n].set(b.as_ptr());
                    c.len.set(n + 1);
                    true
                })
                .unwrap_or(false);
            if !kept {
                // SAFETY: the caller gives up an allocation of `BLOCK`.
                unsafe { std::alloc::dealloc(b.as_ptr(), BLOCK) };
            }
        }
    }

    /// Under loom: no cache, every block straight from the allocator.
    #[cfg(loom)]
    mod cache {
        use super::BLOCK;
        use std::ptr::NonNull;

        pub(super) fn take() -> NonNull<u8> {
            // SAFETY: `BLOCK` has a non-zero size.
            let p = unsafe { std::alloc::alloc(BLOCK) };
            NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(BLOCK))
        }

        /// # Safety
        ///
        /// `b` is an unused allocation of `BLOCK`, given up by the caller.
        pub(super) unsafe fn put(b: NonNull<u8>) {
            // SAFETY: the caller gives up an allocation of `BLOCK`.
            unsafe { std::alloc::dealloc(b.as_ptr(), BLOCK) };
        }
    }
}

struct Entry<T> {
    id: u64,
    waiter: NonNull<Waiter<T>>,
}

// SAFETY: an entry is a pointer to a waiter that completers on other threads
// access only as the protocol allows (under the channel lock, after winning
// the claim); the values it may carry are `T: Send`.
unsafe impl<T: Send> Send for Entry<T> {}

impl<T> Entry<T> {
    fn waiter(&self) -> &Waiter<T> {
        // SAFETY: every queued entry points to a live waiter: its owner frees
        // it only after removing the entry under the lock our `&mut` to the
        // queue implies we hold, or after a DONE that only a completer that
        // dequeued it stores.
        unsafe { self.waiter.as_ref() }
    }
}

/// A FIFO of parked operations (Go's `waitq`), sorted by `id`.
struct WaitQueue<T> {
    entries: VecDeque<Entry<T>>,
    next_id: u64,
}

impl<T> WaitQueue<T> {
    fn new() -> WaitQueue<T> {
        WaitQueue {
            entries: VecDeque::new(),
            next_id: 0,
        }
    }

    fn push(&mut self, waiter: Waiter<T>, waker: WakerId) -> Parked<T> {
        let id = self.next_id;
        self.next_id += 1;
        let waiter = blocks::new(waiter);
        self.entries.push_back(Entry { id, waiter });
        Parked { waiter, id, waker }
    }

    /// Removes the entry `id` if it is still queued.
    fn remove(&mut self, id: u64) {
        if let Ok(i) = self.entries.binary_search_by_key(&id, |e| e.id) {
            self.entries.remove(i);
        }
    }

    /// Dequeues and claims the first live waiter that is not part of `me`
    /// (a `select` never completes against its own other cases). Dead
    /// entries met on the way are dropped (their owners free the waiters).
    fn claim_first(&mut self, me: Option<&Signal>) -> Option<Claimed<T>> {
        if me.is_none() {
            // Plain operations: the common case, a queue of live waiters.
            while let Some(e) = self.entries.pop_front() {
                if e.waiter().try_claim() {
                    return Some(Claimed { waiter: e.waiter });
                }
            }
            return None;
        }
        let mut i = 0;
        while i < self.entries.len() {
            if is_mine(self.entries[i].waiter(), me) {
                i += 1;
                continue;
            }
            let e = self.entries.remove(i).expect("index checked against len");
            if e.waiter().try_claim() {
                return Some(Claimed { waiter: e.waiter });
            }
        }
        None
    }

    /// Whether a live waiter other than `me`'s is queued, dropping dead
    /// entries met on the way.
    fn has_live(&mut self, me: &Signal) -> bool {
        let mut i = 0;
        while i < self.entries.len() {
            let w = self.entries[i].waiter();
            if is_mine(w, Some(me)) {
                i += 1;
            } else if w.signal().is_waiting() {
                // Only a hint; the real decision is a later claim.
                return true;
            } else {
                self.entries.remove(i);
            }
        }
        false
    }
}

fn is_mine<T>(w: &Waiter<T>, me: Option<&Signal>) -> bool {
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

// --------------------------------------------------------------------------
// hchan
// --------------------------------------------------------------------------

/// What a channel's lock protects.
pub(crate) struct Inner<T> {
    buf: VecDeque<T>,
    closed: bool,
    sendq: WaitQueue<T>,
    recvq: WaitQueue<T>,
}

/// The shared channel (Go's `hchan`).
pub(crate) struct Chan<T> {
    inner: Mutex<Inner<T>>,
    cap: usize,
    /// Live `Sender` handles; the last one to go closes the channel.
    pub(crate) senders: AtomicUsize,
    /// The timer that feeds this channel (Go's `hchan.timer`): receivers
    /// run it when it is due and put it on a heap while they wait (see
    /// `time/timer.rs`). Called only with no channel lock held.
    timer: Option<std::sync::Arc<TimerInner>>,
}

impl<T> Chan<T> {
    pub(crate) fn new(cap: usize) -> Chan<T> {
        Chan::with_timer(cap, None)
    }

    pub(crate) fn with_timer(cap: usize, timer: Option<std::sync::Arc<TimerInner>>) -> Chan<T> {
        Chan {
            inner: Mutex::new(Inner {
                buf: VecDeque::new(),
                closed: false,
                sendq: WaitQueue::new(),
                recvq: WaitQueue::new(),
            }),
            cap,
            senders: AtomicUsize::new(1),
            timer,
        }
    }

    /// A receiver is about to look: a due timer sends first.
    #[inline]
    pub(crate) fn timer_run(&self) {
        if let Some(t) = &self.timer {
            t.maybe_run_chan();
        }
    }

    /// A receiver parked: its timer must be on a heap.
    #[inline]
    pub(crate) fn timer_block(&self) {
        if let Some(t) = &self.timer {
            if t.block_chan() {
                crate::sched::timers::push_timer(t);
            }
        }
    }

    /// A parked receiver stopped waiting.
    #[inline]
    pub(crate) fn timer_unblock(&self) {
        if let Some(t) = &self.timer {
            t.unblock_chan();
        }
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        lock(&self.inner)
    }

    pub(crate) fn len(&self) -> usize {
        self.timer_run();
        self.lock().buf.len()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Go's `closechan`: marks the channel closed and completes every parked
    /// operation (receivers with nothing, senders keeping their value).
    /// `false` if it was already closed.
    pub(crate) fn close(&self) -> bool {
        let mut woken = Vec::new();
        {
            let mut inner = self.lock();
            if inner.closed {
                return false;
            }
            inner.closed = true;
            let recvq = std::mem::take(&mut inner.recvq.entries);
            let sendq = std::mem::take(&mut inner.sendq.entries);
            // Claim and finish under the lock, so that an owner that locks
            // this channel afterwards always sees DONE. Dead entries are
            // simply forgotten: their owners free them.
            for e in recvq.into_iter().chain(sendq) {
                if e.waiter().try_claim() {
                    woken.extend(Claimed { waiter: e.waiter }.finish());
                }
            }
        }
        for w in woken {
            w.wake();
        }
        true
    }

    /// Go's `chansend` without blocking: hand-off to a parked receiver, else
    /// the buffer. On success returns the receiver to wake after unlocking.
    pub(crate) fn send_locked(
        &self,
        inner: &mut Inner<T>,
        v: T,
        me: Option<&Signal>,
    ) -> Result<Woken, TrySendError<T>> {
        if inner.closed {
            return Err(TrySendError::Closed(v));
        }
        if let Some(w) = inner.recvq.claim_first(me) {
            w.put(v);
            return Ok(w.finish());
        }
        if inner.buf.len() < self.cap {
            inner.buf.push_back(v);
            return Ok(None);
        }
        Err(TrySendError::Full(v))
    }

    /// Go's `chanrecv` without blocking: the buffer's head (refilling its
    /// tail from a parked sender), else a parked sender's value directly.
    /// On success also returns the sender to wake after unlocking.
    pub(crate) fn recv_locked(
        &self,
        inner: &mut Inner<T>,
        me: Option<&Signal>,
    ) -> Result<(T, Woken), TryRecvError> {
        if let Some(v) = inner.buf.pop_front() {
            let mut woken = None;
            if inner.buf.len() < self.cap {
                if let Some(w) = inner.sendq.claim_first(me) {
                    inner.buf.push_back(w.take());
                    woken = w.finish();
                }
            }
            shrink_if_sparse(&mut inner.buf);
            return Ok((v, woken));
        }
        if let Some(w) = inner.sendq.claim_first(me) {
            let v = w.take();
            return Ok((v, w.finish()));
        }
        if inner.closed {
            Err(TryRecvError::Closed)
        } else {
            Err(TryRecvError::Empty)
        }
    }

    /// Whether a send would complete now, not counting `me`'s own waiters.
    pub(crate) fn send_ready_locked(&self, inner: &mut Inner<T>, me: &Signal) -> bool {
        inner.closed || inner.recvq.has_live(me) || inner.buf.len() < self.cap
    }

    /// Whether a receive would complete now, not counting `me`'s own waiters.
    pub(crate) fn recv_ready_locked(&self, inner: &mut Inner<T>, me: &Signal) -> bool {
        !inner.buf.is_empty() || inner.closed || inner.sendq.has_live(me)
    }

    /// Queues `w`, whose owner registered the waker `waker`.
    pub(crate) fn park_send_locked(
        &self,
        inner: &mut Inner<T>,
        w: Waiter<T>,
        waker: WakerId,
    ) -> Parked<T> {
        inner.sendq.push(w, waker)
    }

    /// Queues `w`, whose owner registered the waker `waker`.
    pub(crate) fn park_recv_locked(
        &self,
        inner: &mut Inner<T>,
        w: Waiter<T>,
        waker: WakerId,
    ) -> Parked<T> {
        inner.recvq.push(w, waker)
    }

    /// Takes a parked sender off the channel: aborts it if still waiting and
    /// removes its entry. Returns the value if it was not taken (not claimed,
    /// or completed by `close`); `None` if a receiver took it.
    pub(crate) fn unpark_send(&self, p: Parked<T>) -> Option<T> {
        let v = {
            let mut inner = self.lock();
            // Under the lock: a completer on this channel has either finished
            // or not started; one on another channel is resolved by the CAS.
            let _ = p.waiter().signal().abort();
            inner.sendq.remove(p.id);
            // SAFETY: we hold the lock of the channel it was queued on.
            unsafe { p.waiter().take_slot() }
        };
        // SAFETY: its entry is gone (removed above, or dequeued by a completer
        // that finished under this lock before we took it), and a completer
        // on another channel could only claim a different waiter.
        unsafe { p.free() };
        v
    }

    /// Takes a parked receiver off the channel. If it had been completed by a
    /// sender but never got to see the value, the value is re-handed to the
    /// next parked receiver or put back at the front of the buffer.
    pub(crate) fn unpark_recv(&self, p: Parked<T>) {
        let woken = {
            let mut inner = self.lock();
            // Claimed for this very waiter means DONE: its completer was on
            // this channel, and we hold the lock it finished under.
            let won = match p.waiter().signal().abort() {
                Ok(()) => false,
                Err(case) => case == Some(p.waiter().case),
            };
            inner.recvq.remove(p.id);
            // SAFETY: we hold the lock of the channel it was queued on.
            match unsafe { p.waiter().take_slot() } {
                Some(v) if won => self.put_back_locked(&mut inner, v),
                Some(_) => unreachable!("only the winning case is handed a value"),
                None => None,
            }
        };
        wake(woken);
        // SAFETY: as in `unpark_send`.
        unsafe { p.free() };
        self.timer_unblock();
    }

    fn put_back_locked(&self, inner: &mut Inner<T>, v: T) -> Woken {
        if let Some(w) = inner.recvq.claim_first(None) {
            w.put(v);
            return w.finish();
        }
        inner.buf.push_front(v);
        None
    }

    /// A plain parked operation's poll: `true` once it is `DONE`. Otherwise
    /// makes sure the waker of `cx` is the one a completer will call.
    pub(crate) fn poll_parked(&self, p: &mut Parked<T>, cx: &Context<'_>) -> bool {
        let signal = p.waiter().signal();
        if signal.done_case().is_some() {
            return true;
        }
        let id = WakerId::of(cx.waker());
        if id == p.waker {
            return false;
        }
        // A different waker (the future moved to another task): swap it in
        // under the lock, where a plain operation's state cannot change.
        let old = {
            let _inner = self.lock();
            if signal.done_case().is_some() {
                return true;
            }
            // SAFETY: a plain waiter (only plain operations poll here), its
            // channel's lock held, and not DONE under it, so WAITING (only
            // `unpark_*`, which consumes the `Parked`, aborts).
            unsafe { signal.replace_waker(cx.waker().clone()) }
        };
        p.waker = id;
        drop(old);
        false
    }
}

impl<T> Drop for Chan<T> {
    fn drop(&mut self) {
        if let Some(t) = &self.timer {
            t.detach_chan();
        }
        let buf = std::mem::take(&mut self.lock().buf);
        drop_values(buf);
    }
}

/// Drops the values left in a channel's buffer when the channel goes.
///
/// A value's `Drop` may panic. Dropping the `VecDeque` as it is would run
/// the next value's `Drop` during that panic's unwind, and a second panic
/// aborts the process. So each value is dropped under `catch_unwind`: every
/// value is dropped, and the first panic is resumed once they all are (or
/// dropped, if this thread is already unwinding, where resuming would
/// abort).
fn drop_values<T>(buf: VecDeque<T>) {
    if !std::mem::needs_drop::<T>() {
        return;
    }
    let mut first_panic = None;
    for v in buf {
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(v))) {
            first_panic.get_or_insert(p);
        }
    }
    if let Some(p) = first_panic {
        if !std::thread::panicking() {
            std::panic::resume_unwind(p);
        }
    }
}

/// Smallest buffer, in bytes, that is ever given back: below it a channel
/// keeps what it has, so a small channel never reallocates.
const SHRINK_FLOOR_BYTES: usize = 16 * 1024;

/// Gives a buffer's memory back once the backlog has fallen to a quarter
/// of what the buffer holds, halving it at most (down to the floor).
///
/// The buffer grows with the backlog (a `bounded(1 << 30)` costs nothing up
/// front), so without this a channel that once held a burst keeps that
/// memory for its whole life. The gap between the shrink point (a quarter)
/// and the new size (twice the backlog) is the hysteresis: a steady backlog
/// never reallocates, and each shrink copies at most a quarter of the
/// buffer, paid for by the receives that emptied the other three quarters.
#[inline]
fn shrink_if_sparse<T>(buf: &mut VecDeque<T>) {
    if std::mem::size_of::<T>() == 0 {
        return; // a buffer of zero-sized values holds no memory
    }
    let held = buf.capacity();
    if held > shrink_floor::<T>() && buf.len() <= held / 4 {
        shrink(buf);
    }
}

#[cold]
#[inline(never)]
fn shrink<T>(buf: &mut VecDeque<T>) {
    buf.shrink_to((buf.len() * 2).max(shrink_floor::<T>()));
}

/// [`SHRINK_FLOOR_BYTES`] in values of `T` (at least 16).
const fn shrink_floor<T>() -> usize {
    let n = SHRINK_FLOOR_BYTES / std::mem::size_of::<T>();
    if n < 16 {
        16
    } else {
        n
    }
}

impl Chan<std::time::Instant> {
    /// Empties the buffer (a timer's stop/reset: no stale value); whether
    /// there was anything. Takes the channel lock, nothing else.
    pub(crate) fn drain_buffer(&self) -> bool {
        let mut inner = self.lock();
        let any = !inner.buf.is_empty();
        inner.buf.clear();
        any
    }
}

// --------------------------------------------------------------------------
// Plain send and receive futures' engines
// --------------------------------------------------------------------------

/// One step of a send: completes now, or parks `value` and returns Pending.
pub(crate) fn poll_send<T>(
    chan: &Chan<T>,
    value: &mut Option<T>,
    parked: &mut Option<Parked<T>>,
    cx: &mut Context<'_>,
) -> Poll<Result<(), SendError<T>>> {
    if let Some(p) = parked {
        if !chan.poll_parked(p, cx) {
            return Poll::Pending;
        }
        let p = parked.take().expect("checked above");
        // DONE: a receiver took the value, or `close` left it for us.
        return Poll::Ready(match p.take_done() {
            None => Ok(()),
            Some(v) => Err(SendError(v)),
        });
    }
    // A safe point (`coop.rs`): past the task's budget, yield before sending.
    if crate::sched::coop::poll_proceed(cx).is_pending() {
        return Poll::Pending;
    }
    let v = value.take().expect("send future polled after completion");
    let mut inner = chan.lock();
    match chan.send_locked(&mut inner, v, None) {
        Ok(woken) => {
            drop(inner);
            wake(woken);
            Poll::Ready(Ok(()))
        }
        Err(TrySendError::Closed(v)) => {
            drop(inner);
            Poll::Ready(Err(SendError(v)))
        }
        Err(TrySendError::Full(v)) => {
            let w = Waiter::plain(cx.waker().clone(), Some(v));
            *parked = Some(chan.park_send_locked(&mut inner, w, WakerId::of(cx.waker())));
            Poll::Pending
        }
    }
}

/// One step of a receive: completes now, or parks and returns Pending.
pub(crate) fn poll_recv<T>(
    chan: &Chan<T>,
    parked: &mut Option<Parked<T>>,
    cx: &mut Context<'_>,
) -> Poll<Result<T, RecvError>> {
    if let Some(p) = parked {
        if !chan.poll_parked(p, cx) {
            return Poll::Pending;
        }
        let p = parked.take().expect("checked above");
        chan.timer_unblock();
        // DONE: a sender handed us a value, or `close` completed us empty.
        return Poll::Ready(p.take_done().ok_or(RecvError));
    }
    // A safe point (`coop.rs`): past the task's budget, yield first.
    if crate::sched::coop::poll_proceed(cx).is_pending() {
        return Poll::Pending;
    }
    chan.timer_run();
    let mut inner = chan.lock();
    match chan.recv_locked(&mut inner, None) {
        Ok((v, woken)) => {
            drop(inner);
            wake(woken);
            Poll::Ready(Ok(v))
        }
        Err(TryRecvError::Closed) => Poll::Ready(Err(RecvError)),
        Err(TryRecvError::Empty) => {
            let w = Waiter::plain(cx.waker().clone(), None);
            *parked = Some(chan.park_recv_locked(&mut inner, w, WakerId::of(cx.waker())));
            drop(inner);
            chan.timer_block();
            Poll::Pending
        }
    }
}
