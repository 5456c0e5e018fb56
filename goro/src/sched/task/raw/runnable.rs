//! The scheduled side of a task: the [`Runnable`] that run queues hold and
//! that a worker runs, and the waker every task shares.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::task::{Context, RawWaker, RawWakerVTable, Waker};

use super::sync::Ordering;
use super::{Header, CLOSED, COMPLETE, JOIN, REF, RUNNING, SCHEDULED};
use crate::sched::task::meta::TaskMeta;

/// A scheduled task: what run queues hold (one pointer).
pub(crate) struct Runnable {
    pub(super) ptr: NonNull<Header>,
}

// SAFETY: a task's future and schedule function are `Send` (goro's spawn
// functions require it) and every shared access goes through the state
// word's protocol.
unsafe impl Send for Runnable {}
// SAFETY: `&Runnable` only reads the record, which is `Sync`.
unsafe impl Sync for Runnable {}

impl Runnable {
    /// The task's record.
    #[inline]
    pub(crate) fn metadata(&self) -> &TaskMeta {
        // SAFETY: our reference keeps the header alive.
        unsafe { &self.ptr.as_ref().meta }
    }

    /// Hands the task to its schedule function (as a wake would).
    pub(crate) fn schedule(self) {
        let this = ManuallyDrop::new(self);
        // SAFETY: our reference keeps the header alive.
        let header = unsafe { this.ptr.as_ref() };
        header.add_ref();
        // SAFETY: our reference and SCHEDULED go to the new Runnable, the
        // one just added to the call.
        unsafe { (header.vtable().schedule)(this.ptr, false) };
    }

    /// A waker of this task (one more reference).
    #[cfg(loom)]
    pub(crate) fn waker(&self) -> Waker {
        // SAFETY: our reference keeps the header alive.
        unsafe { self.ptr.as_ref() }.add_ref();
        // SAFETY: the reference just added is the waker's.
        unsafe { waker_of(self.ptr) }
    }

    /// The pointer a run queue stores; [`Runnable::from_raw`] undoes it.
    #[inline]
    pub(crate) fn into_raw(self) -> NonNull<()> {
        ManuallyDrop::new(self).ptr.cast()
    }

    /// # Safety
    ///
    /// `p` came from [`Runnable::into_raw`] and is used once.
    #[inline]
    pub(crate) unsafe fn from_raw(p: NonNull<()>) -> Runnable {
        Runnable { ptr: p.cast() }
    }

    /// Polls the task once (unless it was cancelled, in which case its
    /// future is dropped). Returns whether it was woken during the poll
    /// (it is then scheduled again, already).
    pub(crate) fn run(self) -> bool {
        let h = ManuallyDrop::new(self).ptr;
        // SAFETY: our reference keeps the header alive throughout: it is
        // given up only at the end of each path below.
        let header = unsafe { h.as_ref() };
        let mut s = header.state.load(Ordering::Acquire);
        loop {
            debug_assert!(
                s & SCHEDULED != 0 && s & RUNNING == 0,
                "a Runnable of an unscheduled task"
            );
            if s & CLOSED != 0 {
                // SAFETY: SCHEDULED gives us the stage; our reference.
                unsafe { Header::cancel_held(h) };
                return false;
            }
            match header.state.compare_exchange_weak(
                s,
                (s & !SCHEDULED) | RUNNING,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        // The waker the poll sees borrows our reference.
        // SAFETY: the data pointer is a live header for the whole poll.
        let waker = ManuallyDrop::new(unsafe { waker_of(h) });
        let mut cx = Context::from_waker(&waker);
        // SAFETY: we hold RUNNING and the future is there.
        let poll = unsafe { (header.vtable().poll)(h, &mut cx) };
        if poll.is_ready() {
            let prev = header
                .state
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                    Some((s & !(SCHEDULED | RUNNING)) | COMPLETE)
                })
                .unwrap_or_else(|s| s);
            if prev & JOIN == 0 {
                // Nobody will take the output: it is ours to drop.
                // SAFETY: COMPLETE without JOIN makes the output ours.
                unsafe { (header.vtable().drop_stage)(h) };
            } else {
                // SAFETY: `prev` is the word we set COMPLETE in.
                unsafe { header.notify_joiner(prev) };
            }
            // SAFETY: our reference.
            unsafe { Header::drop_ref(h) };
            return false;
        }
        let mut s = header.state.load(Ordering::Acquire);
        loop {
            if s & CLOSED != 0 {
                // SAFETY: RUNNING gives us the stage; our reference.
                unsafe { Header::cancel_held(h) };
                return false;
            }
            // Woken during the poll: one more reference, for the schedule
            // call (ours goes to the next Runnable).
            let next = if s & SCHEDULED != 0 {
                (s & !RUNNING) + REF
            } else {
                s & !RUNNING
            };
            match header
                .state
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if s & SCHEDULED != 0 => {
                    // Our reference and SCHEDULED go to the next Runnable,
                    // the one just added to the call.
                    // SAFETY: as said.
                    unsafe { (header.vtable().schedule)(h, true) };
                    return true;
                }
                Ok(_) => {
                    // SAFETY: our reference; wakers hold theirs.
                    unsafe { Header::drop_ref(h) };
                    return false;
                }
                Err(now) => s = now,
            }
        }
    }
}

impl Drop for Runnable {
    /// A Runnable dropped unrun (a queue dropped at shutdown) cancels its
    /// task: the future is dropped here, as a run would have after CLOSED.
    fn drop(&mut self) {
        // SAFETY: our reference.
        let header = unsafe { self.ptr.as_ref() };
        header.state.fetch_or(CLOSED, Ordering::AcqRel);
        // SAFETY: SCHEDULED gives us the stage; our reference.
        unsafe { Header::cancel_held(self.ptr) };
    }
}

/// A waker of the task at `h` that owns one reference to it.
///
/// # Safety
///
/// The caller gives up a reference to the task at `h` to the waker (or,
/// for a waker it never drops, lends one it holds).
#[inline]
pub(super) unsafe fn waker_of(h: NonNull<Header>) -> Waker {
    // SAFETY: `WAKER` over a live header, with the reference the caller
    // gives (or lends).
    unsafe { Waker::from_raw(RawWaker::new(h.as_ptr().cast_const().cast(), &WAKER)) }
}

/// The waker of every task: its data pointer is the task's header, and
/// each waker holds a reference.
pub(super) static WAKER: RawWakerVTable = RawWakerVTable::new(
    |p| {
        // SAFETY: a waker's data is a live header (its reference).
        unsafe { &*p.cast::<Header>() }.add_ref();
        RawWaker::new(p, &WAKER)
    },
    // SAFETY: the waker's reference goes with the wake.
    |p| unsafe { Header::wake(NonNull::new_unchecked(p.cast_mut().cast()), true) },
    // SAFETY: the waker keeps its reference.
    |p| unsafe { Header::wake(NonNull::new_unchecked(p.cast_mut().cast()), false) },
    // SAFETY: the waker's reference.
    |p| unsafe { Header::drop_ref(NonNull::new_unchecked(p.cast_mut().cast())) },
);
