//! A task's allocation and its state word: goro's `g`.
//!
//! One allocation holds a task's [`Header`] (its state word, its joiner's
//! waker, its record), its schedule function and its future, which is
//! replaced by its output when it finishes. The memory comes from
//! `memory.rs`, so a spawn in steady state reuses a dead task's block the
//! way Go's `newproc` reuses a dead `g`.
//!
//! Three kinds of handle reach a task, and each holds one reference:
//!
//! * a [`Runnable`]: the task is scheduled, and whoever holds the
//!   `Runnable` (a run queue, a thread about to poll) is the only one that
//!   may touch its future;
//! * a [`Waker`]: it may schedule the task;
//! * the [`TaskHandle`] (inside a `JoinHandle`): it may take the output.
//!
//! A call of the schedule function holds one more, for its length (the
//! function lives in the allocation); the read-modify-write that sets
//! SCHEDULED adds it with the `Runnable`'s.
//!
//! The state word holds the reference count above six flags:
//!
//! ```text
//! SCHEDULED  a Runnable exists, or a wake came during the poll
//! RUNNING    a thread is polling the future
//! COMPLETE   the future is gone: the output is stored, or it was cancelled
//! CLOSED     cancelled: an abort, or a Runnable dropped unrun
//! JOIN       the TaskHandle lives (so the output is kept for it)
//! AWAITER    the TaskHandle's waker is stored and is the joiner's to wake
//! ```
//!
//! The rules, each a single read-modify-write of the word:
//!
//! * A wake of an idle task (none of SCHEDULED, RUNNING, COMPLETE, CLOSED)
//!   sets SCHEDULED and makes a `Runnable`; a wake of a running task only
//!   sets SCHEDULED, and the poll's end turns it into a `Runnable` (a wake
//!   while running, which goro's scheduler treats as a yield); a wake of a
//!   scheduled task writes the word back unchanged, so that the coming run
//!   sees what the waker wrote before it woke (the run's first RMW reads
//!   that write or a later one); a wake of a complete or cancelled task
//!   does nothing.
//! * `run` trades SCHEDULED for RUNNING, polls, and clears RUNNING; the
//!   future and the output are touched only by the holder of SCHEDULED or
//!   RUNNING, until COMPLETE; after COMPLETE the output is the
//!   `TaskHandle`'s if JOIN was set in the word that COMPLETE was set in,
//!   and the runner's (who drops it) otherwise.
//! * The joiner's waker is written only by the `TaskHandle` while AWAITER
//!   is clear and COMPLETE is not set; the completer reads it only if
//!   AWAITER was set in the word it set COMPLETE in. Nobody else touches
//!   it until the allocation is freed.
//! * Cancelling sets CLOSED; an idle task is also scheduled, so that its
//!   next run drops the future on a worker (a running or queued task's
//!   holder sees CLOSED itself).
//! * The last reference frees the allocation (and drops whatever is left
//!   in it: a future nobody will poll, an output nobody took).
//!
//! goro's own rather than the `async-task` crate's: that crate allocates
//! and frees each task itself, so it could not keep a dead task's memory
//! for the next spawn.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};

use crate::sched::task::memory;
use crate::sched::task::meta::TaskMeta;
use sync::{AtomicUsize, Ordering, UnsafeCell};

mod awaiter;
mod join;
#[cfg(all(loom, loom_task))]
mod loom;
mod runnable;

pub(crate) use join::TaskHandle;
pub(crate) use runnable::Runnable;

/// The state word's atomics: loom's in the task's own model
/// (`--cfg loom --cfg loom_task`), std's otherwise, so that the other loom
/// models treat the task as the black box `async-task` was to them.
mod sync {
    #[cfg(all(loom, loom_task))]
    pub(super) use loom::cell::UnsafeCell;
    #[cfg(all(loom, loom_task))]
    pub(super) use loom::sync::atomic::{AtomicUsize, Ordering};

    #[cfg(not(all(loom, loom_task)))]
    pub(super) use std::sync::atomic::{AtomicUsize, Ordering};

    /// `std`'s cell with loom's access API.
    #[cfg(not(all(loom, loom_task)))]
    pub(super) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    #[cfg(not(all(loom, loom_task)))]
    impl<T> UnsafeCell<T> {
        pub(super) const fn new(v: T) -> UnsafeCell<T> {
            UnsafeCell(std::cell::UnsafeCell::new(v))
        }
        #[inline(always)]
        pub(super) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
        #[inline(always)]
        pub(super) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

const SCHEDULED: usize = 1 << 0;
const RUNNING: usize = 1 << 1;
const COMPLETE: usize = 1 << 2;
const CLOSED: usize = 1 << 3;
const JOIN: usize = 1 << 4;
const AWAITER: usize = 1 << 5;
const REF: usize = 1 << 6;

/// The part of a task that does not depend on its future's type.
pub(crate) struct Header {
    state: AtomicUsize,
    vtable: &'static Vtable,
    /// The joiner's waker (module docs: who may touch it when), in one
    /// word (`awaiter.rs`).
    awaiter: UnsafeCell<awaiter::Awaiter>,
    meta: TaskMeta,
}

/// The operations that need the future's type.
struct Vtable {
    /// Polls the future; on `Ready`, stores the output in its place.
    poll: unsafe fn(NonNull<Header>, &mut Context<'_>) -> Poll<()>,
    /// Drops what the stage holds: the future (cancelled) or the output
    /// (nobody will take it).
    drop_stage: unsafe fn(NonNull<Header>),
    /// Moves the output (or `None`, if it was cancelled) into `*out`, an
    /// `Option` of the output's type.
    take_output: unsafe fn(NonNull<Header>, out: *mut ()),
    /// Calls the schedule function with a `Runnable` (one reference).
    schedule: unsafe fn(NonNull<Header>, woken_while_running: bool),
    /// Drops what is left and frees the allocation.
    dealloc: unsafe fn(NonNull<Header>),
}

/// What the allocation holds after the header.
enum Stage<F: Future> {
    Running(F),
    /// The output, until it is taken or dropped. Two variants, not three
    /// (with a separate `Gone`): the tag then fits in one invalid value of
    /// the future's (goro's wrapper holds a non-null pointer), where a
    /// third variant would need a word of its own.
    Finished(Option<F::Output>),
}

/// The allocation. `repr(C)`: the header is first, so a pointer to the
/// cell is a pointer to the header.
#[repr(C)]
struct Cell<F: Future, S> {
    header: Header,
    stage: UnsafeCell<Stage<F>>,
    schedule: S,
}

/// Allocates a task for `future` with record `meta`; `schedule` is called
/// with each `Runnable` a wake makes, and whether the wake came while the
/// task was running. `future` is made from a pointer to the record, which
/// lives as long as the allocation. The `Runnable` returned is the first
/// scheduling of the task (it is not yet in any queue).
pub(crate) fn spawn<F, S, T>(
    meta: TaskMeta,
    future: impl FnOnce(NonNull<TaskMeta>) -> F,
    schedule: S,
) -> (Runnable, TaskHandle<T>)
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
    S: Fn(Runnable, bool) + Send + Sync + 'static,
{
    let cell = memory::alloc::<Cell<F, S>>();
    let header = Header {
        state: AtomicUsize::new(SCHEDULED | JOIN | (2 * REF)),
        vtable: &Cell::<F, S>::VTABLE,
        awaiter: UnsafeCell::new(awaiter::Awaiter::NONE),
        meta,
    };
    // SAFETY: fresh memory of `Cell<F, S>`'s layout; the header is written
    // before the future is made, so the record's address is final.
    unsafe {
        let c = cell.as_ptr();
        std::ptr::addr_of_mut!((*c).header).write(header);
        std::ptr::addr_of_mut!((*c).schedule).write(schedule);
        // Not null: a field of a live allocation.
        let meta = NonNull::new_unchecked(std::ptr::addr_of_mut!((*c).header.meta));
        std::ptr::addr_of_mut!((*c).stage).write(UnsafeCell::new(Stage::Running(future(meta))));
    }
    let ptr = cell.cast::<Header>();
    (
        Runnable { ptr },
        TaskHandle {
            ptr,
            _out: PhantomData,
        },
    )
}

impl<F: Future, S: Fn(Runnable, bool)> Cell<F, S> {
    const VTABLE: Vtable = Vtable {
        poll: Self::poll,
        drop_stage: Self::drop_stage,
        take_output: Self::take_output,
        schedule: Self::schedule,
        dealloc: Self::dealloc,
    };

    /// # Safety
    ///
    /// `h` heads a live `Cell<F, S>`.
    unsafe fn at<'a>(h: NonNull<Header>) -> &'a Cell<F, S> {
        // SAFETY: the caller's contract; the header is the first field.
        unsafe { h.cast::<Cell<F, S>>().as_ref() }
    }

    /// # Safety
    ///
    /// The caller holds RUNNING, and the stage holds the future.
    unsafe fn poll(h: NonNull<Header>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: the caller's contract: RUNNING gives the stage to us.
        let cell = unsafe { Self::at(h) };
        cell.stage.with_mut(|stage| {
            // SAFETY: RUNNING: nobody else touches the stage. The future is
            // never moved out of the allocation while it lives.
            let stage = unsafe { &mut *stage };
            let Stage::Running(fut) = stage else {
                unreachable!("a task polled without its future");
            };
            // SAFETY: as above: pinned in the allocation.
            match unsafe { Pin::new_unchecked(fut) }.poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(out) => {
                    *stage = Stage::Finished(Some(out));
                    Poll::Ready(())
                }
            }
        })
    }

    /// # Safety
    ///
    /// The caller owns the stage: it holds SCHEDULED or RUNNING before
    /// COMPLETE, or owns the output after it (module docs).
    unsafe fn drop_stage(h: NonNull<Header>) {
        // SAFETY: the caller's contract.
        let cell = unsafe { Self::at(h) };
        // SAFETY: the caller owns the stage.
        cell.stage
            .with_mut(|s| unsafe { *s = Stage::Finished(None) });
    }

    /// # Safety
    ///
    /// The caller owns the output (module docs), and `out` points to an
    /// `Option<F::Output>`.
    unsafe fn take_output(h: NonNull<Header>, out: *mut ()) {
        // SAFETY: the caller's contract.
        let cell = unsafe { Self::at(h) };
        // SAFETY: the caller owns the stage now that it is COMPLETE.
        let stage = cell
            .stage
            .with_mut(|s| unsafe { std::mem::replace(&mut *s, Stage::Finished(None)) });
        let v = match stage {
            Stage::Finished(v) => v,
            Stage::Running(_) => unreachable!("a task's output taken before it finished"),
        };
        // SAFETY: the caller's contract on `out`.
        unsafe { *out.cast::<Option<F::Output>>() = v };
    }

    /// # Safety
    ///
    /// `h` heads a live `Cell<F, S>`, and the caller gives up SCHEDULED and
    /// one reference to the `Runnable`, and one more reference to the call.
    ///
    /// The call's reference: the schedule function lives in the
    /// allocation, and it may drop the Runnable (a runtime shutting down)
    /// or hand it to a thread that runs it to the end before the function
    /// returns; the call's reference keeps the allocation, the function and
    /// what it captures (the runtime) alive until then. Callers add it in
    /// the same read-modify-write that sets SCHEDULED.
    unsafe fn schedule(h: NonNull<Header>, woken_while_running: bool) {
        let _call = RefGuard(h);
        // SAFETY: the caller's contract; `_call` keeps the cell alive.
        let cell = unsafe { Self::at(h) };
        (cell.schedule)(Runnable { ptr: h }, woken_while_running);
    }

    /// # Safety
    ///
    /// The last reference is gone.
    unsafe fn dealloc(h: NonNull<Header>) {
        let cell = h.cast::<Cell<F, S>>();
        let c = cell.as_ptr();
        // SAFETY: nobody else can reach the cell; every field was written
        // in `spawn` and is dropped once here. The stage goes first: a
        // future's `Drop` may read the record (goro's task leaves the task
        // table) and reach the runtime that the schedule function keeps
        // alive.
        unsafe {
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*c).stage));
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*c).schedule));
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*c).header));
        }
        // SAFETY: from `memory::alloc`, now dropped.
        unsafe { memory::free(cell) };
    }
}

/// The references a runtime's task table holds for parked tasks
/// (`table.rs`, "A parked task's reference"), reached through the task's
/// record, which is a field of its header.
pub(crate) mod held {
    use super::runnable::waker_of;
    use super::Header;
    use crate::sched::task::meta::TaskMeta;
    use std::ptr::NonNull;
    use std::task::Waker;

    /// The header whose record `meta` is.
    ///
    /// # Safety
    ///
    /// `meta` is the record of a task made by [`super::spawn`].
    unsafe fn header(meta: &TaskMeta) -> NonNull<Header> {
        let at = std::ptr::from_ref(meta)
            .cast::<u8>()
            .wrapping_sub(std::mem::offset_of!(Header, meta));
        // SAFETY: the caller's contract: the record lives in a header, at
        // that offset; not null, as `meta` is not.
        unsafe { NonNull::new_unchecked(at.cast_mut().cast()) }
    }

    /// Adds one reference to `meta`'s task, for the table.
    ///
    /// # Safety
    ///
    /// `meta` is the record of a task made by [`super::spawn`], and the
    /// caller holds a reference to it (it is polling the task).
    pub(crate) unsafe fn add(meta: &TaskMeta) {
        // SAFETY: the caller's contract.
        unsafe { header(meta).as_ref() }.add_ref();
    }

    /// Drops a reference [`add`] made.
    ///
    /// # Safety
    ///
    /// As for [`add`], and the reference given up is one [`add`] made,
    /// taken back from the table. The caller's own reference keeps this
    /// from being the last one: a last drop here would free the task from
    /// inside its own future's drop.
    pub(crate) unsafe fn release(meta: &TaskMeta) {
        // SAFETY: the caller's contract.
        unsafe { Header::drop_ref(header(meta)) };
    }

    /// A waker of `meta`'s task that takes over a reference [`add`] made.
    ///
    /// # Safety
    ///
    /// `meta` is the record of a task made by [`super::spawn`], and the
    /// caller gives up a reference [`add`] made, taken back from the table.
    pub(crate) unsafe fn waker(meta: &TaskMeta) -> Waker {
        // SAFETY: the caller's reference becomes the waker's.
        unsafe { waker_of(header(meta)) }
    }
}

/// One reference, dropped with the guard.
struct RefGuard(NonNull<Header>);

impl Drop for RefGuard {
    fn drop(&mut self) {
        // SAFETY: the guard owns the reference it was made with.
        unsafe { Header::drop_ref(self.0) };
    }
}

/// The header's state word and the operations every handle shares.
impl Header {
    fn vtable(&self) -> &'static Vtable {
        self.vtable
    }

    /// Drops one reference, freeing the task with the last.
    ///
    /// # Safety
    ///
    /// The caller owns a reference to the task at `h` and gives it up.
    unsafe fn drop_ref(h: NonNull<Header>) {
        // SAFETY: the caller's reference keeps the header alive until here.
        let header = unsafe { h.as_ref() };
        // AcqRel: the last dropper sees every other holder's accesses.
        let prev = header.state.fetch_sub(REF, Ordering::AcqRel);
        debug_assert!(prev >= REF, "a task's reference count went below zero");
        if prev & !(REF - 1) == REF {
            let vtable = header.vtable();
            // SAFETY: that was the last reference.
            unsafe { (vtable.dealloc)(h) };
        }
    }

    /// Adds a reference (a cloned waker).
    fn add_ref(&self) {
        let prev = self.state.fetch_add(REF, Ordering::Relaxed);
        if prev > usize::MAX / 2 {
            // As `Arc` does: billions of wakers means a leak in a loop.
            std::process::abort();
        }
    }

    /// Wakes the joiner if `prev`, the word COMPLETE was set in, says it
    /// waits.
    ///
    /// # Safety
    ///
    /// `prev` is the word this thread's read-modify-write set COMPLETE in.
    unsafe fn notify_joiner(&self, prev: usize) {
        if prev & (JOIN | AWAITER) == JOIN | AWAITER {
            self.awaiter.with(|w| {
                // SAFETY: AWAITER was set when we set COMPLETE: the joiner
                // wrote the waker before that and will not touch it again.
                unsafe { &*w }.with(Waker::wake_by_ref);
            });
        }
    }

    /// Ends a task whose future the caller holds (SCHEDULED or RUNNING) as
    /// cancelled: drops the future, sets COMPLETE, wakes the joiner, and
    /// drops the caller's reference.
    ///
    /// # Safety
    ///
    /// As described; the caller gives up its reference.
    unsafe fn cancel_held(h: NonNull<Header>) {
        // SAFETY: the caller holds a reference.
        let header = unsafe { h.as_ref() };
        // SAFETY: the caller holds the stage.
        unsafe { (header.vtable().drop_stage)(h) };
        let prev = header
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                Some((s & !(SCHEDULED | RUNNING)) | COMPLETE | CLOSED)
            })
            .unwrap_or_else(|s| s);
        // SAFETY: `prev` is the word we set COMPLETE in.
        unsafe { header.notify_joiner(prev) };
        // SAFETY: the caller's reference.
        unsafe { Header::drop_ref(h) };
    }

    /// Schedules the task for a wake; `owned` says whether the caller gives
    /// up a reference (a wake by value) or keeps its own.
    ///
    /// # Safety
    ///
    /// The caller holds a reference to the task at `h`.
    unsafe fn wake(h: NonNull<Header>, owned: bool) {
        // SAFETY: the caller's reference.
        let header = unsafe { h.as_ref() };
        let mut s = header.state.load(Ordering::Acquire);
        loop {
            let next = if s & (COMPLETE | CLOSED) != 0 {
                break;
            } else if s & SCHEDULED != 0 {
                // Already scheduled: the word is written back unchanged, so
                // that the run to come (whose RMW reads this one or a later
                // one) sees what the waker wrote before waking. A plain load
                // here would let that run poll without seeing it, and return
                // `Pending` with nobody left to wake it.
                s
            } else if s & RUNNING != 0 {
                s | SCHEDULED
            } else if owned {
                // The caller's reference becomes the Runnable's; one more
                // is the schedule call's.
                s + REF + SCHEDULED
            } else {
                s + 2 * REF + SCHEDULED
            };
            match header
                .state
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if s & (RUNNING | SCHEDULED) == 0 => {
                    // SAFETY: SCHEDULED and one reference go to the Runnable,
                    // one to the call.
                    unsafe { (header.vtable().schedule)(h, false) };
                    return;
                }
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        if owned {
            // SAFETY: the caller's reference, unused.
            unsafe { Header::drop_ref(h) };
        }
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod size_tests {
    /// A user future with captures, as the `parked_tasks` row's (with a
    /// future of two words, the output's 16 bytes overlap the niche and
    /// the tag takes a word whatever goro does).
    struct Captures([u64; 8]);

    impl std::future::Future for Captures {
        type Output = ();
        fn poll(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<()> {
            let _ = self.0;
            std::task::Poll::Ready(())
        }
    }

    /// The stage's tag rides in the wrapper's non-null record pointer: a
    /// change that took that niche away would silently add a word to every
    /// task, and could move it up a size class (docs/ARCHITECTURE.md, "What
    /// a parked task costs").
    #[test]
    fn the_stage_costs_no_word_beside_the_future() {
        use std::mem::size_of;
        type Fut = crate::sched::task::TaskFuture<Captures>;
        assert_eq!(
            size_of::<super::Stage<Fut>>(),
            size_of::<Fut>(),
            "the task stage needs a tag word again: keep a niche in TaskFuture"
        );
        assert_eq!(
            size_of::<super::Cell<Fut, fn(super::Runnable, bool)>>(),
            size_of::<super::Header>() + size_of::<Fut>() + 8,
            "a task allocation is its header, its future and its schedule function, nothing more"
        );
    }
}
