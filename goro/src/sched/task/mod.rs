//! Tasks: goro's goroutines (the "G" of G/M/P).
//!
//! A task is one spawned future, allocated once (`raw/`) together with its
//! header (state word, the joiner's waker, the record), its schedule
//! function and its output slot. The `Runnable` handle is what run queues
//! hold (one pointer); the `TaskHandle` is what `JoinHandle` wraps. The
//! memory of a dead task is kept for the next spawn (`memory.rs`, Go's
//! `gfput`/`gfget`), so a spawn in steady state does not call the
//! allocator.
//!
//! The future is wrapped in [`TaskFuture`], which does three things:
//!
//! * catches a panic in the future so it surfaces as [`JoinError`] and the
//!   worker thread keeps running (a panic never takes a P down with it);
//! * drops the future itself, under `catch_unwind`, as soon as it completes
//!   and when the task is dropped unfinished (abort, shutdown), and stores
//!   an output ([`TaskOutput`]) whose `Drop` catches too. Without this, a
//!   panicking `Drop` of something a future owns (a value parked in a
//!   channel send, a guard) or of a detached task's output would run
//!   inside `Runnable::run`, outside any catch: the panic would unwind
//!   through the scheduler loop. Such a panic is reported by the panic
//!   hook like any other; a completed task whose future panicked while
//!   being dropped reports [`JoinError::Panic`] (as tokio does), an aborted
//!   one `Cancelled`;
//! * the first time the task parks (returns `Pending`), hands its waker to
//!   the runtime's task table (`table.rs`), so that dropping the runtime
//!   can wake every parked task and have its future dropped. Tasks that
//!   never park (the common case in spawn-heavy code) never give one.
//!
//! A reused allocation is a new task: its record is written afresh at
//! spawn with a new [`TaskId`] (ids are never reused), and it enters the
//! task table again. The old task left the table (under its shard's lock)
//! when its future was dropped, before its memory could be freed, so a
//! dump or the deadlock report, which read records only under that lock,
//! never see a record being reused.

pub mod coop;
pub(crate) mod group;
pub(crate) mod memory;
pub(crate) mod meta;
pub(crate) mod raw;
pub(crate) mod spawn;
mod spin_lock;
pub(crate) mod table;
pub(crate) mod unjoined;

use crate::loom::Unpoison;
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::sched::task::meta::{blocked_on, Parent, PollScope, Reason, State, TaskId, TaskMeta};
use crate::sched::task::table::TaskTable;
use crate::sched::Sched;

pub(crate) use raw::Runnable;

/// Creates a task for `future` on `sched` and returns it unscheduled.
/// The task keeps `sched` (in its schedule function) until it is freed:
/// the caller's `Arc` moves in, so a spawn costs one count of it.
pub(crate) fn new_task<F>(
    sched: Arc<Sched>,
    future: F,
    spawn: Spawn,
) -> (Runnable, JoinHandle<F::Output>)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let rt: *const Sched = Arc::as_ptr(&sched);
    let schedule = move |runnable: Runnable, woken_while_running: bool| {
        sched.schedule(runnable, woken_while_running);
    };
    // SAFETY: `schedule` holds an `Arc` of `*rt` and the task keeps it until
    // it is freed; the `Runnable` made below keeps the task alive past the
    // last use of `rt` in this function.
    let rt = unsafe { &*rt };
    let (runnable, handle) = new_task_with(rt, future, spawn, schedule);
    crate::sched::trace::create(rt, runnable.metadata(), false);
    (runnable, handle)
}

/// Where a task comes from: its spawn site, name, and the P that spawns it.
pub(crate) struct Spawn {
    pub(crate) location: &'static std::panic::Location<'static>,
    pub(crate) name: Option<Box<str>>,
    pub(crate) p: Option<usize>,
    pub(crate) parent: Parent,
}

/// Like [`new_task`] with a custom schedule function (the blocking pool's).
pub(crate) fn new_task_with<F, S>(
    sched: &Sched,
    future: F,
    spawn: Spawn,
    schedule: S,
) -> (Runnable, JoinHandle<F::Output>)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    S: Fn(Runnable, bool) + Send + Sync + 'static,
{
    let table: *const TaskTable = &sched.tasks;
    let meta = TaskMeta::new(
        spawn.location,
        spawn.name,
        spawn.p,
        spawn.parent,
        crate::sched::timer::clock::coarse(),
    );
    let (runnable, task) = raw::spawn(
        meta,
        |meta| TaskFuture {
            future: ManuallyDrop::new(future),
            meta,
            table: table.map_addr(|a| a | LIVE),
        },
        schedule,
    );
    // SAFETY: the metadata lives in the task's header until the allocation
    // is freed, and the task's future (created just above) removes it from
    // the table when it is dropped, which `raw/` does before freeing.
    unsafe { sched.tasks.insert(runnable.metadata(), spawn.p) };
    (runnable, JoinHandle::new(task))
}

/// The spawned future plus panic capture and registry bookkeeping.
struct TaskFuture<F> {
    /// Dropped by us (see [`TaskFuture::drop_future`]), never by drop glue.
    future: ManuallyDrop<F>,
    /// This task's record, in the same allocation (the task's header).
    /// Non-null: its one invalid value holds the task stage's tag
    /// (`raw/`'s `Stage`).
    meta: NonNull<TaskMeta>,
    /// The runtime's task table, which lists this task until `drop_future`,
    /// with the flags [`LIVE`] and [`PARKED`] in its address's low bits:
    /// two words of wrapper, not three (with the header's one-word joiner
    /// waker, a size class less for a parked task: `raw/awaiter.rs`).
    table: *const TaskTable,
}

/// `future` has not been dropped yet.
const LIVE: usize = 1;
/// The task has parked, and so handed the table a reference.
const PARKED: usize = 2;
const _: () = assert!(std::mem::align_of::<TaskTable>() > (LIVE | PARKED));

// SAFETY: the two pointers are shared references in all but lifetime
// (`TaskMeta` and `TaskTable` are Sync; see `meta()` and `table()` for why
// they stay valid); the rest is `F` and Send fields.
unsafe impl<F: Send> Send for TaskFuture<F> {}

impl<F> TaskFuture<F> {
    fn meta(&self) -> &TaskMeta {
        // SAFETY: the metadata is in the header of the allocation that holds
        // this future, and `raw/` frees the header only after the future
        // is dropped.
        unsafe { self.meta.as_ref() }
    }

    fn table(&self) -> &TaskTable {
        // SAFETY: the table is a field of the `Sched` that the task's
        // schedule function keeps alive (an `Arc`) until the allocation,
        // which holds this future, is freed.
        unsafe { &*self.table.map_addr(|a| a & !(LIVE | PARKED)) }
    }

    fn has(&self, flag: usize) -> bool {
        self.table.addr() & flag != 0
    }

    fn set(&mut self, flag: usize) {
        self.table = self.table.map_addr(|a| a | flag);
    }

    fn clear(&mut self, flag: usize) {
        self.table = self.table.map_addr(|a| a & !flag);
    }

    /// The task's first park: hands the table a reference to the task,
    /// so that shutdown can wake it (`table.rs`, "A parked task's
    /// reference").
    #[cold]
    fn hold(&self) {
        // SAFETY: the record is in the header of this task, made by
        // `raw::spawn`, and the poll that called us holds a reference.
        unsafe { raw::held::add(self.meta()) };
        if !self.table().hold(self.meta()) {
            // SAFETY: the reference just added; the poll holds its own.
            unsafe { raw::held::release(self.meta()) };
        }
    }

    /// Drops the future in place (once), catching a panic in its `Drop` so
    /// that it never unwinds into the scheduler; returns the panic.
    fn drop_future(&mut self) -> Result<(), Box<dyn Any + Send + 'static>> {
        if !self.has(LIVE) {
            return Ok(());
        }
        self.clear(LIVE);
        if self.table().remove(self.meta()) {
            // SAFETY: the reference `hold` added, which the table gave
            // back; whoever drops the future holds one of its own (a
            // runner, a canceller: `raw/`), so this is not the last.
            unsafe { raw::held::release(self.meta()) };
        }
        crate::sched::trace::destroy(self.meta());
        // SAFETY: `LIVE` was set, so the future has not been dropped, and
        // it is never touched again. Dropping a pinned value in place keeps
        // the pinning guarantee (it is not moved before its `Drop`).
        catch_unwind(AssertUnwindSafe(|| unsafe {
            ManuallyDrop::drop(&mut self.future)
        }))
    }
}

// The wrapper never moves `future` once pinned; it only reads the other
// fields, which are Unpin.
impl<F: Future> Future for TaskFuture<F> {
    type Output = TaskOutput<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: we never move `future` out of the pinned struct, and the
        // other fields are not structurally pinned.
        let this = unsafe { self.get_unchecked_mut() };
        debug_assert!(this.has(LIVE), "a task polled after completion");
        let scope = PollScope::enter(this.meta().id);
        crate::sched::trace::poll_start(this.meta().id);
        // SAFETY: `this.future` lives inside the pinned `TaskFuture` and is
        // live (a completed task is never polled).
        let fut = unsafe { Pin::new_unchecked(&mut *this.future) };
        let out = match catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => {
                let (reason, detail) = scope.reason();
                crate::sched::trace::poll_parked(this.meta().id, reason);
                this.meta().set(
                    State::Parked(reason, detail),
                    crate::sched::timer::clock::coarse(),
                );
                if !this.has(PARKED) {
                    this.set(PARKED);
                    this.hold();
                }
                return Poll::Pending;
            }
            Ok(Poll::Ready(v)) => match this.drop_future() {
                Ok(()) => Ok(v),
                Err(panic) => {
                    drop_quietly(v);
                    Err(JoinError::Panic(panic))
                }
            },
            Err(panic) => {
                // A second panic, from the unwound future's `Drop`, was
                // reported by the hook; the first one is the task's.
                if let Err(second) = this.drop_future() {
                    drop_quietly(second);
                }
                panicked(this.meta());
                Err(JoinError::Panic(panic))
            }
        };
        crate::sched::trace::poll_finished(this.meta().id);
        Poll::Ready(TaskOutput(Some(out)))
    }
}

/// A task's poll panicked: the flight recorder's trigger, if it runs
/// (`sched/trace/auto.rs`). Out of line: the poll's path stays as it was.
#[cold]
#[inline(never)]
fn panicked(meta: &TaskMeta) {
    crate::sched::context::with_current_sched(|s| {
        crate::sched::trace::auto::trigger(s, || crate::sched::trace::auto::Why {
            tag: "panic",
            line: match meta.name() {
                Some(n) => format!("task {} {n:?} panicked", meta.id.0),
                None => format!("task {} panicked", meta.id.0),
            },
        })
    });
}

impl<F> Drop for TaskFuture<F> {
    fn drop(&mut self) {
        // Aborted or shut down: a panic here is reported by the hook and
        // goes no further (the JoinHandle says Cancelled).
        if let Err(panic) = self.drop_future() {
            drop_quietly(panic);
        }
    }
}

/// A task's result as its allocation stores it. Dropping it (a detached
/// task's output, an aborted finished task's) catches a panic in the
/// value's `Drop`, which would otherwise unwind through the scheduler. The
/// hook has reported the panic. A task's own panic dropped here was never
/// joined (`unjoined.rs`); `abort` takes a finished task's output out
/// first, so discarding it is not that.
pub(crate) struct TaskOutput<T>(Option<Result<T, JoinError>>);

impl<T> TaskOutput<T> {
    fn into_inner(mut self) -> Result<T, JoinError> {
        self.0.take().expect("a task output is taken once")
    }
}

impl<T> Drop for TaskOutput<T> {
    fn drop(&mut self) {
        if let Some(v) = self.0.take() {
            let unseen_panic = matches!(v, Err(JoinError::Panic(_)));
            drop_quietly(v);
            if unseen_panic {
                crate::sched::task::unjoined::dropped_unseen();
            }
        }
    }
}

/// Drops `v`, catching a panic in its `Drop` (the hook has reported it).
fn drop_quietly<T>(v: T) {
    let _ = catch_unwind(AssertUnwindSafe(move || drop(v)));
}

/// An owned permission to await a spawned task's result.
///
/// Awaiting it yields the task's output, or a [`JoinError`] if the task
/// panicked or was aborted. Dropping it *detaches* the task: it keeps
/// running and its output is dropped. Polling it again after it returned
/// the result panics (as tokio's does); after `abort` it answers
/// `Cancelled` every time.
///
/// ```
/// let rt = goro::Runtime::builder().procs(2).build().unwrap();
/// let out = rt.block_on(async {
///     let h = goro::spawn(async { 6 * 7 });
///     h.await.unwrap()
/// });
/// assert_eq!(out, 42);
/// ```
pub struct JoinHandle<T> {
    /// The task until its result is returned or it is aborted. A lock rather
    /// than a cell because `abort` takes `&self` and the handle is `Sync`;
    /// it is uncontended in practice (one owner polls it).
    slot: std::sync::Mutex<Slot<T>>,
    id: TaskId,
}

/// Where a [`JoinHandle`] stands.
enum Slot<T> {
    Running(raw::TaskHandle<TaskOutput<T>>),
    /// A poll returned the result: polling again is a bug in the caller,
    /// reported as such (not as a cancelled task).
    Returned,
    Aborted,
}

impl<T> JoinHandle<T> {
    fn new(task: raw::TaskHandle<TaskOutput<T>>) -> JoinHandle<T> {
        JoinHandle {
            id: task.metadata().id,
            slot: std::sync::Mutex::new(Slot::Running(task)),
        }
    }

    /// The task's id: the one [`crate::Runtime::dump`] shows, unique in
    /// the process.
    pub fn id(&self) -> TaskId {
        self.id
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Slot<T>> {
        self.slot.lock().unpoison()
    }

    /// Cancels the task: its future is dropped at the next opportunity (at
    /// once if it is parked), and awaiting this handle yields a
    /// [`JoinError`] for which `is_cancelled()` is true. Aborting a finished
    /// task discards its output.
    ///
    /// ```
    /// let rt = goro::Runtime::builder().procs(1).build().unwrap();
    /// rt.block_on(async {
    ///     let h = goro::spawn(std::future::pending::<()>());
    ///     h.abort();
    ///     assert!(h.await.unwrap_err().is_cancelled());
    /// });
    /// ```
    pub fn abort(&self) {
        // Cancelling drops a parked future by the next run of its Runnable,
        // which cancellation schedules. Done after the lock is released.
        let task = {
            let mut slot = self.slot();
            match *slot {
                Slot::Running(_) => std::mem::replace(&mut *slot, Slot::Aborted),
                Slot::Returned | Slot::Aborted => return,
            }
        };
        if let Slot::Running(mut task) = task {
            // A finished task's output is discarded on purpose: take it out
            // (a finished task is ready at once), so that a panic in it does
            // not count as one nobody joined.
            if task.is_finished() {
                let mut cx = Context::from_waker(Waker::noop());
                if let Poll::Ready(Some(out)) = task.poll_output(&mut cx) {
                    drop_quietly(out.into_inner());
                }
            }
            task.cancel();
        }
    }

    /// True if the task has finished (completed, panicked or been cancelled).
    pub fn is_finished(&self) -> bool {
        match &*self.slot() {
            Slot::Running(t) => t.is_finished(),
            Slot::Returned | Slot::Aborted => true,
        }
    }
}

impl<T> JoinHandle<T> {
    /// Drops the handle (the task runs on, detached), as `drop` does, with
    /// the drop inlined: the timer firing path drops an `after_func`
    /// callback's handle per firing, and LLVM leaves a plain drop of it
    /// out of line there.
    #[inline(always)]
    pub(crate) fn detach(self) {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again, so the slot is
        // moved out once; `id` has no drop.
        let slot = unsafe { std::ptr::read(&this.slot) };
        // Dropping the task's handle detaches it.
        drop(slot.into_inner().unpoison());
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        // `&mut self`: no other reference, so no lock to take.
        let slot = self.slot.get_mut().unpoison();
        // Dropping the task's handle detaches it.
        drop(std::mem::replace(slot, Slot::Aborted));
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // A safe point (`coop.rs`): joining finished tasks in a loop yields.
        if crate::sched::task::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let mut slot = self.slot();
        let task = match &mut *slot {
            Slot::Running(task) => task,
            Slot::Aborted => return Poll::Ready(Err(JoinError::Cancelled)),
            Slot::Returned => {
                drop(slot);
                panic!(
                    "goro: JoinHandle polled after it returned the task's result \
                     (a future must not be polled after completion; keep the result instead)"
                );
            }
        };
        match task.poll_output(cx) {
            Poll::Pending => {
                blocked_on(Reason::Join, self.id.0);
                Poll::Pending
            }
            Poll::Ready(out) => {
                *slot = Slot::Returned;
                // `None`: the task was cancelled (runtime shut down).
                Poll::Ready(out.map_or(Err(JoinError::Cancelled), TaskOutput::into_inner))
            }
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id)
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Why a task did not produce its output.
pub enum JoinError {
    /// The task was aborted, or the runtime shut down before it finished.
    Cancelled,
    /// The task panicked; the payload is inside.
    Panic(Box<dyn Any + Send + 'static>),
}

impl JoinError {
    /// True if the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, JoinError::Panic(_))
    }

    /// True if the task was cancelled (aborted or shut down).
    pub fn is_cancelled(&self) -> bool {
        matches!(self, JoinError::Cancelled)
    }

    /// The panic payload, to resume it with `std::panic::resume_unwind`.
    ///
    /// # Panics
    /// If the task was cancelled rather than panicked.
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match self {
            JoinError::Panic(p) => p,
            JoinError::Cancelled => {
                panic!("JoinError::into_panic on a cancelled task (check is_panic first)")
            }
        }
    }

    fn panic_message(&self) -> Option<&str> {
        match self {
            JoinError::Panic(p) => panic_message(&**p),
            JoinError::Cancelled => None,
        }
    }
}

/// The message of a panic payload (a `&str` or a `String`, as `panic!`
/// makes them), if it has one.
pub(crate) fn panic_message(p: &(dyn Any + Send)) -> Option<&str> {
    p.downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Cancelled => f.write_str("task was cancelled"),
            JoinError::Panic(_) => match self.panic_message() {
                Some(m) => write!(f, "task panicked: {m}"),
                None => f.write_str("task panicked"),
            },
        }
    }
}

impl std::error::Error for JoinError {}

#[cfg(test)]
pub(crate) mod test_support;

#[cfg(all(test, target_pointer_width = "64"))]
mod size_tests {
    /// The bytes of a parked task are counted in docs/ARCHITECTURE.md
    /// ("What a parked task costs"); growth here is growth there.
    #[test]
    fn the_record_and_the_wrapper_keep_their_size() {
        use std::mem::size_of;
        assert_eq!(
            size_of::<super::TaskMeta>(),
            64,
            "the task record changed size: update docs/ARCHITECTURE.md's table"
        );
        assert_eq!(
            size_of::<super::raw::Header>(),
            24 + 64,
            "the task header (state word, vtable, joiner's waker, record) changed size: \
             update docs/ARCHITECTURE.md's table"
        );
        assert_eq!(
            size_of::<super::TaskFuture<[u64; 0]>>(),
            16,
            "the future's wrapper changed size: update docs/ARCHITECTURE.md's table"
        );
    }
}
