//! The join side of a task: the [`TaskHandle`] inside a `JoinHandle`,
//! which takes the output, detaches or cancels.

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::task::{Context, Poll};

use super::sync::Ordering;
use super::{Header, AWAITER, CLOSED, COMPLETE, JOIN, REF, RUNNING, SCHEDULED};
use crate::sched::task::meta::TaskMeta;

/// The join side of a task: takes its output.
pub(crate) struct TaskHandle<T> {
    pub(super) ptr: NonNull<Header>,
    pub(super) _out: PhantomData<T>,
}

// SAFETY: the handle moves the output (`T: Send`) to its owner; every
// shared access goes through the state word's protocol.
unsafe impl<T: Send> Send for TaskHandle<T> {}
// SAFETY: `&TaskHandle` only reads the state word and the record.
unsafe impl<T: Send> Sync for TaskHandle<T> {}
// The output is never pinned.
impl<T> Unpin for TaskHandle<T> {}

impl<T> TaskHandle<T> {
    fn header(&self) -> &Header {
        // SAFETY: our reference keeps the header alive.
        unsafe { self.ptr.as_ref() }
    }

    /// The task's record.
    pub(crate) fn metadata(&self) -> &TaskMeta {
        &self.header().meta
    }

    /// Whether the task finished or was cancelled.
    pub(crate) fn is_finished(&self) -> bool {
        self.header().state.load(Ordering::Acquire) & (COMPLETE | CLOSED) != 0
    }

    /// The output once the task is complete (`None` if it was cancelled);
    /// until then, registers `cx`'s waker. Not to be polled again after it
    /// returned `Ready`.
    pub(crate) fn poll_output(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let header = self.header();
        let mut s = header.state.load(Ordering::Acquire);
        if s & COMPLETE == 0 {
            if s & AWAITER != 0 {
                let same = header.awaiter.with(|w| {
                    // SAFETY: AWAITER is set and COMPLETE is not: only we
                    // write the waker, and a completer only reads it.
                    unsafe { &*w }
                        .with(|w| w.will_wake(cx.waker()))
                        .unwrap_or(false)
                });
                if same {
                    return Poll::Pending;
                }
                match self.update(|s| s & !AWAITER) {
                    Ok(now) => s = now,
                    Err(now) => s = now,
                }
            }
            if s & COMPLETE == 0 {
                // SAFETY: AWAITER is clear and COMPLETE is not: the waker is
                // ours alone.
                header
                    .awaiter
                    .with_mut(|w| unsafe { *w = super::awaiter::Awaiter::new(cx.waker()) });
                if self.update(|s| s | AWAITER).is_ok() {
                    return Poll::Pending;
                }
            }
        }
        // COMPLETE with JOIN set: the output is ours.
        let mut out: Option<T> = None;
        // SAFETY: we own the output; `out` is an `Option<T>` and `T` is the
        // future's output type (`spawn` ties them).
        unsafe { (header.vtable().take_output)(self.ptr, (&mut out as *mut Option<T>).cast()) };
        Poll::Ready(out)
    }

    /// Applies `f` to the word unless it is COMPLETE; `Err` with the word
    /// if it is.
    fn update(&self, f: impl Fn(usize) -> usize) -> Result<usize, usize> {
        self.header()
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                (s & COMPLETE == 0).then(|| f(s))
            })
            .map(&f)
    }

    /// Cancels the task: its future is dropped by its next run (scheduled
    /// now if it is parked), or by its current one. The handle is given up.
    pub(crate) fn cancel(self) {
        let h = self.ptr;
        let header = self.header();
        let mut s = header.state.load(Ordering::Acquire);
        loop {
            if s & (COMPLETE | CLOSED) != 0 {
                break;
            }
            let idle = s & (SCHEDULED | RUNNING) == 0;
            let next = if idle {
                s + 2 * REF + SCHEDULED + CLOSED
            } else {
                s | CLOSED
            };
            match header
                .state
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    if idle {
                        // SAFETY: SCHEDULED and a reference just added go to
                        // the Runnable, whose run drops the future; the
                        // other to the call.
                        unsafe { (header.vtable().schedule)(h, false) };
                    }
                    break;
                }
                Err(now) => s = now,
            }
        }
        drop(self);
    }
}

impl<T> Drop for TaskHandle<T> {
    /// Detaches: the task runs on, and its output is dropped by whoever
    /// ends up owning it.
    fn drop(&mut self) {
        let prev = self
            .header()
            .state
            .fetch_and(!(JOIN | AWAITER), Ordering::AcqRel);
        if prev & COMPLETE != 0 {
            // Completed with JOIN set: the output (if not taken) is ours.
            // SAFETY: as said.
            unsafe { (self.header().vtable().drop_stage)(self.ptr) };
        }
        // SAFETY: our reference.
        unsafe { Header::drop_ref(self.ptr) };
    }
}
