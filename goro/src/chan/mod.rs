//! Channels with Go's semantics: bounded, MPMC, `cap == 0` is a rendezvous,
//! `close` is explicit, and [`select!`](crate::select!) waits on several at once.
//!
//! ```
//! # futures::executor::block_on(async {
//! let (tx, rx) = goro::chan::bounded::<u32>(1);
//! tx.send(7).await.unwrap();
//! assert_eq!(rx.recv().await, Ok(7));
//! tx.close();
//! assert!(rx.recv().await.is_err());
//! # });
//! ```
//!
//! # What it is for
//!
//! A channel is how goroutines hand each other work and wait for each other.
//! It is also the scheduler's benchmark of record: seed 004 ("no thrashing")
//! is measured with a ring of tasks over rendezvous channels, where every
//! hop is one hand-off plus one wake. So the hand-off path is short (one lock,
//! one claim, one wake after unlocking) and the woken task lands in the
//! waker's `runnext` (the scheduler does that whenever `wake` is called on a
//! worker thread; the channel does nothing special).
//!
//! # Shape: Go's `hchan`, one lock
//!
//! Each channel is one mutex over a ring buffer, a queue of parked senders and
//! a queue of parked receivers (`chan/chan.rs` states the invariants and the
//! waiter protocol). Sends hand values *directly* to a
//! parked receiver's slot; a receive from a full buffer takes the head and
//! moves the first parked sender's value into the tail; with `cap == 0` a
//! receive takes the parked sender's value itself. Parked tasks are woken
//! after the lock is released.
//!
//! One lock, as in Go, because every decision (is there a receiver? room?
//! closed?) reads several fields together, and channel users who find each
//! other contended park anyway: the lock is held for a few dozen instructions
//! and never across a wake or a user `Drop`.
//!
//! # Semantics, precisely
//!
//! - `send` completes when the value is in the buffer or in a receiver's
//!   hands (for `cap == 0`, only the latter). On a closed channel it fails
//!   with [`SendError`], which gives the value back: nothing is ever lost,
//!   including values of senders parked when `close` happens.
//! - `recv` drains buffered values before reporting [`RecvError`] on a
//!   closed channel.
//! - The channel closes on [`Sender::close`] or when the last [`Sender`] is
//!   dropped.
//! - Dropping every [`Receiver`] does **not** close the channel (Go has no
//!   such notion): sends then park until the channel is closed or the send
//!   is cancelled, and `try_send` reports `Full`. A send that no receiver can
//!   ever see is Go's goroutine leak; it is the caller's to avoid (close the
//!   channel from the sending side, or select on a `done` channel).
//! - Cancellation: dropping a `send`/`recv` future (or a `select!`) before it
//!   completes leaves the channel as if it had never been called. A value a
//!   sender had already handed to a receiver that is then dropped goes to the
//!   next parked receiver or back to the front of the buffer (so `len()` may
//!   briefly exceed `capacity()`); a dropped send whose value was not taken
//!   leaves nothing behind.
//!
//! # Rejected
//!
//! - Separate flavours per capacity (crossbeam's array, list and zero
//!   channels): three protocols to keep correct under `select` and
//!   cancellation, for gains that show only under contention heavy enough
//!   that tasks park anyway.
//! - Closing when all receivers are dropped (tokio, crossbeam): useful, but
//!   not Go; code ported from Go relies on a channel staying open while
//!   someone may still create interest in it, and on `close` being the
//!   sender's statement.
//! - Panicking on send to a closed channel or on a second `close` (Go): in
//!   Rust the value comes back in the error and `close` returns `false`.

mod buffer;
mod capacity;
#[allow(clippy::module_inception)] // the channel itself (Go's hchan) in chan/chan.rs
pub(crate) mod chan;
mod error;
mod lock;
mod receiver;
pub mod select;
mod select_arg;
mod select_future;
mod select_macro;
mod sender;
mod signal;
#[doc(hidden)]
pub mod try_select;
mod waiter;

pub use error::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};

pub use receiver::{Iter, Receiver, RecvFuture, TryIter};
pub use sender::{SendFuture, Sender};

/// For `select!`'s `default(d)` arm: the scheduler's sleep and timeout
/// (`goro::time::sleep` and `timeout` are the same functions).
#[doc(hidden)]
pub use crate::sched::timer::sleep::{sleep as __sleep, timeout as __timeout};

use self::chan::Chan;
use crate::loom::Arc;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// Creates a channel of capacity `cap`; `0` makes a rendezvous channel where
/// a send completes only once a receiver has taken the value.
///
/// Both ends are `Clone + Send + Sync` (for `T: Send`); every clone sends to
/// or receives from the same channel.
///
/// ```
/// let (tx, rx) = goro::chan::bounded::<&str>(2);
/// tx.try_send("a").unwrap();
/// assert_eq!(rx.try_recv(), Ok("a"));
/// ```
///
/// # Panics
///
/// If `cap` is above 2^31 - 2 (2,147,483,646) and is not `usize::MAX`,
/// which means no bound ([`unbounded`]). Go panics the same way on a
/// capacity too large to allocate; here the buffer grows with the backlog,
/// so the limit is what lets the capacity share a word with the closed
/// flag (16 bytes less for every channel).
///
/// ```should_panic
/// let _ = goro::chan::bounded::<u8>(1 << 40); // use unbounded() instead
/// ```
pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(Chan::new(cap));
    (
        Sender { chan: chan.clone() },
        Receiver {
            chan,
            pending: None,
        },
    )
}

/// Creates a channel with no bound on its buffer: a send never waits (it
/// fails only on a closed channel). crossbeam's, flume's and tokio's
/// `unbounded`.
///
/// Go has no such channel, and a Go programmer would reach for a large
/// buffer; here that is the same thing, because the buffer grows with the
/// backlog and gives the memory back when the backlog falls, so
/// `unbounded()` is `bounded(usize::MAX)` by another name. What it gives up
/// is backpressure: a producer faster than its consumers grows the buffer
/// without limit, where a bounded channel would make it wait.
///
/// ```
/// let (tx, rx) = goro::chan::unbounded::<u32>();
/// for i in 0..10_000 {
///     tx.try_send(i).unwrap(); // never `Full`
/// }
/// assert_eq!(rx.len(), 10_000);
/// assert_eq!(rx.try_recv(), Ok(0));
/// ```
pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
    bounded(usize::MAX)
}

/// A receiver that never receives: no value ever arrives and it never
/// closes. Go's nil channel in a `select`: put it in place of a real
/// channel to switch a case off at run time (crossbeam's `never`).
///
/// ```
/// # futures::executor::block_on(async {
/// use goro::chan::{bounded, never, Receiver};
/// let (tx, rx) = bounded::<u32>(1);
/// let off: Receiver<u32> = never();
/// tx.send(1).await.unwrap();
/// let listen_to_rx = false;
/// let got = goro::select! {
///     recv(if listen_to_rx { &rx } else { &off }) -> v => v.ok(),
///     default => None,
/// };
/// assert_eq!(got, None); // the case was switched off
/// # });
/// ```
pub fn never<T>() -> Receiver<T> {
    // No `Sender` is ever made, so the channel can be neither fed nor closed.
    Receiver {
        chan: Arc::new(Chan::new(0)),
        pending: None,
    }
}

/// The receiving end of a timer's channel (capacity 1), fed by `timer`, or
/// by nothing at all for `None` (an `after_func` timer's `rx`). No `Sender`
/// exists, so the channel is never closed: a receive waits for the timer
/// (or forever), as on Go's timer channels.
pub(crate) fn timer_receiver(
    timer: Option<std::sync::Arc<crate::sched::timer::TimerInner>>,
) -> Receiver<std::time::Instant> {
    let chan = Arc::new(Chan::with_timer(1, timer.clone()));
    if let Some(t) = timer {
        // SAFETY: the channel detaches its timer in its drop (`chan.rs`).
        unsafe { t.attach_chan(&*chan) };
    }
    Receiver {
        chan,
        pending: None,
    }
}

/// The timer core's hook into a timer's channel (`sched/timer/mod.rs`).
impl crate::sched::timer::TimerChan for Chan<std::time::Instant> {
    fn send_tick(&self, at: std::time::Instant) -> crate::sched::timer::Tick {
        let mut inner = self.lock();
        match self.send_locked(&mut inner, at, None) {
            Ok(wake) => crate::sched::timer::Tick::Sent(wake),
            Err(_) => crate::sched::timer::Tick::Dropped,
        }
    }

    fn drain(&self) -> bool {
        self.drain_buffer()
    }
}

/// Polls `op` until it completes or `timeout` passes (goro's timers);
/// `None` on a timeout, with `op` left as it is for the caller to cancel.
/// The engine of `send_timeout` and `recv_timeout`.
async fn within<F: Future + Unpin>(op: &mut F, timeout: std::time::Duration) -> Option<F::Output> {
    let mut sleep = std::pin::pin!(crate::sched::timer::sleep::sleep(timeout));
    std::future::poll_fn(|cx| match Pin::new(&mut *op).poll(cx) {
        Poll::Ready(r) => Poll::Ready(Some(r)),
        Poll::Pending => sleep.as_mut().poll(cx).map(|()| None),
    })
    .await
}
