//! `select!`: wait on several channel operations (and futures), complete
//! exactly one.
//!
//! ```
//! # futures::executor::block_on(async {
//! let (tx1, rx1) = goro::chan::bounded::<i32>(1);
//! let (tx2, rx2) = goro::chan::bounded::<&str>(1);
//! tx2.send("hi").await.unwrap();
//! let got = goro::select! {
//!     recv(rx1) -> msg => format!("rx1: {msg:?}"),
//!     recv(rx2) -> msg => format!("rx2: {msg:?}"),
//!     send(tx1, 5) -> res => format!("sent: {res:?}"),
//! };
//! // Two cases were ready (rx2 had a value, tx1 had room): one was chosen
//! // at random, the other did nothing.
//! assert!(got == "rx2: Ok(\"hi\")" || got == "sent: Ok(())");
//! # });
//! ```
//!
//! # What it is for
//!
//! Go's `select` statement, with crossbeam-channel's syntax and Go's
//! semantics: `recv(rx) -> msg => ...` (`msg: Result<T, RecvError>`),
//! `send(tx, v) -> res => ...` (`res: Result<(), SendError<T>>`), and an
//! optional `default => ...`.
//!
//! - When several cases are ready, one is chosen uniformly at random (a cheap
//!   per-thread generator, `rng.rs`), so no case starves.
//! - Exactly one case completes. A send case that is not chosen never puts
//!   its value in the channel; the value is dropped with the `select!`.
//!   The send expressions are evaluated once, in source order, on entry (as
//!   Go does), because a parked send case must already hold its value.
//! - A recv on a closed channel is ready (with `Err(RecvError)` once drained);
//!   a send on a closed channel is ready with `Err(SendError(v))`, giving the
//!   value back.
//! - With `default`, it never waits for a channel; it is still a safe point
//!   (it spends the task's budget, and yields before it looks once the
//!   budget is spent), so `select!` awaits and must be used in async code,
//!   with or without `default`. In a plain function, `select_blocking!`
//!   with `default` is a plain expression.
//! - Dropping a waiting `select!` (it is cancel-safe) removes every waiter
//!   and loses no value, as for plain `send`/`recv`.
//! - `await(future) -> out => ...` races any future against the channel
//!   cases, in the same random choice; a losing future is dropped, as in
//!   `tokio::select!`. A future case is a [`Case`] that parks on nothing:
//!   it is polled in pass 1, and a parked select that has futures withdraws
//!   (aborts its signal) before it polls them again, so that a channel
//!   never completes in the same poll as a future (`select_future.rs`).
//!
//! # Protocol
//!
//! Every case of one waiting `select!` shares one `Signal`, the word Go
//! calls `selectDone`: the first completer to move it from `WAITING` to
//! `CLAIMED(case)` owns the select, every other channel finds its waiter dead
//! and drops it. The select itself runs in passes:
//!
//! 1. **Poll**: visit the cases in a random order, each under its own
//!    channel's lock, and complete the first one that is ready. This is
//!    where the random choice happens.
//! 2. **Park**: make a signal, then for each case, under that channel's lock,
//!    re-check readiness (ignoring this select's own waiters, which matters
//!    when the same channel appears in a send and a recv case) and enqueue a
//!    waiter if it is still not ready.
//! 3. If pass 2 found a case ready after all (it became ready since pass 1),
//!    the select *aborts* its own signal, removes its waiters and starts over
//!    at pass 1. If the abort fails, another channel already completed the
//!    select: it continues as woken.
//! 4. **Woken**: the signal says `DONE(case)`. Take the result from that
//!    case's waiter slot and remove the waiters of all other cases.
//!
//! A parked select polled with a different waker than the one its signal
//! holds (the future moved to another task) cannot swap the waker in place:
//! the signal is shared by several channels and a completer on any of them
//! may be taking it. It aborts instead and starts over at pass 1 (parking
//! again with the new waker). If the abort loses, a completer claimed the
//! select; if that one has not stored `DONE` yet, the select waits it out by
//! taking the lock of the winning case's channel, which the completer holds
//! until `DONE`.
//!
//! # Why one lock at a time, not Go's `sellock`
//!
//! Go locks every channel of a select at once, in address order, so that
//! nobody can complete the select while it is still enqueueing. Doing that
//! for a select that may wait means holding several `MutexGuard`s of
//! different element types across the cases of a future that lives across
//! `await`s, which would make the case objects `!Send` (and the user's task
//! with them) or need `unsafe`. Instead a waiting select holds at most one
//! channel lock at any time. The price is step 3 (crossbeam-channel's
//! "abort and retry" when an operation becomes ready during registration):
//! it only happens when a counterpart arrives in the microseconds between
//! passes 1 and 2. Two selects that keep registering against each other
//! could in principle retry in lockstep, so after a few retries the select
//! yields (wakes itself and returns `Pending`) instead of spinning.
//!
//! A select with `default` is different: it must see one moment across all
//! its channels, or it may take `default` while a case was ready all along.
//! Its look is a plain function call (no `await` between lock and unlock,
//! only a budget check before it), so it does take every lock at once, in
//! address order, as Go does (`try_select.rs`).
//!
//! Why completing during pass 2 is not attempted directly: that needs two
//! claims at once (this select's signal and the counterpart's), and
//! whichever is claimed first would have to be released if the second
//! fails, while other channels may already have seen it claimed and dropped
//! its waiters. Aborting and retrying keeps every claim final.
//!
//! # Rejected
//!
//! - Polling each channel case as an independent future (tokio's
//!   `select!`): the losers' operations may already have happened (a
//!   receive that took a value), which is exactly what Go's select
//!   guarantees never happens. (A user's future *is* polled that way, in
//!   an `await` case: it is the future's own `Drop` that must undo it.)
//! - Choosing the first ready case in source order: starves later cases.
//! - Evaluating send values lazily (crossbeam evaluates the message only for
//!   the chosen case): impossible once parked, since the receiver that
//!   completes us takes the value straight from our slot.
//!
//! Allocation: pass 1 allocates nothing; parking allocates the signal and
//! takes one waiter block per case from the per-thread block cache (Go's
//! per-P sudog cache; see `chan.rs`).

use crate::sched::task::meta::{blocked_on, Reason};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::chan::Chan;
use super::signal::{Signal, WakerId};
use super::waiter::{wake, Parked, Waiter};
use super::{RecvError, SendError, TryRecvError, TrySendError};
use crate::loom::Arc;

/// How many times one poll may abort and retry before yielding.
const MAX_RETRIES: u32 = 4;

pub(super) mod sealed {
    pub trait Sealed {}
}

pub use super::select_arg::{recv_chan, send_chan, SelectRecv, SelectSend};
pub use super::select_future::FutureCase;

/// One case of a `select!`, as driven by [`Select`]. Implemented only by
/// [`RecvCase`], [`SendCase`] and [`FutureCase`]; used by the macro's
/// expansion.
#[doc(hidden)]
pub trait Case: sealed::Sealed + Send {
    /// Pass 1: completes the operation if it is ready, storing the result
    /// (a future case polls its future with `cx`).
    fn try_now(&mut self, cx: &mut Context<'_>) -> bool;
    /// Pass 2: `true` if the case is ready after all (nothing enqueued),
    /// else enqueues a waiter for case `index` of `signal`.
    fn register(&mut self, signal: &Arc<Signal>, index: usize) -> bool;
    /// Removes this case's waiter, if any, restoring a send case's value.
    fn unregister(&mut self);
    /// This case won: takes its result from its waiter.
    fn complete(&mut self);
    /// Waits until no completer is inside this case's channel (its lock).
    fn sync(&mut self);
}

/// A `recv(rx) -> msg` case of a waiting `select!`. Macro plumbing for
/// [`select!`](crate::select!).
///
/// ```
/// # futures::executor::block_on(async {
/// use goro::chan::select::{RecvCase, Select};
/// let (tx, rx) = goro::chan::bounded::<i32>(1);
/// tx.try_send(1).unwrap();
/// let mut case = RecvCase::new(&rx);
/// assert_eq!(Select::new([&mut case]).await, 0);
/// assert_eq!(case.into_result(), Some(Ok(1)));
/// # });
/// ```
#[doc(hidden)]
pub struct RecvCase<'a, T> {
    chan: &'a Chan<T>,
    parked: Option<Parked<T>>,
    result: Option<Result<T, RecvError>>,
}

impl<'a, T> RecvCase<'a, T> {
    /// A case receiving from `rx` (a `Receiver`, or anything that derefs to one).
    pub fn new<R: SelectRecv<T> + ?Sized>(rx: &'a R) -> Self {
        RecvCase {
            chan: &rx.receiver().chan,
            parked: None,
            result: None,
        }
    }

    /// The outcome, if this case was the one that completed.
    pub fn into_result(mut self) -> Option<Result<T, RecvError>> {
        self.result.take()
    }
}

impl<T> sealed::Sealed for RecvCase<'_, T> {}

impl<T: Send> Case for RecvCase<'_, T> {
    fn try_now(&mut self, _cx: &mut Context<'_>) -> bool {
        self.chan.timer_run();
        let mut inner = self.chan.lock();
        match self.chan.recv_locked(&mut inner, None) {
            Ok((v, woken)) => {
                drop(inner);
                wake(woken);
                self.result = Some(Ok(v));
                true
            }
            Err(TryRecvError::Closed) => {
                self.result = Some(Err(RecvError));
                true
            }
            Err(TryRecvError::Empty) => false,
        }
    }

    fn register(&mut self, signal: &Arc<Signal>, index: usize) -> bool {
        let mut inner = self.chan.lock();
        if self.chan.recv_ready_locked(&mut inner, signal) {
            return true;
        }
        let w = Waiter::for_select(signal.clone(), index, None);
        self.parked = Some(self.chan.park_recv_locked(&mut inner, w, WakerId::UNUSED));
        drop(inner);
        self.chan.timer_block();
        false
    }

    fn unregister(&mut self) {
        if let Some(p) = self.parked.take() {
            // Also the cancellation path of a winner that never looked at
            // its value: `unpark_recv` gives the value back to the channel.
            self.chan.unpark_recv(p);
        }
    }

    fn complete(&mut self) {
        let p = self.parked.take().expect("the winning case is parked");
        self.chan.timer_unblock();
        self.result = Some(p.take_done().ok_or(RecvError));
    }

    fn sync(&mut self) {
        drop(self.chan.lock());
    }
}

impl<T> Drop for RecvCase<'_, T> {
    fn drop(&mut self) {
        if let Some(p) = self.parked.take() {
            self.chan.unpark_recv(p);
        }
    }
}

/// A `send(tx, v) -> res` case of a waiting `select!`. Macro plumbing for
/// [`select!`](crate::select!).
///
/// ```
/// # futures::executor::block_on(async {
/// use goro::chan::select::{SendCase, Select};
/// let (tx, rx) = goro::chan::bounded::<i32>(1);
/// let mut case = SendCase::new(&tx, 4);
/// assert_eq!(Select::new([&mut case]).await, 0);
/// assert_eq!(case.into_result(), Some(Ok(())));
/// assert_eq!(rx.try_recv(), Ok(4));
/// # });
/// ```
#[doc(hidden)]
pub struct SendCase<'a, T> {
    chan: &'a Chan<T>,
    /// The value while not parked; a parked case keeps it in its waiter.
    value: Option<T>,
    parked: Option<Parked<T>>,
    result: Option<Result<(), SendError<T>>>,
}

impl<'a, T> SendCase<'a, T> {
    /// A case sending `value` on `tx` (a `Sender`, or anything that derefs to one).
    pub fn new<S: SelectSend<T> + ?Sized>(tx: &'a S, value: T) -> Self {
        SendCase {
            chan: &tx.sender().chan,
            value: Some(value),
            parked: None,
            result: None,
        }
    }

    /// The outcome, if this case was the one that completed. A case that
    /// did not complete drops its value here: it never entered the channel.
    pub fn into_result(mut self) -> Option<Result<(), SendError<T>>> {
        self.result.take()
    }
}

impl<T> sealed::Sealed for SendCase<'_, T> {}

impl<T: Send> Case for SendCase<'_, T> {
    fn try_now(&mut self, _cx: &mut Context<'_>) -> bool {
        let v = self
            .value
            .take()
            .expect("an unparked send case holds its value");
        let mut inner = self.chan.lock();
        match self.chan.send_locked(&mut inner, v, None) {
            Ok(woken) => {
                drop(inner);
                wake(woken);
                self.result = Some(Ok(()));
                true
            }
            Err(TrySendError::Closed(v)) => {
                drop(inner);
                self.result = Some(Err(SendError(v)));
                true
            }
            Err(TrySendError::Full(v)) => {
                drop(inner);
                self.value = Some(v);
                false
            }
        }
    }

    fn register(&mut self, signal: &Arc<Signal>, index: usize) -> bool {
        let mut inner = self.chan.lock();
        if self.chan.send_ready_locked(&mut inner, signal) {
            return true;
        }
        let w = Waiter::for_select(signal.clone(), index, self.value.take());
        self.parked = Some(self.chan.park_send_locked(&mut inner, w, WakerId::UNUSED));
        false
    }

    fn unregister(&mut self) {
        if let Some(p) = self.parked.take() {
            if let Some(v) = self.chan.unpark_send(p) {
                self.value = Some(v);
            }
        }
    }

    fn complete(&mut self) {
        let p = self.parked.take().expect("the winning case is parked");
        self.result = Some(match p.take_done() {
            None => Ok(()),
            Some(v) => Err(SendError(v)),
        });
    }

    fn sync(&mut self) {
        drop(self.chan.lock());
    }
}

impl<T> Drop for SendCase<'_, T> {
    fn drop(&mut self) {
        if let Some(p) = self.parked.take() {
            drop(self.chan.unpark_send(p));
        }
    }
}

/// The order a select looks at its cases in: source order when `biased`,
/// else a fresh [`poll_order`].
pub(super) fn case_order<const N: usize>(biased: bool) -> [usize; N] {
    if biased {
        std::array::from_fn(|i| i)
    } else {
        poll_order::<N>()
    }
}

/// A random permutation of `0..N` (Go's `pollorder`). Under loom the order
/// is fixed: the model checker needs every execution to be reproducible.
pub(super) fn poll_order<const N: usize>() -> [usize; N] {
    #[allow(unused_mut)] // shuffled only outside loom
    let mut order: [usize; N] = std::array::from_fn(|i| i);
    #[cfg(not(loom))]
    with_rng(|rng| {
        for i in (1..N).rev() {
            order.swap(i, rng.below(i + 1));
        }
    });
    order
}

#[cfg(not(loom))]
std::thread_local! {
    static RNG: std::cell::Cell<crate::rng::Rng> =
        std::cell::Cell::new(crate::rng::Rng::from_entropy(std::thread::current().id()));
}

/// Restarts this thread's generator at `seed`: a sim bubble's driver, so
/// that every `select!` choice in the bubble comes from its seed.
#[cfg(not(loom))]
pub(crate) fn seed_thread_rng(seed: u64) {
    RNG.with(|cell| cell.set(crate::rng::Rng::new(seed)));
}

/// This thread's generator for [`poll_order`].
#[cfg(not(loom))]
fn with_rng<R>(f: impl FnOnce(&mut crate::rng::Rng) -> R) -> R {
    use crate::rng::Rng;
    RNG.with(|cell| {
        let mut rng = cell.replace(Rng::new(0));
        let r = f(&mut rng);
        cell.set(rng);
        r
    })
}

/// The future of a `select!` without `default`; resolves to the index of the
/// case that completed, whose result is then in that case object.
///
/// ```
/// # futures::executor::block_on(async {
/// use goro::chan::select::{RecvCase, Select};
/// let (tx, rx) = goro::chan::bounded::<i32>(1);
/// tx.send(2).await.unwrap();
/// let mut case = RecvCase::new(&rx);
/// assert_eq!(Select::new([&mut case]).await, 0);
/// assert_eq!(case.into_result(), Some(Ok(2)));
/// # });
/// ```
#[doc(hidden)]
#[must_use = "futures do nothing unless polled"]
pub struct Select<'a, const N: usize> {
    cases: [&'a mut (dyn Case + 'a); N],
    /// Set while parked (pass 2 done, waiting to be completed).
    signal: Option<Arc<Signal>>,
    /// Pass 1 looks at the cases in source order (`biased;`), not at random.
    biased: bool,
    /// The waker the parked signal holds.
    waker: WakerId,
    /// Some case is a future (`await(..)`): a parked select polled again
    /// withdraws and polls its futures (`select_future.rs`).
    futures: bool,
    done: bool,
}

impl<'a, const N: usize> Select<'a, N> {
    /// A select over `cases`.
    pub fn new(cases: [&'a mut (dyn Case + 'a); N]) -> Self {
        Select {
            cases,
            signal: None,
            biased: false,
            waker: WakerId::UNUSED,
            futures: false,
            done: false,
        }
    }

    /// A select over `cases` that prefers the first ready case in source
    /// order (`select! { biased; ... }`).
    pub fn biased(cases: [&'a mut (dyn Case + 'a); N]) -> Self {
        let mut select = Select::new(cases);
        select.biased = true;
        select
    }

    /// Marks a select with [`FutureCase`]s (the macro knows it when it
    /// expands): polled again while parked, it withdraws its channel
    /// waiters and polls its futures. A select of channels only must not
    /// be marked, and one with futures must be, or a ready future would
    /// not be seen until a channel completes.
    pub fn with_futures(mut self) -> Self {
        self.futures = true;
        self
    }

    /// Withdraws a select that was given up (a `default(timeout)` that
    /// timed out). `Some(case)` if a case completed after all (a
    /// counterpart claimed it before the withdrawal): its result is in that
    /// case, as if the select had returned it, so a send is never both
    /// delivered and reported as timed out. `None` otherwise, with every
    /// waiter removed.
    pub fn cancel(&mut self) -> Option<usize> {
        let signal = self.signal.take()?;
        let won = match signal.abort() {
            Ok(()) => None,
            Err(won) => {
                let won = won.expect("only the select aborts its signal");
                if signal.done_case().is_none() {
                    // Claimed, not yet DONE: its completer holds that
                    // case's channel lock until it is.
                    self.cases[won].sync();
                }
                self.cases[won].complete();
                self.done = true;
                Some(won)
            }
        };
        self.unregister_all();
        won
    }

    /// Removes every case's waiter (the winner's value, if any, goes back to
    /// its channel).
    fn unregister_all(&mut self) {
        for c in self.cases.iter_mut() {
            c.unregister();
        }
    }
}

impl<const N: usize> Future for Select<'_, N> {
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let this = self.get_mut();
        assert!(!this.done, "select polled after completion");
        // A safe point (`coop.rs`), on entry only: a parked select completes
        // when woken.
        if this.signal.is_none() && crate::sched::task::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let mut retries = 0;
        // Parked during this poll: its futures were polled just before.
        let mut parked_now = false;
        loop {
            // 4. Woken (or checking right after parking).
            if let Some(signal) = &this.signal {
                let won = match signal.done_case() {
                    Some(won) => won,
                    None if WakerId::of(cx.waker()) == this.waker
                        && (parked_now || !this.futures) =>
                    {
                        // A select of no case (`select! {}`) waits forever.
                        let reason = if N == 0 {
                            Reason::Forever
                        } else {
                            Reason::Select
                        };
                        blocked_on(reason, 0);
                        return Poll::Pending;
                    }
                    // Polled with another waker than the one registered: the
                    // signal is shared by several channels, so it cannot be
                    // swapped under one lock. Withdraw and register again,
                    // unless a case won meanwhile. Also a select with
                    // futures, polled again (maybe a future woke it): it
                    // withdraws first, so that no channel can complete
                    // while its futures are polled in pass 1
                    // (`select_future.rs`).
                    None => match this.cancel() {
                        Some(won) => return Poll::Ready(won),
                        None => continue,
                    },
                };
                this.cases[won].complete();
                this.unregister_all();
                this.signal = None;
                this.done = true;
                return Poll::Ready(won);
            }

            // 1. Poll in random order.
            let order = case_order::<N>(this.biased);
            if let Some(i) = order.iter().copied().find(|&i| this.cases[i].try_now(cx)) {
                this.done = true;
                return Poll::Ready(i);
            }

            // 2. Park on every channel, re-checking each under its lock.
            let signal = Arc::new(Signal::new(cx.waker().clone()));
            this.waker = WakerId::of(cx.waker());
            let became_ready = order.iter().any(|&i| this.cases[i].register(&signal, i));
            this.signal = Some(signal);
            parked_now = true;
            if !became_ready {
                continue; // to 4: maybe completed while we were enqueueing
            }

            // 3. Ready after all: abort and retry, unless already completed.
            let signal = this.signal.as_ref().expect("set above");
            if signal.abort().is_err() {
                continue; // to 4
            }
            this.unregister_all();
            this.signal = None;
            retries += 1;
            if retries == MAX_RETRIES {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        }
    }
}

impl<const N: usize> Drop for Select<'_, N> {
    fn drop(&mut self) {
        if let Some(signal) = self.signal.take() {
            // Stop further completions; a case that already won gives its
            // received value back in `unregister`.
            let _ = signal.abort();
            self.unregister_all();
        }
    }
}

/// Drives a waiting select on a plain thread (`select_blocking!`).
#[doc(hidden)]
pub fn block_on<F: Future>(select: F) -> F::Output {
    crate::sched::machine::block_on::block_on(select)
}

/// Drives a waiting select on a plain thread for at most `timeout`
/// (`select_blocking!` with `default(timeout)`); `None` if it timed out, with
/// every case withdrawn.
#[doc(hidden)]
pub fn block_on_timeout<F: Future>(select: F, timeout: std::time::Duration) -> Option<F::Output> {
    crate::sched::machine::block_on::block_on_until(
        select,
        Some(std::time::Instant::now() + timeout),
    )
}
