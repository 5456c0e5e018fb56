//! The errors of channel operations: each says what happened and hands back
//! any value that was not delivered.

use std::fmt;

/// A send on a closed channel; holds the value that was not sent.
///
/// ```
/// let (tx, _rx) = goro::chan::bounded::<i32>(1);
/// tx.close();
/// let err = futures::executor::block_on(tx.send(5)).unwrap_err();
/// assert_eq!(err.into_inner(), 5);
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// The value that could not be sent.
    ///
    /// ```
    /// assert_eq!(goro::chan::SendError("x").into_inner(), "x");
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a closed channel (the value is returned in the error)")
    }
}

impl<T> std::error::Error for SendError<T> {}

/// Why [`Sender::try_send`](super::Sender::try_send) did not send; holds the value either way.
///
/// ```
/// use goro::chan::TrySendError;
/// let (tx, _rx) = goro::chan::bounded::<i32>(0);
/// assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum TrySendError<T> {
    /// The buffer is full and no receiver is waiting (for `cap == 0`: no
    /// receiver is waiting).
    Full(T),
    /// The channel is closed.
    Closed(T),
}

impl<T> TrySendError<T> {
    /// The value that could not be sent.
    ///
    /// ```
    /// assert_eq!(goro::chan::TrySendError::Full(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Closed(v) => v,
        }
    }

    /// Whether the send failed because the channel was full.
    ///
    /// ```
    /// assert!(goro::chan::TrySendError::Full(()).is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// Whether the send failed because the channel was closed.
    ///
    /// ```
    /// assert!(goro::chan::TrySendError::Closed(()).is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, TrySendError::Closed(_))
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str(
                "sending on a full channel (no buffer space and no waiting receiver; \
                 the value is returned in the error)",
            ),
            TrySendError::Closed(_) => {
                f.write_str("sending on a closed channel (the value is returned in the error)")
            }
        }
    }
}

impl<T> std::error::Error for TrySendError<T> {}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(e: SendError<T>) -> Self {
        TrySendError::Closed(e.0)
    }
}

/// A receive on a channel that is closed and drained.
///
/// ```
/// let (tx, rx) = goro::chan::bounded::<i32>(1);
/// drop(tx); // the last sender closes the channel
/// assert_eq!(rx.recv_blocking(), Err(goro::chan::RecvError));
/// ```
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct RecvError;

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("receiving on a closed and empty channel")
    }
}

impl std::error::Error for RecvError {}

/// Why [`Receiver::try_recv`](super::Receiver::try_recv) returned no value.
///
/// ```
/// use goro::chan::TryRecvError;
/// let (tx, rx) = goro::chan::bounded::<i32>(1);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// tx.close();
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
/// ```
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum TryRecvError {
    /// Nothing buffered and no sender waiting; the channel is open.
    Empty,
    /// The channel is closed and drained.
    Closed,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => {
                f.write_str("receiving on an empty channel (nothing buffered, no waiting sender)")
            }
            TryRecvError::Closed => f.write_str("receiving on a closed and empty channel"),
        }
    }
}

impl std::error::Error for TryRecvError {}

impl From<RecvError> for TryRecvError {
    fn from(_: RecvError) -> Self {
        TryRecvError::Closed
    }
}

/// Why [`Receiver::recv_timeout`](super::Receiver::recv_timeout) returned no
/// value.
///
/// ```
/// use goro::chan::RecvTimeoutError;
/// let (tx, rx) = goro::chan::bounded::<i32>(1);
/// let d = std::time::Duration::from_millis(1);
/// assert_eq!(rx.recv_timeout_blocking(d), Err(RecvTimeoutError::Timeout));
/// tx.close();
/// assert_eq!(rx.recv_timeout_blocking(d), Err(RecvTimeoutError::Closed));
/// ```
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum RecvTimeoutError {
    /// Nothing arrived before the timeout; the channel is open.
    Timeout,
    /// The channel is closed and drained.
    Closed,
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvTimeoutError::Timeout => f.write_str("timed out receiving on an open channel"),
            RecvTimeoutError::Closed => f.write_str("receiving on a closed and empty channel"),
        }
    }
}

impl std::error::Error for RecvTimeoutError {}

impl From<RecvError> for RecvTimeoutError {
    fn from(_: RecvError) -> Self {
        RecvTimeoutError::Closed
    }
}

/// Why [`Sender::send_timeout`](super::Sender::send_timeout) did not send;
/// holds the value, which never entered the channel.
///
/// ```
/// use goro::chan::SendTimeoutError;
/// let (tx, _rx) = goro::chan::bounded::<i32>(0);
/// let d = std::time::Duration::from_millis(1);
/// assert_eq!(tx.send_timeout_blocking(7, d), Err(SendTimeoutError::Timeout(7)));
/// tx.close();
/// assert_eq!(tx.send_timeout_blocking(8, d), Err(SendTimeoutError::Closed(8)));
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum SendTimeoutError<T> {
    /// No room and no receiver before the timeout; the channel is open.
    Timeout(T),
    /// The channel is closed.
    Closed(T),
}

impl<T> SendTimeoutError<T> {
    /// The value that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            SendTimeoutError::Timeout(v) | SendTimeoutError::Closed(v) => v,
        }
    }

    /// Whether the send timed out (as opposed to finding the channel closed).
    pub fn is_timeout(&self) -> bool {
        matches!(self, SendTimeoutError::Timeout(_))
    }
}

impl<T> fmt::Debug for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("Timeout(..)"),
            SendTimeoutError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> fmt::Display for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("timed out sending on a full channel"),
            SendTimeoutError::Closed(_) => f.write_str("sending on a closed channel"),
        }
    }
}

impl<T> std::error::Error for SendTimeoutError<T> {}

impl<T> From<SendError<T>> for SendTimeoutError<T> {
    fn from(e: SendError<T>) -> Self {
        SendTimeoutError::Closed(e.0)
    }
}
