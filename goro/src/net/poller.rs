//! The poller: one epoll instance per runtime (Go's netpoller), and how
//! the scheduler's threads use it.
//!
//! # Who polls, and when
//!
//! A socket is registered once, edge-triggered, for reading and writing;
//! its readiness record (`scheduled_io.rs`) holds the tasks waiting on it.
//! Nobody owns the epoll: the scheduler's threads poll it as Go's do.
//!
//! * **Non-blocking, from find-runnable** (steps 2 and 6 in `find.rs`):
//!   an M holding a P whose local and global queues are empty, and that
//!   found nothing to steal (queued work goes before new readiness), and
//!   also every 61st slice while the queue has work (a shorter tail;
//!   `find.rs` says why for both), polls with a zero timeout; the wakes
//!   land at the tail of its own P's queue (see below). The poll is
//!   skipped when nothing is registered (a runtime without sockets pays
//!   one atomic load), when the last poll was less than [`MIN_POLL_GAP`](crate::sched::machine::netpoll::MIN_POLL_GAP) ago (so Ms
//!   spinning for work do not turn into an `epoll_wait` storm), and when
//!   another thread is inside the epoll (its lock is taken: a blocked M
//!   delivers the events itself).
//! * **Blocking, by the timer sleeper** (`sched/timer/check.rs`): the one parked
//!   M that sleeps until the earliest timer sleeps in `epoll_wait` instead
//!   of on its futex while sockets are registered, with the same timeout.
//!   So at most one M blocks in the poller, and an idle runtime with open
//!   connections makes no wakeups at all. Whatever would have woken the
//!   futex breaks the wait instead (Go's `netpollBreak`): a P handed to
//!   that M (`startm`), an earlier timer (`timer_added`), shutdown. The
//!   parker knows whether its M sleeps in the poller and writes the
//!   poller's eventfd (`mio::Waker`) instead of signalling its condition
//!   variable (`park.rs`).
//! * **The monitor** polls when nobody has for [`SYSMON_POLL_GAP`](crate::sched::machine::netpoll::SYSMON_POLL_GAP) while
//!   some P is busy (Go's sysmon does the same): a task that never yields
//!   would otherwise hide every socket from a runtime with one P.
//!
//! # How readiness reaches tasks (Go's `injectglist`)
//!
//! Polling collects the wakers of the tasks it readied; they are woken
//! after the poll lock is dropped. On a thread holding a P they go to the
//! tail of that P's queue in the order the poll reported them, followed by
//! one `wakep` for a thief to share them (`wake_batch`); on a thread
//! without one (the sleeper, the monitor) each goes to the global queue
//! followed by `wakep`. The
//! sleeper, woken by readiness, first takes an idle P if there is one and
//! delivers the wakes with it (`Machine::deliver_ready`), so the tasks run
//! on the M that saw them ready; with every P busy it injects them.
//!
//! # Lazy start, stale events
//!
//! The epoll, its eventfd and their lock are made on the first
//! registration; a runtime that never opens a socket has none. The first
//! registration (and any after the count fell to zero) kicks the timer
//! sleeper so that it moves from its futex into the epoll, or starts a
//! thread to become one.
//!
//! An epoll token is a slot index plus a generation. Closing a socket frees
//! the slot and bumps the generation, so an event for the old socket still
//! in flight (fetched by a poll on another thread) is ignored rather than
//! delivered to the socket that reuses the slot (Go's `fdseq`).
//!
//! # Rejected
//!
//! - A dedicated poller thread (tokio's I/O driver before its rework, and
//!   Go before 1.1): every readiness would be a cross-thread hand-off plus
//!   a futex wake, and the thread would be one more to wake when idle.
//! - Level-triggered epoll: every poll would report every socket that has
//!   unread data, so a slow reader would make every poll return at once.
//! - The socket's address as the epoll token (tokio): safe only if a
//!   record outlives every poll that may still report it; the slot table
//!   costs one uncontended lock per poll batch and needs no `unsafe`.
//! - The poller lock held by any M, blocking or not, with a flag for "an M
//!   blocks": `try_lock` is that flag.

use crate::loom::Unpoison;
use crate::net::scheduled_io::{ScheduledIo, READ, READ_CLOSED, WRITE, WRITE_CLOSED};
use crate::sched::machine::netpoll::wake_all;
use crate::sched::machine::netpoll::Netpoll;
use crate::sched::machine::park::PollBreak;
use crate::sched::timer::clock;
use crate::sched::Sched;
use mio::event::Source;
use mio::{Events, Interest, Token};
use std::any::Any;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::Waker;
use std::time::Duration;

/// Events taken per `epoll_wait` (Go takes 128).
const EVENTS: usize = 128;
/// The token of the eventfd that breaks a blocking poll.
const WAKE_TOKEN: Token = Token(usize::MAX);

/// The epoll and what goes with it.
pub(crate) struct Driver {
    /// The epoll and its event buffer; held by whoever polls. `try_lock`
    /// failing means another thread is polling (maybe blocked).
    poll: Mutex<PollState>,
    registry: mio::Registry,
    waker: mio::Waker,
    /// Through the loom facade: the slot protocol (generations, close,
    /// reuse) is model-checked with this lock (`loom_poller_*`).
    slots: crate::loom::Mutex<Slots>,
    /// Registered sockets; nobody polls while it is zero.
    registered: AtomicUsize,
    /// Timer clock at the last poll's return (rate limit).
    last_poll: AtomicU64,
}

struct PollState {
    poll: mio::Poll,
    events: Events,
}

/// Slot table: token → readiness record, with generations.
#[derive(Default)]
pub(crate) struct Slots {
    entries: Vec<(u32, Option<Arc<ScheduledIo>>)>,
    free: Vec<u32>,
}

impl Slots {
    /// Stores `io` and returns its token.
    pub(crate) fn insert(&mut self, io: Arc<ScheduledIo>) -> usize {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.entries.push((0, None));
                (self.entries.len() - 1) as u32
            }
        };
        let e = &mut self.entries[idx as usize];
        e.1 = Some(io);
        (e.0 as usize) << 32 | idx as usize
    }

    /// The record of `token`, unless its socket is gone.
    pub(crate) fn get(&self, token: usize) -> Option<&Arc<ScheduledIo>> {
        let (idx, gen) = (token & 0xffff_ffff, (token >> 32) as u32);
        match self.entries.get(idx) {
            Some((g, Some(io))) if *g == gen => Some(io),
            _ => None,
        }
    }

    /// Event delivery for `token`: marks its socket's record `ready` and
    /// appends the wakers to `out`, unless the socket is gone (a stale
    /// event, fetched before its close, for a slot maybe reused since).
    /// Called with the slot lock held, so a close cannot slip between the
    /// lookup and the delivery.
    pub(crate) fn deliver(&self, token: usize, ready: u8, out: &mut Vec<Waker>) {
        if let Some(io) = self.get(token) {
            io.set_ready(ready, out);
        }
    }

    /// Frees `token`'s slot; later events for it are ignored.
    pub(crate) fn remove(&mut self, token: usize) {
        let (idx, gen) = (token & 0xffff_ffff, (token >> 32) as u32);
        if let Some(e) = self.entries.get_mut(idx) {
            if e.0 == gen && e.1.is_some() {
                e.1 = None;
                e.0 = e.0.wrapping_add(1);
                self.free.push(idx as u32);
            }
        }
    }
}

impl Driver {
    /// The driver of `sched`, made on first use (`sched/machine/netpoll.rs`).
    fn of(sched: &Sched) -> io::Result<Arc<Driver>> {
        let any = sched.netpoll().get_or_try_init(|| {
            let d = Driver::new()?;
            Ok((
                d.clone() as Arc<dyn Netpoll>,
                d as Arc<dyn Any + Send + Sync>,
            ))
        })?;
        Ok(any
            .downcast::<Driver>()
            .expect("goro: the runtime's poller is net's epoll driver"))
    }

    fn new() -> io::Result<Arc<Driver>> {
        let poll = mio::Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = mio::Waker::new(&registry, WAKE_TOKEN)?;
        Ok(Arc::new(Driver {
            poll: Mutex::new(PollState {
                poll,
                events: Events::with_capacity(EVENTS),
            }),
            registry,
            waker,
            slots: crate::loom::Mutex::new(Slots::default()),
            registered: AtomicUsize::new(0),
            last_poll: AtomicU64::new(0),
        }))
    }

    fn poll_locked(&self, st: &mut PollState, timeout: Option<Duration>, out: &mut Vec<Waker>) {
        let PollState { poll, events } = st;
        match poll.poll(events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => events.clear(),
            Err(e) => {
                eprintln!("goro: epoll_wait failed: {e}");
                events.clear();
            }
        }
        // Relaxed: see `poll_if_due`.
        self.last_poll.store(clock::now(), Ordering::Relaxed);
        if events.is_empty() {
            return;
        }
        let slots = self.slots.lock().unpoison();
        for ev in events.iter() {
            if ev.token() == WAKE_TOKEN {
                continue;
            }
            let mut ready = 0;
            if ev.is_readable() {
                ready |= READ;
            }
            if ev.is_read_closed() || ev.is_error() {
                ready |= READ | READ_CLOSED;
            }
            if ev.is_writable() {
                ready |= WRITE;
            }
            if ev.is_write_closed() || ev.is_error() {
                ready |= WRITE | WRITE_CLOSED;
            }
            if ready != 0 {
                slots.deliver(ev.token().0, ready, out);
            }
        }
    }
}

impl Netpoll for Driver {
    fn active(&self) -> bool {
        // Relaxed: a stale zero only makes the sleeper use its futex this
        // once; the 0 → 1 transition kicks it (`Sched::poller_activated`).
        self.registered.load(Ordering::Relaxed) > 0
    }

    fn poll_if_due(&self, gap: Duration, counter: &AtomicU64, out: &mut Vec<Waker>) -> bool {
        if !self.active() {
            return false;
        }
        let now = clock::now();
        // Relaxed: a rate limit; a stale value costs one early or late poll.
        let last = self.last_poll.load(Ordering::Relaxed);
        if now < last.saturating_add(gap.as_nanos() as u64) {
            return false;
        }
        let Ok(mut st) = self.poll.try_lock() else {
            return false; // another thread polls (maybe blocked): it delivers
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.poll_locked(&mut st, Some(Duration::ZERO), out);
        true
    }

    fn poll_blocking(
        &self,
        timeout: Option<Duration>,
        counter: &AtomicU64,
        out: &mut Vec<Waker>,
        handed: &dyn Fn() -> bool,
    ) {
        let mut st = self.poll.lock().unpoison();
        if handed() {
            return;
        }
        counter.fetch_add(1, Ordering::Relaxed);
        self.poll_locked(&mut st, timeout, out);
    }
}

impl PollBreak for Driver {
    /// Breaks a blocking poll (Go's `netpollBreak`).
    fn wake(&self) {
        if let Err(e) = self.waker.wake() {
            // Only possible if the eventfd is gone; the sleeper then wakes
            // at its deadline instead.
            eprintln!("goro: cannot break the poller's wait: {e}");
        }
    }
}

/// A socket's registration with its runtime's poller.
pub(crate) struct Registration {
    pub(crate) io: Arc<ScheduledIo>,
    driver: Arc<Driver>,
    token: usize,
    /// The runtime, for deadline timers.
    pub(crate) sched: Weak<Sched>,
}

impl Registration {
    /// Registers `source` with the poller of the calling thread's runtime.
    pub(crate) fn new<S: Source>(source: &mut S) -> io::Result<Registration> {
        let sched = crate::sched::context::current_sched().ok_or_else(|| {
            io::Error::other(
                "goro::net used outside a goro runtime: create sockets in a goro task or inside Runtime::block_on",
            )
        })?;
        let driver = Driver::of(&sched)?;
        let io = Arc::new(ScheduledIo::new());
        let token = driver.slots.lock().unpoison().insert(io.clone());
        if let Err(e) = driver.registry.register(
            source,
            Token(token),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            driver.slots.lock().unpoison().remove(token);
            return Err(e);
        }
        // Relaxed: the count only gates polling; the 0 → 1 kick below goes
        // through the sleeper's lock, which orders it (see `poller_activated`).
        if driver.registered.fetch_add(1, Ordering::Relaxed) == 0 {
            sched.poller_activated();
        }
        Ok(Registration {
            io,
            driver,
            token,
            sched: Arc::downgrade(&sched),
        })
    }

    /// Deregisters `source` (the socket is being dropped): later events are
    /// ignored, waiters woken, deadline timers stopped.
    pub(crate) fn deregister<S: Source>(&mut self, source: &mut S) {
        let _ = self.driver.registry.deregister(source);
        let mut out = Vec::new();
        let timers = close_slot(&self.driver.slots, self.token, &self.io, &mut out);
        self.driver.registered.fetch_sub(1, Ordering::Relaxed);
        wake_all(&mut out);
        for t in timers.into_iter().flatten() {
            crate::sched::timer::check::arm_timer(&t, 0, 0);
        }
    }
}

/// Closes the socket of `token` (record `io`): frees its slot first, so
/// that an event still in flight for it finds nothing and a socket that
/// reuses the slot gets a new generation, then closes the record (its
/// waiters, appended to `out`, find it ready and see the close). Returns
/// its deadline timers, for the caller to stop.
fn close_slot(
    slots: &crate::loom::Mutex<Slots>,
    token: usize,
    io: &ScheduledIo,
    out: &mut Vec<Waker>,
) -> [Option<Arc<crate::sched::timer::TimerInner>>; 2] {
    slots.lock().unpoison().remove(token);
    io.close(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_tokens_find_nothing_after_the_slot_is_reused() {
        let mut s = Slots::default();
        let a = s.insert(Arc::new(ScheduledIo::new()));
        s.remove(a);
        let b = s.insert(Arc::new(ScheduledIo::new()));
        assert_eq!(a & 0xffff_ffff, b & 0xffff_ffff, "slot reused");
        assert!(
            s.get(a).is_none(),
            "an event for the closed socket is ignored"
        );
        assert!(s.get(b).is_some());
        s.remove(a); // a stale remove must not free the new socket's slot
        assert!(s.get(b).is_some());
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! loom model of the slot table's protocol (registration, close, slot
    //! reuse, event delivery), with epoll replaced by the tokens it would
    //! report. `RUSTFLAGS="--cfg loom" cargo test -p goro --lib --release loom_poller`
    //!
    //! CI (`.ci/run`) runs these with `LOOM_MAX_PREEMPTIONS=3` (at most 3
    //! preemptions per execution); without the variable loom explores them
    //! with no preemption bound.
    use super::*;
    use crate::loom::{thread, AtomicBool, Mutex};
    use crate::net::scheduled_io::Direction;
    use std::task::{Context, Poll, Wake};

    /// A waker that records that it was woken.
    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    fn flag() -> (Arc<Flag>, Waker) {
        let f = Arc::new(Flag(AtomicBool::new(false)));
        let w = Waker::from(f.clone());
        (f, w)
    }

    fn woken(f: &Flag) -> bool {
        f.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A registered socket whose task has used up the initial readiness
    /// and waits for reading.
    fn waiting_socket(slots: &Mutex<Slots>, w: &Waker) -> (Arc<ScheduledIo>, usize, Poll<()>) {
        let io = Arc::new(ScheduledIo::new());
        let token = slots.lock().unwrap().insert(io.clone());
        io.clear_ready(Direction::Read, 0);
        let r = io
            .poll_ready(&mut Context::from_waker(w), Direction::Read)
            .map(|r| {
                r.expect("no deadline");
            });
        (io, token, r)
    }

    /// Socket A waits for reading; an event for it, fetched by a poll just
    /// before A closed, is delivered while A closes and socket B registers
    /// (racing the close: B gets a fresh slot or A's freed one) and waits.
    /// The stale event never reaches B: B is neither made ready nor woken.
    /// A's waiter is woken (by the event or by the close), and an event
    /// for B's own token reaches B.
    ///
    /// Planted bugs, caught: `Slots::remove` not bumping the generation
    /// (A's token then names B's reused slot: "B got A's event"); and
    /// `Slots::insert` returning the bare slot index without the generation
    /// (B's own events are dropped: "B missed its own event").
    #[test]
    fn loom_poller_stale_event_never_reaches_the_slots_next_socket() {
        loom::model(|| {
            let slots = Arc::new(Mutex::new(Slots::default()));
            let (fa, wa) = flag();
            let (a, ta, ra) = waiting_socket(&slots, &wa);
            assert!(ra.is_pending(), "A drained its readiness");
            let s = slots.clone();
            let poller = thread::spawn(move || {
                let mut out = Vec::new();
                s.lock().unwrap().deliver(ta, READ, &mut out);
                wake_all(&mut out);
            });
            let (s, a2) = (slots.clone(), a.clone());
            let closer = thread::spawn(move || {
                let mut out = Vec::new();
                let timers = close_slot(&s, ta, &a2, &mut out);
                assert!(timers.iter().all(Option::is_none), "no deadlines set");
                wake_all(&mut out);
            });
            let (fb, wb) = flag();
            let (b, tb, rb) = waiting_socket(&slots, &wb);
            poller.join().unwrap();
            closer.join().unwrap();
            assert!(
                rb.is_pending(),
                "B got A's event: ready before any of its own"
            );
            assert!(!woken(&fb), "B got A's event: woken");
            assert!(
                b.poll_ready(&mut Context::from_waker(&wb), Direction::Read)
                    .is_pending(),
                "B got A's event: ready"
            );
            assert!(woken(&fa), "A's waiter was stranded");
            let mut out = Vec::new();
            slots.lock().unwrap().deliver(tb, READ, &mut out);
            wake_all(&mut out);
            assert!(woken(&fb), "B missed its own event");
        });
    }
}
