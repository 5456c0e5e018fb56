//! The per-socket readiness record (Go's `pollDesc`, tokio's `ScheduledIo`):
//! what the poller last said about a socket, which tasks wait on it, and
//! its read and write deadlines.
//!
//! # The protocol
//!
//! The poller runs epoll edge-triggered: it reports a socket once when it
//! *becomes* readable (or writable), not while it stays so. A task must
//! therefore never sleep on a socket that has data the task has not seen,
//! and an edge must never fall between "the task found nothing" and "the
//! task is waiting". Each direction keeps a *ready* bit, and the record a
//! *tick* counting the events delivered:
//!
//! * an operation first asks [`ScheduledIo::poll_ready`]: if the direction
//!   is ready it gets the current tick and tries the syscall; otherwise its
//!   waker joins the direction's waiters, under the same lock that event
//!   delivery takes;
//! * a syscall that returns `WouldBlock` calls [`ScheduledIo::clear_ready`]
//!   with the tick it saw; the bit is cleared only if no event arrived
//!   since (the tick is unchanged), and the operation loops to `poll_ready`;
//! * event delivery ([`ScheduledIo::set_ready`]) sets the bits, bumps the
//!   tick and takes every waiter of the directions it readies.
//!
//! So an edge that arrives while the syscall runs either finds the waker
//! (registered before) or leaves the bit set with a new tick (and the
//! clear is skipped): no wake-up is lost (loom model `loom_io_*`). A new
//! record starts ready in both directions: like Go, an operation tries the
//! syscall first and waits only after `EAGAIN`.
//!
//! # Deadlines
//!
//! Each direction has a deadline on the timer clock (0: none). An operation
//! whose direction's deadline has passed fails with `TimedOut` before it
//! touches the socket, ready or not; moving the deadline into the future
//! (or clearing it) makes the direction usable again. The timer that wakes
//! the waiters when a deadline passes is in `deadline.rs`; this record only
//! holds it. Since expiry is decided by comparing the deadline with the
//! clock, a late timer callback for a deadline that has since moved finds
//! it in the future and does nothing: no sequence number is needed.
//!
//! # Rejected
//!
//! - One waker slot per direction (Go has one reader and one writer per fd
//!   because its `fdMutex` serialises them): goro's sockets take `&self`,
//!   so two tasks may read one socket at once, and a single slot would let
//!   the second overwrite (and strand) the first. Waiters are a short list,
//!   deduplicated with `will_wake`.
//! - Readiness in an atomic word with the lock only for waiters (tokio's
//!   layout): it saves an uncontended lock per operation but doubles the
//!   states the model has to check. The lock is per socket, so it is only
//!   ever contended by a reader, a writer and the poller.

use crate::loom::Unpoison;
use crate::loom::{Mutex, MutexGuard};
use crate::sched::task::meta::{blocked_on, Reason};
use crate::sched::timer::clock;
use crate::sched::timer::TimerInner;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// Read readiness (readable, peer closed, error).
pub(crate) const READ: u8 = 0b0001;
/// Write readiness (writable, closed, error).
pub(crate) const WRITE: u8 = 0b0010;
/// The peer closed its side (or the socket failed): reads return at once
/// from now on. Sticky: never cleared by [`ScheduledIo::clear_ready`].
/// Without it, data and FIN delivered in one edge, read by a short read
/// that clears `READ` (`PollIo::poll_stream`), would leave the next read
/// waiting for an edge that never comes, instead of returning EOF.
pub(crate) const READ_CLOSED: u8 = 0b0100;
/// The socket can no longer send (or failed): writes return at once.
/// Sticky, as [`READ_CLOSED`].
pub(crate) const WRITE_CLOSED: u8 = 0b1000;

/// One direction of a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

impl Direction {
    fn bit(self) -> u8 {
        match self {
            Direction::Read => READ,
            Direction::Write => WRITE,
        }
    }

    /// This direction's readiness bits, the sticky "closed" one included.
    fn any_bits(self) -> u8 {
        match self {
            Direction::Read => READ | READ_CLOSED,
            Direction::Write => WRITE | WRITE_CLOSED,
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            Direction::Read => 0,
            Direction::Write => 1,
        }
    }
}

/// The state of one direction.
#[derive(Default)]
pub(crate) struct Half {
    /// Tasks waiting for readiness or for the deadline.
    waiters: Vec<Waker>,
    /// Deadline on the timer clock; 0 for none.
    pub(crate) deadline: u64,
    /// The timer that wakes the waiters at the deadline (made on first use).
    pub(crate) timer: Option<Arc<TimerInner>>,
}

pub(crate) struct IoState {
    /// `READ | WRITE` bits set by events, cleared by `WouldBlock`.
    ready: u8,
    /// Events delivered so far (see module docs).
    tick: u64,
    /// Set when the socket is closed: waiters are woken and find it ready.
    closed: bool,
    pub(crate) halves: [Half; 2],
}

/// The readiness record of one registered socket.
pub(crate) struct ScheduledIo {
    state: Mutex<IoState>,
}

/// The error of an operation whose deadline passed (Go's
/// `os.ErrDeadlineExceeded`).
pub(crate) fn deadline_exceeded() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "i/o deadline exceeded")
}

impl ScheduledIo {
    pub(crate) fn new() -> ScheduledIo {
        ScheduledIo {
            state: Mutex::new(IoState {
                ready: READ | WRITE,
                tick: 0,
                closed: false,
                halves: Default::default(),
            }),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, IoState> {
        self.state.lock().unpoison()
    }

    /// Whether `dir` may be tried now: `Ready(Ok(tick))` if it is ready,
    /// `Ready(Err(TimedOut))` if its deadline has passed, else `Pending`
    /// with the task's waker among the waiters.
    pub(crate) fn poll_ready(&self, cx: &mut Context<'_>, dir: Direction) -> Poll<io::Result<u64>> {
        let mut st = self.lock();
        let half = &mut st.halves[dir.index()];
        if half.deadline != 0 && half.deadline <= clock::now() {
            return Poll::Ready(Err(deadline_exceeded()));
        }
        if st.ready & dir.any_bits() != 0 || st.closed {
            return Poll::Ready(Ok(st.tick));
        }
        let half = &mut st.halves[dir.index()];
        if !half.waiters.iter().any(|w| w.will_wake(cx.waker())) {
            half.waiters.push(cx.waker().clone());
        }
        let reason = match dir {
            Direction::Read => Reason::NetRead,
            Direction::Write => Reason::NetWrite,
        };
        blocked_on(reason, half.deadline);
        Poll::Pending
    }

    /// The syscall said `WouldBlock` after `poll_ready` returned `tick`:
    /// clears `dir`'s bit unless an event arrived since.
    pub(crate) fn clear_ready(&self, dir: Direction, tick: u64) {
        let mut st = self.lock();
        if st.tick == tick {
            st.ready &= !dir.bit();
        }
    }

    /// Event delivery: marks `ready` (`READ`/`WRITE` bits) and appends the
    /// wakers of the directions it readies to `out`, to be woken once no
    /// lock is held.
    pub(crate) fn set_ready(&self, ready: u8, out: &mut Vec<Waker>) {
        let mut st = self.lock();
        st.ready |= ready;
        st.tick = st.tick.wrapping_add(1);
        for dir in [Direction::Read, Direction::Write] {
            if ready & dir.any_bits() != 0 {
                out.append(&mut st.halves[dir.index()].waiters);
            }
        }
    }

    /// The socket is going away: every waiter is woken (and will find the
    /// direction ready, so its syscall reports what happened).
    pub(crate) fn close(&self, out: &mut Vec<Waker>) -> [Option<Arc<TimerInner>>; 2] {
        let mut st = self.lock();
        st.closed = true;
        let mut timers = [None, None];
        for (i, h) in st.halves.iter_mut().enumerate() {
            out.append(&mut h.waiters);
            timers[i] = h.timer.take();
        }
        timers
    }

    /// The waiters of `dir` if its deadline has passed (the deadline timer's
    /// callback), else none.
    pub(crate) fn take_expired(&self, dir: Direction, out: &mut Vec<Waker>) {
        let mut st = self.lock();
        let half = &mut st.halves[dir.index()];
        if half.deadline != 0 && half.deadline <= clock::now() {
            out.append(&mut half.waiters);
        }
    }

    /// Takes the waiters of `dir` (a deadline set in the past wakes them
    /// so they fail at once).
    pub(crate) fn take_waiters(st: &mut IoState, dir: Direction, out: &mut Vec<Waker>) {
        out.append(&mut st.halves[dir.index()].waiters);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! loom models of the readiness protocol: a task's "try, clear, wait"
    //! loop against the poller's event delivery, with epoll replaced by a
    //! model socket (an atomic byte count) and a model event source.
    //! `RUSTFLAGS="--cfg loom" cargo test -p goro --lib --release loom_io`
    //!
    //! CI (`.ci/run`) runs these with `LOOM_MAX_PREEMPTIONS=3` (at most 3
    //! preemptions per execution); the command above, without the
    //! variable, explores them with no preemption bound.
    use super::*;
    use crate::loom::{thread, AtomicBool, AtomicUsize, Ordering};
    use crate::sched::machine::netpoll::wake_all;
    use std::task::Wake;

    /// A waker that records that it was woken.
    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A model non-blocking socket: `bytes` readable bytes.
    fn try_read(bytes: &AtomicUsize) -> io::Result<usize> {
        match bytes.swap(0, Ordering::SeqCst) {
            0 => Err(io::ErrorKind::WouldBlock.into()),
            n => Ok(n),
        }
    }

    /// One poll of a read: the loop every socket operation runs.
    fn poll_read(io: &ScheduledIo, bytes: &AtomicUsize, cx: &mut Context<'_>) -> Poll<usize> {
        loop {
            let tick = match io.poll_ready(cx, Direction::Read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(r) => r.expect("no deadline"),
            };
            match try_read(bytes) {
                Ok(n) => return Poll::Ready(n),
                Err(_) => io.clear_ready(Direction::Read, tick),
            }
        }
    }

    /// Data arrives (and its edge is delivered) while the task reads: the
    /// task either reads the data or is woken, never neither.
    #[test]
    fn loom_io_event_races_wait_no_lost_wakeup() {
        loom::model(|| {
            let io = Arc::new(ScheduledIo::new());
            let bytes = Arc::new(AtomicUsize::new(0));
            // The task has drained the initial readiness already.
            io.clear_ready(Direction::Read, 0);
            let (io2, b2) = (io.clone(), bytes.clone());
            let source = thread::spawn(move || {
                // The peer writes, then epoll reports the edge.
                b2.store(7, Ordering::SeqCst);
                let mut out = Vec::new();
                io2.set_ready(READ, &mut out);
                wake_all(&mut out);
            });
            let flag = Arc::new(Flag(AtomicBool::new(false)));
            let waker = Waker::from(flag.clone());
            let mut cx = Context::from_waker(&waker);
            let got = poll_read(&io, &bytes, &mut cx);
            source.join().unwrap();
            match got {
                Poll::Ready(n) => assert_eq!(n, 7),
                Poll::Pending => {
                    assert!(flag.0.load(Ordering::SeqCst), "parked and never woken");
                    assert_eq!(poll_read(&io, &bytes, &mut cx), Poll::Ready(7));
                }
            }
        });
    }

    /// Two edges race a `WouldBlock`: the clear with a stale tick must not
    /// hide the second edge's data.
    #[test]
    fn loom_io_stale_clear_keeps_newer_event() {
        loom::model(|| {
            let io = Arc::new(ScheduledIo::new());
            let bytes = Arc::new(AtomicUsize::new(0));
            let (io2, b2) = (io.clone(), bytes.clone());
            let source = thread::spawn(move || {
                b2.fetch_add(1, Ordering::SeqCst);
                let mut out = Vec::new();
                io2.set_ready(READ, &mut out);
                wake_all(&mut out);
            });
            let flag = Arc::new(Flag(AtomicBool::new(false)));
            let waker = Waker::from(flag.clone());
            let mut cx = Context::from_waker(&waker);
            // The initial (optimistic) readiness, then whatever arrives.
            let first = poll_read(&io, &bytes, &mut cx);
            source.join().unwrap();
            let total = match first {
                Poll::Ready(n) => n,
                Poll::Pending => {
                    assert!(flag.0.load(Ordering::SeqCst), "data arrived, nobody woken");
                    match poll_read(&io, &bytes, &mut cx) {
                        Poll::Ready(n) => n,
                        Poll::Pending => panic!("woken but not ready"),
                    }
                }
            };
            assert_eq!(total, 1);
        });
    }

    /// Closing the socket wakes a waiter that raced into the wait.
    #[test]
    fn loom_io_close_wakes_waiter() {
        loom::model(|| {
            let io = Arc::new(ScheduledIo::new());
            io.clear_ready(Direction::Read, 0);
            let io2 = io.clone();
            let closer = thread::spawn(move || {
                let mut out = Vec::new();
                let _ = io2.close(&mut out);
                wake_all(&mut out);
            });
            let flag = Arc::new(Flag(AtomicBool::new(false)));
            let waker = Waker::from(flag.clone());
            let mut cx = Context::from_waker(&waker);
            let r = io.poll_ready(&mut cx, Direction::Read);
            closer.join().unwrap();
            if r.is_pending() {
                assert!(flag.0.load(Ordering::SeqCst), "waiter stranded by close");
            }
        });
    }
}
