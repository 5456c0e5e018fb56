//! The receiving half of a channel, its `recv` future, and its iterators.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;

use super::chan::{poll_recv, Chan};
use super::waiter::{wake, Parked};
use super::{RecvError, RecvTimeoutError, TryRecvError};
use crate::loom::Arc;
use crate::sched::machine::block_on::{block_on, block_on_until};

/// The receiving half of a channel. Cloning it adds a receiver; each value
/// goes to exactly one of them. Dropping every receiver does not close the
/// channel (Go semantics; see the [module docs](super)).
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
    pub(super) chan: Arc<Chan<T>>,
    /// The receive parked by `poll_next`, if any.
    pub(super) pending: Option<Parked<T>>,
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
        crate::sched::task::coop::spend();
        self.chan.timer_run();
        let mut inner = self.chan.lock();
        let r = self.chan.recv_locked(&mut inner, None);
        drop(inner);
        r.map(|(v, woken)| {
            wake(woken);
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
        let mut recv = self.recv();
        match super::within(&mut recv, timeout).await {
            Some(r) => r.map_err(RecvTimeoutError::from),
            // A value handed over at the deadline is the caller's, as the
            // sender was told it was delivered.
            None => recv.cancel().ok_or(RecvTimeoutError::Timeout),
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
        let mut recv = self.recv();
        match block_on_until(&mut recv, Some(Instant::now() + timeout)) {
            Some(r) => r.map_err(RecvTimeoutError::from),
            None => recv.cancel().ok_or(RecvTimeoutError::Timeout),
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
        poll_recv(&this.chan, &mut this.pending, cx).map(Result::ok)
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

impl<T> RecvFuture<'_, T> {
    /// Gives up the receive: the value a sender handed it meanwhile, if
    /// any (it is the receiver's: the sender saw it delivered), else
    /// `None`, with the receive taken off the channel.
    fn cancel(&mut self) -> Option<T> {
        let p = self.parked.take()?;
        if p.is_done() {
            self.chan.timer_unblock();
            return p.take_done();
        }
        self.chan.unpark_recv_keep(p)
    }
}

impl<T> Future for RecvFuture<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        poll_recv(this.chan, &mut this.parked, cx)
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
