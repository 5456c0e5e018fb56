//! `select!`'s `await(future) -> pat => body` case: a future raced against
//! channel operations, with Go's random choice and without losing a channel
//! value.
//!
//! # What it is for
//!
//! Go's `select` waits on channels only, because in Go everything that can
//! be waited on is a channel (`time.After`, `ctx.Done()`). In Rust much of
//! it is a future: a `JoinHandle`, `goro::time::sleep`, a socket read, a
//! hyper connection. Before this case, racing one against a channel meant
//! spawning it to feed a channel, or a hand-written `poll_fn`; now it is
//! one more case of the same `select!`, beside `recv` and `send`.
//!
//! # Invariant: a channel case completes only if it is the one taken
//!
//! A future's poll cannot be undone: once it returned `Ready`, its output
//! is the select's to deliver (a `JoinHandle`'s result, a value some other
//! `recv()` future took). A channel operation cannot always be undone
//! either (a receiver took the sent value). So the select never lets both
//! happen in one go:
//!
//! - **Pass 1** (`select.rs`) visits channel and future cases together, in
//!   one random order (source order with `biased;`), and stops at the first
//!   one ready: a future is polled, a channel operation is tried under its
//!   lock. Whatever comes first in the order wins and nothing after it is
//!   touched, so the choice among the cases ready at that poll is uniform,
//!   as Go's `pollorder`.
//! - **Parked**, the select holds the channels' waiters under one signal
//!   and every future holds the task's waker. When the task is polled again
//!   and no channel has claimed the signal, the select first *aborts* its
//!   signal (claims it for itself, so that no channel can complete from
//!   then on), withdraws its waiters, and only then polls the futures, in
//!   pass 1 again. If the abort fails, a channel won: it is taken and no
//!   future is polled. Polling the futures while still parked was rejected:
//!   a future could then return `Ready` at the same moment as a channel
//!   claims the select, and one of the two results would be lost.
//!
//! The price is paid only by a select with a future case: each wake of a
//! parked one (a future's, or a spurious poll) withdraws and re-parks its
//! channel waiters, one lock per channel each way. A select of channels
//! only keeps the plain waiting path (the `futures` flag of `Select` is a
//! constant of the expansion).
//!
//! # With a `default` arm
//!
//! The select never waits, so each future is polled at most once, with a
//! no-op waker, and then dropped: it counts only if it is ready at that
//! poll. The channels must still be seen at one moment (every lock held,
//! `try_select.rs`), and a future cannot be polled under channel locks (it
//! may use those very channels), so the channels are looked at together,
//! at the place of the first channel case in the random order: the futures
//! before it are polled first, then the channels' one look, then the
//! futures after it. With one channel case (or every case ready) the choice
//! is uniform; with several channels, a future placed between two of them
//! in the order is looked at after both. A goro operation used as a future
//! is itself a safe point: polled when the task's budget is spent, it
//! reports `Pending`, so with `default` it may count as not ready (use a
//! `recv`/`send` case for a channel).
//!
//! # Cancel safety
//!
//! A future case that does not win is dropped, before any body runs, as
//! with `tokio::select!`: whatever it had done is undone only as far as its
//! own `Drop` undoes it. goro's channel futures (`rx.recv()`,
//! `tx.send(v)`) are cancel-safe; a future that buffers data internally
//! loses that buffer. The futures are pinned in place by the macro (they
//! need not be `Unpin`), polled with the task's waker, and must be `Send`
//! with `Send` outputs, as the channel cases' values are: the select's
//! state is `Send` so that the task stays `Send`.
//!
//! # Rejected
//!
//! - Spawning each future to feed a channel: a task per select, and the
//!   future's result lost when the select takes another case.
//! - Polling every future before the channels (futures first): simple, but
//!   a ready future would always beat a ready channel, which is the
//!   starvation Go's random choice exists to prevent.

use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::Context;

use super::select::{sealed as select_sealed, Case};
use super::signal::Signal;
use super::try_select::{sealed as try_sealed, TryCase};
use super::waiter::Woken;
use crate::loom::Arc;

/// An `await(future) -> out` case of a `select!`, with or without
/// `default`. Macro plumbing for [`select!`](crate::select!).
///
/// ```
/// # futures::executor::block_on(async {
/// use goro::chan::select::{Case, FutureCase, RecvCase, Select};
/// let (_tx, rx) = goro::chan::bounded::<i32>(1);
/// let mut rx_case = RecvCase::new(&rx);
/// let fut = std::pin::pin!(async { 7 });
/// let mut fut_case = FutureCase::new(fut);
/// let won = Select::new([&mut rx_case as &mut dyn Case, &mut fut_case])
///     .with_futures()
///     .await;
/// assert_eq!(won, 1);
/// assert_eq!(fut_case.into_result(), Some(7));
/// # });
/// ```
#[doc(hidden)]
pub struct FutureCase<'a, F: Future> {
    fut: Pin<&'a mut F>,
    output: Option<F::Output>,
}

impl<'a, F: Future> FutureCase<'a, F> {
    /// A case waiting for `fut`, pinned by the caller (the macro pins it in
    /// the select's scope, which ends before any body runs).
    pub fn new(fut: Pin<&'a mut F>) -> Self {
        FutureCase { fut, output: None }
    }

    /// The future's output, if this case was the one that completed.
    pub fn into_result(mut self) -> Option<F::Output> {
        self.output.take()
    }

    /// Polls the future once; `true` (output stored) if it is ready.
    fn poll_once(&mut self, cx: &mut Context<'_>) -> bool {
        match self.fut.as_mut().poll(cx) {
            std::task::Poll::Ready(v) => {
                self.output = Some(v);
                true
            }
            std::task::Poll::Pending => false,
        }
    }
}

impl<F: Future> select_sealed::Sealed for FutureCase<'_, F> {}

impl<F> Case for FutureCase<'_, F>
where
    F: Future + Send,
    F::Output: Send,
{
    fn try_now(&mut self, cx: &mut Context<'_>) -> bool {
        self.poll_once(cx)
    }

    /// A future parks on nothing: it holds the task's waker from its poll
    /// in pass 1, and the select re-polls it when woken (`select.rs`).
    fn register(&mut self, _signal: &Arc<Signal>, _index: usize) -> bool {
        false
    }

    fn unregister(&mut self) {}

    fn complete(&mut self) {
        unreachable!("a future case never registers with the select's signal")
    }

    fn sync(&mut self) {}
}

impl<F: Future> try_sealed::Sealed for FutureCase<'_, F> {}

impl<F: Future> TryCase for FutureCase<'_, F> {
    fn is_future(&self) -> bool {
        true
    }

    fn poll_future(&mut self, cx: &mut Context<'_>) -> bool {
        self.poll_once(cx)
    }

    fn chan_addr(&self) -> usize {
        0 // no channel: skipped by the lock pass
    }

    fn before_lock(&self) {}

    fn lock(&mut self) -> NonNull<()> {
        unreachable!("a future case has no channel to lock")
    }

    unsafe fn try_locked(&mut self, _inner: NonNull<()>) -> Option<Woken> {
        unreachable!("a future case has no channel to look at")
    }

    fn unlock(&mut self) {}
}
