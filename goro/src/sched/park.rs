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

use crate::loom::{Condvar, Mutex};
use std::sync::Arc;
use std::time::Duration;

/// What a parked M is woken with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Handoff {
    /// Run with P `p`; `spinning` if the waker counted this M as spinning.
    P { p: usize, spinning: bool },
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
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        match (slot.handoff, h) {
            // A re-check never displaces a real handoff (that would lose a P).
            (Some(_), Handoff::Recheck) => return,
            // Exit overrides anything (shutdown: the P no longer matters);
            // a P handoff overrides a pending re-check.
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
    pub(crate) fn park_polling(
        &self,
        d: Arc<dyn PollBreak>,
        poll: impl FnOnce(),
    ) -> Option<Handoff> {
        {
            let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(h) = slot.handoff.take() {
                return Some(h);
            }
            // Published under the lock: an `unpark` after this breaks the
            // poll, one before it left its handoff for the check above.
            slot.polling = Some(d);
        }
        poll();
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.polling = None;
        slot.handoff.take()
    }

    /// Sleeps until handed something, or until `timeout` (if any) passes.
    pub(crate) fn park(&self, timeout: Option<Duration>) -> Option<Handoff> {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(h) = slot.handoff.take() {
                return Some(h);
            }
            match timeout {
                None => slot = self.cv.wait(slot).unwrap_or_else(|e| e.into_inner()),
                #[cfg(not(loom))]
                Some(d) => {
                    let (s, res) = self
                        .cv
                        .wait_timeout(slot, d)
                        .unwrap_or_else(|e| e.into_inner());
                    slot = s;
                    if res.timed_out() {
                        return slot.handoff.take();
                    }
                }
                #[cfg(loom)]
                Some(_) => slot = self.cv.wait(slot).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! The handoff to an M asleep in the poller: an `unpark` racing the M's
    //! way into `epoll_wait` either leaves its handoff for the check before
    //! the wait or breaks the wait; it is never lost (loom reports the
    //! deadlock if it is). The epoll is a model: a flag and a condvar.
    use super::*;
    use crate::loom::thread;

    #[derive(Default)]
    struct ModelPoller {
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
        /// `epoll_wait` with no timeout and no sockets: returns when woken.
        fn wait(&self) {
            let mut rang = self.rang.lock().unwrap();
            while !*rang {
                rang = self.cv.wait(rang).unwrap();
            }
            *rang = false;
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
                    p: 0,
                    spinning: false,
                })
            });
            let mut got = None;
            while got.is_none() {
                let d: Arc<dyn PollBreak> = poller.clone();
                got = parker.park_polling(d, || poller.wait());
            }
            waker.join().unwrap();
            assert_eq!(
                got,
                Some(Handoff::P {
                    p: 0,
                    spinning: false
                })
            );
        });
    }
}
