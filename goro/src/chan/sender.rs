//! The sending half of a channel and its `send` future.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::chan::{poll_send, Chan};
use super::waiter::{wake, Parked};
use super::{SendError, SendTimeoutError, TrySendError};
use crate::loom::Arc;
use crate::loom::Ordering;
use crate::sched::machine::block_on::{block_on, block_on_until};

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
    pub(super) chan: Arc<Chan<T>>,
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
        crate::sched::task::coop::spend();
        let mut inner = self.chan.lock();
        let woken = self.chan.send_locked(&mut inner, v, None);
        drop(inner);
        woken.map(wake)
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
        match super::within(&mut send, timeout).await {
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
        // A 32-bit count (the channel's size class, `chan.rs`): as
        // `Arc::clone` does past `isize::MAX`, abort rather than wrap, past
        // 2^31 handles (a leak of clones; each handle is 8 bytes, so 16 GiB
        // of them).
        if self.chan.senders.fetch_add(1, Ordering::Relaxed) > i32::MAX as u32 {
            std::process::abort();
        }
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
        poll_send(this.chan, &mut this.value, &mut this.parked, cx)
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
