//! A pipe: one direction of a simulated TCP connection, a bounded byte
//! queue from one stream's writes to its peer's reads.
//!
//! A write appends a segment stamped with its delivery time (now plus the
//! link's latency, plus a retransmission timeout if the link's loss drew
//! it; never earlier than the segment before, so bytes stay in order). A
//! read takes the bytes of the segments that are due, while the link is
//! open. Nothing moves bytes from "in flight" to "readable": a reader that
//! finds only segments not yet due parks with its side's timer set to the
//! first one's delivery time (`side.rs`), and reads them itself when it
//! wakes. So delivery costs no task, and a bubble whose only activity is
//! bytes on the wire sees every task blocked and jumps its clock to the
//! next delivery, as it does to any timer.
//!
//! Capacity: the bytes written and not yet read, in flight or not, are at
//! most [`CAPACITY`] (a socket's send and receive buffers together); a
//! writer finding no room parks until a read frees some. A write takes as
//! much as fits and returns how much, as `send(2)` does.
//!
//! The ends, as Linux has them:
//!
//! - the writer shuts down or drops its stream: the reader reads the bytes
//!   written, then end of file (`fin`, delivered after them);
//! - the reader drops its stream: the bytes queued are discarded and the
//!   writer's next write fails with `BrokenPipe` (Linux's `EPIPE`, which a
//!   Go program sees as "broken pipe"; Linux first answers one write with a
//!   reset, which a simulation has no reason to copy);
//! - the reader shuts down its read side: reads return end of file, and
//!   the peer's writes are accepted and discarded;
//! - a reset (a listener dropped with the connection still in its
//!   backlog): both ends fail with `ConnectionReset`.
//!
//! All of it is under one lock per pipe, taken by the reader, the writer
//! and the stream's drop; the lock order is pipe, then link, then the
//! timers' and the bubble's own locks (a wake), never the reverse.

use super::link::{Link, RTO};
use super::side::Side;
use crate::loom::Unpoison;
use crate::sched::task::meta::Reason;
use crate::sched::timer::clock;
use crate::sched::timer::NEVER;
use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// The most bytes a pipe holds (written, not yet read).
pub(crate) const CAPACITY: usize = 256 << 10;

/// One direction of a simulated TCP connection.
pub(crate) struct Pipe {
    link: Arc<Link>,
    st: Mutex<PipeState>,
}

/// A write, due for reading at `due`; `off` bytes of it read already.
struct Segment {
    due: u64,
    data: Vec<u8>,
    off: usize,
}

#[derive(Default)]
struct PipeState {
    segs: VecDeque<Segment>,
    /// Bytes written and not yet read.
    buffered: usize,
    /// The delivery time of the last segment (the next is never earlier).
    last_due: u64,
    /// The writer is done: end of file, due at this time.
    fin: Option<u64>,
    /// The reader shut its read side down: reads are end of file, writes
    /// are discarded.
    read_shut: bool,
    /// The reader is gone: writes fail.
    reader_gone: bool,
    /// The connection was reset: both ends fail.
    reset: bool,
    read: Side,
    write: Side,
}

fn reset_error() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, "connection reset by peer")
}

fn deadline_exceeded() -> io::Error {
    crate::net::scheduled_io::deadline_exceeded()
}

impl Pipe {
    pub(crate) fn new(link: Arc<Link>) -> Pipe {
        Pipe {
            link,
            st: Mutex::new(PipeState::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PipeState> {
        self.st.lock().unpoison()
    }

    /// One poll of a read of at most `len` bytes; `put(offset, bytes)`
    /// copies each run of bytes taken to the caller's buffer.
    pub(crate) fn poll_read(
        &self,
        cx: &mut Context<'_>,
        len: usize,
        put: &mut dyn FnMut(usize, &[u8]),
    ) -> Poll<io::Result<usize>> {
        if crate::sched::task::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let mut st = self.lock();
        loop {
            if st.reset {
                return Poll::Ready(Err(reset_error()));
            }
            if st.read_shut || len == 0 {
                return Poll::Ready(Ok(0));
            }
            if st.read.expired() {
                st.read.done();
                return Poll::Ready(Err(deadline_exceeded()));
            }
            let now = clock::now();
            let open = self.link.open();
            if open {
                let n = take_due(&mut st, now, len, put);
                if n > 0 {
                    st.buffered -= n;
                    st.read.done();
                    st.write.wake(); // room freed
                    return Poll::Ready(Ok(n));
                }
                if st.segs.is_empty() && st.fin.is_some_and(|f| f <= now) {
                    st.read.done();
                    return Poll::Ready(Ok(0));
                }
            }
            let next = st.segs.front().map(|s| s.due).or(st.fin).unwrap_or(NEVER);
            let at = if open {
                next
            } else {
                if next != NEVER && !self.link.wait_open(cx.waker()) {
                    continue; // opened meanwhile
                }
                NEVER
            };
            if st.read.park(cx, at, Reason::NetRead) {
                return Poll::Pending;
            }
        }
    }

    /// One poll of a write of `buf`: takes what fits, or parks until a
    /// read frees room.
    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if crate::sched::task::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let mut st = self.lock();
        loop {
            if st.reset {
                return Poll::Ready(Err(reset_error()));
            }
            if st.fin.is_some() || st.reader_gone {
                st.write.done();
                return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
            }
            if st.write.expired() {
                st.write.done();
                return Poll::Ready(Err(deadline_exceeded()));
            }
            if buf.is_empty() {
                return Poll::Ready(Ok(0));
            }
            if st.read_shut {
                return Poll::Ready(Ok(buf.len())); // the peer discards it
            }
            let room = CAPACITY - st.buffered;
            if room > 0 {
                let n = room.min(buf.len());
                let due = self.due(st.last_due);
                st.last_due = due;
                st.segs.push_back(Segment {
                    due,
                    data: buf[..n].to_vec(),
                    off: 0,
                });
                st.buffered += n;
                st.write.done();
                st.read.wake();
                return Poll::Ready(Ok(n));
            }
            if st.write.park(cx, NEVER, Reason::NetWrite) {
                return Poll::Pending;
            }
        }
    }

    /// When a write made now is due: after the link's latency, a
    /// retransmission timeout later if its loss draws it, and never before
    /// the segment before (`after`).
    fn due(&self, after: u64) -> u64 {
        let mut due = clock::now().saturating_add(self.link.latency());
        if super::draw(self.link.loss()) {
            due = due.saturating_add(RTO);
        }
        due.max(after)
    }

    /// The writer is done (shut down or dropped): the reader gets end of
    /// file after the bytes written.
    pub(crate) fn close_write(&self) {
        let mut st = self.lock();
        if st.fin.is_none() {
            let fin = self.due(st.last_due);
            st.last_due = fin;
            st.fin = Some(fin);
        }
        st.write.done();
        st.read.wake();
    }

    /// The reader shut its read side down: reads are end of file.
    pub(crate) fn shut_read(&self) {
        let mut st = self.lock();
        st.read_shut = true;
        discard(&mut st);
        st.read.wake();
    }

    /// The reader is gone: the writer's writes fail.
    pub(crate) fn close_read(&self) {
        let mut st = self.lock();
        st.read_shut = true;
        st.reader_gone = true;
        discard(&mut st);
        st.read.done();
    }

    /// Resets the connection: both ends fail.
    pub(crate) fn reset(&self) {
        let mut st = self.lock();
        st.reset = true;
        discard(&mut st);
        st.read.wake();
        st.write.wake();
    }

    pub(crate) fn set_read_deadline(&self, d: Option<std::time::Instant>) {
        self.lock().read.set_deadline(d);
    }

    pub(crate) fn set_write_deadline(&self, d: Option<std::time::Instant>) {
        self.lock().write.set_deadline(d);
    }
}

/// Drops the queued bytes, which frees the writer's room.
fn discard(st: &mut PipeState) {
    st.segs.clear();
    st.buffered = 0;
    st.write.wake();
}

/// Takes up to `len` bytes of the segments due at `now`, in order.
fn take_due(st: &mut PipeState, now: u64, len: usize, put: &mut dyn FnMut(usize, &[u8])) -> usize {
    let mut n = 0;
    while n < len {
        let Some(seg) = st.segs.front_mut() else {
            break;
        };
        if seg.due > now {
            break;
        }
        let k = (seg.data.len() - seg.off).min(len - n);
        put(n, &seg.data[seg.off..seg.off + k]);
        seg.off += k;
        n += k;
        if seg.off == seg.data.len() {
            st.segs.pop_front();
        }
    }
    n
}
