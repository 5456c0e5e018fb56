//! The non-blocking `select!` (with a `default` arm): one consistent moment
//! over every channel of the select.
//!
//! A `select!` with `default` must take `default` only if no case was ready
//! *at one instant*. Looking at the channels one lock at a time does not
//! give that: with `c1` full and `c2` empty, a select that looks at `c2`
//! (empty), then lets another thread send on `c2` and drain `c1`, then looks
//! at `c1` (empty) takes `default` although one of the two held a value at
//! every moment. Go's `TestNonblockSelectRace` checks exactly this.
//!
//! So, as Go's `selectgo` does with `sellock`, the non-blocking select takes
//! the lock of every channel it names, in address order (each channel once,
//! however many cases name it), looks at the cases in its poll order while
//! holding them all, completes the first ready one, and releases the locks.
//! This is the only place that holds two channel locks at once, and it
//! always takes them in address order, so two selects naming the same
//! channels in opposite orders cannot deadlock (every other channel
//! operation holds one lock at a time). A due timer sends before any lock
//! is taken, since a timer's send takes its channel's lock. Wakes happen
//! after unlocking, as everywhere in `chan`.
//!
//! The blocking `select!` (`select.rs`) does not need this: it never takes a
//! `default`, and its park pass re-checks each case under that case's lock.
//!
//! The cases here hold a channel's `MutexGuard` between [`TryCase::lock`]
//! and [`TryCase::unlock`], which makes them `!Send`; they never cross an
//! `await` (the look itself is a plain function call), so nothing needs
//! them to be.
//!
//! Budget: in a task, `select!` with `default` is a safe point. Its
//! expansion awaits [`consume_budget`](crate::coop::consume_budget) *before*
//! the look (and before its channel expressions are evaluated), then calls
//! [`try_select_in`] with `spend` off, so it spends nothing more. Before, not
//! after: a preempted select has not started, so it is linearized at the
//! look it makes when the task runs again, a ready case is taken then, and
//! a select dropped while preempted (its task cancelled) has done nothing.
//! A yield after the look would hold a taken value across the yield and
//! lose it if the task were dropped there. `select_blocking!` with
//! `default` stays a plain expression ([`try_select`]): it spends a unit
//! and cannot yield.

use std::ptr::NonNull;

use super::chan::{Chan, Inner};
use super::select::{case_order, SelectRecv, SelectSend};
use super::waiter::{wake, Woken};
use super::{RecvError, SendError, TryRecvError, TrySendError};
use crate::loom::MutexGuard;

pub(super) mod sealed {
    pub trait Sealed {}
}

/// One case of a non-blocking `select!`. Implemented only by
/// [`TryRecvCase`] and [`TrySendCase`]; used by the macro's expansion.
#[doc(hidden)]
pub trait TryCase: sealed::Sealed {
    /// An `await(..)` case ([`FutureCase`](super::select::FutureCase)): it
    /// has no channel, and is polled instead of locked.
    fn is_future(&self) -> bool {
        false
    }
    /// A future case: polls the future once; `true` if it is ready.
    fn poll_future(&mut self, _cx: &mut std::task::Context<'_>) -> bool {
        false
    }
    /// The channel's place in the lock order (`Chan::lock_order`), which
    /// also tells which cases share a lock; 0 for no channel.
    fn chan_addr(&self) -> usize;
    /// Work to do before any lock is taken (a due timer sends first).
    fn before_lock(&self);
    /// Locks the channel, keeps the guard, and returns the locked state.
    fn lock(&mut self) -> NonNull<()>;
    /// Completes the case if it is ready now; `Some` holds the task to wake
    /// once every lock is released.
    ///
    /// # Safety
    ///
    /// `inner` was returned by [`TryCase::lock`] of a case on the same
    /// channel (the same [`TryCase::chan_addr`]), whose lock is still held.
    unsafe fn try_locked(&mut self, inner: NonNull<()>) -> Option<Woken>;
    /// Releases the lock taken by [`TryCase::lock`], if this case took one.
    fn unlock(&mut self);
}

/// A `recv(rx) -> msg` case of a `select!` with `default`.
///
/// ```
/// use goro::chan::try_select::{try_select, TryRecvCase};
/// let (tx, rx) = goro::chan::bounded::<i32>(1);
/// tx.try_send(1).unwrap();
/// let mut case = TryRecvCase::new(&rx);
/// assert_eq!(try_select([&mut case]), Some(0));
/// assert_eq!(case.into_result(), Some(Ok(1)));
/// ```
#[doc(hidden)]
pub struct TryRecvCase<'a, T> {
    chan: &'a Chan<T>,
    held: Option<MutexGuard<'a, Inner<T>>>,
    result: Option<Result<T, RecvError>>,
}

impl<'a, T> TryRecvCase<'a, T> {
    /// A case receiving from `rx` (a `Receiver`, or anything that derefs to one).
    pub fn new<R: SelectRecv<T> + ?Sized>(rx: &'a R) -> Self {
        TryRecvCase {
            chan: &rx.receiver().chan,
            held: None,
            result: None,
        }
    }

    /// The outcome, if this case was the one that completed.
    pub fn into_result(mut self) -> Option<Result<T, RecvError>> {
        self.result.take()
    }
}

impl<T> sealed::Sealed for TryRecvCase<'_, T> {}

impl<T> TryCase for TryRecvCase<'_, T> {
    fn chan_addr(&self) -> usize {
        self.chan.lock_order()
    }

    fn before_lock(&self) {
        self.chan.timer_run();
    }

    fn lock(&mut self) -> NonNull<()> {
        NonNull::from(&mut **self.held.insert(self.chan.lock())).cast()
    }

    unsafe fn try_locked(&mut self, inner: NonNull<()>) -> Option<Woken> {
        // SAFETY: the caller passes the locked `Inner` of this case's own
        // channel: one address holds one `Chan<T>`, so the type is right,
        // and the lock held by the case that took it makes this access
        // the only one.
        let inner = unsafe { inner.cast::<Inner<T>>().as_mut() };
        match self.chan.recv_locked(inner, None) {
            Ok((v, woken)) => {
                self.result = Some(Ok(v));
                Some(woken)
            }
            Err(TryRecvError::Closed) => {
                self.result = Some(Err(RecvError));
                Some(None)
            }
            Err(TryRecvError::Empty) => None,
        }
    }

    fn unlock(&mut self) {
        self.held = None;
    }
}

/// A `send(tx, v) -> res` case of a `select!` with `default`.
///
/// ```
/// use goro::chan::try_select::{try_select, TrySendCase};
/// let (tx, rx) = goro::chan::bounded::<i32>(1);
/// let mut case = TrySendCase::new(&tx, 4);
/// assert_eq!(try_select([&mut case]), Some(0));
/// assert_eq!(case.into_result(), Some(Ok(())));
/// assert_eq!(rx.try_recv(), Ok(4));
/// ```
#[doc(hidden)]
pub struct TrySendCase<'a, T> {
    chan: &'a Chan<T>,
    value: Option<T>,
    held: Option<MutexGuard<'a, Inner<T>>>,
    result: Option<Result<(), SendError<T>>>,
}

impl<'a, T> TrySendCase<'a, T> {
    /// A case sending `value` on `tx` (a `Sender`, or anything that derefs to one).
    pub fn new<S: SelectSend<T> + ?Sized>(tx: &'a S, value: T) -> Self {
        TrySendCase {
            chan: &tx.sender().chan,
            value: Some(value),
            held: None,
            result: None,
        }
    }

    /// The outcome, if this case was the one that completed. A case that
    /// did not complete drops its value here: it never entered the channel.
    pub fn into_result(mut self) -> Option<Result<(), SendError<T>>> {
        self.result.take()
    }
}

impl<T> sealed::Sealed for TrySendCase<'_, T> {}

impl<T> TryCase for TrySendCase<'_, T> {
    fn chan_addr(&self) -> usize {
        self.chan.lock_order()
    }

    fn before_lock(&self) {}

    fn lock(&mut self) -> NonNull<()> {
        NonNull::from(&mut **self.held.insert(self.chan.lock())).cast()
    }

    unsafe fn try_locked(&mut self, inner: NonNull<()>) -> Option<Woken> {
        // SAFETY: as in `TryRecvCase::try_locked`.
        let inner = unsafe { inner.cast::<Inner<T>>().as_mut() };
        let v = self.value.take().expect("a send case holds its value");
        match self.chan.send_locked(inner, v, None) {
            Ok(woken) => {
                self.result = Some(Ok(()));
                Some(woken)
            }
            Err(TrySendError::Closed(v)) => {
                self.result = Some(Err(SendError(v)));
                Some(None)
            }
            Err(TrySendError::Full(v)) => {
                self.value = Some(v);
                None
            }
        }
    }

    fn unlock(&mut self) {
        self.held = None;
    }
}

/// Completes one ready case, chosen at random, and returns its index, or
/// `None` if no case was ready at one moment (every channel locked). The
/// `default` form of [`select_blocking!`](crate::select_blocking!): it
/// spends one unit of budget and cannot yield (a task yields at its next
/// awaited operation).
///
/// ```
/// use goro::chan::try_select::{try_select, TryRecvCase};
/// let (_tx, rx) = goro::chan::bounded::<i32>(1);
/// let mut case = TryRecvCase::new(&rx);
/// assert_eq!(try_select([&mut case]), None);
/// ```
#[doc(hidden)]
pub fn try_select<const N: usize>(cases: [&mut (dyn TryCase + '_); N]) -> Option<usize> {
    try_select_in(cases, false, true)
}

/// [`try_select`] looking at the cases in source order: the first ready one
/// wins (`select_blocking! { biased; ... }`).
#[doc(hidden)]
pub fn try_select_biased<const N: usize>(cases: [&mut (dyn TryCase + '_); N]) -> Option<usize> {
    try_select_in(cases, true, true)
}

/// The macro's entry for channel cases: `biased` looks in source order,
/// `spend` spends a unit of budget (`select_blocking!`; a task's `select!`
/// spent it at the safe point it awaited first).
#[doc(hidden)]
#[inline]
pub fn try_select_in<const N: usize>(
    mut cases: [&mut (dyn TryCase + '_); N],
    biased: bool,
    spend: bool,
) -> Option<usize> {
    if spend {
        crate::sched::task::coop::spend();
    }
    select_in::<N, false>(&mut cases, case_order::<N>(biased))
}

/// [`try_select`] with `await(..)` cases among `cases`: each future is
/// polled at most once (with a no-op waker: it is dropped after the
/// select), the channels are looked at together, at one moment, at the
/// place of the first channel case in the poll order (`select_future.rs`,
/// "With a `default` arm"). `biased` looks in source order; `spend` spends
/// a unit of budget (`select_blocking!`; a task's `select!` spent it at
/// its safe point).
///
/// ```
/// use goro::chan::select::FutureCase;
/// use goro::chan::try_select::{try_select_with_futures, TryCase, TryRecvCase};
/// let (_tx, rx) = goro::chan::bounded::<i32>(1);
/// let mut rx_case = TryRecvCase::new(&rx);
/// let fut = std::pin::pin!(async { 3 });
/// let mut fut_case = FutureCase::new(fut);
/// let cases = [&mut rx_case as &mut dyn TryCase, &mut fut_case];
/// assert_eq!(try_select_with_futures(cases, false, true), Some(1));
/// assert_eq!(fut_case.into_result(), Some(3));
/// ```
#[doc(hidden)]
pub fn try_select_with_futures<const N: usize>(
    mut cases: [&mut (dyn TryCase + '_); N],
    biased: bool,
    spend: bool,
) -> Option<usize> {
    if spend {
        crate::sched::task::coop::spend();
    }
    let order = case_order::<N>(biased);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let first_chan = order
        .iter()
        .position(|&i| !cases[i].is_future())
        .unwrap_or(N);
    // The futures ahead of every channel, then the channels' one moment,
    // then the futures after the first channel.
    if let Some(i) = order[..first_chan]
        .iter()
        .copied()
        .find(|&i| cases[i].poll_future(&mut cx))
    {
        return Some(i);
    }
    if first_chan < N {
        if let Some(i) = select_in::<N, true>(&mut cases, order) {
            return Some(i);
        }
    }
    order[first_chan..]
        .iter()
        .copied()
        .find(|&i| cases[i].is_future() && cases[i].poll_future(&mut cx))
}

/// The one look at every channel (Go's `sellock`, then `pollorder`). With
/// `FUTURES`, the future cases among `cases` are skipped (they have no
/// channel); without it the check compiles away.
fn select_in<const N: usize, const FUTURES: bool>(
    cases: &mut [&mut (dyn TryCase + '_); N],
    order: [usize; N],
) -> Option<usize> {
    for c in cases.iter() {
        c.before_lock();
    }
    // Go's `sellock`: every channel once, in address order.
    let mut by_addr: [usize; N] = std::array::from_fn(|i| i);
    by_addr.sort_unstable_by_key(|&i| cases[i].chan_addr());
    let mut inner = [NonNull::<()>::dangling(); N];
    let mut last: Option<usize> = None;
    for i in by_addr {
        if FUTURES && cases[i].is_future() {
            continue;
        }
        inner[i] = match last {
            Some(l) if cases[l].chan_addr() == cases[i].chan_addr() => inner[l],
            _ => {
                last = Some(i);
                cases[i].lock()
            }
        };
    }
    // One moment: every channel of the select is locked.
    let won = order.into_iter().find_map(|i| {
        if FUTURES && cases[i].is_future() {
            return None;
        }
        // SAFETY: `inner[i]` came from the `lock` of the case that locked
        // case `i`'s channel (same address), and every lock is still held.
        unsafe { cases[i].try_locked(inner[i]) }.map(|woken| (i, woken))
    });
    for i in by_addr.into_iter().rev() {
        cases[i].unlock();
    }
    won.map(|(i, woken)| {
        wake(woken);
        i
    })
}
