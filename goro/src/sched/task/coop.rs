//! Cooperative preemption: a budget of operations per poll.
//!
//! goro cannot interrupt a running `poll` (Go sends a signal and rewrites
//! the goroutine's stack; a Rust future has no such entry point). What it
//! can do is make every goro operation a *safe point*: a channel `send` or
//! `recv`, a waiting `select!`, a lock, a `WaitGroup` wait, a join, a sleep
//! whose deadline has passed, a socket read or write that completes without
//! waiting. Each one spends one unit of the running task's budget; when the
//! budget is gone, the next one does not run: it wakes its own task and
//! returns `Pending`. The task then goes to the *tail* of its P's queue
//! (a self-wake is a yield, never `runnext`), the tasks queued behind it get
//! their turn, and the operation runs when the task is polled again, with a
//! fresh budget. Nothing is lost: the preempted operation had not started.
//!
//! Without this, a task whose operations never block — a producer whose
//! buffer never fills, a `send` + `recv` on its own channel, a `select!`
//! polled in a loop — keeps its P for as long as it likes, and every task
//! queued on that P starves.
//!
//! The budget is per poll, refilled by the M before each one
//! (`Machine::execute`, `sched/machine/mod.rs`), as tokio does (its budget
//! is 128 operations). Go's budget is time (a 10 ms slice, enforced by
//! sysmon's signal); goro counts operations instead because reading the
//! clock at every safe point would cost as much as the operation itself.
//! The size is [`Policy::preempt`](crate::Policy::preempt).
//!
//! Non-blocking operations that return a value at once (`try_send`,
//! `try_recv`, `select_blocking!` with a `default` arm) are plain
//! functions: they cannot return `Pending`, so they only *spend* budget,
//! and the task yields at its next awaited operation. `select!` with a
//! `default` arm is the exception: Go's `for { select { ...; default: } }`
//! loops are common and await nothing else, so in a task it awaits
//! [`consume_budget`] before it looks at its channels, and such a loop
//! yields as Go's preempts. A loop made only of plain ones (or of pure
//! computation) awaits nothing and cannot be preempted by any Rust runtime;
//! [`consume_budget`] is the safe point to put in such a loop, and
//! [`crate::block_in_place`] the answer for a poll that must block. The
//! monitor's stuck-P rescue (`sysmon.rs`) keeps such a poll from holding
//! back the tasks queued behind it.
//!
//! Outside a task poll (a `block_on` future, a plain thread) the budget is
//! unlimited: there is no queue to yield to.

use crate::sched::context::CTX;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The budget outside a task poll: never runs out.
pub(crate) const UNLIMITED: u32 = u32::MAX;

/// The budget a poll starts with under `policy`.
pub(crate) fn poll_budget(policy: &crate::Policy) -> u32 {
    match policy.preempt {
        crate::Preempt::Off => UNLIMITED,
        crate::Preempt::Budget(n) => n,
    }
}

/// Refills the current thread's budget before a task poll (`n` from the
/// policy; [`UNLIMITED`] when preemption is off). Not reset after the
/// poll: between polls an M runs no goro operation, and a thread that is
/// not an M finds out in [`exhausted`] if its budget ever runs down.
#[inline]
pub(crate) fn set_budget(n: u32) {
    CTX.with(|c| c.budget.set(n));
}

/// A safe point: spends one unit of budget and returns `Ready`, or, with
/// the budget gone, wakes the task and returns `Pending` (the caller
/// returns `Pending` too, having done nothing).
///
/// The fast path is one thread-local load, decrement and store: it runs
/// on every channel operation, where a few nanoseconds show.
#[inline]
pub(crate) fn poll_proceed(cx: &Context<'_>) -> Poll<()> {
    let left = CTX.try_with(|c| {
        let b = c.budget.get();
        c.budget.set(b.wrapping_sub(1));
        b
    });
    match left {
        Ok(0) => exhausted(cx),
        _ => Poll::Ready(()),
    }
}

/// The budget is gone: on an M, preempt; on any other thread (a
/// `block_on` caller, a foreign executor), whose budget only ran down from
/// [`UNLIMITED`], start it over and proceed.
#[cold]
fn exhausted(cx: &Context<'_>) -> Poll<()> {
    let on_p =
        crate::sched::context::with_current_p(|p| crate::stats::bump(&p.counters.preemptions, 1));
    if on_p.is_none() {
        set_budget(UNLIMITED);
        return Poll::Ready(());
    }
    set_budget(0); // until this poll returns: every later safe point yields too
    crate::sched::trace::preempted();
    cx.waker().wake_by_ref();
    Poll::Pending
}

/// Spends one unit of budget without yielding (an operation that cannot
/// return `Pending`); the task yields at its next awaited operation.
#[inline]
pub(crate) fn spend() {
    let _ = CTX.try_with(|c| c.budget.set(c.budget.get().saturating_sub(1)));
}

/// A safe point for loops that await nothing else: spends one unit of the
/// task's budget, and yields to the tasks queued behind it once the budget
/// is gone (tokio's `task::coop::consume_budget`). Costs a thread-local
/// decrement otherwise.
///
/// A loop of non-blocking operations (`try_recv`, pure computation) never
/// awaits, so no runtime can preempt it; this makes it preemptible without
/// yielding on every turn as [`crate::yield_now`] would (`select!` with
/// `default` already awaits it):
///
/// ```
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let (stop_tx, stop_rx) = goro::chan::bounded::<()>(0);
///     let hog = goro::spawn(async move {
///         let mut spins = 0u64;
///         loop {
///             match stop_rx.try_recv() {
///                 Err(goro::chan::TryRecvError::Empty) => spins += 1,
///                 _ => return spins,
///             }
///             goro::coop::consume_budget().await;
///         }
///     });
///     // On one P this only runs because the hog yields.
///     stop_tx.close();
///     assert!(hog.await.unwrap() < u64::MAX);
/// });
/// ```
pub fn consume_budget() -> ConsumeBudget {
    ConsumeBudget(false)
}

/// The future of [`consume_budget`].
#[must_use = "futures do nothing unless you `.await` them"]
#[derive(Debug)]
pub struct ConsumeBudget(bool);

impl Future for ConsumeBudget {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        if poll_proceed(cx).is_pending() {
            // Preempted: the next poll (after the queue's turn) completes.
            self.0 = true;
            return Poll::Pending;
        }
        Poll::Ready(())
    }
}
