//! The one thread-local of the scheduler: what the current thread runs
//! for ([`Ctx`]), read by every path that must know "which runtime, which
//! P, which task" without a reference handed down to it.
//!
//! [`Ctx`] says which runtime and which P the current thread runs for (the
//! schedule function of every task reads it to choose between the local
//! queue and the global one), which task it is polling and why that poll
//! parked (the task dump), its batch of task ids, its one-in-N wake sample
//! counter and its trace number. One thread-local rather than one per
//! concern: a spawn or a wake reads it once, and a reader finds every
//! per-thread fact of the scheduler here.
//!
//! This file holds the storage and the fields of its own concern (the
//! runtime, the P, the batch-wakes flag). Every other field belongs to the
//! one module its comment names, which alone writes it and which keeps its
//! protocol: `task/coop.rs` the budget, `task/meta.rs` the task polled
//! and the id batch, `processor/sampling.rs` the wake count, `trace/` its
//! three fields, `sim/run.rs` the virtual clock (read by
//! `timer/clock.rs`). A setter per field here would only move each
//! protocol away from the code it serves.
//!
//! # Holding a P
//!
//! A held P is a value, [`HeldP`] (`processor/idle.rs`), and the M keeps it in its
//! thread's context (`Ctx::p`, an `Option<HeldP>`: Go's `m.p`), not in the
//! [`Machine`]: the code that must reach it runs on this thread but below
//! the M's own frames, where `&mut Machine` is out of reach. A task's waker
//! calls [`Sched::schedule`] from inside the poll that [`Machine::execute`]
//! runs, and must push into this P's queue; so do the wakers and `after_func`
//! callbacks of the timers the M runs, and the wakes of its netpoll; a task
//! that calls `block_in_place` takes the P out and hands it to another M
//! (`machine/blocking.rs`); the pool, the trace and the timer code ask which P
//! they are on. (tokio keeps its worker's core in a `RefCell` in the
//! context and moves it there before each poll and each park; here the P
//! simply stays in the context while held, so nothing moves per poll and
//! every reader finds the P in the same place.)
//!
//! Who touches the cell, and how:
//!
//! * Moves (safe, through `Cell`): [`set_p`] when the M takes a P
//!   (`acquirep`, `block_in_place`'s reacquire), [`take_p`] when it gives
//!   one up (`dropp`, `block_in_place`) and, around one steal, `steal_work`,
//!   so that the steal's callback cannot reach the thief's queue.
//! * Peeks (an `unsafe` read in `held_id`, and in `Machine::p` for the
//!   scheduler loop): "which P am I on", an id. `Cell` lends no reference
//!   to what it holds and this module makes none that outlives a peek, so
//!   a peek never overlaps a `&mut` to the cell. `HeldP` stores its id
//!   negated, so `Option<HeldP>` is one word (`None` is zero) and a peek
//!   costs what reading a plain `usize` would.
//! * Owner access to the queue: never a borrow of the cell. The caller peeks
//!   the id and makes a `runq::Local` for that P's queue with [`own_queue`],
//!   the one `unsafe` accessor (or, holding the value, the safe
//!   `HeldP::local`). Its contract, stated there once and checked in each
//!   call site's `// SAFETY:` comment: the thread holds that P from the peek
//!   to the handle's last use, and runs nothing in between that could give
//!   the P away or start another owner operation on the queue (a poll, a
//!   wake, a timer). The handle is made right before one or two ring
//!   operations and dropped after them; it never lives across a poll, a wake
//!   or a timer run. After such a step the M peeks again (a waker may have
//!   called `block_in_place`): `execute` after the poll, `find_runnable`
//!   after running timers or the netpoll's wakes.
//!
//! A poll, a waker and a timer callback are not run by any owner operation
//! (`runq/`: they are leaf code), so the owner operations on one thread
//! never overlap, and on other threads there is no owner: that is the
//! one-producer rule the ring relies on.

use crate::sched::processor::idle::HeldP;
use crate::sched::processor::Processor;
use crate::sched::runq::Local;
use crate::sched::Sched;
use std::cell::Cell;
use std::ptr;
use std::sync::Arc;

/// What the current thread runs for.
pub(crate) struct Ctx {
    /// The runtime this thread works for (an M, or a `block_on` caller), or
    /// null. Valid while set: the setter holds an `Arc<Sched>`.
    pub(crate) sched: Cell<*const Sched>,
    /// The P this thread holds, if any (module docs, "Holding a P").
    /// `HeldP` has no `Drop`, so `Ctx` needs none and the thread-local
    /// stays a plain `const` one.
    p: Cell<Option<HeldP>>,
    /// The M is handing out a batch of wakes, of the timers it has just
    /// run or of the netpoll's ready sockets ([`wake_quietly`]): tasks
    /// woken meanwhile go to the tail of the P's queue without `runnext`
    /// and without a `wakep` each; the M calls `wakep` once at the end.
    pub(crate) quiet_wakes: Cell<bool>,
    /// Operations the running task may still complete in this poll before
    /// the next safe point yields (`task/coop.rs`); unlimited outside a poll.
    pub(crate) budget: Cell<u32>,
    /// The task being polled on this thread and what its poll said it
    /// parked on (`task/meta.rs`: `PollScope`, `blocked_on`).
    pub(crate) polling: Cell<Polling>,
    /// This thread's batch of task ids (`task/meta.rs`: `next_id`).
    pub(crate) ids: Cell<IdBatch>,
    /// Wakes made on this thread, for the one-in-N wake sample
    /// (`processor/sampling.rs`).
    pub(crate) wakes: Cell<u64>,
    /// This thread's number in traces; 0 until it is given one
    /// (`trace/mod.rs`).
    pub(crate) trace_tid: Cell<u32>,
    /// How the current poll is about to end when it is not by parking: set
    /// by `yield_now` and the coop budget, read by the trace.
    pub(crate) trace_note: Cell<u64>,
    /// The runtime of a blocking-pool thread, for its trace (such a thread
    /// has no `sched`: it must not spawn onto a P or look like an M).
    pub(crate) trace_blocking: Cell<*const Sched>,
    /// The virtual clock of the sim bubble this thread drives, 0 outside
    /// one (`sim/`): what the timer clock reads here instead of the real
    /// one (`timer/clock.rs`).
    pub(crate) sim_now: Cell<u64>,
}

/// The task polled on a thread (its id, 0 for none), and the reason and
/// detail its poll gave for returning `Pending`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Polling {
    pub(crate) task: u64,
    pub(crate) reason: u8,
    pub(crate) detail: u64,
}

impl Polling {
    /// No task polled.
    pub(crate) const NONE: Polling = Polling {
        task: 0,
        reason: 0,
        detail: 0,
    };
}

/// A range of task ids handed to one thread: `next..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdBatch {
    pub(crate) next: u64,
    pub(crate) end: u64,
}

impl Ctx {
    #[cfg_attr(not(loom), allow(dead_code))]
    const fn new() -> Ctx {
        Ctx {
            sched: Cell::new(ptr::null()),
            p: Cell::new(None),
            quiet_wakes: Cell::new(false),
            budget: Cell::new(crate::sched::task::coop::UNLIMITED),
            polling: Cell::new(Polling::NONE),
            ids: Cell::new(IdBatch { next: 0, end: 0 }),
            wakes: Cell::new(0),
            trace_tid: Cell::new(0),
            trace_note: Cell::new(0),
            trace_blocking: Cell::new(ptr::null()),
            sim_now: Cell::new(0),
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    pub(crate) static CTX: Ctx = const { Ctx::new() };
}

// Under loom, model threads share one OS thread: use loom's thread-locals.
#[cfg(loom)]
loom::thread_local! {
    pub(crate) static CTX: Ctx = Ctx::new();
}

/// Which P the context `c` holds, if any: a peek, not a borrow.
#[inline(always)]
pub(crate) fn held_id(c: &Ctx) -> Option<usize> {
    // SAFETY: `Cell` hands out no reference to its content, and this module
    // makes none but this one, which ends before we return: no `&mut` to it
    // is alive. `Ctx` is this thread's own (a thread-local; `Cell` is not
    // `Sync`), so nothing writes it while we read.
    unsafe { (*c.p.as_ptr()).as_ref().map(HeldP::id) }
}

/// Which P the context `c` holds, for the scheduler loop, which asks only
/// while it holds one: one load and a `not` (out of range, so a panic at
/// the index, without one).
#[inline(always)]
pub(crate) fn held_index(c: &Ctx) -> usize {
    // SAFETY: as in `held_id`: no `&mut` to the cell is alive, and the read
    // ends here.
    HeldP::id_or_out_of_range(unsafe { &*c.p.as_ptr() })
}

/// The thread leaves its runtime (an M's last act): no P, no runtime.
#[cfg_attr(loom, allow(dead_code))] // its caller, `m_main`, is not built under loom
pub(crate) fn leave(c: &Ctx) {
    debug_assert!(held_id(c).is_none(), "goro: an M left holding a P");
    c.p.set(None);
    c.sched.set(ptr::null());
}

/// The owner's handle on the run queue of `p`, the P this thread holds:
/// the one place the scheduler makes one (the owner-queue contract, stated
/// once; a `HeldP` in hand gives the same handle safely, `HeldP::local`).
///
/// # Safety
///
/// `p` is the P in this thread's context, read since anything last ran
/// that could have given it away (a poll, a waker, a timer callback: any of
/// them may call `block_in_place`), and the thread keeps it until the
/// handle's last use. Meanwhile it runs none of those and starts no other
/// owner operation on the queue: make the handle right before one or two
/// ring operations and drop it after them (`runq::Local::new`'s contract,
/// which this is).
#[inline(always)]
pub(crate) unsafe fn own_queue(p: &Processor) -> Local<'_> {
    // SAFETY: the caller's contract is `Local::new`'s, as said above.
    unsafe { Local::new(&p.runq) }
}

/// The current thread takes P `p` (the acquire paths). It held none.
pub(crate) fn set_p(p: HeldP) {
    CTX.with(|c| {
        let old = c.p.replace(Some(p));
        debug_assert!(old.is_none(), "goro: a thread took a second P ({old:?})");
    });
}

/// The current thread gives up the P it holds, if any: the value goes to
/// the caller (the release paths, and `steal_work` for one steal).
pub(crate) fn take_p() -> Option<HeldP> {
    CTX.try_with(|c| c.p.take()).ok().flatten()
}

/// The P the current thread holds in `sched`, if any.
#[inline]
pub(crate) fn current_p(sched: &Sched) -> Option<usize> {
    CTX.try_with(|c| {
        if ptr::eq(c.sched.get(), sched) {
            held_id(c)
        } else {
            None
        }
    })
    .ok()
    .flatten()
}

/// Where a task woken on this thread goes (see [`Sched::schedule`]).
pub(crate) enum WakeTarget {
    /// The current poll's P: its `runnext`.
    Runnext(usize),
    /// A P handing out a batch of wakes: the tail of its queue, no `wakep`.
    Quiet(usize),
    /// No P of this runtime: the global queue.
    Global,
}

/// Where a task of `sched` woken on this thread goes.
#[inline]
pub(crate) fn wake_target(sched: &Sched) -> WakeTarget {
    CTX.try_with(|c| {
        if !ptr::eq(c.sched.get(), sched) {
            return WakeTarget::Global;
        }
        match held_id(c) {
            None => WakeTarget::Global,
            Some(p) if c.quiet_wakes.get() => WakeTarget::Quiet(p),
            Some(p) => WakeTarget::Runnext(p),
        }
    })
    .unwrap_or(WakeTarget::Global)
}

/// Runs `wake` with the tasks it wakes queued quietly: each to the tail of
/// this thread's P, without `runnext` and without a `wakep` each
/// (`WakeTarget::Quiet`; the caller calls `wakep` once after). Used
/// for a batch of timer fires and of poller wakes (Go's `injectglist`).
/// The mode ends even if a waker or an inline callback panics.
pub(crate) fn wake_quietly<R>(wake: impl FnOnce() -> R) -> R {
    struct Quiet;
    impl Drop for Quiet {
        fn drop(&mut self) {
            CTX.with(|c| c.quiet_wakes.set(false));
        }
    }
    CTX.with(|c| c.quiet_wakes.set(true));
    let _quiet = Quiet;
    wake()
}

/// Runs `f` with the P the current thread holds, if any.
pub(crate) fn with_current_p<R>(
    f: impl FnOnce(&crate::sched::processor::Processor) -> R,
) -> Option<R> {
    with_current_sched(|s| current_p(s).map(|p| f(&s.ps[p]))).flatten()
}

/// The runtime the current thread works for and the P it holds, read in
/// one thread-local access: the one place that turns the context's pointer
/// into a reference.
///
/// # Safety
///
/// The reference must not outlive the current thread's stay in that
/// runtime: drop it before returning to the scheduler (an M may then
/// leave, and a `block_on` caller's `EnterGuard` reset the context and
/// drop its `Arc`).
#[inline(always)]
pub(crate) unsafe fn current<'a>() -> (Option<&'a Sched>, Option<usize>) {
    let (s, p) = CTX
        .try_with(|c| (c.sched.get(), held_id(c)))
        .unwrap_or((ptr::null(), None));
    // SAFETY: a non-null pointer came from `Arc::as_ptr` of an Arc that the
    // thread-local's setter (`m_main`, `EnterGuard`) keeps alive until it
    // resets the pointer, which happens only when this thread leaves the
    // runtime, after the caller has dropped the reference (the contract).
    (unsafe { s.as_ref() }, p)
}

/// Runs `f` with the runtime the current thread works for and the P it
/// holds there, read in one access (a spawn's one read of the context).
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(&Sched, Option<usize>) -> R) -> Option<R> {
    // SAFETY: the reference lives only while `f` runs on this thread, which
    // does not leave the runtime meanwhile.
    let (s, p) = unsafe { current() };
    s.map(|s| f(s, p))
}

/// Runs `f` with the runtime the current thread works for, without touching
/// its reference count (a shared counter every P would bounce).
pub(crate) fn with_current_sched<R>(f: impl FnOnce(&Sched) -> R) -> Option<R> {
    // SAFETY: the reference lives only while `f` runs on this thread, which
    // does not leave the runtime meanwhile.
    let (s, _) = unsafe { current() };
    s.map(f)
}

/// The virtual clock of the sim bubble this thread drives; 0 outside one.
#[inline(always)]
pub(crate) fn sim_now() -> u64 {
    CTX.try_with(|c| c.sim_now.get()).unwrap_or(0)
}

/// The runtime the current thread works for, as a new `Arc`.
pub(crate) fn current_sched() -> Option<Arc<Sched>> {
    with_current_sched(|s| s.me.upgrade()).flatten()
}
