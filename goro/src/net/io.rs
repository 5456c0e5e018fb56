//! A non-blocking socket registered with the poller (Go's `netFD` with its
//! `pollDesc`; tokio's `PollEvented`).
//!
//! Every socket operation is the same loop: ask the readiness record whether
//! the direction may be tried (failing at once past a deadline), try the
//! syscall, and on `WouldBlock` clear the readiness seen and wait for the
//! next edge (`scheduled_io.rs` explains why no edge can be lost). A TCP
//! read or write that moves fewer bytes than asked clears the readiness
//! too ([`PollIo::poll_stream`]): the queue is drained, and the `EAGAIN`
//! the next attempt would get is a syscall saved. Errors
//! other than `WouldBlock` go to the caller unchanged: a reset peer is
//! `ConnectionReset`, a half-closed one reads `Ok(0)`, and `accept` under
//! `EMFILE` returns that error with the listener still ready, so the next
//! `accept` tries again.
//!
//! # Rejected
//!
//! - Waiting for readiness before the first attempt (tokio's initial
//!   state when the first event has not come yet): a fresh socket usually
//!   is writable and a fresh connection often readable, so Go's optimism
//!   saves a poll round trip.

use crate::net::deadline;
use crate::net::poller::Registration;
use crate::net::scheduled_io::Direction;
use mio::event::Source;
use std::future::poll_fn;
use std::io;
use std::task::{ready, Context, Poll};
use std::time::Instant;

/// A mio socket and its registration; deregistered when dropped.
pub(crate) struct PollIo<S: Source> {
    sock: S,
    reg: Registration,
}

impl<S: Source> PollIo<S> {
    /// Registers `sock` with the poller of the calling thread's runtime.
    pub(crate) fn new(mut sock: S) -> io::Result<PollIo<S>> {
        let reg = Registration::new(&mut sock)?;
        Ok(PollIo { sock, reg })
    }

    pub(crate) fn get(&self) -> &S {
        &self.sock
    }

    /// One poll of an operation in direction `dir`.
    pub(crate) fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        // A safe point (`coop.rs`): a socket that is always ready (a fast
        // peer) must not let one task keep its P.
        if crate::sched::task::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        loop {
            let tick = ready!(self.reg.io.poll_ready(cx, dir))?;
            match op(&self.sock) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.reg.io.clear_ready(dir, tick)
                }
                r => return Poll::Ready(r),
            }
        }
    }

    /// One poll of a stream transfer (a TCP read or write) of `len` bytes:
    /// as [`PollIo::poll_io`], and a transfer that moved some bytes but
    /// fewer than `len` also clears the direction's readiness, as a
    /// `WouldBlock` would (tokio does the same). A short read on a stream
    /// socket means the receive queue was empty when it returned (a short
    /// write: the send buffer full), so the next attempt would be an
    /// `EAGAIN` syscall; without this, every keep-alive request pays one
    /// (3 `recv`s per HTTP request instead of 2 in goro-bench's
    /// http_hello). Bytes that arrive after the transfer make a new edge,
    /// and the tick check in `clear_ready` keeps an edge delivered
    /// meanwhile (the same argument as for `WouldBlock`). Datagram sockets
    /// must not use this: a short datagram says nothing about the queue.
    pub(crate) fn poll_stream(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        len: usize,
        mut op: impl FnMut(&S) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        // A safe point (`coop.rs`), as in `poll_io`.
        if crate::sched::task::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        loop {
            let tick = ready!(self.reg.io.poll_ready(cx, dir))?;
            match op(&self.sock) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.reg.io.clear_ready(dir, tick)
                }
                Ok(n) if n > 0 && n < len => {
                    self.reg.io.clear_ready(dir, tick);
                    return Poll::Ready(Ok(n));
                }
                r => return Poll::Ready(r),
            }
        }
    }

    /// Runs a stream transfer of `len` bytes until it does not block (see
    /// [`PollIo::poll_stream`]).
    pub(crate) async fn stream_io(
        &self,
        dir: Direction,
        len: usize,
        mut op: impl FnMut(&S) -> io::Result<usize>,
    ) -> io::Result<usize> {
        poll_fn(|cx| self.poll_stream(cx, dir, len, &mut op)).await
    }

    /// Runs `op` until it does not block (or a deadline passes).
    pub(crate) async fn io<R>(
        &self,
        dir: Direction,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> io::Result<R> {
        poll_fn(|cx| self.poll_io(cx, dir, &mut op)).await
    }

    pub(crate) fn set_deadline(&self, dir: Direction, t: Option<Instant>) {
        deadline::set(&self.reg, dir, t);
    }
}

impl<S: Source> Drop for PollIo<S> {
    fn drop(&mut self) {
        self.reg.deregister(&mut self.sock);
    }
}
