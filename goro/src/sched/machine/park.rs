//! How a worker thread (M) sleeps and is handed work (Go's `stopm`/`startm`
//! and `notesleep`/`notewakeup` on `m.park`).
//!
//! An idle M sits on the idle M list with its own `Parker`. Whoever wakes it
//! (`startm`) first takes it off the list under the idle lock, then hands it a
//! P (and says whether it should spin) through the parker. The handoff is a
//! value, not a flag: the sleeper cannot miss it, and a spurious wakeup of the
//! condition variable just re-checks the slot.
//!
//! A sleeping M uses a futex wait (via `Condvar`) with no timeout, so an idle
//! runtime makes no wakeups at all; the timer sleeper bounds its wait by the
//! earliest timer (`timers.rs`).
//!
//! The timer sleeper may instead sleep in the poller's `epoll_wait` (while
//! sockets are registered, see `net/poller.rs`). The parker then records
//! the poller it sleeps in, under the slot lock, and `unpark` breaks that
//! wait through the poller's eventfd instead of the condition variable: the
//! handoff protocol is the same, only the doorbell differs.
//!
//! One difference: a doorbell can be answered by the wrong thread. The
//! eventfd's event goes to whichever thread polls the epoll next, and
//! another M's non-blocking poll may take it in the moment between the
//! sleeper publishing itself and the sleeper taking the poll lock; the
//! sleeper would then wait in `epoll_wait` for a wake that already came
//! (until its timeout: forever with no timers, which hung runtime drops).
//! So the sleeper looks at its slot again *after* taking the poll lock
//! (`park_polling`'s `handed`): a break rung before that point left its
//! handoff in the slot, and one rung after it reaches the epoll while the
//! sleeper holds the lock, so only the sleeper can take it.

use crate::loom::Unpoison;
use crate::loom::{Condvar, Mutex};
use crate::sched::processor::idle::HeldP;
use std::sync::Arc;
use std::time::Duration;

/// What a parked M is woken with. Not `Clone`: a P handoff carries the
/// held P itself, so the P is wherever the handoff is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Handoff {
    /// Run with P `p`; `spinning` if the waker counted this M as spinning.
    P { p: HeldP, spinning: bool },
    /// The runtime is shutting down: exit the thread.
    Exit,
    /// (To the timer sleeper) a timer earlier than its deadline was armed.
    Recheck,
}

pub(crate) struct Parker {
    slot: Mutex<Slot>,
    cv: Condvar,
}

/// What breaks a wait in the poller (Go's `netpollBreak`): the poller's
/// eventfd, or a model of it under loom.
pub(crate) trait PollBreak: Send + Sync {
    fn wake(&self);
}

struct Slot {
    handoff: Option<Handoff>,
    /// The poller this M sleeps in, if it sleeps in one.
    polling: Option<Arc<dyn PollBreak>>,
}

impl Parker {
    pub(crate) fn new() -> Parker {
        Parker {
            slot: Mutex::new(Slot {
                handoff: None,
                polling: None,
            }),
            cv: Condvar::new(),
        }
    }

    /// Hands `h` to the parked M and wakes it.
    pub(crate) fn unpark(&self, h: Handoff) {
        let mut slot = self.slot.lock().unpoison();
        match (&slot.handoff, &h) {
            // A re-check never displaces a real handoff (that would lose a P).
            (Some(_), Handoff::Recheck) => return,
            // Exit overrides anything (shutdown: the P no longer matters,
            // and the held P is dropped with the old handoff); a P handoff
            // overrides a pending re-check.
            (None, _) | (Some(Handoff::Recheck), _) | (_, Handoff::Exit) => {}
            (Some(old), new) => panic!("goro: double handoff to one M ({old:?}, then {new:?})"),
        }
        slot.handoff = Some(h);
        let poller = slot.polling.clone();
        drop(slot);
        match poller {
            // Go's `netpollBreak`: the M sleeps in epoll_wait.
            Some(d) => d.wake(),
            None => self.cv.notify_one(),
        }
    }

    /// Sleeps in the poller `d`: runs `poll` (a blocking `epoll_wait`) unless
    /// a handoff is already here; returns the handoff, if any came. An
    /// `unpark` while `poll` runs breaks it.
    ///
    /// `poll` gets `handed`, which says whether a handoff has arrived; it
    /// must call it after taking the poller's lock and not wait if it says
    /// yes (module docs: the break may have been taken by another poller).
    pub(crate) fn park_polling(
        &self,
        d: Arc<dyn PollBreak>,
        poll: impl FnOnce(&dyn Fn() -> bool),
    ) -> Option<Handoff> {
        {
            let mut slot = self.slot.lock().unpoison();
            if let Some(h) = slot.handoff.take() {
                return Some(h);
            }
            // Published under the lock: an `unpark` after this breaks the
            // poll, one before it left its handoff for the check above.
            slot.polling = Some(d);
        }
        poll(&|| {
            let slot = self.slot.lock().unpoison();
            slot.handoff.is_some()
        });
        let mut slot = self.slot.lock().unpoison();
        slot.polling = None;
        slot.handoff.take()
    }

    /// Sleeps until handed something, or until `timeout` (if any) passes.
    pub(crate) fn park(&self, timeout: Option<Duration>) -> Option<Handoff> {
        let mut slot = self.slot.lock().unpoison();
        loop {
            if let Some(h) = slot.handoff.take() {
                return Some(h);
            }
            match timeout {
                None => slot = self.cv.wait(slot).unpoison(),
                #[cfg(not(loom))]
                Some(d) => {
                    let (s, res) = self.cv.wait_timeout(slot, d).unpoison();
                    slot = s;
                    if res.timed_out() {
                        return slot.handoff.take();
                    }
                }
                #[cfg(loom)]
                Some(_) => slot = self.cv.wait(slot).unpoison(),
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! The handoff to an M asleep in the poller: an `unpark` racing the M's
    //! way into `epoll_wait` either leaves its handoff for the check before
    //! the wait or breaks the wait; it is never lost (loom reports the
    //! deadlock if it is), even when another M's non-blocking poll takes
    //! the break. The epoll is a model: a lock (the poller's), a flag (the
    //! eventfd's pending event) and a condvar.
    //!
    //! CI (`.ci/run`) runs these with `LOOM_MAX_PREEMPTIONS=3` (at most 3
    //! preemptions per execution); without the variable loom explores them
    //! with no preemption bound.
    use super::*;
    use crate::loom::thread;

    #[derive(Default)]
    struct ModelPoller {
        /// The poller's lock: held by whoever polls.
        lock: Mutex<()>,
        rang: Mutex<bool>,
        cv: Condvar,
    }

    impl PollBreak for ModelPoller {
        fn wake(&self) {
            *self.rang.lock().unwrap() = true;
            self.cv.notify_one();
        }
    }

    impl ModelPoller {
        /// The sleeper's blocking poll (`poll_blocking`): takes the lock,
        /// asks `handed`, then waits until woken.
        fn wait(&self, handed: &dyn Fn() -> bool) {
            let _polling = self.lock.lock().unwrap();
            if handed() {
                return;
            }
            let mut rang = self.rang.lock().unwrap();
            while !*rang {
                rang = self.cv.wait(rang).unwrap();
            }
            *rang = false;
        }

        /// Another M's non-blocking poll (`poll_if_due`): if the lock is
        /// free, takes whatever event is pending, the break included.
        fn poll_now(&self) {
            if let Ok(_polling) = self.lock.try_lock() {
                *self.rang.lock().unwrap() = false;
            }
        }
    }

    #[test]
    fn loom_park_polling_handoff_breaks_the_poll() {
        loom::model(|| {
            let parker = Arc::new(Parker::new());
            let poller = Arc::new(ModelPoller::default());
            let p2 = parker.clone();
            let waker = thread::spawn(move || {
                p2.unpark(Handoff::P {
                    // SAFETY: no runtime here; the one P token of the model.
                    p: unsafe { HeldP::for_model(0) },
                    spinning: false,
                })
            });
            let p3 = poller.clone();
            let other_m = thread::spawn(move || p3.poll_now());
            let mut got = None;
            while got.is_none() {
                let d: Arc<dyn PollBreak> = poller.clone();
                got = parker.park_polling(d, |handed| poller.wait(handed));
            }
            waker.join().unwrap();
            other_m.join().unwrap();
            assert!(
                matches!(got, Some(Handoff::P { ref p, spinning: false }) if p.id() == 0),
                "{got:?}"
            );
        });
    }
}
