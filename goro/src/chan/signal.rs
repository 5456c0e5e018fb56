//! The one-shot completion word of a parked operation (Go keeps it in
//! `g.selectDone`), and the owner's waker. Who may move it, and who may
//! touch the waker when, is the protocol in `chan.rs`'s module docs:
//!
//! ```text
//! WAITING --claim(case)--> CLAIMED(case) --finish--> DONE(case)
//!    \--abort (owner: cancelled, or select retrying)--> ABORTED
//! ```

use std::task::Waker;

use crate::loom::cell::UnsafeCell;
use crate::loom::{AtomicUsize, Ordering};

/// Nobody has completed the operation yet; completers may claim it.
pub(super) const WAITING: usize = 0;
/// The owner gave up (dropped, or a `select` retrying); never claimable again.
pub(super) const ABORTED: usize = 1;

pub(super) const fn claimed(case: usize) -> usize {
    2 + 2 * case
}

pub(super) const fn done(case: usize) -> usize {
    3 + 2 * case
}

/// Case index of a claimed or done state.
pub(super) const fn case_of(state: usize) -> usize {
    (state - 2) / 2
}

pub(super) const fn is_done(state: usize) -> bool {
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
    pub(super) state: AtomicUsize,
    /// The owner's waker; see the module docs for who may touch it when.
    pub(super) waker: UnsafeCell<Option<Waker>>,
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
    pub(super) fn try_claim(&self, case: usize) -> bool {
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
    pub(super) unsafe fn take_waker(&self) -> Option<Waker> {
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
    pub(super) unsafe fn replace_waker(&self, waker: Waker) -> Option<Waker> {
        // SAFETY: a plain operation's state leaves `WAITING` only under the
        // channel lock the caller holds, so no completer has claimed it and
        // none can until the caller unlocks; the unlock publishes the new
        // waker to the next locker.
        self.waker.with_mut(|w| unsafe { (*w).replace(waker) })
    }

    /// Publishes the completion of a claimed operation. After this store the
    /// owner may free the waiter: the caller must not touch it again.
    #[inline]
    pub(super) fn finish(&self, case: usize) {
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
    pub(super) fn is_waiting(&self) -> bool {
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
