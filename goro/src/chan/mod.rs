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

#[allow(clippy::module_inception)] // the channel itself (Go's hchan) in chan/chan.rs
pub(crate) mod chan;
mod error;
pub mod select;
mod select_macro;
#[doc(hidden)]
pub mod try_select;

pub use error::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use self::chan::{Chan, Parked};
use crate::loom::{Arc, Ordering};

use crate::sync::{block_on, block_on_until};
use std::time::{Duration, Instant};

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
    timer: Option<std::sync::Arc<crate::time::timer::TimerInner>>,
) -> Receiver<std::time::Instant> {
    let chan = Arc::new(Chan::with_timer(1, timer.clone()));
    if let Some(t) = timer {
        t.attach_chan(&chan);
    }
    Receiver {
        chan,
        pending: None,
    }
}

// --------------------------------------------------------------------------
// Sender
// --------------------------------------------------------------------------

/// The sending half of a channel. Cloning it adds a sender; when the last
/// sender is dropped the channel closes.
///
/// ```
/// let (tx, rx) = goro::chan::bounded::<i32>(4);
/// let tx2 = tx.clone();
/// tx.try_send(1).unwrap();
/// tx2.try_send(2).unwrap();
/// drop((tx, tx2));
/// assert_eq!(rx.recv_blocking(), Ok(1));
/// assert_eq!(rx.recv_blocking(), Ok(2));
/// assert!(rx.recv_blocking().is_err());
/// ```
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Sender<T> {
    /// Sends `v`, waiting for buffer space or (for `cap == 0`) for a receiver
    /// to take it. On a closed channel, returns the value in [`SendError`];
    /// so does a send that is parked when the channel is closed.
    ///
    /// Cancel-safe: dropping the future before it completes sends nothing.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let (tx, rx) = goro::chan::bounded::<i32>(1);
    /// tx.send(1).await.unwrap();
    /// assert_eq!(rx.recv().await, Ok(1));
    /// # });
    /// ```
    pub fn send(&self, v: T) -> SendFuture<'_, T> {
        SendFuture {
            chan: &self.chan,
            value: Some(v),
            parked: None,
        }
    }

    /// Sends `v` if that can be done without waiting: a receiver is parked,
    /// or the buffer has room.
    ///
    /// ```
    /// use goro::chan::TrySendError;
    /// let (tx, _rx) = goro::chan::bounded::<i32>(1);
    /// assert_eq!(tx.try_send(1), Ok(()));
    /// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
    /// ```
    pub fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        crate::sched::coop::spend();
        let mut inner = self.chan.lock();
        let woken = self.chan.send_locked(&mut inner, v, None);
        drop(inner);
        woken.map(chan::wake)
    }

    /// Sends `v`, blocking the calling OS thread until it is taken or
    /// buffered. For plain threads outside any runtime: inside a goro task it
    /// would block the worker thread (use `send(v).await` there).
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded::<i32>(0);
    /// let t = std::thread::spawn(move || rx.recv_blocking());
    /// tx.send_blocking(9).unwrap();
    /// assert_eq!(t.join().unwrap(), Ok(9));
    /// ```
    pub fn send_blocking(&self, v: T) -> Result<(), SendError<T>> {
        block_on(self.send(v))
    }

    /// Sends `v`, waiting at most `timeout` for buffer space or a receiver
    /// (crossbeam's `send_timeout`; Go's `select` of a send against
    /// `time.After(d)`). On a timeout or a closed channel the value comes
    /// back in the error. Uses goro's timers, so it must run in a goro task
    /// (or `Runtime::block_on`); [`Sender::send_timeout_blocking`] is the
    /// plain-thread form.
    ///
    /// ```
    /// use goro::chan::SendTimeoutError;
    /// use std::time::Duration;
    /// let rt = goro::Runtime::builder().procs(1).build().unwrap();
    /// rt.block_on(async {
    ///     let (tx, _rx) = goro::chan::bounded::<&str>(0); // nobody receives
    ///     let err = tx.send_timeout("late", Duration::from_millis(5)).await;
    ///     assert_eq!(err, Err(SendTimeoutError::Timeout("late")));
    /// });
    /// ```
    pub async fn send_timeout(&self, v: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        let mut send = self.send(v);
        let mut sleep = std::pin::pin!(crate::time::sleep(timeout));
        let sent = std::future::poll_fn(|cx| match Pin::new(&mut send).poll(cx) {
            Poll::Ready(r) => Poll::Ready(Some(r)),
            Poll::Pending => sleep.as_mut().poll(cx).map(|()| None),
        })
        .await;
        match sent {
            Some(r) => r.map_err(SendTimeoutError::from),
            None => send
                .cancel()
                .map_or(Ok(()), |v| Err(SendTimeoutError::Timeout(v))),
        }
    }

    /// [`Sender::send_timeout`] for plain threads: blocks the calling OS
    /// thread, and needs no runtime.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (tx, rx) = goro::chan::bounded::<u8>(1);
    /// assert_eq!(tx.send_timeout_blocking(1, Duration::from_millis(1)), Ok(()));
    /// assert!(tx.send_timeout_blocking(2, Duration::from_millis(1)).unwrap_err().is_timeout());
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn send_timeout_blocking(
        &self,
        v: T,
        timeout: Duration,
    ) -> Result<(), SendTimeoutError<T>> {
        let mut send = self.send(v);
        match block_on_until(&mut send, Some(Instant::now() + timeout)) {
            Some(r) => r.map_err(SendTimeoutError::from),
            None => send
                .cancel()
                .map_or(Ok(()), |v| Err(SendTimeoutError::Timeout(v))),
        }
    }

    /// Closes the channel: parked and future sends fail with their value
    /// returned, receivers drain the buffer and then see the channel closed.
    /// Returns `false` if it was already closed.
    ///
    /// ```
    /// let (tx, _rx) = goro::chan::bounded::<i32>(1);
    /// assert!(tx.close());
    /// assert!(!tx.close());
    /// ```
    pub fn close(&self) -> bool {
        self.chan.close()
    }

    /// Whether the channel has been closed.
    ///
    /// ```
    /// let (tx, _rx) = goro::chan::bounded::<i32>(1);
    /// assert!(!tx.is_closed());
    /// tx.close();
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.chan.is_closed()
    }

    /// Number of values in the buffer (Go's `len(ch)`). Values held by parked
    /// senders are not counted.
    ///
    /// ```
    /// let (tx, _rx) = goro::chan::bounded::<i32>(3);
    /// tx.try_send(1).unwrap();
    /// assert_eq!(tx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.chan.len()
    }

    /// Whether the buffer is empty.
    ///
    /// ```
    /// let (tx, _rx) = goro::chan::bounded::<i32>(3);
    /// assert!(tx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer's capacity (Go's `cap(ch)`); 0 for a rendezvous channel.
    ///
    /// ```
    /// let (tx, _rx) = goro::chan::bounded::<i32>(3);
    /// assert_eq!(tx.capacity(), 3);
    /// ```
    pub fn capacity(&self) -> usize {
        self.chan.cap()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        // Relaxed: a new handle is made from a live one, so the count is
        // already >= 1 and cannot reach 0 concurrently (as `Arc::clone`).
        self.chan.senders.fetch_add(1, Ordering::Relaxed);
        Sender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        // AcqRel: the last sender's close happens after every other sender's
        // last use (the close itself is ordered by the channel lock).
        if self.chan.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.chan.close();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// The future of [`Sender::send`].
///
/// ```
/// # futures::executor::block_on(async {
/// let (tx, rx) = goro::chan::bounded::<i32>(1);
/// let fut: goro::chan::SendFuture<'_, i32> = tx.send(1);
/// fut.await.unwrap();
/// # drop(rx);
/// # });
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct SendFuture<'a, T> {
    chan: &'a Chan<T>,
    value: Option<T>,
    parked: Option<Parked<T>>,
}

impl<T> SendFuture<'_, T> {
    /// Gives up the send: the value back if no receiver took it (a parked
    /// send is taken off the channel), `None` if it was delivered.
    fn cancel(&mut self) -> Option<T> {
        match self.parked.take() {
            Some(p) => self.chan.unpark_send(p),
            None => self.value.take(),
        }
    }
}

// The value is never pinned: it is moved into the channel or handed back.
impl<T> Unpin for SendFuture<'_, T> {}

impl<T> Future for SendFuture<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        chan::poll_send(this.chan, &mut this.value, &mut this.parked, cx)
    }
}

impl<T> Drop for SendFuture<'_, T> {
    fn drop(&mut self) {
        if let Some(p) = self.parked.take() {
            // Dropped here, outside the channel lock.
            drop(self.chan.unpark_send(p));
        }
    }
}

impl<T> fmt::Debug for SendFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFuture")
            .field("parked", &self.parked.is_some())
            .finish()
    }
}

// --------------------------------------------------------------------------
// Receiver
// --------------------------------------------------------------------------

/// The receiving half of a channel. Cloning it adds a receiver; each value
/// goes to exactly one of them. Dropping every receiver does not close the
/// channel (Go semantics; see the [module docs](self)).
///
/// It is also a [`Stream`] that ends when the channel is closed and drained.
///
/// ```
/// # futures::executor::block_on(async {
/// use futures::StreamExt;
/// let (tx, rx) = goro::chan::bounded::<i32>(3);
/// for i in 0..3 { tx.send(i).await.unwrap(); }
/// drop(tx);
/// assert_eq!(rx.collect::<Vec<_>>().await, vec![0, 1, 2]);
/// # });
/// ```
pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
    /// The receive parked by `poll_next`, if any.
    pending: Option<Parked<T>>,
}

impl<T> Receiver<T> {
    /// Receives a value, waiting for one. Buffered values drain before a
    /// closed channel reports [`RecvError`].
    ///
    /// Cancel-safe: dropping the future before it completes takes nothing,
    /// and a value handed to it in the meantime stays in the channel.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let (tx, rx) = goro::chan::bounded::<i32>(1);
    /// tx.send(3).await.unwrap();
    /// tx.close();
    /// assert_eq!(rx.recv().await, Ok(3));
    /// assert!(rx.recv().await.is_err());
    /// # });
    /// ```
    pub fn recv(&self) -> RecvFuture<'_, T> {
        RecvFuture {
            chan: &self.chan,
            parked: None,
        }
    }

    /// Receives a value if one is available without waiting.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded::<i32>(1);
    /// tx.try_send(1).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        crate::sched::coop::spend();
        self.chan.timer_run();
        let mut inner = self.chan.lock();
        let r = self.chan.recv_locked(&mut inner, None);
        drop(inner);
        r.map(|(v, woken)| {
            chan::wake(woken);
            v
        })
    }

    /// Receives a value, blocking the calling OS thread. For plain threads
    /// outside any runtime (use `recv().await` in tasks).
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded::<i32>(0);
    /// let t = std::thread::spawn(move || tx.send_blocking(4));
    /// assert_eq!(rx.recv_blocking(), Ok(4));
    /// t.join().unwrap().unwrap();
    /// ```
    pub fn recv_blocking(&self) -> Result<T, RecvError> {
        block_on(self.recv())
    }

    /// Receives a value, waiting at most `timeout` (crossbeam's
    /// `recv_timeout`; Go's `select { case v := <-ch: case <-time.After(d): }`).
    /// Cancel-safe like [`Receiver::recv`]: a timeout takes nothing. Uses
    /// goro's timers, so it must run in a goro task (or `Runtime::block_on`);
    /// [`Receiver::recv_timeout_blocking`] is the plain-thread form.
    ///
    /// ```
    /// use goro::chan::RecvTimeoutError;
    /// use std::time::Duration;
    /// let rt = goro::Runtime::builder().procs(1).build().unwrap();
    /// rt.block_on(async {
    ///     let (tx, rx) = goro::chan::bounded::<u32>(1);
    ///     let d = Duration::from_millis(5);
    ///     assert_eq!(rx.recv_timeout(d).await, Err(RecvTimeoutError::Timeout));
    ///     tx.send(3).await.unwrap();
    ///     assert_eq!(rx.recv_timeout(d).await, Ok(3));
    /// });
    /// ```
    pub async fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        match crate::time::timeout(timeout, self.recv()).await {
            Ok(r) => r.map_err(RecvTimeoutError::from),
            Err(_) => Err(RecvTimeoutError::Timeout),
        }
    }

    /// [`Receiver::recv_timeout`] for plain threads: blocks the calling OS
    /// thread, and needs no runtime.
    ///
    /// ```
    /// use goro::chan::RecvTimeoutError;
    /// use std::time::Duration;
    /// let (tx, rx) = goro::chan::bounded::<u32>(1);
    /// let t = std::thread::spawn(move || tx.send_blocking(5));
    /// assert_eq!(rx.recv_timeout_blocking(Duration::from_secs(10)), Ok(5));
    /// t.join().unwrap().unwrap();
    /// assert_eq!(rx.recv_timeout_blocking(Duration::from_millis(1)), Err(RecvTimeoutError::Closed));
    /// ```
    pub fn recv_timeout_blocking(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        match block_on_until(self.recv(), Some(Instant::now() + timeout)) {
            Some(r) => r.map_err(RecvTimeoutError::from),
            None => Err(RecvTimeoutError::Timeout),
        }
    }

    /// A blocking iterator over received values, ending when the channel is
    /// closed and drained: Go's `for v := range ch` on a plain thread. In a
    /// task, use the receiver as a [`Stream`] instead.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded::<u32>(0);
    /// let t = std::thread::spawn(move || {
    ///     for i in 0..3 {
    ///         tx.send_blocking(i).unwrap();
    ///     } // the last sender goes: the channel closes
    /// });
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), vec![0, 1, 2]);
    /// t.join().unwrap();
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// An iterator over the values available now, without waiting: it ends
    /// at the first `try_recv` that finds nothing.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded::<u32>(4);
    /// tx.try_send(1).unwrap();
    /// tx.try_send(2).unwrap();
    /// assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec![1, 2]);
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }

    /// Whether the channel has been closed (values may still be buffered).
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded::<i32>(1);
    /// drop(tx);
    /// assert!(rx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.chan.is_closed()
    }

    /// Number of values in the buffer (Go's `len(ch)`).
    ///
    /// ```
    /// let (tx, rx) = goro::chan::bounded::<i32>(2);
    /// tx.try_send(1).unwrap();
    /// assert_eq!(rx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.chan.len()
    }

    /// Whether the buffer is empty.
    ///
    /// ```
    /// let (_tx, rx) = goro::chan::bounded::<i32>(2);
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer's capacity (Go's `cap(ch)`); 0 for a rendezvous channel.
    ///
    /// ```
    /// let (_tx, rx) = goro::chan::bounded::<i32>(0);
    /// assert_eq!(rx.capacity(), 0);
    /// ```
    pub fn capacity(&self) -> usize {
        self.chan.cap()
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        Receiver {
            chan: self.chan.clone(),
            pending: None,
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if let Some(p) = self.pending.take() {
            self.chan.unpark_recv(p);
        }
    }
}

impl<T> Stream for Receiver<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        chan::poll_recv(&this.chan, &mut this.pending, cx).map(Result::ok)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len(), None)
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// The iterator of [`Receiver::iter`]: blocks for each value.
#[derive(Debug)]
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.recv_blocking().ok()
    }
}

/// The iterator of [`Receiver::try_iter`]: the values available now.
#[derive(Debug)]
pub struct TryIter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

/// The future of [`Receiver::recv`].
///
/// ```
/// # futures::executor::block_on(async {
/// let (tx, rx) = goro::chan::bounded::<i32>(1);
/// tx.send(1).await.unwrap();
/// let fut: goro::chan::RecvFuture<'_, i32> = rx.recv();
/// assert_eq!(fut.await, Ok(1));
/// # });
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct RecvFuture<'a, T> {
    chan: &'a Chan<T>,
    parked: Option<Parked<T>>,
}

impl<T> Future for RecvFuture<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        chan::poll_recv(this.chan, &mut this.parked, cx)
    }
}

impl<T> Drop for RecvFuture<'_, T> {
    fn drop(&mut self) {
        if let Some(p) = self.parked.take() {
            self.chan.unpark_recv(p);
        }
    }
}

impl<T> fmt::Debug for RecvFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvFuture")
            .field("parked", &self.parked.is_some())
            .finish()
    }
}
