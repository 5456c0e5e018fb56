//! The scheduler's side of the network poller (Go's `netpoll` interface:
//! `netpoll(delay)` and `netpollBreak`).
//!
//! The scheduler does not know sockets. It knows a [`Netpoll`] driver,
//! which `net` makes on a runtime's first socket and registers in
//! [`NetpollSlot`], and it decides who polls it and when (the whole
//! protocol is in `net/poller.rs`'s header): find-runnable polls without
//! blocking when a poll is due ([`Machine::netpoll`]), the timer sleeper
//! blocks in it instead of on its futex while sockets are registered
//! ([`Machine::sleeper_park`]), and the monitor polls when nobody has for
//! [`SYSMON_POLL_GAP`] ([`sysmon_poll`]). What a poll readies is woken as
//! one batch onto the polling P (Go's `injectglist`).

use super::park::{Handoff, PollBreak};
use super::Machine;
use crate::loom::Unpoison;
use crate::sched::task::Runnable;
use crate::sched::Sched;
use crate::stats::{bump, bump_shared};
use std::any::Any;
use std::io;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Waker;
use std::time::Duration;

/// Non-blocking polls from find-runnable are at least this far apart.
pub(crate) const MIN_POLL_GAP: Duration = Duration::from_micros(20);
/// The monitor polls if nobody has for this long (Go's sysmon: 10 ms).
pub(crate) const SYSMON_POLL_GAP: Duration = Duration::from_millis(10);

/// A network poller as the scheduler uses it; `net`'s epoll driver
/// implements it. Breaking a blocking poll is [`PollBreak`].
pub(crate) trait Netpoll: PollBreak {
    /// Whether any socket is registered: only then is there anything to
    /// poll (and the sleeper sleeps in the poller, not on its futex).
    fn active(&self) -> bool;
    /// A non-blocking poll if sockets are registered, the last poll was at
    /// least `gap` ago and no other thread is polling; appends the readied
    /// wakers to `out` and counts the poll in `counter`. Whether it polled.
    fn poll_if_due(&self, gap: Duration, counter: &AtomicU64, out: &mut Vec<Waker>) -> bool;
    /// Blocks for at most `timeout` (`None`: no limit), appending the
    /// readied wakers to `out`. Only the timer sleeper calls it; it does
    /// not wait if `handed` says, once the poll lock is held, that the
    /// sleeper has been handed something (`park.rs`).
    fn poll_blocking(
        &self,
        timeout: Option<Duration>,
        counter: &AtomicU64,
        out: &mut Vec<Waker>,
        handed: &dyn Fn() -> bool,
    );
}

/// A driver as the scheduler uses it, and the same driver as its maker's
/// concrete type (for `net` to get back with a downcast).
type Driver = (Arc<dyn Netpoll>, Arc<dyn Any + Send + Sync>);

/// A runtime's poller: nothing until the first socket.
pub(crate) struct NetpollSlot {
    driver: OnceLock<Driver>,
    /// Serialises the making of the driver (which may fail, e.g. `EMFILE`).
    init: Mutex<()>,
}

impl NetpollSlot {
    pub(crate) fn new() -> NetpollSlot {
        NetpollSlot {
            driver: OnceLock::new(),
            init: Mutex::new(()),
        }
    }

    /// The driver, if one was made.
    #[inline]
    pub(crate) fn get(&self) -> Option<&Arc<dyn Netpoll>> {
        self.driver.get().map(|d| &d.0)
    }

    /// The driver if sockets are registered (the sleeper then sleeps in it).
    pub(crate) fn active(&self) -> Option<&Arc<dyn Netpoll>> {
        self.get().filter(|d| d.active())
    }

    /// The driver as its maker's type, made by `make` on first use.
    pub(crate) fn get_or_try_init(
        &self,
        make: impl FnOnce() -> io::Result<Driver>,
    ) -> io::Result<Arc<dyn Any + Send + Sync>> {
        if let Some(d) = self.driver.get() {
            return Ok(d.1.clone());
        }
        let _g = self.init.lock().unpoison();
        if let Some(d) = self.driver.get() {
            return Ok(d.1.clone());
        }
        let d = make()?;
        Ok(self.driver.get_or_init(|| d).1.clone())
    }
}

/// Wakes every waker in `wakers`, leaving it empty (a poll's batch, or a
/// socket's waiters when it closes or a deadline passes).
pub(crate) fn wake_all(wakers: &mut Vec<Waker>) {
    for w in wakers.drain(..) {
        w.wake();
    }
}

impl Sched {
    /// The first socket was registered: the timer sleeper, if any, sleeps on
    /// its futex and must move into the epoll; without one, start a thread
    /// that will become it (as `timer_added` does for a first timer).
    pub(crate) fn poller_activated(&self) {
        // The sleeper publishes itself under this lock before it decides
        // between futex and epoll, so either it sees the registration or we
        // see it (and the re-check it gets makes it decide again).
        let sleeper = self.timer_sleeper.lock().unpoison().clone();
        match sleeper {
            Some(parker) => parker.unpark(Handoff::Recheck),
            None => self.wakep(),
        }
    }
}

impl Machine {
    /// Find-runnable's non-blocking poll (steps 2 and 6), if due. Returns
    /// the head of this P's queue once the poll readied something onto it.
    pub(crate) fn netpoll(&mut self) -> Option<Runnable> {
        let pid = self.p();
        // Fields, not methods: `sched` and `ready` are borrowed apart (no
        // reference-count traffic on the shared `Arc` for every poll).
        let sched = &*self.sched;
        let p = &sched.ps[pid];
        let np = sched.netpoll.get()?;
        if !np.poll_if_due(MIN_POLL_GAP, &p.counters.netpolls, &mut self.ready) {
            return None;
        }
        if self.ready.is_empty() {
            return None;
        }
        bump(&p.counters.netpoll_ready, self.ready.len() as u64);
        crate::sched::trace::netpoll(sched, self.ready.len());
        wake_batch(sched, &mut self.ready);
        self.take_local()
    }

    /// Sleeps as the timer sleeper for `timeout`: in the epoll if sockets
    /// are registered (keeping what it readied in `self.ready`), else on
    /// the parker's futex.
    pub(crate) fn sleeper_park(&mut self, timeout: Option<Duration>) -> Option<Handoff> {
        let sched = self.sched.clone();
        let parker = self.parker.clone();
        match sched.netpoll.active() {
            Some(d) => {
                let ready = &mut self.ready;
                parker.park_polling(d.clone(), |handed| {
                    d.poll_blocking(timeout, &sched.counters.netpolls, ready, handed)
                })
            }
            None => parker.park(timeout),
        }
    }

    /// Whether the sleeper's blocking poll readied tasks not yet woken.
    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Wakes what the blocking poll readied: into this M's P if it holds
    /// one, else to the global queue (Go's `injectglist`).
    pub(crate) fn deliver_ready(&mut self) {
        let n = self.ready.len() as u64;
        let sched = self.sched.clone();
        crate::sched::trace::netpoll(&sched, n as usize);
        if let Some(pid) = crate::sched::context::current_p(&sched) {
            bump(&sched.ps[pid].counters.netpoll_ready, n);
            wake_batch(&sched, &mut self.ready);
        } else {
            bump_shared(&sched.counters.netpoll_ready, n);
            wake_all(&mut self.ready);
        }
    }
}

/// Wakes a poll's batch on the current P as Go's `injectglist` does: each
/// task to the tail of the P's queue in the order the poll saw them (the
/// quiet mode timer runs use, `WakeTarget::Quiet`), then one `wakep`
/// for the lot, instead of a `runnext` bump and a fenced `wakep` per task.
fn wake_batch(sched: &Sched, wakers: &mut Vec<Waker>) {
    let many = wakers.len() > 1;
    crate::sched::context::wake_quietly(|| wake_all(wakers));
    if many {
        sched.wakep(); // the first runs here; a thief for the rest
    }
}

/// The monitor's poll (see module docs): wakes what it readied into the
/// global queue.
pub(crate) fn sysmon_poll(sched: &Sched) {
    let mut out = Vec::new();
    let Some(np) = sched.netpoll.get() else {
        return;
    };
    if np.poll_if_due(SYSMON_POLL_GAP, &sched.counters.netpolls, &mut out) {
        bump_shared(&sched.counters.netpoll_ready, out.len() as u64);
        crate::sched::trace::netpoll(sched, out.len());
        wake_all(&mut out);
    }
}
